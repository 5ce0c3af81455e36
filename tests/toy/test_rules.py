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


def test_each_seat_is_dealt_a_secret_reach_of_2_or_3() -> None:
    reaches = {opened(seed).reaches for seed in range(40)}
    assert {r for pair in reaches for r in pair} == {2, 3}
    assert len(reaches) == 4  # every pair is dealt, the seats' draws apart


def test_a_seat_sees_its_own_reach_and_not_the_others() -> None:
    state = replace(opened(), reaches=(2, 3))
    mine = GAME.view(state, 0)
    assert mine.players[0].reach == 2 and not mine.players[1].HasField("reach")
    assert list(mine.hidden) == ["players[1].reach"]
    spectator = GAME.view(state, None)
    assert list(spectator.hidden) == ["players[0].reach", "players[1].reach"]
    dealt = pb.Event(dealt=pb.Dealt(seat=1, reach=3))
    assert not GAME.redact(dealt, 0).dealt.reach
    assert list(GAME.redact(dealt, 0).hidden) == ["dealt.reach"]
    assert GAME.redact(dealt, 1).dealt.reach == 3


def test_taking_more_than_the_reach_is_refused() -> None:
    state = replace(opened(), reaches=(2, 2), turn=0)
    assert [c.take for c in GAME.legal_actions(state, 0)] == [1, 2]
    with pytest.raises(RuleError) as refused:
        take(state, 3)
    assert refused.value.code == "BEYOND_REACH"


def test_taking_more_than_the_pile_is_refused() -> None:
    state = replace(opened(), reaches=(3, 3), pile=2)
    with pytest.raises(RuleError) as refused:
        take(state, 3)
    assert refused.value.code == "TOO_MANY"
    with pytest.raises(MalformedCommand):
        take(state, 4)


def test_taking_the_last_counter_wins() -> None:
    state = replace(opened(), reaches=(3, 3), pile=3, turn=1)
    over = take(state, 3)
    outcome = GAME.outcome(over)
    assert outcome is not None and outcome.winners == (1,)
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
