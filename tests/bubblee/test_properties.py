"""Properties of random legal play (hypothesis): after every command gravity holds, nothing
stays above a planet, and all 96 Bubblees are accounted for."""

from __future__ import annotations

import itertools
import random

from arbiter.bubblee.v1 import bubblee_pb2 as pb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.bubblee import GAME, board, rules
from services.bubblee.state import State
from services.bubblee.view import state_from_view
from services.core.decider import Rng, RuleError, Seat
from tests.bubblee import helpers
from tests.bubblee.helpers import bubblee_count, fold

view = GAME.view

OPTIONS = [
    pb.Options(),
    pb.Options(extra_blacks=2),
    pb.Options(no_powers=True),
    pb.Options(opponent_lines_grant_powers=True, extra_blacks=1),
    pb.Options(solo_level=1),
    pb.Options(solo_level=12),
]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_invariants(state: State) -> None:
    assert bubblee_count(state) == 96
    assert all(n >= 0 for n in state.bag + state.set_aside)
    for masks in state.planets:
        occ = board.occupied(masks)
        assert sum(m.bit_count() for m in masks) == occ.bit_count()  # one colour per cell
        assert not (~occ & (occ >> board.WIDTH) & board.ALL), "a hole under a Bubblee"
        eliminated = state.outcome is not None and "eliminated" in state.outcome.reason
        if not eliminated:
            assert not occ & board.ABOVE_PLANET, "a Bubblee stayed above the planet"
        if state.outcome is None:
            assert not board.groups_to_remove(masks), "a line was left on the planet"
    assert (state.phase == pb.PHASE_POWERS) == bool(state.pool) or state.outcome is not None
    assert (state.phase == pb.PHASE_PLACE) == bool(state.drawn)


@SETTINGS
@given(seed=st.integers(0, 10**9), options=st.sampled_from(OPTIONS), data=st.data())
def test_random_legal_play_keeps_every_invariant(
    seed: int, options: pb.Options, data: st.DataObject
) -> None:
    seats = [Seat("solo")] if options.solo_level else [Seat("a"), Seat("b")]
    game_seed = b"prop-%d" % seed
    log = rules.setup(options, seats, Rng(game_seed, 0))
    state = GAME.replay(log)
    check_invariants(state)
    for _ in range(2000):
        if state.outcome is not None:
            break
        legal = rules.legal_actions(state, state.turn)
        assert legal, "the player to act has no legal command"
        command = legal[data.draw(st.integers(0, len(legal) - 1), label="command")]
        events = GAME.decide_now(state, state.turn, command, Rng(game_seed, len(log)))
        state = fold(state, events)
        log += events
        check_invariants(state)
    assert state.outcome is not None
    assert GAME.replay(log) == state  # replaying the log gives the state


@SETTINGS
@given(seed=st.integers(0, 10**9), data=st.data())
def test_view_shows_the_whole_state(seed: int, data: st.DataObject) -> None:
    """Nothing is hidden: the view holds everything but the count of draws (and solo seed)."""
    state = GAME.replay(rules.setup(pb.Options(), [Seat("a"), Seat("b")], Rng.for_test(seed)))
    for step in range(40):
        if state.outcome is not None:
            break
        seen = state_from_view(view(state, 0))
        assert seen == state._replace(draws=0, draw_seed=0)
        assert view(state, 0).SerializeToString() != b""
        assert view(state, 1).planets == view(state, None).planets
        legal = rules.legal_actions(state, state.turn)
        command = legal[data.draw(st.integers(0, len(legal) - 1))]
        state = fold(state, GAME.decide_now(state, state.turn, command, Rng(b"v", step)))


def test_every_listed_command_is_accepted() -> None:
    rng = Rng.for_test(9)
    state = GAME.replay(rules.setup(pb.Options(), [Seat("a"), Seat("b")], Rng.for_test(9)))
    for step in range(300):
        if state.outcome is not None:
            break
        legal = rules.legal_actions(state, state.turn)
        for command in legal:
            GAME.decide_now(state, state.turn, command, Rng(b"x", step))  # raises if refused
        state = fold(state, GAME.decide_now(state, state.turn, rng.choice(legal), Rng(b"x", step)))
    assert state.outcome is not None


