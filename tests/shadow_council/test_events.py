"""The 12 global events (Shadow Council — Game Manual, "Event System"). Round 1 is used where the
passives would otherwise blur the numbers (passives skip round 1)."""

from __future__ import annotations

import pytest
from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import RuleError
from services.shadow_council import data
from services.shadow_council.rules import legal_actions
from tests.shadow_council.helpers import act, command, of_kind, play, play_cmd, start_round, table


def test_one_random_event_per_round_from_the_12() -> None:
    assert len(data.EVENTS) == 12
    s, events = start_round(table(), "PLAGUE", round=1)
    assert of_kind(events, "round_started")[0].event == pb.EVENT_PLAGUE
    assert s.event == "PLAGUE"


def test_tax_collector_all_lose_1_gold_or_military_minus_1_if_broke() -> None:
    s = table(gold=[4, 0, 2, 0], zones=(5, 0, 0, 0))
    s, _ = start_round(s, "TAX_COLLECTOR", round=1)
    assert s.gold == (3, 0, 1, 0)
    assert s.zone("MILITARY") == 3


def test_dark_alley_riot_shadow_cards_have_double_effect() -> None:
    s = table(event="DARK_ALLEY_RIOT", hands=[["CONSPIRACY", "DARK_ALLEY"], [], [], []])
    s = play(s, 0, "CONSPIRACY")
    assert (s.zone("SHADOW_ALLEY"), s.gold[0]) == (4, 6)
    s = play(s, 0, "DARK_ALLEY")
    assert s.zone("SHADOW_ALLEY") == 10


def test_dark_alley_riot_doubles_chaos_discards_and_draws() -> None:
    s = table(event="DARK_ALLEY_RIOT", hands=[["CHAOS", "TAX", "TAX"], ["TAX"] * 3,
                                              ["TAX"] * 3, ["TAX"] * 3], deck=["PEEK"] * 8)
    s = play(s, 0, "CHAOS")
    assert [h.count("PEEK") for h in s.hands] == [2, 2, 2, 2]
    assert [len(h) for h in s.hands] == [2, 3, 3, 3]


def test_diplomatic_banquet_military_cards_cannot_be_used() -> None:
    s = table(event="DIPLOMATIC_BANQUET", hands=[["RALLY", "FORGE"], [], [], []])
    with pytest.raises(RuleError) as err:
        act(s, 0, play_cmd("RALLY"))
    assert err.value.code == "MILITARY_BANNED"
    with pytest.raises(RuleError):
        act(s, 0, play_cmd("FORGE", suit="MILITARY"))
    assert not any(c.play.card == pb.CARD_RALLY for c in legal_actions(s, 0))


def test_border_conflict_military_zone_auto_plus_2() -> None:
    s, _ = start_round(table(), "BORDER_CONFLICT", round=1)
    assert s.zone("MILITARY") == 2


def test_market_boom_all_players_gain_1_gold() -> None:
    s, _ = start_round(table(gold=[0, 1, 2, 3]), "MARKET_BOOM", round=1)
    assert s.gold == (1, 2, 3, 4)


def test_divine_oracle_each_player_gets_1_free_peek() -> None:
    s, _ = start_round(table(), "DIVINE_ORACLE", round=1)
    assert s.free_peek == (True,) * 4
    s2, events = act(s, 0, command(free_peek=pb.FreePeek(target=2)))
    assert s2.actions == 2 and not s2.free_peek[0]
    assert of_kind(events, "clue_gained")[0].keyword


def test_plague_player_with_most_cards_discards_2() -> None:
    s = table(hands=[["TAX"] * 3, ["TAX"] * 5, ["TAX"] * 2, ["TAX"] * 4])
    s, _ = start_round(s, "PLAGUE", round=1)
    assert [len(h) for h in s.hands] == [3, 3, 2, 4]


def test_arms_race_military_cards_plus_1_effect() -> None:
    s = table(event="ARMS_RACE", hands=[["RALLY", "CONSCRIPT"], [], [], []], deck=["TAX"] * 5)
    s = play(s, 0, "RALLY")
    assert s.zone("MILITARY") == 4
    s = play(s, 0, "CONSCRIPT")
    assert s.hands[0] == ("TAX",) * 3


def test_donation_season_all_plus_1_gold_and_economy_zone_plus_1() -> None:
    s, _ = start_round(table(), "DONATION_SEASON", round=1)
    assert s.gold == (5,) * 4 and s.zone("ECONOMY") == 1


def test_dark_night_dark_assassinate_ignores_guard() -> None:
    s = table(n=5, event="DARK_NIGHT", guarded=(False, True, False, False, False),
              hands=[["DARK_ASSASSINATE", "TAX"]] + [["TAX"]] * 4)
    s = play(s, 0, "DARK_ASSASSINATE", target=1)
    assert not s.alive[1]


def test_memory_fragments_each_player_gets_1_free_reflect() -> None:
    s, _ = start_round(table(shadow=["SPY", "GENERAL", "MERCHANT", "ASSASSIN"]),
                       "MEMORY_FRAGMENTS", round=1)
    assert s.free_reflect == (True,) * 4
    s2, _ = act(s, 0, command(free_reflect=pb.FreeReflect()))
    assert s2.actions == 2 and s2.clues[0][0].kind == "NOT_IDENTITY"
    assert s2.clues[0][0].identity != "SPY"


def test_judgment_day_player_with_fewest_cards_discards_all_draws_3() -> None:
    s = table(hands=[["TAX"] * 3, ["TAX"] * 1, ["TAX"] * 2, ["TAX"] * 4], deck=["PEEK"] * 5)
    s, _ = start_round(s, "JUDGMENT_DAY", round=1)
    assert s.hands[1] == ("PEEK",) * 3
    assert s.discard[-1] == "TAX"
