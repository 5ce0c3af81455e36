"""Response windows: Cancels stack last-in first-out, can be cancelled, and close on passes or
on the server's deadline command."""

from __future__ import annotations

from dataclasses import replace

import pytest
from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import RuleError
from services.moody_bear import GAME
from services.moody_bear.cards import (
    AMBASSADOR,
    ASSASSIN,
    CANCEL,
    KNIGHT,
    LAVA_GEM,
    MACE,
    REVEAL,
    SHUFFLE,
    SNOW_DIAMOND,
)
from services.moody_bear.state import TURN, WINDOW
from tests.moody_bear.helpers import (
    DECLINE,
    PLAY_CANCEL,
    act,
    all_decline,
    kinds,
    play,
    table,
)


def close(window_id: int) -> pb.Command:
    return pb.Command(close_window=pb.CloseWindow(window_id=window_id))


def steal_table(**kw):  # type: ignore[no-untyped-def]
    hands = [[KNIGHT, KNIGHT], [LAVA_GEM, CANCEL], [CANCEL], [CANCEL, SNOW_DIAMOND]]
    return table(4, hands=hands, **kw)


def test_an_announced_item_opens_a_window_for_every_other_player() -> None:
    state, events = act(steal_table(), 0, play(KNIGHT, KNIGHT, target=1))
    assert kinds(events) == ["announced"] and state.phase == WINDOW
    assert GAME.to_act(state) == [1, 2, 3]
    assert set(GAME.view(state, 1).may) == {"decline", "cancel"}


def test_the_window_waits_for_players_without_a_cancel() -> None:
    state = table(4, hands=[[SHUFFLE], [], [], []], deck=[KNIGHT] * 4)
    state, _ = act(state, 0, play(SHUFFLE))
    assert GAME.to_act(state) == [1, 2, 3]
    assert GAME.legal_actions(state, 1) == [DECLINE]


def test_the_window_closes_when_all_who_may_respond_have_passed() -> None:
    state, _ = act(steal_table(), 0, play(KNIGHT, KNIGHT, target=1))
    state, _ = act(state, 1, DECLINE)
    state, events = act(state, 3, DECLINE)
    assert kinds(events) == ["declined"] and state.phase == WINDOW
    state, events = act(state, 2, DECLINE)
    assert kinds(events) == ["declined", "window_closed", "card_stolen"]
    assert state.phase == TURN


def test_a_cancel_voids_the_item() -> None:
    state, _ = act(steal_table(), 0, play(KNIGHT, KNIGHT, target=1))
    state, _ = act(state, 1, PLAY_CANCEL)
    state, events = all_decline(state)
    closed = [e.window_closed for e in events if e.HasField("window_closed")][0]
    assert closed.cancelled and closed.cancels == 1
    assert "card_stolen" not in kinds(events)
    assert state.hands[1] == (LAVA_GEM,)


def test_cancelling_a_combo_discards_all_its_cards() -> None:
    state, _ = act(steal_table(), 0, play(KNIGHT, KNIGHT, target=1))
    state, _ = act(state, 2, PLAY_CANCEL)
    state, _ = all_decline(state)
    assert sorted(state.discard) == sorted([KNIGHT, KNIGHT, CANCEL])
    assert state.hands[0] == ()


def test_a_cancel_of_a_cancel_of_a_combo_lets_the_combo_resolve() -> None:
    state, _ = act(steal_table(), 0, play(KNIGHT, KNIGHT, target=1))
    state, _ = act(state, 1, PLAY_CANCEL)
    state, _ = act(state, 3, PLAY_CANCEL)
    assert [e.kind for e in GAME.view(state, 0).window.stack] == [
        pb.ITEM, pb.CANCEL_ENTRY, pb.CANCEL_ENTRY]
    state, events = all_decline(state)
    closed = [e.window_closed for e in events if e.HasField("window_closed")][0]
    assert not closed.cancelled and closed.cancels == 2
    assert state.hands[0] == (LAVA_GEM,), "the pair stole the only card left"
    assert sorted(state.discard) == sorted([KNIGHT, KNIGHT, CANCEL, CANCEL])


def test_a_third_cancel_voids_the_combo_again() -> None:
    state, _ = act(steal_table(), 0, play(KNIGHT, KNIGHT, target=1))
    for seat in (1, 3, 2):
        state, _ = act(state, seat, PLAY_CANCEL)
    state, events = all_decline(state)
    assert "card_stolen" not in kinds(events)
    assert state.hands[1] == (LAVA_GEM,)


def test_the_player_may_cancel_a_cancel_of_their_own_item() -> None:
    hands = [[REVEAL, CANCEL], [CANCEL], [], []]
    state, _ = act(table(4, hands=hands), 0, play(REVEAL, target=1))
    state, _ = act(state, 1, PLAY_CANCEL)
    assert 0 in GAME.to_act(state)
    state, _ = act(state, 0, PLAY_CANCEL)
    state, events = all_decline(state)
    assert "identity_looked" in kinds(events)


def test_you_cannot_answer_your_own_card() -> None:
    hands = [[REVEAL, CANCEL], [], [], []]
    state, _ = act(table(4, hands=hands), 0, play(REVEAL, target=1))
    assert 0 not in GAME.to_act(state)  # the platform refuses a seat not to act
    with pytest.raises(RuleError) as e:
        act(state, 0, PLAY_CANCEL)
    assert e.value.code == "NOT_YOUR_TURN"


def test_a_new_cancel_reopens_the_window_for_everyone_else() -> None:
    state, _ = act(steal_table(), 0, play(KNIGHT, KNIGHT, target=1))
    state, _ = act(state, 2, DECLINE)
    first_id = state.window_id
    state, _ = act(state, 1, PLAY_CANCEL)
    assert GAME.to_act(state) == [0, 2, 3], "passes are forgotten when a card is added"
    assert state.window_id != first_id


