"""Take the last counter, rule by rule (docs/rulings/toy.md names the test of each ruling)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.core.decider import MalformedCommand, Rng, RuleError, Seat
from services.toy import GAME
from services.toy.schema import pb
from services.toy.state import State

SEATS = [Seat("ann"), Seat("bob")]


def opened(seed: int = 0, **options: int) -> State:
    return GAME.replay(GAME.setup(pb.Options(**options), SEATS, Rng(b"toy-%d" % seed, 0)))


def take(state: State, count: int) -> State:
    for event in GAME.decide_now(state, state.turn, pb.Command(take=count), Rng(b"t", 1)):
        state = GAME.evolve(state, event)
    return state


def test_each_seat_is_dealt_a_secret_stake_from_1_to_3() -> None:
    stakes = {opened(seed).stakes for seed in range(200)}
    assert {s for pair in stakes for s in pair} == {1, 2, 3}
    assert len(stakes) == 9  # every pair is dealt: the seats' draws are apart


def test_a_seat_sees_its_own_stake_and_every_stake_once_the_game_is_over() -> None:
    state = replace(opened(), stakes=(2, 3))
    mine = GAME.view(state, 0)
    assert mine.players[0].stake == 2 and not mine.players[1].HasField("stake")
    assert list(mine.hidden) == ["players[1].stake"]
    spectator = GAME.view(state, None)
    assert list(spectator.hidden) == ["players[0].stake", "players[1].stake"]
    dealt = pb.Event(dealt=pb.Dealt(seat=1, stake=3))
    assert not GAME.redact(dealt, 0).dealt.stake
    assert list(GAME.redact(dealt, 0).hidden) == ["dealt.stake"]
    assert GAME.redact(dealt, 1).dealt.stake == 3
    over = take(replace(state, pile=1), 1)
    assert [p.stake for p in GAME.view(over, None).players] == [2, 3]
    assert not GAME.view(over, None).hidden


def test_taking_more_than_three_or_than_the_pile_is_refused() -> None:
    state = replace(opened(), pile=2)
    assert [c.take for c in GAME.legal_actions(state, state.turn)] == [1, 2]
    with pytest.raises(RuleError) as refused:
        take(state, 3)
    assert refused.value.code == "TOO_MANY"
    with pytest.raises(MalformedCommand):
        take(state, 4)


def test_taking_the_last_counter_wins_and_scores_the_stake() -> None:
    state = replace(opened(), stakes=(2, 3), pile=3, turn=1)
    over = take(state, 3)
    outcome = GAME.outcome(over)
    assert outcome is not None and outcome.winners == (1,) and outcome.scores == (0, 3)
    assert GAME.to_act(over) == [] and GAME.legal_actions(over, 0) == []


def test_a_timeout_takes_one_counter_and_a_stale_one_is_refused() -> None:
    state = opened(timeout_seconds=30)
    [(seconds, command)] = GAME.deadlines(state)  # type: ignore[misc]
    assert seconds == 30 and command.timeout == state.pile
    [event] = GAME.decide_now(state, None, command, Rng(b"t", 1))
    assert event.took.forced and event.took.count == 1 and event.took.seat == state.turn
    later = GAME.evolve(state, event)
    with pytest.raises(RuleError) as refused:
        GAME.decide_now(later, None, command, Rng(b"t", 2))
    assert refused.value.code == "STALE_TIMEOUT"
    with pytest.raises(RuleError):
        GAME.decide_now(later, later.turn, pb.Command(timeout=later.pile), Rng(b"t", 2))
