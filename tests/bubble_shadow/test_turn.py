"""A turn: making a pact (A or B), Blank Pacts, the golden rule, payment, the next Magician."""

from __future__ import annotations

import pytest
from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import tokens as tk
from services.bubble_shadow.cards import card
from services.bubble_shadow.rules import eligible_mortals, legal_actions, signable_ends
from services.core.decider import MalformedCommand, RuleError

from .helpers import act, decide_events, fold, table, tokens

M2_B2 = 16  # 2 Moons / 2 Bubbles
M1_S1 = 0
M2_S2 = 4
M2_S3 = 5  # 2 Moons / 3 Silver Coins
BLANK_MOON_1 = 36
S1_B1 = 24


def test_action_a_plays_a_card_from_hand() -> None:
    state = table(hands={0: (M1_S1, M2_S2)})
    after = act(state, 0, play_cmd(M2_S2, 1))
    assert after.pending is not None and after.pending.card == M2_S2
    assert after.players[0].hand == (M1_S1,)
    assert after.stage == pb.STAGE_SIGN


def test_action_b_swaps_a_hand_card_for_a_public_pact() -> None:
    state = table(hands={0: (M1_S1,)}, public=(BLANK_MOON_1, 40, 44))
    after = act(state, 0, play_cmd(M1_S1, 1, slot=2, blank=(pb.MOON, 3)))
    assert after.pending is not None and after.pending.card == 44
    assert after.public == (BLANK_MOON_1, 40, M1_S1)
    assert after.players[0].hand == ()


def test_only_the_magician_plays() -> None:
    state = table(hands={0: (M1_S1,), 1: (M2_S2,)})
    with pytest.raises(RuleError) as err:
        act(state, 1, play_cmd(M2_S2, 2))
    assert err.value.code == "NOT_YOUR_TURN"


def test_card_must_be_in_hand() -> None:
    state = table(hands={0: (M1_S1,)})
    with pytest.raises(RuleError) as err:
        act(state, 0, play_cmd(M2_S2, 1))
    assert err.value.code == "CARD_NOT_IN_HAND"


def test_unknown_card_is_malformed() -> None:
    state = table(hands={0: (M1_S1,)})
    with pytest.raises(MalformedCommand):
        act(state, 0, play_cmd(99, 1))


def test_magician_cannot_choose_themselves() -> None:
    state = table(hands={0: (M1_S1,)})
    with pytest.raises(RuleError) as err:
        act(state, 0, play_cmd(M1_S1, 0))
    assert err.value.code == "MORTAL_IS_MAGICIAN"


def test_mortal_must_have_the_fewest_pacts() -> None:
    state = table(hands={0: (M1_S1,)}, pacts={0: 1, 1: 2, 2: 1})
    assert eligible_mortals(state, 0) == [2]
    with pytest.raises(RuleError) as err:
        act(state, 0, play_cmd(M1_S1, 1))
    assert err.value.code == "MORTAL_NOT_FEWEST"


def test_tied_fewest_pacts_magician_chooses() -> None:
    state = table(n=4, hands={0: (M1_S1,)}, pacts={1: 1})
    assert eligible_mortals(state, 0) == [2, 3]
    mortals = {c.play_pact.mortal for c in legal_actions(state, 0)}
    assert mortals == {2, 3}


def test_blank_pact_magician_names_the_missing_end() -> None:
    state = table(hands={0: (M1_S1,)}, public=(BLANK_MOON_1, 40, 44))
    after = act(state, 0, play_cmd(M1_S1, 1, slot=0, blank=(pb.BUBBLE, 2)))
    assert after.pending is not None
    assert after.pending.ends == ((pb.MOON, 1), (pb.BUBBLE, 2))


def test_blank_pact_end_cannot_repeat_the_printed_price() -> None:
    state = table(hands={0: (M1_S1,)}, public=(BLANK_MOON_1, 40, 44))
    with pytest.raises(RuleError) as err:
        act(state, 0, play_cmd(M1_S1, 1, slot=0, blank=(pb.MOON, 2)))
    assert err.value.code == "BAD_BLANK_END"


@pytest.mark.parametrize("quantity", [0, 4])
def test_blank_pact_quantity_is_one_to_three(quantity: int) -> None:
    state = table(hands={0: (M1_S1,)}, public=(BLANK_MOON_1, 40, 44))
    with pytest.raises(RuleError) as err:
        act(state, 0, play_cmd(M1_S1, 1, slot=0, blank=(pb.SILVER, quantity)))
    assert err.value.code == "BAD_BLANK_END"


def test_blank_pact_must_name_its_end() -> None:
    state = table(hands={0: (M1_S1,)}, public=(BLANK_MOON_1, 40, 44))
    with pytest.raises(RuleError) as err:
        act(state, 0, play_cmd(M1_S1, 1, slot=0))
    assert err.value.code == "BAD_BLANK_END"


