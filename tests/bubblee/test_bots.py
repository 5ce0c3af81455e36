"""Bots: they use only the view and the legal commands; greedy beats random."""

from __future__ import annotations

import pytest
from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME, board, bots, rules
from services.bubblee.state import evolve
from services.bubblee.tools import arena
from services.core.decider import Rng
from tests.bubblee.helpers import new_game, table

view = GAME.view

R, P, B, G, Y, K = board.COLOURS
GREEDY_VS_RANDOM_GAMES = 200


def test_bots_are_registered() -> None:
    assert set(GAME.bots) == {"random", "greedy"}


@pytest.mark.parametrize("name", ["random", "greedy"])
def test_bots_pick_a_legal_command(name: str) -> None:
    state = new_game(seed=4)
    for _ in range(60):
        if state.outcome is not None:
            break
        legal = rules.legal_actions(state, state.turn)
        command = GAME.bots[name](view(state, state.turn), legal, Rng.for_test(1))
        assert command in legal
        for ev in GAME.decide_now(state, state.turn, command, Rng.for_test(2)):
            state = evolve(state, ev)


def test_greedy_takes_a_line_when_it_can() -> None:
    state = table(planet0=(".....", ".....", ".....", "RR..."), sky=("PBGYR", "GYRPB"))
    legal = rules.legal_actions(state, 0)
    command = bots.greedy_bot(view(state, 0), legal, Rng.for_test(0))
    assert command.WhichOneof("kind") == "drop"
    assert {command.drop.a.column, command.drop.b.column} >= {2}


def test_greedy_banks_a_yellow_power() -> None:
    state = table(planet0=(".....", ".....", ".....", "K.G.K"), phase=pb.PHASE_POWERS,
                  pool=(Y,))
    legal = rules.legal_actions(state, 0)
    command = bots.greedy_bot(view(state, 0), legal, Rng.for_test(0))
    assert command.WhichOneof("kind") == "apply_power"


def test_greedy_declines_a_red_swap_that_scores_for_the_opponent() -> None:
    state = table(planet1=(".....", ".....", ".....", "RRBR."), phase=pb.PHASE_POWERS,
                  pool=(R,))
    legal = rules.legal_actions(state, 0)
    command = bots.greedy_bot(view(state, 0), legal, Rng.for_test(0))
    if command.WhichOneof("kind") == "apply_power":  # any swap but the one that gives 3 away
        after = state
        for ev in GAME.decide_now(state, 0, command, Rng.for_test(0)):
            after = evolve(after, ev)
        assert sum(after.zones[1]) == 0


@pytest.mark.slow
def test_greedy_beats_random_in_at_least_80_percent_of_200_games() -> None:
    rate = arena.win_rate(bots.greedy_bot, bots.random_bot, GREEDY_VS_RANDOM_GAMES, seed=1)
    print(f"greedy beats random in {rate:.1%} of {GREEDY_VS_RANDOM_GAMES} games")
    assert rate >= 0.80


def test_greedy_against_itself_plays_to_the_end() -> None:
    outcome, state = arena.play([bots.greedy_bot, bots.greedy_bot], 5)
    assert outcome.winners and state.outcome == outcome
