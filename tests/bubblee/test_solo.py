"""Solo mode (the project ruling "Solo mode"; our solo rules in docs/rulings/bubblee.md)."""

from __future__ import annotations

import asyncio

import pytest
from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME, board, bots, levels, rules
from services.bubblee.state import scores, target_remaining
from services.bubblee.tools import arena, solver
from services.core.decider import MalformedCommand, Rng, RuleError, Seat
from tests.bubblee.helpers import act, apply, bubblee_count, drop, new_game, table

view = GAME.view

R, P, B, G, Y, K = board.COLOURS
POWERS = pb.PHASE_POWERS
LEVELS = levels.all_levels()


def test_at_least_20_authored_levels() -> None:
    assert len(LEVELS) >= 20
    assert "authored" in levels.LEVELS_FILE.read_text()


@pytest.mark.parametrize("lvl", LEVELS, ids=lambda lvl: f"level{lvl.number}")
def test_every_level_loads_and_is_valid(lvl: levels.Level) -> None:
    assert levels.problems(lvl) == []
    state = new_game(pb.Options(solo_level=lvl.number))
    assert state.seats == 1 and state.planets[1] == lvl.target
    assert bubblee_count(state) == 96
    assert all(n >= 0 for n in state.set_aside)


@pytest.mark.parametrize("lvl", LEVELS, ids=lambda lvl: f"level{lvl.number}")
def test_every_level_bag_holds_exactly_3_blacks(lvl: levels.Level) -> None:
    """« la pioche doit toujours contenir exactement 3 Bubblees Noirs »; the solo's setup is
    « identique au mode 1 contre 1 »."""
    assert lvl.bag[K - 1] == rules.BAG_BLACKS == 3
    state = new_game(pb.Options(solo_level=lvl.number))
    assert state.bag[K - 1] == 3


def test_o9_levels_rise_in_measured_difficulty() -> None:
    """Level after level, the careless greedy player wins fewer of its games, or as many and
    leaves more on the target."""
    for easier, harder in zip(LEVELS, LEVELS[1:], strict=False):
        assert easier.difficulty.rank() < harder.difficulty.rank(), f"level {harder.number}"
    assert LEVELS[0].difficulty.wins > LEVELS[-1].difficulty.wins


# Any change to the rules or the greedy bot moves these figures. A spread sample runs in
# `make test-fast`; the other levels (about 15 s in all) are marked slow.
MEASURED_SAMPLE = (1, 5, 10, 15, 20)


@pytest.mark.parametrize("number", [
    n if n in MEASURED_SAMPLE else pytest.param(n, marks=pytest.mark.slow)
    for n in range(1, len(LEVELS) + 1)], ids=lambda n: f"level{n}")
def test_o9_stored_difficulty_is_what_the_measure_gives(number: int) -> None:
    assert solver.difficulty(number) == levels.level(number).difficulty


def test_level_1_is_winnable() -> None:
    outcome, state = arena.play([bots.greedy_bot], 0, pb.Options(solo_level=1))
    assert outcome.winners == (0,) and outcome.reason == "the target planet is cleared"
    assert target_remaining(state) == 0


SOLUTIONS = solver.load_solutions()


def test_every_level_has_a_stored_winning_line() -> None:
    assert set(SOLUTIONS) == {lvl.number for lvl in LEVELS}


@pytest.mark.parametrize("number", sorted(SOLUTIONS), ids=lambda n: f"level{n}")
def test_every_level_is_winnable_by_its_stored_line(number: int) -> None:
    """The solver's line, replayed through the rules (any game seed), clears the target."""
    state = solver.replay_line(number, SOLUTIONS[number])
    assert state.outcome is not None and state.outcome.winners == (0,)
    assert target_remaining(state) == 0


def test_unknown_level_is_malformed() -> None:
    with pytest.raises(MalformedCommand):
        rules.setup(pb.Options(solo_level=len(LEVELS) + 1), [Seat("a")], Rng.for_test(0))


def test_solo_needs_one_seat() -> None:
    with pytest.raises(MalformedCommand) as e:
        rules.setup(pb.Options(solo_level=1), [Seat("a"), Seat("b")], Rng.for_test(0))
    assert e.value.code == "BAD_SEATS"


def test_solo_with_no_powers_is_malformed() -> None:
    with pytest.raises(MalformedCommand):
        rules.setup(pb.Options(solo_level=1, no_powers=True), [Seat("a")], Rng.for_test(0))


def test_solo_player_keeps_the_turn() -> None:
    state = new_game(pb.Options(solo_level=1))
    _, after = act(state, drop((0, 0), (1, 0)))
    assert after.turn == 0 and after.phase == pb.PHASE_PLACE


