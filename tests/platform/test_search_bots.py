"""Search bots by name: levels and CPU budgets are accepted where a bot is named, unknown names
are refused with the choices, a playout cap repeats, the CPU budget stops the search, and a
server plays a level's AI turns off its event loop."""

from __future__ import annotations

import asyncio
import itertools
import math
from pathlib import Path

import pytest

from services import games as registry
from services.core import bots, search
from services.core.decider import MalformedCommand, Rng, Seat
from services.core.host import Host
from services.core.search import Budget
from services.core.server import in_process_ai
from services.core.store import MemoryStore
from services.workers.simulate import Plan, check, play_one
from tests.platform.test_cli_play import play

BUBBLEE = registry.game("bubblee")
BUBBLE_SHADOW = registry.game("bubble_shadow")


def opening(game=BUBBLE_SHADOW, seed: int = 0):  # type: ignore[no-untyped-def]
    seats = [Seat(f"p{i}") for i in range(game.seat_count)]
    return game.replay(game.setup(game.pb.Options(), seats, Rng(b"opening-%d" % seed, 0)))


@pytest.mark.parametrize("name", ["easy", "medium", "hard", "1ms", "120ms", "250ms"])
def test_levels_and_budgets_name_a_bot(name: str) -> None:
    assert bots.known(BUBBLEE, name)
    assert bots.level(name) is not None


@pytest.mark.parametrize("name", ["0ms", "251ms", "1000ms", "120", "ms", "Hard", "oracle"])
def test_other_names_are_refused_with_the_choices(name: str) -> None:
    assert not bots.known(BUBBLEE, name)
    with pytest.raises(MalformedCommand) as refused:
        bots.check(BUBBLEE, name)
    assert refused.value.code == "UNKNOWN_BOT"
    assert "greedy" in refused.value.message and "hard" in refused.value.message


def test_a_game_that_hides_something_without_a_redeal_has_no_search_bot() -> None:
    eila = registry.game("eila")
    if eila.redeal is not None:
        pytest.skip("Eila can be re-dealt now")
    assert not bots.known(eila, "hard") and bots.known(eila, "greedy")
    assert "hard" not in bots.bot_names(eila)


async def test_create_game_takes_a_level_and_refuses_an_unknown_bot() -> None:
    host = Host(MemoryStore(), {BUBBLEE.name: BUBBLEE})
    made = await host.create(BUBBLEE.name, [Seat("me"), Seat("ai", "ai", "120ms")],
                             BUBBLEE.pb.Options())
    assert (await host.load(made.game_id)).seats[1].bot == "120ms"
    with pytest.raises(MalformedCommand) as refused:
        await host.create(BUBBLEE.name, [Seat("me"), Seat("ai", "ai", "251ms")],
                          BUBBLEE.pb.Options())
    assert refused.value.code == "UNKNOWN_BOT" and "easy" in refused.value.message


def test_simulations_take_levels() -> None:
    check(Plan("bubblee", 1, ["easy", "greedy"]))
    with pytest.raises(ValueError, match="no bot named 251ms"):
        check(Plan("bubblee", 1, ["251ms", "greedy"]))
    result = play_one(BUBBLEE, ["easy", "greedy"], "search", 0)
    assert result["finished"] and not result["error"]


def test_a_playout_cap_repeats_the_choice() -> None:
    state = opening()
    seat = BUBBLE_SHADOW.to_act(state)[0]
    chosen = {bots.choose_command(BUBBLE_SHADOW, state, seat, "medium", Rng(b"same", 0),
                                  playouts=12).SerializeToString() for _ in range(3)}
    assert len(chosen) == 1


