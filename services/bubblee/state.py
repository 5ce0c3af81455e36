"""Bubblee Pop: the state of a game, and evolve, which folds an event into it.

evolve only applies what an event records; decide (rules.py) computed every consequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import board
from services.bubblee.board import LINE_COLOURS, WIDTH, Masks
from services.core.decider import Outcome

# Phases (the proto enum values).
PLACE, ACTION, POWERS, OVER = pb.PHASE_PLACE, pb.PHASE_ACTION, pb.PHASE_POWERS, pb.PHASE_OVER


class State(NamedTuple):
    """Everything on the table. Planet i belongs to seat i (solo: planet 1 is the target)."""

    seats: int
    no_powers: bool
    extra_blacks: int
    opponent_lines_grant_powers: bool
    solo_level: int
    draw_seed: int  # solo: the level's bag seed
    planets: tuple[Masks, Masks]
    sky: tuple[int, ...]  # 10 colours, 0 = empty
    bag: tuple[int, ...]  # count per colour (index colour - 1)
    set_aside: tuple[int, ...]
    zones: tuple[tuple[int, ...], tuple[int, ...]]  # score zone per planet owner
    turn: int
    phase: int
    drawn: int  # the drawn Bubblee awaiting placement, 0 = none
    swapped: bool
    first_turn: bool
    pool: tuple[int, ...]  # pending powers, in the order gained
    draws: int  # Bubblees drawn so far (solo draws are a function of it)
    outcome: Outcome | None


_FIELD_INDEX = {name: i for i, name in enumerate(State._fields)}
_new_state = tuple.__new__


def _update(state: State, **changes: object) -> State:
    """A copy of `state` with some fields changed (NamedTuple._replace, but cheaper)."""
    values: list[object] = list(state)
    for name, value in changes.items():
        values[_FIELD_INDEX[name]] = value
    return _new_state(State, values)  # type: ignore[no-any-return]


def opponent_planet(state: State, seat: int) -> int:
    """The planet a seat's red, purple and blue powers act on (solo: the target)."""
    return 1 - seat


def scores(state: State) -> tuple[int, ...]:
    """1 point per Bubblee in a score zone, blacks included."""
    return tuple(sum(state.zones[s]) for s in range(state.seats))


def target_remaining(state: State) -> int:
    """Solo: coloured Bubblees still on the target planet (black ones do not count)."""
    masks = state.planets[1]
    return sum(masks[c - 1].bit_count() for c in LINE_COLOURS)


def _counts(msg: pb.ColourCounts) -> tuple[int, ...]:
    return (msg.red, msg.purple, msg.blue, msg.green, msg.yellow, msg.black)


def _index(cell: pb.SkyCell | pb.PlanetCell) -> int:
    """The index (row * 5 + column) of a sky or planet cell."""
    return cell.row * WIDTH + cell.column


# ---- Evolve -----------------------------------------------------------------------------


def start(event: pb.Event) -> State:
    """The game a GameSetUp sets up (every game starts with one)."""
    return _evolve_set_up(event.game_set_up)


def evolve(state: State, event: pb.Event) -> State:
    kind = event.WhichOneof("kind")
    return _EVOLVE[kind](state, getattr(event, kind))


def _planet_masks(cells: Sequence[int]) -> Masks:
    masks = [0] * 6
    for index, colour in enumerate(cells):
        if colour:
            masks[colour - 1] |= 1 << index
    return (masks[0], masks[1], masks[2], masks[3], masks[4], masks[5])


def _evolve_set_up(ev: pb.GameSetUp) -> State:
    o = ev.options
    p0, p1 = (_planet_masks(p.cells) for p in ev.planets)
    return State(
        seats=ev.seats,
        no_powers=o.no_powers,
        extra_blacks=o.extra_blacks,
        opponent_lines_grant_powers=o.opponent_lines_grant_powers,
        solo_level=o.solo_level,
        draw_seed=ev.draw_seed,
        planets=(p0, p1),
        sky=tuple(ev.sky),
        bag=_counts(ev.bag),
        set_aside=_counts(ev.set_aside),
        zones=((0,) * 6, (0,) * 6),
        turn=ev.first_player,
        phase=ACTION,
        drawn=0,
        swapped=False,
        first_turn=True,
        pool=(),
        draws=0,
        outcome=None,
    )


