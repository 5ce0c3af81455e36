"""Every one of the 32 cards, as printed (Shadow Council — Game Manual, "Card System").

Table: seat 0 General, 1 Merchant (Order), 2 Assassin, 3 Alchemist (Chaos); seat 0 to act.
"""

from __future__ import annotations

import pytest

from services.core.decider import RuleError
from services.shadow_council import data
from tests.shadow_council.helpers import act, of_kind, play, play_cmd, table


def with_card(card: str, **kw: object):
    hands = kw.pop("hands", None) or [[card, "TAX"], ["TAX", "BOUNTY"], ["TAX", "TAX"], ["TAX"]]
    return table(hands=hands, **kw)  # type: ignore[arg-type]


def test_every_printed_card_exists_8_per_suit_and_9_strategy() -> None:
    suits = [spec.suit for spec in data.CARDS.values()]
    assert [suits.count(s) for s in data.SUITS] == [8, 8, 9, 8]


def test_ruling_deck_is_64_cards_16_per_suit_with_one_peek_and_one_forge() -> None:
    deck = data.full_deck()
    assert len(deck) == 64
    assert [sum(data.CARDS[c].suit == s for c in deck) for s in data.SUITS] == [16] * 4
    assert deck.count("PEEK") == deck.count("FORGE") == 1
    assert all(deck.count(c) == 2 for c in data.CARDS if c not in ("PEEK", "FORGE"))


def test_full_deck_option_has_two_copies_of_all_33_cards() -> None:
    assert len(data.full_deck(all_copies=True)) == 66


# ---- Military ---------------------------------------------------------------------------


def test_rally_military_zone_plus_3() -> None:
    s = play(with_card("RALLY"), 0, "RALLY")
    assert s.zone("MILITARY") == 3
    assert "RALLY" not in s.hands[0] and s.discard[-1] == "RALLY"
    assert s.actions == 1


def test_assassinate_target_discards_1_card() -> None:
    s = play(with_card("ASSASSINATE"), 0, "ASSASSINATE", target=1)
    assert len(s.hands[1]) == 1


def test_siege_military_zone_plus_2_and_target_skips_next_turn() -> None:
    s = play(with_card("SIEGE"), 0, "SIEGE", target=1)
    assert s.zone("MILITARY") == 2
    assert s.skip_turn[1]


def test_guard_blocks_1_attack() -> None:
    s = table(hands=[["GUARD", "TAX"], ["ASSASSINATE"], ["TAX"], ["TAX"]])
    s = play(s, 0, "GUARD")
    assert s.guarded[0]
    s = play(s, 0, "TAX")  # ends seat 0's turn; seat 1 attacks
    assert s.current == 1
    s2, events = act(s, 1, play_cmd("ASSASSINATE", target=0))
    assert len(s2.hands[0]) == len(s.hands[0])
    assert of_kind(events, "attack_blocked")
    assert not s2.guarded[0]


def test_conscript_draw_2_cards() -> None:
    s = play(with_card("CONSCRIPT", deck=["SCHEME", "PEEK", "RALLY"]), 0, "CONSCRIPT")
    assert s.hands[0] == ("TAX", "SCHEME", "PEEK")


def test_charge_military_zone_plus_4() -> None:
    assert play(with_card("CHARGE"), 0, "CHARGE").zone("MILITARY") == 4


def test_scout_reveals_1_card_suit_from_target_to_the_player_only() -> None:
    s = with_card("SCOUT", hands=[["SCOUT", "TAX"], ["PEEK", "PEEK"], ["TAX"], ["TAX"]])
    s = play(s, 0, "SCOUT", target=1)
    (clue,) = s.clues[0]
    assert (clue.kind, clue.subject, clue.suit) == ("SUIT", 1, "STRATEGY")
    assert s.clues[1] == ()


def test_mutiny_military_zone_plus_2_economy_zone_minus_1() -> None:
    s = play(with_card("MUTINY", zones=(0, 3, 0, 0)), 0, "MUTINY")
    assert (s.zone("MILITARY"), s.zone("ECONOMY")) == (2, 2)


# ---- Economy ----------------------------------------------------------------------------


def test_tax_gain_2_gold() -> None:
    assert play(with_card("TAX"), 0, "TAX").gold[0] == 6


def test_bribe_steal_1_gold_from_target() -> None:
    s = play(with_card("BRIBE"), 0, "BRIBE", target=2)
    assert (s.gold[0], s.gold[2]) == (5, 3)


