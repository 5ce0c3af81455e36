"""A turn: proclaim first, one trade, any number of plays, pass by drawing or end the turn."""

from __future__ import annotations

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
from services.moody_bear.state import TRADE, TURN
from tests.moody_bear.helpers import (
    END_TURN,
    PASS_TURN,
    REJECT,
    act,
    all_decline,
    kinds,
    play,
    table,
)


def offer(target: int, card: int) -> pb.Command:
    return pb.Command(offer=pb.Offer(target=target, card=card))


def accept(card: int) -> pb.Command:
    return pb.Command(accept=pb.Accept(give=card))


def test_turns_go_clockwise_in_seat_order() -> None:
    state = table(4, deck=[KNIGHT, KNIGHT], turn=3)
    state, events = act(state, 3, PASS_TURN)
    assert state.turn == 0 and events[-1].turn_ended.next == 0


def test_proclaim_only_before_any_other_action() -> None:
    state = table(4, hands=[[LAVA_GEM, SHUFFLE], [], [], []], deck=[KNIGHT] * 5)
    state, _ = act(state, 0, play(SHUFFLE))
    state, _ = all_decline(state)
    with pytest.raises(RuleError) as e:
        act(state, 0, pb.Command(proclaim=pb.Proclaim()))
    assert e.value.code == "PROCLAIM_FIRST"


def test_one_trade_per_turn() -> None:
    state = table(4, hands=[[KNIGHT, AMBASSADOR], [MACE], [], []], deck=[CANCEL] * 3)
    state, _ = act(state, 0, offer(1, KNIGHT))
    state, _ = act(state, 1, REJECT)
    with pytest.raises(RuleError) as e:
        act(state, 0, offer(2, AMBASSADOR))
    assert e.value.code == "ALREADY_TRADED"


def test_a_trade_offer_waits_for_the_target_alone() -> None:
    state = table(4, hands=[[KNIGHT], [MACE], [], []])
    state, _ = act(state, 0, offer(1, KNIGHT))
    assert state.phase == TRADE and GAME.to_act(state) == [1]
    assert KNIGHT not in state.hands[0], "the offered card is held aside while the target looks"


def test_an_accepted_trade_returns_a_card_of_the_targets_choice() -> None:
    state = table(4, hands=[[KNIGHT, ASSASSIN], [MACE, CANCEL], [], []])
    state, _ = act(state, 0, offer(1, KNIGHT))
    state, events = act(state, 1, accept(CANCEL))
    assert kinds(events) == ["trade_accepted"]
    assert state.hands[0] == tuple(sorted([ASSASSIN, CANCEL]))
    assert state.hands[1] == tuple(sorted([MACE, KNIGHT]))
    assert state.phase == TURN and state.turn == 0


def test_a_rejected_trade_gives_the_card_back_and_the_offerer_draws() -> None:
    state = table(4, hands=[[KNIGHT], [MACE], [], []], deck=[REVEAL, CANCEL])
    state, _ = act(state, 0, offer(1, KNIGHT))
    state, events = act(state, 1, REJECT)
    assert kinds(events) == ["trade_rejected", "card_drawn"]
    assert state.hands[0] == tuple(sorted([KNIGHT, REVEAL]))
    assert state.hands[1] == (MACE,)
    assert state.deck == (CANCEL,)
    assert state.phase == TURN and state.turn == 0, "the turn goes on"


def test_a_trade_target_with_no_card_can_only_reject() -> None:
    state = table(4, hands=[[KNIGHT], [], [], []], deck=[REVEAL])
    state, _ = act(state, 0, offer(1, KNIGHT))
    assert GAME.legal_actions(state, 1) == [REJECT]
    with pytest.raises(RuleError) as e:
        act(state, 1, accept(KNIGHT))
    assert e.value.code == "NOTHING_TO_RETURN"


def test_the_returned_card_comes_from_the_targets_own_hand() -> None:
    state = table(4, hands=[[KNIGHT], [MACE], [], []])
    state, _ = act(state, 0, offer(1, KNIGHT))
    with pytest.raises(RuleError) as e:
        act(state, 1, accept(KNIGHT))
    assert e.value.code == "CARD_NOT_IN_HAND"


