"""Builders for Bubblee Pop tests: tables drawn as pictures, commands in one call."""

from __future__ import annotations

from collections.abc import Sequence

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME, board, rules
from services.bubblee.state import State, evolve
from services.core.decider import Rng, Seat

EMPTY_PLANET = (".....", ".....", ".....", ".....")
START_PLANET = (".....", ".....", ".....", "K.K.K")
DEFAULT_SKY = ("RPBGY", "PBGYR")  # seat 1's row (the target's in solo), then seat 0's row


def sky_from_rows(rows: Sequence[str]) -> tuple[int, ...]:
    row1, row0 = rows
    return tuple(board.BY_LETTER.get(ch, 0) for ch in row0 + row1)


def table(
    planet0: Sequence[str] = START_PLANET,
    planet1: Sequence[str] = START_PLANET,
    sky: Sequence[str] = DEFAULT_SKY,
    turn: int = 0,
    phase: int = pb.PHASE_ACTION,
    pool: Sequence[int] = (),
    bag: Sequence[int] = (14, 14, 14, 14, 14, 3),
    first_turn: bool = False,
    swapped: bool = False,
    drawn: int = 0,
    seats: int = 2,
    solo_level: int = 0,
    no_powers: bool = False,
    opponent_lines_grant_powers: bool = False,
    zones: tuple[tuple[int, ...], tuple[int, ...]] = ((0,) * 6, (0,) * 6),
) -> State:
    """A table drawn as pictures (planets top row first; '.' empty, K black)."""
    return State(
        seats=seats,
        no_powers=no_powers,
        extra_blacks=0,
        opponent_lines_grant_powers=opponent_lines_grant_powers,
        solo_level=solo_level,
        draw_seed=1,
        planets=(board.from_rows(planet0), board.from_rows(planet1)),
        sky=sky_from_rows(sky),
        bag=tuple(bag),
        set_aside=(0, 0, 0, 0, 0, 0),
        zones=zones,
        turn=turn,
        phase=phase,
        drawn=drawn,
        swapped=swapped,
        first_turn=first_turn,
        pool=tuple(pool),
        draws=0,
        outcome=None,
    )


def new_game(options: pb.Options | None = None, seed: int = 0) -> State:
    options = options or pb.Options()
    seats = [Seat("solo")] if options.solo_level else [Seat("a"), Seat("b")]
    return GAME.replay(rules.setup(options, seats, Rng.for_test(seed)))


def fold(state: State, events: Sequence[pb.Event]) -> State:
    for ev in events:
        state = evolve(state, ev)
    return state


def act(
    state: State, command: pb.Command, seat: int | None = None, seed: int = 0
) -> tuple[list[pb.Event], State]:
    """Decide and fold: the events and the state after them."""
    seat = state.turn if seat is None else seat
    events = GAME.decide_now(state, seat, command, Rng.for_test(seed))
    return events, fold(state, events)


def kinds(events: Sequence[pb.Event]) -> list[str]:
    return [ev.WhichOneof("kind") for ev in events]


def of_kind(events: Sequence[pb.Event], kind: str) -> list:
    return [getattr(ev, kind) for ev in events if ev.WhichOneof("kind") == kind]


def planet(state: State, index: int, rows: int = 4) -> list[str]:
    return board.to_rows(state.planets[index], rows)


def _sky(msg: pb.SkyCell, cell: tuple[int, int]) -> None:
    msg.column, msg.row = cell


def place(column: int, row: int) -> pb.Command:
    cmd = pb.Command()
    _sky(cmd.place.cell, (column, row))
    return cmd


def swap(a: tuple[int, int], b: tuple[int, int]) -> pb.Command:
    """Sky cells as (column, row); row 0 is seat 0's row."""
    cmd = pb.Command()
    _sky(cmd.swap.a, a)
    _sky(cmd.swap.b, b)
    return cmd


def drop(a: tuple[int, int], b: tuple[int, int]) -> pb.Command:
    cmd = pb.Command()
    _sky(cmd.drop.a, a)
    _sky(cmd.drop.b, b)
    return cmd


def apply(
    index: int,
    a: tuple[int, int] | None = None,
    b: tuple[int, int] | None = None,
    column: int = 0,
) -> pb.Command:
    """Planet cells as (column, row); row 0 is the ground."""
    cmd = pb.Command()
    cmd.apply_power.index = index
    if a is not None:
        cmd.apply_power.a.column, cmd.apply_power.a.row = a
    if b is not None:
        cmd.apply_power.b.column, cmd.apply_power.b.row = b
    cmd.apply_power.column = column
    return cmd


def decline(index: int) -> pb.Command:
    cmd = pb.Command()
    cmd.decline_power.index = index
    return cmd


def bubblee_count(state: State) -> int:
    """Every Bubblee of the game: planets, sky, the drawn one, bag, score zones, set aside."""
    on_planets = sum(m.bit_count() for p in state.planets for m in p)
    in_sky = sum(1 for c in state.sky if c)
    return (
        on_planets
        + in_sky
        + (1 if state.drawn else 0)
        + sum(state.bag)
        + sum(map(sum, state.zones))
        + sum(state.set_aside)
    )