def test_solo_draws_are_the_levels() -> None:
    """The same level deals the same Bubblees whatever the game's seed."""
    def draws(seed: int) -> list[int]:
        state = new_game(pb.Options(solo_level=3), seed=seed)
        _, state = act(state, drop((0, 0), (1, 0)), seed=seed)
        first = state.drawn
        _, state = act(state, rules_place(0), seed=seed + 1)
        return [first, state.drawn]

    assert draws(1) == draws(2)


def rules_place(column: int) -> pb.Command:
    cmd = pb.Command()
    cmd.place.cell.column = column
    cmd.place.cell.row = 0
    return cmd


def test_solo_win_when_target_has_no_coloured_bubblee() -> None:
    # red swaps K and the R above it: the ground row becomes a red line, only K is left
    state = table(planet1=(".....", ".....", "..R..", "RRKRR"), phase=POWERS, pool=(R,),
                  seats=1, solo_level=1)
    _, after = act(state, apply(0, a=(2, 0), b=(2, 1)))
    assert board.to_rows(after.planets[1])[-1] == "..K.."
    assert after.outcome is not None and after.outcome.winners == (0,)


def test_solo_black_left_on_target_does_not_prevent_the_win() -> None:
    state = table(planet1=(".....", ".....", ".....", "RR.RR"), phase=POWERS, pool=(P,),
                  planet0=(".....", ".....", ".....", "K.R.K"), seats=1, solo_level=1)
    _, after = act(state, apply(0, column=2))
    assert after.outcome is not None and after.outcome.winners == (0,)


def test_solo_loss_when_bag_runs_out() -> None:
    state = table(planet1=(".....", ".....", ".....", "RR.RR"), bag=(1, 0, 0, 0, 0, 0),
                  seats=1, solo_level=1)
    _, after = act(state, drop((0, 0), (1, 0)))
    assert after.outcome is not None and after.outcome.winners == ()


def test_solo_purple_cannot_target_a_full_target_column_even_when_all_are_full() -> None:
    full = ("RPBGY", "PBGYR", "RPBGY", "PBGYR")
    state = table(planet1=full, planet0=(".....", ".....", ".....", "Y...."), phase=POWERS,
                  pool=(P,), seats=1, solo_level=1)
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, apply(0, column=0), Rng.for_test(0))
    assert e.value.code == "TARGET_COLUMN_FULL"
    assert rules.power_targets(state, 0, P) == []


def test_solo_lines_on_target_go_to_the_targets_zone() -> None:
    state = table(planet1=(".....", ".....", ".....", "RRKR."), phase=POWERS, pool=(R,),
                  seats=1, solo_level=1)
    _, after = act(state, apply(0, a=(2, 0), b=(3, 0)))
    assert after.zones[1][R - 1] == 3 and scores(after) == (0,)
    assert bubblee_count(after) == bubblee_count(state)


def test_solo_view_counts_what_is_left_on_the_target() -> None:
    state = new_game(pb.Options(solo_level=1))
    assert view(state, 0).target_remaining == 5


async def test_o9_a_solo_game_stored_before_the_levels_were_reordered_still_verifies(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ruling O9: the levels are ordered by measured difficulty, so a new order gives a level
    number another puzzle. A stored game's set-up event holds its whole level (target, sky,
    bag, draw seed), so it replays as it was; log verification finds the level by what it
    sets up, whatever its number is now."""
    from dataclasses import replace

    from services.core import log as gamelog
    from services.core.decider import Seat
    from services.core.host import Host
    from services.core.server import in_process_ai
    from services.core.store import MemoryStore

    host = Host(MemoryStore(), {GAME.name: GAME}, ai_dispatch=in_process_ai)
    game_id = (await host.create(GAME.name, [Seat("solo", "ai", "greedy")],
                                 pb.Options(solo_level=3))).game_id
    for _ in range(200_000):
        if (await host.load(game_id)).finished:
            break
        await asyncio.sleep(0)
    entries = (await host.history(game_id))[1]
    state = gamelog.verify(GAME, entries).state
    swapped = list(LEVELS)
    swapped[2], swapped[3] = replace(LEVELS[3], number=3), replace(LEVELS[2], number=4)
    monkeypatch.setattr(rules, "all_levels", lambda: tuple(swapped))
    monkeypatch.setattr(rules, "level", lambda n: swapped[n - 1])
    events = [gamelog.game_event(GAME, e) for e in entries if e.WhichOneof("body") == "event"]
    assert GAME.replay(events) == state
    assert gamelog.verify(GAME, entries).state == state
    plain = replace(GAME, recheck=None)  # judged by today's level 3 alone: it differs
    with pytest.raises(gamelog.BadLog):
        gamelog.verify(plain, entries)
