"""The Dark Swallow: shown when drawn, stopped only by a Mace of Light (which a Cancel may
answer), else the game ends and the Solo team wins."""

from __future__ import annotations

import pytest
from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import RuleError
from services.moody_bear import GAME
from services.moody_bear.cards import (
    BLUE,
    CANCEL,
    DARK_SWALLOW,
    KNIGHT,
    MACE,
    RED,
    SOLO,
)
from services.moody_bear.state import OVER, TURN, WINDOW
from tests.moody_bear.helpers import (
    DECLINE,
    PASS_TURN,
    PLAY_CANCEL,
    PLAY_MACE,
    REJECT,
    act,
    all_decline,
    decline_window,
    kinds,
    table,
)

TEAMS5 = (RED, BLUE, RED, BLUE, SOLO)


def drawn(hands, deck=(DARK_SWALLOW, KNIGHT, KNIGHT), players=5, teams=TEAMS5):  # type: ignore[no-untyped-def]
    """Seat 0 passes and draws the Dark Swallow."""
    state = table(players, hands=hands, deck=deck, teams=teams)
    return act(state, 0, PASS_TURN)


def test_the_dark_swallow_is_shown_and_opens_a_window_for_everyone() -> None:
    state, events = drawn([[], [], [], [], []])
    assert kinds(events) == ["dark_swallow_drawn"]
    assert GAME.redact(events[0], None) == events[0], "everyone sees it"
    assert state.phase == WINDOW and GAME.to_act(state) == [0, 1, 2, 3, 4]
    assert all(DARK_SWALLOW not in h for h in state.hands)


def test_the_dark_swallow_not_stopped_the_solo_team_wins() -> None:
    state, _ = drawn([[], [MACE], [], [], []])
    state, events = all_decline(state)
    assert kinds(events)[-2:] == ["window_closed", "game_ended"]
    assert state.phase == OVER and GAME.outcome(state).winners == (4,)


def test_the_dark_swallow_without_a_solo_player_everyone_loses() -> None:
    state, _ = drawn([[], [], [], []], players=4, teams=(RED, BLUE, RED, BLUE))
    state, _ = all_decline(state)
    assert GAME.outcome(state).winners == ()


def test_the_dark_swallow_without_a_solo_player_names_no_winning_team() -> None:
    """GameEnded.winning_team is TEAM_UNSPECIFIED when nobody wins (the proto's contract)."""
    state, _ = drawn([[], [], [], []], players=4, teams=(RED, BLUE, RED, BLUE))
    state, events = all_decline(state)
    ended = events[-1].game_ended
    assert list(ended.winners) == [] and ended.winning_team == pb.TEAM_UNSPECIFIED
    assert state.winning_team == pb.TEAM_UNSPECIFIED


def test_the_dark_swallow_with_a_solo_player_names_the_solo_team() -> None:
    state, _ = drawn([[], [], [], [], []])
    state, events = all_decline(state)
    assert events[-1].game_ended.winning_team == SOLO


def test_the_dark_swallow_stopped_by_a_mace_goes_back_into_the_deck() -> None:
    positions = set()
    for seed in range(12):
        state, _ = drawn([[], [], [MACE], [], []])
        state, _ = act(state, 2, PLAY_MACE, seed)
        assert GAME.to_act(state) == [0, 1, 3, 4]
        state, events = all_decline(state, seed)
        assert kinds(events)[-3:] == ["window_closed", "dark_swallow_returned", "turn_ended"]
        assert sorted(state.deck) == sorted([DARK_SWALLOW, KNIGHT, KNIGHT])
        positions.add(state.deck.index(DARK_SWALLOW))
        assert state.discard == (MACE,) and state.phase == TURN and state.turn == 1
    assert len(positions) > 1, "back at a random place"


def test_the_drawer_may_answer_with_a_mace() -> None:
    state, _ = drawn([[MACE], [], [], [], []])
    state, _ = act(state, 0, PLAY_MACE)
    state, _ = all_decline(state)
    assert state.phase == TURN and state.turn == 1