def test_monopoly_economy_zone_plus_3() -> None:
    assert play(with_card("MONOPOLY"), 0, "MONOPOLY").zone("ECONOMY") == 3


def test_invest_economy_zone_plus_2_gain_1_gold() -> None:
    s = play(with_card("INVEST"), 0, "INVEST")
    assert (s.zone("ECONOMY"), s.gold[0]) == (2, 5)


def test_bankrupt_target_loses_2_gold() -> None:
    assert play(with_card("BANKRUPT"), 0, "BANKRUPT", target=3).gold[3] == 2


def test_trade_both_you_and_target_draw_1_card() -> None:
    s = play(with_card("TRADE", deck=["SCHEME", "PEEK"]), 0, "TRADE", target=2)
    assert s.hands[0] == ("TAX", "SCHEME")
    assert s.hands[2] == ("TAX", "TAX", "PEEK")


def test_bounty_gain_3_gold() -> None:
    assert play(with_card("BOUNTY"), 0, "BOUNTY").gold[0] == 7


def test_thrift_economy_zone_plus_1_draw_1_card() -> None:
    s = play(with_card("THRIFT", deck=["PEEK"]), 0, "THRIFT")
    assert (s.zone("ECONOMY"), s.hands[0]) == (1, ("TAX", "PEEK"))


# ---- Strategy ---------------------------------------------------------------------------


def test_peek_shows_a_keyword_of_the_target_shadow_identity_to_the_player_only() -> None:
    s = play(with_card("PEEK", shadow=["SPY", "GENERAL", "MERCHANT", "ASSASSIN"]), 0, "PEEK",
             target=1)
    (clue,) = s.clues[0]
    assert clue.kind == "KEYWORD" and clue.subject == 1
    assert clue.keyword in data.KEYWORDS["GENERAL"]
    assert all(s.clues[k] == () for k in (1, 2, 3))


@pytest.mark.parametrize("suit,zone", [("MILITARY", "MILITARY"), ("ECONOMY", "ECONOMY"),
                                       ("STRATEGY", "STRATEGY"), ("SHADOW", "SHADOW_ALLEY")])
def test_forge_fakes_any_suit_plus_2_to_that_zone(suit: str, zone: str) -> None:
    assert play(with_card("FORGE"), 0, "FORGE", suit=suit).zone(zone) == 2


def test_propaganda_shadow_alley_plus_2() -> None:
    assert play(with_card("PROPAGANDA"), 0, "PROPAGANDA").zone("SHADOW_ALLEY") == 2


def test_prophecy_correct_gains_2_gold() -> None:
    s = play(with_card("PROPHECY"), 0, "PROPHECY", target=2, guess="ASSASSIN")
    assert s.gold[0] == 6
    assert s.clues[0][0].kind == "IDENTITY" and s.clues[0][0].identity == "ASSASSIN"


def test_prophecy_wrong_loses_1_gold() -> None:
    s = play(with_card("PROPHECY"), 0, "PROPHECY", target=2, guess="SPY")
    assert s.gold[0] == 3
    assert s.clues[0][0].kind == "NOT_IDENTITY" and s.clues[0][0].identity == "SPY"


def test_sow_discord_2_targets_each_discard_1_card() -> None:
    s = play(with_card("SOW_DISCORD"), 0, "SOW_DISCORD", target=1, second=2)
    assert (len(s.hands[1]), len(s.hands[2])) == (1, 1)


def test_sow_discord_needs_two_different_targets() -> None:
    with pytest.raises(RuleError) as err:
        act(with_card("SOW_DISCORD"), 0, play_cmd("SOW_DISCORD", target=1, second=1))
    assert err.value.code == "SAME_TARGET_TWICE"


def test_insight_shows_all_suits_in_target_hand() -> None:
    s = with_card("INSIGHT", hands=[["INSIGHT", "TAX"], ["PEEK", "RALLY", "POISON"], ["TAX"],
                                    ["TAX"]])
    s = play(s, 0, "INSIGHT", target=1)
    assert s.clues[0][0].suits == ("MILITARY", "STRATEGY", "SHADOW")


def test_scheme_strategy_zone_plus_3() -> None:
    assert play(with_card("SCHEME"), 0, "SCHEME").zone("STRATEGY") == 3


