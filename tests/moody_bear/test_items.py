"""Every item and every combo, resolved when nobody cancels."""

from __future__ import annotations

from collections import Counter

import pytest
from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import MalformedCommand, RuleError
from services.moody_bear import GAME
from services.moody_bear.cards import (
    AMBASSADOR,
    ASSASSIN,
    BLUE,
    CANCEL,
    DARK_SWALLOW,
    KNIGHT,
    LAVA_GEM,
    MACE,
    REVEAL,
    SHUFFLE,
    SNOW_DIAMOND,
    SWAP,
)
from services.moody_bear.state import ARRANGE, PASSING, TURN
from tests.moody_bear.helpers import act, all_decline, kinds, play, table


def resolved(state, seat, command, seed=0):  # type: ignore[no-untyped-def]
    state, events = act(state, seat, command, seed)
    state, more = all_decline(state, seed)
    return state, events + more


def test_reveal_identity_shows_one_team_card_to_the_player() -> None:
    state = table(4, hands=[[REVEAL], [], [], []])
    state, events = resolved(state, 0, play(REVEAL, target=1))
    looked = [e.identity_looked for e in events if e.HasField("identity_looked")]
    assert looked and looked[0].team == BLUE
    assert GAME.view(state, 0).players[1].team == BLUE
    assert GAME.view(state, 2).players[1].team == pb.TEAM_UNSPECIFIED
    assert state.discard == (REVEAL,)


def test_swap_hand_discards_the_swap_then_exchanges_the_hands() -> None:
    state = table(4, hands=[[SWAP, LAVA_GEM, KNIGHT], [MACE, CANCEL, SNOW_DIAMOND, REVEAL], [], []])
    state, _ = resolved(state, 0, play(SWAP, target=1))
    assert state.hands[0] == tuple(sorted([MACE, CANCEL, SNOW_DIAMOND, REVEAL]))
    assert state.hands[1] == tuple(sorted([LAVA_GEM, KNIGHT]))
    assert state.discard == (SWAP,)


def test_shuffle_the_deck_shuffles_the_drawing_deck() -> None:
    deck = [KNIGHT, ASSASSIN, AMBASSADOR, MACE, CANCEL, REVEAL, SWAP, LAVA_GEM, SNOW_DIAMOND]
    state = table(4, hands=[[SHUFFLE], [], [], []], deck=deck)
    state, events = resolved(state, 0, play(SHUFFLE))
    assert "deck_shuffled" in kinds(events)
    assert Counter(state.deck) == Counter(deck) and list(state.deck) != deck


@pytest.mark.parametrize("card", [KNIGHT, ASSASSIN, AMBASSADOR])
def test_a_pair_steals_one_random_card(card: int) -> None:
    victim = [LAVA_GEM, MACE, CANCEL, REVEAL]
    stolen = set()
    for seed in range(12):
        state = table(4, hands=[[card, card], victim, [], []])
        state, _ = resolved(state, 0, play(card, card, target=1), seed)
        assert len(state.hands[0]) == 1 and len(state.hands[1]) == 3
        assert Counter(state.hands[0]) + Counter(state.hands[1]) == Counter(victim)
        stolen.add(state.hands[0][0])
    assert len(stolen) > 1, "the stolen card is random"


def test_a_pair_against_an_empty_hand_steals_nothing() -> None:
    state = table(4, hands=[[KNIGHT, KNIGHT], [], [], []])
    state, events = resolved(state, 0, play(KNIGHT, KNIGHT, target=1))
    stolen = [e.card_stolen for e in events if e.HasField("card_stolen")]
    assert stolen and not stolen[0].stolen and state.hands[0] == ()


def test_thunder_assassin_and_ambassador_look_at_a_hand() -> None:
    state = table(4, hands=[[ASSASSIN, AMBASSADOR], [LAVA_GEM, MACE], [], []])
    state, events = resolved(state, 0, play(ASSASSIN, AMBASSADOR, target=1))
    looked = [e.hand_looked for e in events if e.HasField("hand_looked")]
    assert list(looked[0].cards) == sorted([LAVA_GEM, MACE])
    assert state.hands[1] == tuple(sorted([LAVA_GEM, MACE])), "looking takes nothing"