def _any_command(draw: st.DrawFn) -> pb.Command:
    small = st.integers(-2, 6)
    cmd = pb.Command()
    kind = draw(st.sampled_from(["place", "swap", "drop", "apply_power", "decline_power", ""]))
    if kind == "place":
        cmd.place.cell.column, cmd.place.cell.row = draw(small), draw(small)
    elif kind in ("swap", "drop"):
        msg = getattr(cmd, kind)
        msg.a.column, msg.a.row, msg.b.column, msg.b.row = (draw(small) for _ in range(4))
    elif kind == "apply_power":
        cmd.apply_power.index, cmd.apply_power.column = draw(small), draw(small)
        if draw(st.booleans()):
            cmd.apply_power.a.column, cmd.apply_power.a.row = draw(small), draw(small)
            cmd.apply_power.b.column, cmd.apply_power.b.row = draw(small), draw(small)
    elif kind == "decline_power":
        cmd.decline_power.index = draw(small)
    return cmd


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**9), data=st.data())
def test_any_command_is_accepted_or_refused_cleanly(seed: int, data: st.DataObject) -> None:
    """Whatever a client sends, decide returns events or raises a RuleError with a code and a
    sentence; a refused command changes nothing."""
    rng = Rng.for_test(seed)
    state = GAME.replay(rules.setup(pb.Options(), [Seat("a"), Seat("b")], rng))
    for step in range(20):
        if state.outcome is not None:
            break
        command = data.draw(st.composite(_any_command)())
        seat = data.draw(st.sampled_from([0, 1, None]))
        before = state
        try:
            events = GAME.decide_now(state, seat, command, Rng(b"any", step))
        except RuleError as e:
            assert e.code.isupper() and e.message
            assert state == before
        else:
            state = fold(state, events)
            check_invariants(state)
        legal = rules.legal_actions(state, state.turn) if state.outcome is None else []
        if legal:
            command = rng.choice(legal)
            state = fold(state, GAME.decide_now(state, state.turn, command, Rng(b"l", step)))


def _every_command(state: State) -> list[pb.Command]:
    """Every command a client could send now (planet pairs: every ordered pair of cells)."""
    sky = [(c, r) for r in range(2) for c in range(board.WIDTH)]
    land = [(c, r) for r in range(board.HEIGHT) for c in range(board.WIDTH)]
    out = []
    if state.phase == pb.PHASE_PLACE:
        for c, r in sky:
            cmd = pb.Command()
            cmd.place.cell.column, cmd.place.cell.row = c, r
            out.append(cmd)
        return out
    if state.phase == pb.PHASE_ACTION:
        for kind in ("swap", "drop"):
            for a, b in itertools.permutations(sky, 2):
                cmd = pb.Command()
                msg = getattr(cmd, kind)
                (msg.a.column, msg.a.row), (msg.b.column, msg.b.row) = a, b
                out.append(cmd)
        return out
    for index in range(len(state.pool) + 1):
        cmd = pb.Command()
        cmd.decline_power.index = index
        out.append(cmd)
        for column in range(board.WIDTH):
            cmd = pb.Command()
            cmd.apply_power.index, cmd.apply_power.column = index, column
            out.append(cmd)
        for a, b in itertools.permutations(land, 2):
            cmd = pb.Command()
            ap = cmd.apply_power
            ap.index = index
            (ap.a.column, ap.a.row), (ap.b.column, ap.b.row) = a, b
            out.append(cmd)
    return out


def _meaning(state: State, cmd: pb.Command) -> tuple:
    """What a command does: the cells of a pair in either order are one command, and pool
    entries of one colour are interchangeable (docs/rulings/bubblee.md T5, P7)."""
    kind = cmd.WhichOneof("kind")
    msg = getattr(cmd, kind)
    if kind == "place":
        return (kind, msg.cell.column, msg.cell.row)
    if kind in ("swap", "drop"):
        return (kind, frozenset([(msg.a.column, msg.a.row), (msg.b.column, msg.b.row)]))
    power = state.pool[msg.index]
    if kind == "decline_power":
        return (kind, power)
    if power in (board.RED, board.GREEN):
        return (kind, power, frozenset([(msg.a.column, msg.a.row), (msg.b.column, msg.b.row)]))
    return (kind, power, msg.column)