def test_secret_order_strategy_zone_plus_2_draw_1_card() -> None:
    s = play(with_card("SECRET_ORDER", deck=["PEEK"]), 0, "SECRET_ORDER")
    assert (s.zone("STRATEGY"), s.hands[0]) == (2, ("TAX", "PEEK"))


def test_reflect_gives_a_clue_about_your_own_shadow_identity() -> None:
    s = play(with_card("REFLECT", shadow=["SPY", "MERCHANT", "ASSASSIN", "ALCHEMIST"]), 0,
             "REFLECT")
    (clue,) = s.clues[0]
    assert clue.kind == "NOT_IDENTITY" and clue.subject == 0 and clue.identity != "SPY"


# ---- Shadow -----------------------------------------------------------------------------


def test_disguise_swaps_public_identity_with_target() -> None:
    s = play(with_card("DISGUISE"), 0, "DISGUISE", target=2)
    assert (s.public[0], s.public[2]) == ("ASSASSIN", "GENERAL")
    assert s.shadow == ("GENERAL", "MERCHANT", "ASSASSIN", "ALCHEMIST")


def test_poison_shows_a_keyword_of_the_target_to_the_player_only() -> None:
    s = play(with_card("POISON"), 0, "POISON", target=3)
    (clue,) = s.clues[0]
    assert clue.keyword in data.KEYWORDS["ALCHEMIST"] and clue.source == "POISON"


def test_chaos_all_discard_1_then_all_draw_1() -> None:
    s = with_card("CHAOS", hands=[["CHAOS", "TAX"], ["TAX", "TAX"], ["TAX"], ["TAX", "TAX"]],
                  deck=["PEEK", "PEEK", "PEEK", "PEEK"])
    s = play(s, 0, "CHAOS")
    assert [len(h) for h in s.hands] == [1, 2, 1, 2]
    assert all(h[-1] == "PEEK" for h in s.hands)


def test_dark_assassinate_eliminates_an_unguarded_target() -> None:
    s = play(with_card("DARK_ASSASSINATE", n=5), 0, "DARK_ASSASSINATE", target=3)
    assert not s.alive[3]


def test_eavesdrop_shows_the_target_shadow_identity_to_the_player_only() -> None:
    s = play(with_card("EAVESDROP", shadow=["SPY", "GENERAL", "MERCHANT", "ASSASSIN"]), 0,
             "EAVESDROP", target=3)
    assert (s.clues[0][0].kind, s.clues[0][0].identity) == ("IDENTITY", "ASSASSIN")


def test_dark_alley_shadow_alley_plus_3() -> None:
    assert play(with_card("DARK_ALLEY"), 0, "DARK_ALLEY").zone("SHADOW_ALLEY") == 3


def test_conspiracy_shadow_alley_plus_2_gain_1_gold() -> None:
    s = play(with_card("CONSPIRACY"), 0, "CONSPIRACY")
    assert (s.zone("SHADOW_ALLEY"), s.gold[0]) == (2, 5)


def test_brainwash_swaps_target_public_and_shadow_identity() -> None:
    s = with_card("BRAINWASH", shadow=["GENERAL", "SPY", "ASSASSIN", "ALCHEMIST"])
    s = play(s, 0, "BRAINWASH", target=1)
    assert (s.public[1], s.shadow[1]) == ("SPY", "MERCHANT")


# ---- playing cards in general -----------------------------------------------------------


def test_playing_a_card_costs_1_action_and_2_actions_end_the_turn() -> None:
    s = table(hands=[["TAX", "TAX", "TAX"], ["TAX"], ["TAX"], ["TAX"]])
    s = play(s, 0, "TAX")
    assert (s.current, s.actions) == (0, 1)
    s = play(s, 0, "TAX")
    assert (s.current, s.actions) == (1, 2)


def test_card_not_in_hand_is_refused() -> None:
    with pytest.raises(RuleError) as err:
        act(table(), 0, play_cmd("RALLY"))
    assert err.value.code == "CARD_NOT_IN_HAND"


def test_targeting_yourself_is_refused() -> None:
    with pytest.raises(RuleError) as err:
        act(with_card("PEEK"), 0, play_cmd("PEEK", target=0))
    assert err.value.code == "TARGET_IS_SELF"


def test_playing_out_of_turn_is_refused() -> None:
    with pytest.raises(RuleError) as err:
        act(table(), 1, play_cmd("TAX"))
    assert err.value.code == "NOT_YOUR_TURN"