def _with_planet(state: State, planet: int, masks: Sequence[int]) -> tuple[Masks, Masks]:
    new: Masks = (masks[0], masks[1], masks[2], masks[3], masks[4], masks[5])
    return (new, state.planets[1]) if planet == 0 else (state.planets[0], new)


def _add(counts: tuple[int, ...], colour: int, n: int = 1) -> tuple[int, ...]:
    out = list(counts)
    out[colour - 1] += n
    return tuple(out)


# Each event's change to the state, from plain values: evolve decodes the event and applies
# it; decide applies the same change to look at its own consequences (see Decision).


def _apply_drawn(state: State, colour: int) -> State:
    return _update(
        state, drawn=colour, phase=PLACE, bag=_add(state.bag, colour, -1), draws=state.draws + 1
    )


def _apply_placed(state: State, index: int, colour: int) -> State:
    sky = list(state.sky)
    sky[index] = colour
    return _update(state, sky=tuple(sky), drawn=0, phase=ACTION)


def _apply_swapped(state: State, a: int, b: int) -> State:
    sky = list(state.sky)
    sky[a], sky[b] = sky[b], sky[a]
    return _update(state, sky=tuple(sky), swapped=True)


def _apply_dropped(
    state: State, planet: int, landings: Sequence[tuple[int, int, int]]
) -> State:
    """`landings`: (sky cell, planet cell, colour) of each dropped Bubblee."""
    sky = list(state.sky)
    masks = list(state.planets[planet])
    for source, target, colour in landings:
        sky[source] = 0
        masks[colour - 1] |= 1 << target
    return _update(state, sky=tuple(sky), planets=_with_planet(state, planet, masks))


def _apply_lines_cleared(
    state: State, planet: int, colour: int, group: int, scorer: int, power: int
) -> State:
    masks = list(state.planets[planet])
    masks[colour - 1] &= ~group
    zones = list(state.zones)
    zones[scorer] = _add(zones[scorer], colour, group.bit_count())
    pool = state.pool + (power,) if power else state.pool
    return _update(
        state,
        planets=_with_planet(state, planet, masks),
        zones=(zones[0], zones[1]),
        pool=pool,
    )


def _apply_gravity(state: State, planet: int, moves: Sequence[tuple[int, int]]) -> State:
    old = state.planets[planet]
    masks = list(old)
    for source, target in moves:
        k = board.colour_at(old, source) - 1
        masks[k] = (masks[k] & ~(1 << source)) | (1 << target)
    return _update(state, planets=_with_planet(state, planet, masks))


def _apply_settled(state: State) -> State:
    return _update(state, phase=POWERS) if state.pool else state


def _apply_power_used(state: State, index: int) -> State:
    """Pool entry `index` is used up (applied or declined)."""
    pool = state.pool[:index] + state.pool[index + 1 :]
    return _update(state, pool=pool, phase=POWERS if pool else ACTION)


def _apply_turn_ended(state: State, next_seat: int) -> State:
    return _update(
        state, turn=next_seat, phase=ACTION, swapped=False, first_turn=False, pool=()
    )


def _evolve_drawn(state: State, ev: pb.Drawn) -> State:
    return _apply_drawn(state, ev.colour)


def _evolve_placed(state: State, ev: pb.Placed) -> State:
    return _apply_placed(state, _index(ev.cell), ev.colour)


def _evolve_swapped(state: State, ev: pb.Swapped) -> State:
    return _apply_swapped(state, _index(ev.a), _index(ev.b))