def test_forest_knight_and_ambassador_look_at_and_rearrange_the_top_three() -> None:
    state = table(4, hands=[[KNIGHT, AMBASSADOR], [], [], []],
                  deck=[MACE, DARK_SWALLOW, LAVA_GEM, CANCEL])
    state, _ = resolved(state, 0, play(KNIGHT, AMBASSADOR))
    assert state.phase == ARRANGE and GAME.to_act(state) == [0]
    assert list(GAME.view(state, 0).top_cards) == [MACE, DARK_SWALLOW, LAVA_GEM]
    assert list(GAME.view(state, 1).top_cards) == []
    assert len(GAME.legal_actions(state, 0)) == 6
    order = [LAVA_GEM, MACE, DARK_SWALLOW]
    state, _ = act(state, 0, pb.Command(arrange=pb.Arrange(order=order)))
    assert state.deck == (LAVA_GEM, MACE, DARK_SWALLOW, CANCEL) and state.phase == TURN


def test_rearranging_must_use_exactly_the_looked_at_cards() -> None:
    state = table(4, hands=[[KNIGHT, AMBASSADOR], [], [], []], deck=[MACE, CANCEL, REVEAL])
    state, _ = resolved(state, 0, play(KNIGHT, AMBASSADOR))
    with pytest.raises(RuleError) as e:
        act(state, 0, pb.Command(arrange=pb.Arrange(order=[MACE, MACE, CANCEL])))
    assert e.value.code == "NOT_THOSE_CARDS"


def test_forest_knight_and_thunder_assassin_make_everyone_pass_a_card() -> None:
    hands = [[KNIGHT, ASSASSIN, LAVA_GEM], [MACE], [CANCEL, REVEAL], [SNOW_DIAMOND]]
    state = table(4, hands=hands)
    state, _ = resolved(state, 0, play(KNIGHT, ASSASSIN, direction=pb.LEFT))
    assert state.phase == PASSING and GAME.to_act(state) == [0, 1, 2, 3]
    choices = {0: LAVA_GEM, 1: MACE, 2: REVEAL, 3: SNOW_DIAMOND}
    for seat in (2, 0, 3):
        state, events = act(state, seat, pb.Command(choose_pass=pb.ChoosePass(card=choices[seat])))
        assert kinds(events) == ["pass_card_chosen"], "nothing moves until all have chosen"
    state, events = act(state, 1, pb.Command(choose_pass=pb.ChoosePass(card=MACE)))
    assert kinds(events) == ["pass_card_chosen", "cards_passed"]
    # LEFT passes to the next seat in turn order.
    assert state.hands == ((SNOW_DIAMOND,), (LAVA_GEM,), tuple(sorted([CANCEL, MACE])), (REVEAL,))
    assert state.phase == TURN and state.turn == 0


def test_passing_right_goes_to_the_previous_seat() -> None:
    state = table(3, hands=[[KNIGHT, ASSASSIN, LAVA_GEM], [MACE], [CANCEL]])
    state, _ = resolved(state, 0, play(KNIGHT, ASSASSIN, direction=pb.RIGHT))
    for seat, card in ((0, LAVA_GEM), (1, MACE), (2, CANCEL)):
        state, _ = act(state, seat, pb.Command(choose_pass=pb.ChoosePass(card=card)))
    assert state.hands == ((MACE,), (CANCEL,), (LAVA_GEM,))


def test_a_player_without_a_card_passes_nothing_but_receives() -> None:
    state = table(3, hands=[[KNIGHT, ASSASSIN], [MACE], [CANCEL]])
    state, _ = resolved(state, 0, play(KNIGHT, ASSASSIN, direction=pb.LEFT))
    assert GAME.to_act(state) == [1, 2]
    for seat, card in ((1, MACE), (2, CANCEL)):
        state, _ = act(state, seat, pb.Command(choose_pass=pb.ChoosePass(card=card)))
    assert state.hands == ((CANCEL,), (), (MACE,))


def test_three_card_combo_takes_the_named_card() -> None:
    state = table(4, hands=[[KNIGHT, ASSASSIN, AMBASSADOR], [LAVA_GEM, LAVA_GEM, MACE], [], []])
    state, events = resolved(state, 0, play(AMBASSADOR, ASSASSIN, KNIGHT, target=1, named=LAVA_GEM))
    asked = [e.card_requested for e in events if e.HasField("card_requested")]
    assert asked[0].given
    assert state.hands[0] == (LAVA_GEM,) and state.hands[1] == tuple(sorted([LAVA_GEM, MACE]))