def test_blank_pact_cannot_be_a_fourth_pact() -> None:
    state = table(hands={0: (M1_S1,)}, public=(BLANK_MOON_1, 40, 44),
                  pacts={0: 3, 1: 4, 2: 4})
    with pytest.raises(RuleError) as err:
        act(state, 0, play_cmd(M1_S1, 1, slot=0, blank=(pb.SILVER, 1)))
    assert err.value.code == "BLANK_AS_FOURTH_PACT"
    assert all(not c.play_pact.HasField("public_slot") for c in legal_actions(state, 0))


def test_regular_pact_takes_no_named_end() -> None:
    state = table(hands={0: (M1_S1,)})
    with pytest.raises(RuleError) as err:
        act(state, 0, play_cmd(M1_S1, 1, blank=(pb.BUBBLE, 1)))
    assert err.value.code == "NOT_A_BLANK_PACT"


# ---- The golden rule --------------------------------------------------------------------


def signing(mortal_behind: tk.Tokens, mortal_front: tk.Tokens = tk.EMPTY, card: int = M2_B2,
            magician_behind: tk.Tokens | None = None):  # noqa: ANN201
    state = table(hands={0: (card,)}, behind={1: mortal_behind,
                                              0: magician_behind or tokens(moon=3, bubble=3)},
                  front={1: mortal_front})
    return act(state, 0, play_cmd(card, 1))


def test_golden_rule_both_ends_payable_either_end() -> None:
    state = signing(tokens(moon=2, bubble=2))
    assert signable_ends(state) == [0, 1]


def test_golden_rule_one_end_payable_must_take_it() -> None:
    state = signing(tokens(moon=2, bubble=1))
    assert signable_ends(state) == [0]
    with pytest.raises(RuleError) as err:
        act(state, 1, sign_cmd(1))
    assert err.value.code == "GOLDEN_RULE"


def test_golden_rule_no_end_payable_either_end() -> None:
    state = signing(tokens(moon=1, bubble=1))
    assert signable_ends(state) == [0, 1]


def test_golden_rule_counts_tokens_in_front_and_behind() -> None:
    state = signing(tokens(bubble=1), mortal_front=tokens(bubble=1))
    assert signable_ends(state) == [1]


def test_golden_rule_counts_special_tokens_as_their_price() -> None:
    # An Apple and a Palette on its Moon face pay Moons; a Rose and a Chess Piece on its
    # Bubble face pay Bubbles; an Oyster pays one Silver Coin.
    assert signable_ends(signing(tokens(apple=1, palette_moon=1))) == [0]
    assert signable_ends(signing(tokens(rose=1, chess_bubble=1))) == [1]
    assert signable_ends(signing(tokens(oyster=1, silver=1), card=M2_S2)) == [1]
    assert signable_ends(signing(tokens(palette_silver=2, chess_silver=2))) == [0, 1]


def test_rulebook_example_mary_and_william() -> None:
    # Mary (0) plays 2 Moons / 2 Bubbles to William (1), who cannot pay either end in full.
    state = signing(tokens(moon=1, bubble=1), magician_behind=tokens(moon=2))
    after = act(state, 1, sign_cmd(1))  # he turns the Bubble end toward himself
    mary, william = after.players[:2]
    assert mary.front == tokens(bubble=1)  # he pays as much as he can: his one Bubble
    assert william.front == tokens(moon=2)  # Mary pays him 2 Moons
    assert william.behind == tokens(moon=1)


def test_rulebook_example_pact_card_two_moons_for_three_silver_coins() -> None:
    # "a Pact Card showing 2 Moons on one end and 3 Silver Coins on the other represents that
    # the two players will trade 2 Moon Tokens for 3 Silver Coin Tokens."
    assert card(M2_S3).ends == ((pb.MOON, 2), (pb.SILVER, 3))
    state = table(hands={0: (M2_S3,)}, behind={0: tokens(moon=3), 1: tokens(silver=4)})
    state = fold(state, decide_events(state, 0, play_cmd(M2_S3, 1)))
    events = decide_events(state, 1, sign_cmd(1))  # the Mortal takes the Silver Coin end
    signed = events[0].pact_signed
    assert (signed.mortal_price.token, signed.mortal_price.quantity) == (pb.SILVER, 3)
    assert (signed.magician_price.token, signed.magician_price.quantity) == (pb.MOON, 2)
    magician, mortal = fold(state, events).players[:2]
    assert magician.front == tokens(silver=3) and magician.behind == tokens(moon=1)
    assert mortal.front == tokens(moon=2) and mortal.behind == tokens(silver=1)


def test_both_pay_as_much_as_they_can() -> None:
    state = signing(tokens(moon=1), magician_behind=tokens(bubble=1))
    after = act(state, 1, sign_cmd(0))
    assert after.players[0].front == tokens(moon=1)
    assert after.players[1].front == tokens(bubble=1)