def test_the_search_stops_once_its_cpu_budget_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock that moves 5 ms per playout: a 20 ms budget buys four playouts."""
    now = [0.0]
    played = []
    real_playout = search.playout

    def timed_playout(*args, **kwargs):  # type: ignore[no-untyped-def]
        value = real_playout(*args, **kwargs)
        played.append(value)
        now[0] += 0.005
        return value

    monkeypatch.setattr(search.time, "thread_time", lambda: now[0])
    monkeypatch.setattr(search, "playout", timed_playout)
    state = opening()
    seat = BUBBLE_SHADOW.to_act(state)[0]
    assert len(BUBBLE_SHADOW.legal_actions(state, seat)) > 4
    bots.choose_command(BUBBLE_SHADOW, state, seat, "20ms", Rng(b"budget", 0))
    assert len(played) == 4 and None not in played


def test_a_playout_stops_where_the_budget_runs_out() -> None:
    state = opening()
    seat = BUBBLE_SHADOW.to_act(state)[0]
    bot = BUBBLE_SHADOW.bots["greedy"]
    steps = itertools.count()
    assert search.playout(BUBBLE_SHADOW, state, seat, bot, Rng(b"p", 0), None,
                          lambda: next(steps) >= 3) is None
    assert next(steps) == 4  # checked before each command: three played, stopped at the 4th


async def test_a_server_plays_a_levels_ai_turns() -> None:
    host = Host(MemoryStore(), {BUBBLEE.name: BUBBLEE}, ai_dispatch=in_process_ai)
    seats = [Seat("a", "ai", "easy"), Seat("b", "ai", "greedy")]
    game_id = (await host.create(BUBBLEE.name, seats, BUBBLEE.pb.Options())).game_id
    for _ in range(20_000):
        await asyncio.sleep(0.001)
        if (await host.load(game_id)).version > 40:
            break
    assert (await host.load(game_id)).version > 40


def test_arbiter_play_takes_a_level_and_refuses_an_unknown_one(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    monkeypatch.setenv("ARBITER_PLAY_DIR", str(tmp_path / "play"))
    code, out = play(monkeypatch, capsys, "bubblee", "--bot", "easy", stdin="0\n" * 12 + "q\n")
    assert code == 0 and "against 1 easy bot(s)" in out and "refused" not in out
    code, out = play(monkeypatch, capsys, "bubblee", "--bot", "251ms", stdin="")
    assert code == 2 and "no bot '251ms'" in out and "hard" in out


def scripted_search(monkeypatch: pytest.MonkeyPatch, values: dict[int, list[float]],
                    caution: float) -> int:
    """A search of Bubblee Pop's opening whose playouts are scripted: the candidate
    at index i of the legal commands scores values[i] in turn, round after round (0 for one
    not named). Returns the index it plays."""
    state = opening(BUBBLEE)
    seat = BUBBLEE.to_act(state)[0]
    legal = BUBBLEE.legal_actions(state, seat)
    played: dict[int, int] = {}

    def applied(game, world, seat, command, rng):  # type: ignore[no-untyped-def]
        return legal.index(command)  # the "world after" names the candidate

    def playout(game, index, seat, bot, rng, depth, stop):  # type: ignore[no-untyped-def]
        scores = values.get(index, [0.0])
        played[index] = played.get(index, -1) + 1
        return scores[played[index] % len(scores)]

    monkeypatch.setattr(search, "_applied", applied)
    monkeypatch.setattr(search, "playout", playout)
    chosen = search.search(BUBBLEE, state, seat, Rng(b"scripted", 0),
                           search.Budget(math.inf, 80), None, caution)
    return legal.index(chosen)


def usual_index() -> int:
    state = opening(BUBBLEE)
    seat = BUBBLEE.to_act(state)[0]
    legal = BUBBLEE.legal_actions(state, seat)
    bot = BUBBLEE.bots[BUBBLEE.default_bot]
    return legal.index(bot(BUBBLEE.view(state, seat), legal, Rng(b"scripted", 0)))


def test_a_cautious_search_keeps_the_heuristics_choice_over_a_noisy_lead(
        monkeypatch: pytest.MonkeyPatch) -> None:
    usual = usual_index()
    noisy = 1 if usual != 1 else 2
    values = {usual: [0.5], noisy: [0.9, 0.2]}  # ahead by 0.05 on average: +0.4, then -0.3
    assert scripted_search(monkeypatch, values, 0.0) == noisy
    assert scripted_search(monkeypatch, values, 1.0) == usual


def test_a_cautious_search_still_plays_a_command_that_is_better_in_every_world(
        monkeypatch: pytest.MonkeyPatch) -> None:
    usual = usual_index()
    better = 1 if usual != 1 else 2
    assert scripted_search(monkeypatch, {usual: [0.5], better: [0.6]}, 1.0) == better


def test_a_level_may_set_a_games_depth_and_caution_and_budgets_follow_hard() -> None:
    hard = bots.level("hard")
    assert hard is not None
    level = bots.Level(hard.budget, 12, depths=(("moody_bear", 30),),
                       cautions=(("moody_bear", 1.0),))
    assert (level.depth_for("moody_bear"), level.depth_for("bubblee")) == (30, 12)
    assert (level.caution_for("moody_bear"), level.caution_for("bubblee")) == (1.0, 0.0)
    budget = bots.level("120ms")
    assert budget is not None and (budget.depths, budget.cautions) == (hard.depths,
                                                                       hard.cautions)


def test_a_level_may_set_a_depth_for_one_table_size() -> None:
    level = bots.Level(Budget(0.1), 12, depths=(("moody_bear", 24), ("moody_bear/3", 8)))
    assert [level.depth_for("moody_bear", n) for n in (3, 4, 5, 0)] == [8, 24, 24, 24]
    assert level.depth_for("bubblee", 3) == 12


@pytest.mark.parametrize("players", [3, 4, 5])
def test_hard_searches_moody_bear_as_deep_as_its_table_size_asks(
        monkeypatch: pytest.MonkeyPatch, players: int) -> None:
    moody = registry.game("moody_bear")
    seats = [Seat(f"p{i}") for i in range(players)]
    state = moody.replay(moody.setup(moody.pb.Options(), seats, Rng(b"depth", 0)))
    asked: list[int | None] = []

    def searched(game, state, seat, rng, budget, depth, caution):  # type: ignore[no-untyped-def]
        asked.append(depth)
        return moody.legal_actions(state, seat)[0]

    monkeypatch.setattr(bots, "search", searched)
    seat = moody.to_act(state)[0]
    bots.choose_command(moody, state, seat, "hard", Rng(b"depth", 1))
    hard = bots.level("hard")
    assert hard is not None and asked == [hard.depth_for("moody_bear", players)]
    assert asked == [12 if players == 3 else 24]


def test_a_cautious_search_never_drops_the_heuristics_choice_for_one_bad_world(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The heuristic's choice loses the first world and ties every later one; a noisy
    command is as good on average. Halving after the first world must not drop the choice
    every lead is measured against: the noisy command would then win unchecked."""
    usual = usual_index()
    noisy = 1 if usual != 1 else 2
    state = opening(BUBBLEE)
    count = len(BUBBLEE.legal_actions(state, BUBBLEE.to_act(state)[0]))
    values = {i: [0.1] for i in range(count)}
    values[usual] = [0.0] + [0.5] * 200
    values[noisy] = [0.9, 0.1]
    assert scripted_search(monkeypatch, values, 0.0) == noisy
    assert scripted_search(monkeypatch, values, 1.0) == usual