def test_cancel_is_played_only_in_a_window() -> None:
    with pytest.raises(RuleError) as e:
        act(table(4, hands=[[CANCEL], [], [], []]), 0, PLAY_CANCEL)  # seat 0's turn
    assert e.value.code == "NO_WINDOW"


def test_cancel_needs_a_cancel_card() -> None:
    state, _ = act(steal_table(), 0, play(KNIGHT, KNIGHT, target=1))
    state = replace(state, hands=((), (LAVA_GEM,), (), ()))
    with pytest.raises(RuleError) as e:
        act(state, 1, PLAY_CANCEL)
    assert e.value.code == "CARD_NOT_IN_HAND"


def test_the_view_shows_the_open_window_and_its_deadline() -> None:
    state, _ = act(steal_table(deadline=20), 0, play(KNIGHT, KNIGHT, target=1))
    state, _ = act(state, 2, DECLINE)
    window = GAME.view(state, None).window
    assert window.id == state.window_id and window.deadline_seconds == 20
    assert list(window.passed) == [2] and list(window.waiting) == [1, 3]
    assert window.stack[0].play.target == 1 and window.stack[0].seat == 0
    assert GAME.view(state, None).options.response_deadline_seconds == 20


def test_the_server_closes_the_window_when_the_deadline_expires() -> None:
    state, _ = act(steal_table(deadline=20), 0, play(KNIGHT, KNIGHT, target=1))
    state, _ = act(state, 1, PLAY_CANCEL)
    state, events = act(state, None, close(state.window_id))
    assert kinds(events) == ["window_closed"]
    assert events[0].window_closed.by_deadline and events[0].window_closed.cancelled
    assert state.phase == TURN and state.turn == 0


def test_closing_a_window_needs_the_deadline_option() -> None:
    state, _ = act(steal_table(), 0, play(KNIGHT, KNIGHT, target=1))
    with pytest.raises(RuleError) as e:
        act(state, None, close(state.window_id))
    assert e.value.code == "NO_DEADLINE"


def test_a_stale_close_command_is_refused() -> None:
    state, _ = act(steal_table(deadline=5), 0, play(KNIGHT, KNIGHT, target=1))
    old = state.window_id
    state, _ = act(state, 1, PLAY_CANCEL)
    with pytest.raises(RuleError) as e:
        act(state, None, close(old))
    assert e.value.code == "STALE_WINDOW"


def test_a_close_for_a_window_everyone_answered_is_refused() -> None:
    state, _ = act(steal_table(deadline=5), 0, play(KNIGHT, KNIGHT, target=1))
    late = close(state.window_id)
    state, _ = all_decline(state)
    with pytest.raises(RuleError) as e:
        act(state, None, late)
    assert e.value.code == "NO_WINDOW"


def test_only_the_server_closes_a_window() -> None:
    state, _ = act(steal_table(deadline=5), 0, play(KNIGHT, KNIGHT, target=1))
    with pytest.raises(RuleError) as e:
        act(state, 1, close(state.window_id))
    assert e.value.code == "SYSTEM_ONLY"
    with pytest.raises(RuleError) as e:
        act(state, None, DECLINE)
    assert e.value.code == "SEAT_REQUIRED"


def test_every_combo_opens_a_window() -> None:
    combos = [
        play(KNIGHT, KNIGHT, target=1),
        play(ASSASSIN, AMBASSADOR, target=1),
        play(KNIGHT, AMBASSADOR),
        play(KNIGHT, ASSASSIN, direction=pb.LEFT),
        play(KNIGHT, ASSASSIN, AMBASSADOR, target=1, named=LAVA_GEM),
    ]
    for command in combos:
        hands = [list(command.play.cards), [MACE], [], []]
        state, events = act(table(4, hands=hands, deck=[KNIGHT] * 3), 0, command)
        assert kinds(events) == ["announced"] and GAME.to_act(state) == [1, 2, 3]


def test_targets_and_named_cards_are_announced_with_the_play() -> None:
    hands = [[KNIGHT, ASSASSIN, AMBASSADOR], [CANCEL], [], []]
    command = play(KNIGHT, ASSASSIN, AMBASSADOR, target=1, named=LAVA_GEM)
    state, _ = act(table(4, hands=hands), 0, command)
    shown = GAME.view(state, 1).window.stack[0].play
    assert shown.target == 1 and shown.named == LAVA_GEM
    assert sorted(shown.cards) == sorted([KNIGHT, ASSASSIN, AMBASSADOR])


def test_every_seat_that_may_respond_is_told_what_it_may_do() -> None:
    hands = [[REVEAL], [CANCEL], [], [CANCEL]]
    state, _ = act(table(4, hands=hands), 0, play(REVEAL, target=1))
    assert GAME.to_act(state) == [1, 2, 3]
    assert [list(GAME.view(state, s).may) for s in range(4)] == [
        [], ["decline", "cancel"], ["decline"], ["decline", "cancel"]]


def test_the_pending_deadline_names_the_window_to_close() -> None:
    from services.moody_bear.rules import deadline

    assert deadline(steal_table(deadline=15)) is None
    state, _ = act(steal_table(deadline=15), 0, play(KNIGHT, KNIGHT, target=1))
    seconds, command = deadline(state)  # type: ignore[misc]
    assert seconds == 15 and command.close_window.window_id == state.window_id
    state, _ = act(state, None, command)
    assert state.phase == TURN and deadline(state) is None
    state, _ = act(steal_table(), 0, play(KNIGHT, KNIGHT, target=1))
    assert deadline(state) is None, "no deadline option, no timeout"
