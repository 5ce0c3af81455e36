"""Eila's planner: it wins attempts the greedy bot loses, plans the same whatever the order of
what the player cannot see, and spends no more than its budget. Playout caps make every
figure here repeatable (a CPU budget depends on the machine)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import Rng
from services.eila import GAME, bots, planner, rules
from services.eila.state import State
from services.eila.tools.simulate import new_game, play_chapter
from services.eila.view import redeal


@dataclass(frozen=True)
class Budget:
    cpu_seconds: float
    playouts: int | None = None


def test_the_planner_wins_an_attempt_the_greedy_bot_loses() -> None:
    """Advanced chapter 0, seed 0: the greedy bot runs out of HP; the planner, at 12 playouts
    a move, achieves the goal with the same dice."""
    greedy = play_chapter("greedy", 0, True, 0)
    assert not greedy.won and greedy.reason == "Eila ran out of HP"
    planned = play_chapter("planner:1000000:12", 0, True, 0)
    assert planned.won and planned.reason == "the goal is achieved"


def positions(seed: int, moves: int) -> list[State]:
    """The states of advanced chapter 1 that the greedy bot passes through at `seed`."""
    options = pb.Options(first_chapter=1, advanced=True, single_chapter=True)
    state = new_game(options, seed)
    out = [state]
    for version in range(2, moves):
        command = bots.greedy_bot(GAME.view(state, 0), GAME.legal_actions(state, 0),
                                  Rng(b"bot", version))
        for event in GAME.decide(state, 0, command, Rng(b"game-%d" % seed, version)):
            state = GAME.evolve(state, event)
        if state.phase != "playing":
            break
        out.append(state)
    return out


def unknown_order(state: State) -> list[str]:
    p = state.play
    assert p is not None
    return p.upcoming[p.known:len(p.upcoming) - (1 if p.bottom else 0)]


def test_the_planners_choice_does_not_change_when_the_unseen_is_redealt() -> None:
    """At each of the first 40 positions of a game, the planner chooses the same (same rng,
    same cap) in the real world and in one whose upcoming cards nobody has seen lie in
    another order. (A planner that played out the world it is given, not its own re-deals of
    it, chooses otherwise at positions 17, 21 and 23.)"""
    checked = 0
    for i, state in enumerate(positions(1, 41)):
        other = redeal(state, 0, Rng(b"other-0", i))
        if unknown_order(other) == unknown_order(state):
            continue  # nothing the player cannot see lies otherwise
        budget = Budget(math.inf, 24)
        mine = planner.plan(state, 0, Rng(b"plan", i), budget)
        assert planner.plan(other, 0, Rng(b"plan", i), budget) == mine, i
        checked += 1
    assert checked >= 10


def playouts_of(position: State, budget: Any, clock: list[float] | None = None
                ) -> tuple[Any, int]:
    """The planner's command and how many playouts it ran; with `clock`, each playout
    advances that fake thread time by 10 ms."""
    ran = 0
    real = planner.won_playout

    def counted(*args: Any) -> bool:
        nonlocal ran
        ran += 1
        if clock is not None:
            clock[0] += 0.010
        return real(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(planner, "won_playout", counted)
        if clock is not None:
            patch.setattr(planner.time, "thread_time", lambda: clock[0])
        command = planner.plan(position, 0, Rng(b"plan", 0), budget)
    return command, ran


def a_close_choice() -> State:
    """A position of advanced chapter 1 where the options neither all win nor all lose."""
    for state in positions(1, 200):
        _, ran = playouts_of(state, Budget(math.inf, 40))
        if ran == 40:
            return state
    raise AssertionError("no close choice in the game")


def test_the_planner_runs_no_more_playouts_than_its_cap() -> None:
    state = a_close_choice()
    for cap in (1, 7, 40):
        command, ran = playouts_of(state, Budget(math.inf, cap))
        assert ran == cap and command in rules.legal_actions(state, 0)


def test_the_planner_stops_within_its_cpu_budget() -> None:
    """On a fake clock where each playout takes 10 ms: 95 ms allow 9 playouts (a tenth would
    end past the budget); none fit in none, and the greedy bot's choice is sent."""
    state = a_close_choice()
    clock = [100.0]
    _, ran = playouts_of(state, Budget(0.095), clock)
    assert ran == 9 and clock[0] - 100.0 <= 0.095
    greedy = bots.greedy_bot(GAME.view(state, 0), GAME.legal_actions(state, 0), Rng(b"", 0))
    assert playouts_of(state, Budget(0.0), [0.0]) == (greedy, 0)


def test_a_playout_is_abandoned_when_the_budget_runs_out_during_it() -> None:
    """On a fake clock where each move of a playout takes 1 ms, the first playout (the rest
    of a chapter: more than 5 moves) would end past a 5 ms budget: it is abandoned."""
    state = a_close_choice()
    clock = [0.0]
    real_apply = rules.apply

    def one_ms_a_move(*args: Any) -> None:
        clock[0] += 0.001
        real_apply(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(planner.time, "thread_time", lambda: clock[0])
        patch.setattr(planner.rules, "apply", one_ms_a_move)
        command = planner.plan(state, 0, Rng(b"plan", 0), Budget(0.005))
    assert 0.005 <= clock[0] <= 0.0061 and command in rules.legal_actions(state, 0)