def _changes_nothing(state: State, cmd: pb.Command) -> bool:
    """A swap of two Bubblees of one colour (in the sky, or by red or green on a planet):
    accepted, never listed (docs/rulings/bubblee.md T6)."""
    kind = cmd.WhichOneof("kind")
    if kind == "swap":
        a, b = (rules._sky_index(c, "") for c in (cmd.swap.a, cmd.swap.b))
        return state.sky[a] == state.sky[b]
    power = state.pool[cmd.apply_power.index] if kind == "apply_power" else 0
    if power in (board.RED, board.GREEN) and cmd.apply_power.HasField("b"):
        planet = state.turn if power == board.GREEN else 1 - state.turn
        masks = state.planets[planet]
        a, b = (rules._planet_index(c, "") for c in (cmd.apply_power.a, cmd.apply_power.b))
        return board.colour_at(masks, a) == board.colour_at(masks, b)
    return False


def _random_settled_planet(rnd: random.Random, full: float) -> board.Masks:
    while True:
        masks = [0] * 6
        for column in range(board.WIDTH):
            h = board.HEIGHT if rnd.random() < full else rnd.randint(0, board.HEIGHT)
            for row in range(h):
                masks[rnd.choice((1, 2, 3, 4, 5, 6, 6)) - 1] |= board.bit(column, row)
        if not board.groups_to_remove(masks):
            return (masks[0], masks[1], masks[2], masks[3], masks[4], masks[5])


def test_legal_actions_list_exactly_what_decide_accepts() -> None:
    """Every command decide accepts is listed (up to the order of a pair and the index of an
    interchangeable pool entry), but for swaps that change nothing, and every listed command
    is accepted: at random moments of real games and on crowded random tables (full columns,
    eliminations)."""
    rnd = random.Random(7)
    states = []
    for g, options in enumerate(OPTIONS[:2] + OPTIONS[4:5]):
        seats = [Seat("solo")] if options.solo_level else [Seat("a"), Seat("b")]
        state = GAME.replay(rules.setup(options, seats, Rng(b"exact", g)))
        for step in range(150):
            if state.outcome is not None:
                break
            if step % 9 == 0 or state.phase == pb.PHASE_POWERS:
                states.append(state)
            legal = rules.legal_actions(state, state.turn)
            state = fold(state, GAME.decide_now(state, state.turn, rnd.choice(legal),
                                             Rng(b"exact", step)))
    base = helpers.table()
    for _ in range(40):
        full = rnd.choice((0.3, 0.8, 1.0))
        powers = rnd.random() < 0.5
        states.append(base._replace(
            planets=(_random_settled_planet(rnd, full), _random_settled_planet(rnd, full)),
            sky=tuple(rnd.randint(1, 6) for _ in range(10)),
            turn=rnd.randint(0, 1),
            swapped=rnd.random() < 0.5,
            phase=pb.PHASE_POWERS if powers else pb.PHASE_ACTION,
            pool=tuple(rnd.randint(1, 5) for _ in range(rnd.randint(1, 2))) if powers else (),
        ))
    for state in states:
        legal = rules.legal_actions(state, state.turn)
        listed = {_meaning(state, cmd) for cmd in legal}
        for cmd in legal:
            GAME.decide_now(state, state.turn, cmd, Rng(b"exact", 0))  # raises if refused
        accepted = set()
        for cmd in _every_command(state):
            try:
                GAME.decide_now(state, state.turn, cmd, Rng(b"exact", 0))
            except RuleError:
                continue
            if not _changes_nothing(state, cmd):
                accepted.add(_meaning(state, cmd))
            else:
                assert _meaning(state, cmd) not in listed, state
        assert accepted == listed, state
        assert rules.legal_actions(state, 1 - state.turn) == [] or state.seats == 1