def test_a_mace_cancelled_lets_the_dark_swallow_end_the_game() -> None:
    state, _ = drawn([[], [MACE], [], [], [CANCEL]])
    state, _ = act(state, 1, PLAY_MACE)
    state, _ = act(state, 4, PLAY_CANCEL)
    state, events = all_decline(state)
    assert kinds(events).count("window_closed") == 2
    assert GAME.outcome(state).winners == (4,)


def test_a_cancelled_mace_reopens_the_dark_swallow_window() -> None:
    state, _ = drawn([[], [MACE], [MACE], [], [CANCEL]])
    state, _ = act(state, 1, PLAY_MACE)
    state, _ = act(state, 4, PLAY_CANCEL)
    state, _ = decline_window(state)
    assert state.phase == WINDOW and [e.kind for e in state.stack] == [pb.DARK_SWALLOW_ENTRY]
    assert GAME.to_act(state) == [0, 1, 2, 3, 4]
    state, _ = act(state, 2, PLAY_MACE)
    state, _ = all_decline(state)
    assert state.phase == TURN and DARK_SWALLOW in state.deck


def test_the_dark_swallow_cannot_be_cancelled() -> None:
    state, _ = drawn([[], [CANCEL], [], [], []])
    assert GAME.legal_actions(state, 1) == [DECLINE]
    with pytest.raises(RuleError) as e:
        act(state, 1, PLAY_CANCEL)
    assert e.value.code == "SWALLOW_NOT_CANCELLABLE"


def test_a_mace_answers_only_the_dark_swallow() -> None:
    hands = [[KNIGHT, KNIGHT], [MACE], [], []]
    state, _ = act(table(4, hands=hands), 0, pb.Command(play=pb.Play(cards=[KNIGHT, KNIGHT],
                                                                       target=1)))
    with pytest.raises(RuleError) as e:
        act(state, 1, PLAY_MACE)
    assert e.value.code == "NO_DARK_SWALLOW"


def test_the_dark_swallow_drawer_gets_no_other_card() -> None:
    state, _ = drawn([[], [MACE], [], [], []])
    state, _ = act(state, 1, PLAY_MACE)
    state, events = all_decline(state)
    assert state.hands[0] == ()
    # Drawn by passing: once the Swallow is stopped the turn ends and the next seat acts.
    assert kinds(events)[-1] == "turn_ended"
    ended = events[-1].turn_ended
    assert (ended.seat, ended.next) == (0, 1)
    assert state.phase == TURN and state.turn == 1 and not state.acted
    assert GAME.to_act(state) == [1]


def test_a_dark_swallow_drawn_after_a_rejected_trade_lets_the_turn_go_on() -> None:
    hands = [[KNIGHT], [CANCEL], [MACE], [], []]
    state = table(5, hands=hands, deck=[DARK_SWALLOW, KNIGHT], teams=TEAMS5)
    state, _ = act(state, 0, pb.Command(offer=pb.Offer(target=1, card=KNIGHT)))
    state, events = act(state, 1, REJECT)
    assert kinds(events) == ["trade_rejected", "dark_swallow_drawn"]
    state, _ = act(state, 2, PLAY_MACE)
    state, events = all_decline(state)
    assert "turn_ended" not in kinds(events)
    assert state.phase == TURN and state.turn == 0 and state.acted


def test_a_deadline_on_the_dark_swallow_window_ends_the_game() -> None:
    state = table(5, hands=[[], [MACE], [], [], []], deck=[DARK_SWALLOW], teams=TEAMS5,
                  deadline=10)
    state, _ = act(state, 0, PASS_TURN)
    state, events = act(state, None, pb.Command(close_window=pb.CloseWindow(
        window_id=state.window_id)))
    assert events[0].window_closed.by_deadline
    assert GAME.outcome(state).winners == (4,)


def test_the_mace_window_closes_on_its_deadline_and_stops_the_swallow() -> None:
    state = table(5, hands=[[], [MACE], [], [], [CANCEL]], deck=[DARK_SWALLOW], teams=TEAMS5,
                  deadline=10)
    state, _ = act(state, 0, PASS_TURN)
    state, _ = act(state, 1, PLAY_MACE)
    state, events = act(state, None, pb.Command(close_window=pb.CloseWindow(
        window_id=state.window_id)))
    assert kinds(events) == ["window_closed", "dark_swallow_returned", "turn_ended"]