def test_three_card_combo_without_the_named_card_does_nothing() -> None:
    state = table(4, hands=[[KNIGHT, ASSASSIN, AMBASSADOR], [MACE], [], []])
    state, events = resolved(state, 0, play(KNIGHT, ASSASSIN, AMBASSADOR, target=1, named=LAVA_GEM))
    asked = [e.card_requested for e in events if e.HasField("card_requested")]
    assert not asked[0].given and state.hands == ((), (MACE,), (), ())


@pytest.mark.parametrize("card", [KNIGHT, ASSASSIN, AMBASSADOR, LAVA_GEM, SNOW_DIAMOND])
def test_combo_cards_and_gems_cannot_be_played_alone(card: int) -> None:
    with pytest.raises(MalformedCommand) as e:
        act(table(4, hands=[[card], [], [], []]), 0, play(card))
    assert e.value.code == "NOT_A_COMBO"


def test_a_cancel_or_a_mace_is_not_played_as_an_item() -> None:
    for card in (CANCEL, MACE):
        with pytest.raises(RuleError) as e:
            act(table(4, hands=[[card], [], [], []]), 0, play(card))
        assert e.value.code == "NOT_NOW"


def test_a_targeted_play_needs_a_target_and_others_take_none() -> None:
    with pytest.raises(MalformedCommand):
        act(table(4, hands=[[REVEAL], [], [], []]), 0, play(REVEAL))
    with pytest.raises(MalformedCommand):
        act(table(4, hands=[[SHUFFLE], [], [], []]), 0, play(SHUFFLE, target=1))
    with pytest.raises(MalformedCommand):
        act(table(4, hands=[[KNIGHT, ASSASSIN], [], [], []]), 0, play(KNIGHT, ASSASSIN))


def test_you_cannot_target_yourself() -> None:
    with pytest.raises(RuleError) as e:
        act(table(4, hands=[[REVEAL], [], [], []]), 0, play(REVEAL, target=0))
    assert e.value.code == "TARGET_IS_YOU"


def test_a_play_needs_the_cards_in_hand() -> None:
    with pytest.raises(RuleError) as e:
        act(table(4, hands=[[KNIGHT], [], [], []]), 0, play(KNIGHT, KNIGHT, target=1))
    assert e.value.code == "CARD_NOT_IN_HAND"


def test_swap_hand_with_an_empty_hand() -> None:
    state = table(4, hands=[[SWAP, LAVA_GEM], [], [], []])
    state, _ = resolved(state, 0, play(SWAP, target=1))
    assert state.hands[0] == () and state.hands[1] == (LAVA_GEM,)


def test_the_three_card_combo_must_name_a_real_card() -> None:
    hands = [[KNIGHT, ASSASSIN, AMBASSADOR], [MACE], [], []]
    with pytest.raises(MalformedCommand) as e:
        act(table(4, hands=hands), 0, play(KNIGHT, ASSASSIN, AMBASSADOR, target=1, named=99))
    assert e.value.code == "NO_CARD"


@pytest.mark.parametrize("named,duo_jewel", [(DARK_SWALLOW, False), (DARK_SWALLOW, True),
                                             (pb.DUO_JEWEL, False)])
def test_the_three_card_combo_names_only_a_card_a_hand_can_hold(named: int, duo_jewel: bool
                                                                 ) -> None:
    """The Dark Swallow never joins a hand, nor the Duo Jewel without its option: naming
    either is refused, as it is missing from the legal actions."""
    hands = [[KNIGHT, ASSASSIN, AMBASSADOR], [MACE], [], []]
    state = table(4, hands=hands, duo_jewel=duo_jewel)
    command = play(ASSASSIN, AMBASSADOR, KNIGHT, target=1, named=named)
    assert command not in GAME.legal_actions(state, 0)
    with pytest.raises(MalformedCommand) as e:
        act(state, 0, command)
    assert e.value.code == "NAMED"


def test_the_duo_jewel_may_be_named_when_it_is_in_the_game() -> None:
    hands = [[KNIGHT, ASSASSIN, AMBASSADOR], [pb.DUO_JEWEL], [], []]
    state = table(4, hands=hands, duo_jewel=True)
    command = play(ASSASSIN, AMBASSADOR, KNIGHT, target=1, named=pb.DUO_JEWEL)
    assert command in GAME.legal_actions(state, 0)
    state, _ = resolved(state, 0, command)
    assert state.hands[0] == (pb.DUO_JEWEL,) and state.hands[1] == ()