def _evolve_dropped(state: State, ev: pb.Dropped) -> State:
    landings = [(_index(x.from_sky), _index(x.to_cell), x.colour) for x in ev.landings]
    return _apply_dropped(state, ev.planet, landings)


def _evolve_lines_cleared(state: State, ev: pb.LinesCleared) -> State:
    group = 0
    for cell in ev.cells:
        group |= 1 << _index(cell)
    return _apply_lines_cleared(state, ev.planet, ev.colour, group, ev.scorer, ev.power_gained)


def _evolve_gravity(state: State, ev: pb.Gravity) -> State:
    moves = [(_index(m.from_cell), _index(m.to_cell)) for m in ev.moves]
    return _apply_gravity(state, ev.planet, moves)


def _evolve_settled(state: State, ev: pb.Settled) -> State:
    return _apply_settled(state)


def _evolve_power_applied(state: State, ev: pb.PowerApplied) -> State:
    state = _apply_power_used(state, ev.index)
    kind = ev.WhichOneof("effect")
    if kind == "swapped":
        s = ev.swapped
        a, b = _index(s.a), _index(s.b)
        old = state.planets[s.planet]
        ca, cb = board.colour_at(old, a), board.colour_at(old, b)
        masks = list(old)
        masks[ca - 1] = (masks[ca - 1] & ~(1 << a)) | (1 << b)
        masks[cb - 1] = (masks[cb - 1] & ~(1 << b)) | (1 << a)
        if ca == cb:
            masks[ca - 1] = old[ca - 1]
        return _update(state, planets=_with_planet(state, s.planet, masks))
    if kind == "sent":
        sent = ev.sent
        sky = state.sky
        if sent.WhichOneof("source") == "from_planet_cell":
            src = sent.from_planet_cell
            masks = list(state.planets[state.turn])
            masks[sent.colour - 1] &= ~(1 << _index(src))
            state = _update(state, planets=_with_planet(state, state.turn, masks))
        else:
            cells = list(sky)
            cells[_index(sent.from_sky)] = 0
            state = _update(state, sky=tuple(cells))
        masks = list(state.planets[sent.to_planet])
        masks[sent.colour - 1] |= 1 << _index(sent.to_cell)
        return _update(state, planets=_with_planet(state, sent.to_planet, masks))
    banked = ev.banked
    masks = list(state.planets[banked.planet])
    masks[banked.colour - 1] &= ~(1 << _index(banked.cell))
    zones = list(state.zones)
    zones[banked.scorer] = _add(zones[banked.scorer], banked.colour)
    return _update(
        state,
        planets=_with_planet(state, banked.planet, masks), zones=(zones[0], zones[1])
    )


def _evolve_power_declined(state: State, ev: pb.PowerDeclined) -> State:
    return _apply_power_used(state, ev.index)


def _evolve_turn_ended(state: State, ev: pb.TurnEnded) -> State:
    return _apply_turn_ended(state, ev.next_seat)


def _evolve_game_over(state: State, ev: pb.GameOver) -> State:
    o = ev.outcome
    return _update(
        state,
        phase=OVER,
        outcome=Outcome(winners=tuple(o.winners), scores=tuple(o.scores), reason=o.reason),
    )


_EVOLVE = {
    "drawn": _evolve_drawn,
    "placed": _evolve_placed,
    "swapped": _evolve_swapped,
    "dropped": _evolve_dropped,
    "lines_cleared": _evolve_lines_cleared,
    "gravity": _evolve_gravity,
    "settled": _evolve_settled,
    "power_applied": _evolve_power_applied,
    "power_declined": _evolve_power_declined,
    "turn_ended": _evolve_turn_ended,
    "game_over": _evolve_game_over,
}


def put_counts(msg: pb.ColourCounts, counts: Sequence[int]) -> None:
    """Counts per colour (red, purple, blue, green, yellow, black) into their message."""
    msg.red, msg.purple, msg.blue, msg.green, msg.yellow, msg.black = counts