def test_only_the_target_answers_a_trade() -> None:
    state = table(4, hands=[[KNIGHT], [MACE], [CANCEL], []])
    state, _ = act(state, 0, offer(1, KNIGHT))
    assert GAME.to_act(state) == [1]  # the platform refuses the others
    with pytest.raises(RuleError) as e:
        act(state, 2, REJECT)
    assert e.value.code == "NOT_YOUR_TURN"


def test_you_cannot_offer_a_card_you_do_not_hold() -> None:
    state = table(4, hands=[[KNIGHT], [], [], []])
    with pytest.raises(RuleError) as e:
        act(state, 0, offer(1, LAVA_GEM))
    assert e.value.code == "CARD_NOT_IN_HAND"


def test_passing_draws_one_card_and_ends_the_turn() -> None:
    state = table(4, deck=[SNOW_DIAMOND, KNIGHT])
    state, events = act(state, 0, PASS_TURN)
    assert kinds(events) == ["card_drawn", "turn_ended"]
    assert state.hands[0] == (SNOW_DIAMOND,) and state.turn == 1


def test_no_pass_after_acting_the_turn_ends_without_drawing() -> None:
    state = table(4, hands=[[SHUFFLE], [], [], []], deck=[KNIGHT] * 3)
    state, _ = act(state, 0, play(SHUFFLE))
    state, _ = all_decline(state)
    with pytest.raises(RuleError) as e:
        act(state, 0, PASS_TURN)
    assert e.value.code == "ALREADY_ACTED"
    state, events = act(state, 0, END_TURN)
    assert kinds(events) == ["turn_ended"]
    assert state.hands[0] == () and len(state.deck) == 3


def test_ending_a_turn_needs_an_action() -> None:
    with pytest.raises(RuleError) as e:
        act(table(4), 0, END_TURN)
    assert e.value.code == "NOTHING_DONE"


def test_any_number_of_item_plays_in_a_turn() -> None:
    state = table(4, hands=[[SHUFFLE, SHUFFLE, REVEAL], [], [], []], deck=[KNIGHT] * 3)
    for command in (play(SHUFFLE), play(SHUFFLE), play(REVEAL, target=1)):
        state, _ = act(state, 0, command)
        state, _ = all_decline(state)
    assert state.hands[0] == () and state.turn == 0 and state.phase == TURN


def test_a_trade_and_plays_in_the_same_turn() -> None:
    state = table(4, hands=[[SHUFFLE, KNIGHT], [MACE], [], []], deck=[KNIGHT] * 3)
    state, _ = act(state, 0, play(SHUFFLE))
    state, _ = all_decline(state)
    state, _ = act(state, 0, offer(1, KNIGHT))
    state, _ = act(state, 1, accept(MACE))
    assert state.hands[0] == (MACE,) and state.phase == TURN


def test_not_your_turn() -> None:
    with pytest.raises(RuleError) as e:
        act(table(4, deck=[KNIGHT]), 2, PASS_TURN)
    assert e.value.code == "NOT_YOUR_TURN"


def test_legal_actions_are_exactly_the_commands_decide_accepts() -> None:
    """At many moments of random games, every seat is offered every command any seat may
    send: decide accepts it exactly when it is in that seat's legal actions."""
    from services.core.decider import Rng
    from tests.moody_bear.helpers import new_game

    checked = 0
    for players, seed in ((3, 0), (4, 1), (5, 2)):
        state = new_game(players, seed)
        rng = Rng.for_test(seed)
        step = 0
        while GAME.outcome(state) is None:
            legal = {s: GAME.legal_actions(state, s) for s in range(players)}
            pool = {c.SerializeToString(): c for cs in legal.values() for c in cs}
            if step % 3 == 0:
                for seat in range(players):
                    mine = {c.SerializeToString() for c in legal[seat]}
                    for key, command in pool.items():
                        try:
                            GAME.decide_now(state, seat, command, Rng(b"x", step))
                            accepted = True
                        except RuleError:
                            accepted = False
                        assert accepted == (key in mine), (seat, command)
                        checked += 1
            seat = rng.choice(GAME.to_act(state))
            command = rng.choice(legal[seat])
            for e in GAME.decide_now(state, seat, command, Rng(b"p", step)):
                state = GAME.evolve(state, e)
            step += 1
    assert checked > 1000