def test_received_tokens_go_in_front_of_the_screen() -> None:
    state = signing(tokens(moon=2), magician_behind=tokens(bubble=2))
    after = act(state, 1, sign_cmd(0))
    assert after.players[0].front == tokens(moon=2) and after.players[0].behind == tk.EMPTY
    assert after.players[1].front == tokens(bubble=2) and after.players[1].behind == tk.EMPTY


def test_payments_use_tokens_held_before_the_pact() -> None:
    # A Chess Piece handed to the Magician and tossed to its Silver face cannot pay the
    # Magician's Silver end of the same pact: both pay from what they held before it.
    for seed in range(20):
        state = table(hands={0: (S1_B1,)}, behind={1: tokens(chess_bubble=1)})
        state = act(state, 0, play_cmd(S1_B1, 1))
        after = act(state, 1, sign_cmd(1), seed=seed)
        assert after.players[1].front == tk.EMPTY
        assert after.players[0].front[pb.CHESS_BUBBLE] + after.players[0].front[
            pb.CHESS_SILVER] == 1


def test_default_pay_order_front_before_behind() -> None:
    state = signing(tokens(moon=2), mortal_front=tokens(moon=1))
    after = act(state, 1, sign_cmd(0))
    assert after.players[1].front == tokens(bubble=2)
    assert after.players[1].behind == tokens(moon=1)


def test_default_pay_order_main_token_first_oyster_last() -> None:
    order = tk.choose_payment(tokens(oyster=1, snake=1, silver=1), tokens(), pb.SILVER, 2)
    assert order == [(pb.SILVER, False), (pb.SNAKE, False)]
    order = tk.choose_payment(tokens(apple=1, palette_moon=1, moon=1), tokens(), pb.MOON, 2)
    assert order == [(pb.MOON, False), (pb.PALETTE_MOON, False)]


def test_pay_order_chooses_which_tokens_to_pay() -> None:
    state = signing(tokens(moon=1, apple=1), mortal_front=tokens(moon=1))
    after = act(state, 1, sign_cmd(0, [(pb.APPLE, True), (pb.MOON, True)]))
    assert after.players[0].front == tokens(apple=1, moon=1)
    assert after.players[1].front == tokens(moon=1, bubble=2)


def test_pay_order_naming_another_price_is_ignored() -> None:
    state = signing(tokens(moon=2))
    after = act(state, 1, sign_cmd(0, [(pb.BUBBLE, True), (pb.SILVER, False)]))
    assert after.players[0].front == tokens(moon=2)


def test_magician_pay_order_is_given_when_playing() -> None:
    state = table(hands={0: (M2_B2,)}, behind={0: tokens(bubble=1, rose=1), 1: tokens(moon=2)})
    state = act(state, 0, play_cmd(M2_B2, 1, pay_order=[(pb.ROSE, True)]))
    after = act(state, 1, sign_cmd(0))
    assert after.players[1].front == tokens(rose=1, bubble=1)
    state = table(hands={0: (M2_B2,)}, behind={0: tokens(bubble=2, rose=1), 1: tokens(moon=2)})
    after = act(act(state, 0, play_cmd(M2_B2, 1)), 1, sign_cmd(0))
    assert after.players[0].behind == tokens(rose=1)  # by default the Rose is kept


def test_payment_is_public() -> None:
    from services.bubble_shadow.view import redact

    state = signing(tokens(moon=2))
    [signed] = decide_events(state, 1, sign_cmd(0))[:1]
    assert redact(signed, 2) == signed and redact(signed, None) == signed
    assert len(signed.pact_signed.mortal_paid) == 2


def test_signed_pact_lies_in_front_of_the_magician() -> None:
    after = act(signing(tokens(moon=2)), 1, sign_cmd(0))
    assert len(after.players[0].pacts) == 1 and len(after.players[1].pacts) == 0
    assert after.players[0].pacts[0].mortal == 1


def test_mortal_becomes_the_next_magician() -> None:
    after = act(signing(tokens(moon=2)), 1, sign_cmd(0))
    assert after.magician == 1 and after.stage == pb.STAGE_PLAY


def test_only_the_mortal_signs() -> None:
    state = signing(tokens(moon=2))
    with pytest.raises(RuleError) as err:
        act(state, 2, sign_cmd(0))
    assert err.value.code == "NOT_YOUR_TURN"


def test_sign_end_is_zero_or_one() -> None:
    with pytest.raises(MalformedCommand):
        act(signing(tokens(moon=2)), 1, sign_cmd(2))


def play_cmd(card: int, mortal: int, slot: int | None = None,
             blank: tuple[int, int] | None = None,
             pay_order: list[tuple[int, bool]] | None = None) -> pb.Command:
    from .helpers import play

    return play(card, mortal, slot, blank, pay_order)


def sign_cmd(end: int, pay_order: list[tuple[int, bool]] | None = None) -> pb.Command:
    from .helpers import sign

    return sign(end, pay_order)
