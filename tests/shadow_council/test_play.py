"""Whole games: random legal play reaches the end, replay(log) == state at every step, the
same seed gives the same game, and refused commands change nothing."""

from __future__ import annotations

import copy

import pytest
from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import MalformedCommand, Rng, RuleError, Seat
from services.shadow_council import GAME
from services.shadow_council.rules import legal_actions, to_act
from tests.shadow_council.helpers import new_game, table


def play_out(seed: int, n: int, bot: str = "random") -> tuple[list[pb.Event], object]:
    seats = [Seat(f"p{k}", "ai" if k % 2 else "human") for k in range(n)]
    log = GAME.setup(pb.Options(), seats, Rng(b"play-%d" % seed, 0))
    state = GAME.replay(log)
    version = 1
    while GAME.outcome(state) is None:
        acting = to_act(state)
        assert len(acting) == 1
        legal = legal_actions(state, acting[0])
        assert legal
        rng = Rng(b"play-%d" % seed, version)
        cmd = GAME.bots[bot](GAME.view(state, acting[0]), legal, rng)
        before = copy.deepcopy(state)
        events = GAME.decide_now(state, acting[0], cmd, rng)
        assert state == before  # decide never mutates
        for e in events:
            state = GAME.evolve(state, e)
        log += events
        assert GAME.replay(log) == state
        version += 1
    return log, state


@pytest.mark.parametrize("n", [4, 5, 6])
def test_random_play_reaches_the_end_and_replays(n: int) -> None:
    for seed in range(10):
        _, state = play_out(seed, n)
        assert GAME.outcome(state) is not None


@pytest.mark.parametrize("n", [4, 5, 6])
def test_sleuth_play_reaches_the_end_and_replays(n: int) -> None:
    for seed in range(4):
        _, state = play_out(seed, n, "sleuth")
        assert GAME.outcome(state) is not None


def test_same_seed_same_game() -> None:
    assert play_out(7, 5)[0] == play_out(7, 5)[0]


def test_command_without_a_kind_is_malformed() -> None:
    with pytest.raises(MalformedCommand):
        GAME.decide_now(table(), 0, pb.Command(), Rng.for_test(0))


def test_target_out_of_range_is_malformed() -> None:
    cmd = pb.Command(play=pb.PlayCard(card=pb.CARD_PEEK, target=9))
    with pytest.raises(MalformedCommand):
        GAME.decide_now(table(hands=[["PEEK"], [], [], []]), 0, cmd, Rng.for_test(0))


def test_card_unspecified_is_malformed() -> None:
    with pytest.raises(MalformedCommand):
        GAME.decide_now(table(), 0, pb.Command(play=pb.PlayCard()), Rng.for_test(0))


def test_refused_commands_leave_the_state_unchanged() -> None:
    s, _ = new_game(5, 3)
    before = copy.deepcopy(s)
    for seat in range(5):
        for cmd in [pb.Command(end_turn=pb.EndTurn()), pb.Command(skip_guess=pb.SkipGuess()),
                    pb.Command(free_reflect=pb.FreeReflect())]:
            try:
                GAME.decide_now(s, seat, cmd, Rng.for_test(0))
            except RuleError:
                pass
    assert s == before
