"""The six passives, Disguise and Brainwash (Shadow Council — Game Manual, "Character System",
"Special Mechanics"). Seats 0-5 hold General, Merchant, Prophet, Assassin, Alchemist, Spy."""

from __future__ import annotations

import pytest
from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import RuleError
from services.shadow_council import data
from services.shadow_council.rules import card_pb, legal_actions, to_act
from services.shadow_council.state import ACTIONS, PASSIVES
from tests.shadow_council.helpers import act, command, of_kind, play, start_round, table

QUIET = "DARK_NIGHT"  # an event with no effect when the round starts


def six(**kw: object):
    return table(n=6, deck=["PEEK"] * 20, **kw)  # type: ignore[arg-type]


def no_assassin(**kw: object):
    """Six players, but the Assassin's public identity is replaced by a duplicate Spy."""
    return six(public=["GENERAL", "MERCHANT", "PROPHET", "SPY", "ALCHEMIST", "SPY"], **kw)


def test_passives_do_not_trigger_in_round_1() -> None:
    s, _ = start_round(six(), QUIET, round=1)
    assert s.zones == (0, 0, 0, 0) and s.gold == (4,) * 6
    assert s.phase == ACTIONS and s.current == 0


def test_general_passive_military_zone_plus_1() -> None:
    s, _ = start_round(no_assassin(), QUIET)
    assert s.zone("MILITARY") == 1


def test_merchant_passive_gain_1_gold() -> None:
    s, _ = start_round(no_assassin(), QUIET)
    assert s.gold[1] == 5


def test_prophet_passive_draw_1_extra_card() -> None:
    s, _ = start_round(no_assassin(), QUIET)
    assert s.hands[2] == ("TAX", "TAX", "TAX", "PEEK")


def test_alchemist_passive_economy_zone_plus_1() -> None:
    s, _ = start_round(no_assassin(), QUIET)
    assert s.zone("ECONOMY") == 1


def test_spy_passive_views_a_random_surviving_player_keyword() -> None:
    s, _ = start_round(no_assassin(), QUIET)
    (clue,) = s.clues[5]
    assert clue.kind == "KEYWORD" and clue.source == "SPY" and clue.subject != 5
    assert clue.keyword in data.KEYWORDS[s.shadow[clue.subject]]


def test_assassin_passive_asks_its_owner_for_a_card_and_a_target() -> None:
    s, _ = start_round(six(), QUIET)
    assert (s.phase, to_act(s)) == (PASSIVES, [3])
    legal = legal_actions(s, 3)
    assert {c.WhichOneof("kind") for c in legal} == {"assassin"}
    assert {c.assassin.target for c in legal} == {0, 1, 2, 4, 5}


def test_assassin_passive_discard_1_card_to_make_any_1_player_discard_1() -> None:
    s = six(hands=[["TAX"] * 3, ["TAX"] * 3, ["TAX"] * 3, ["RALLY", "TAX"], ["TAX"] * 3,
                   ["TAX"] * 3])
    s, _ = start_round(s, QUIET)
    s, events = act(s, 3, command(assassin=pb.AssassinOrder(discard=card_pb("RALLY"),
                                                           target=1)))
    assert s.hands[3] == ("TAX",)
    assert len(s.hands[1]) == 2
    # the remaining passives then resolve and the action phase begins
    assert s.zone("ECONOMY") == 1 and s.phase == ACTIONS


def test_assassin_order_from_another_seat_is_refused() -> None:
    s, _ = start_round(six(), QUIET)
    assert 4 not in to_act(s)  # the platform refuses a seat not to act
    with pytest.raises(RuleError) as err:
        act(s, 4, command(assassin=pb.AssassinOrder(discard=card_pb("TAX"), target=1)))
    assert err.value.code == "NOT_YOUR_TURN"


def test_disguise_passives_follow_the_swapped_public_identity() -> None:
    s = no_assassin(hands=[["DISGUISE", "TAX"]] + [["TAX"] * 3] * 5)
    s = play(s, 0, "DISGUISE", target=1)  # General <-> Merchant
    s, events = start_round(s, QUIET)
    assert s.gold[0] == 5  # seat 0 was the Merchant when passives triggered
    assert s.zone("MILITARY") == 1  # seat 1 was the General


def test_disguise_reverts_after_the_next_round_passive_trigger() -> None:
    s = no_assassin(hands=[["DISGUISE", "TAX"]] + [["TAX"] * 3] * 5)
    s = play(s, 0, "DISGUISE", target=1)
    assert s.public[:2] == ("MERCHANT", "GENERAL")
    s, events = start_round(s, QUIET)
    swaps = of_kind(events, "identities_swapped")
    assert [w.kind for w in swaps] == [pb.SWAP_DISGUISE_REVERT]
    assert s.public[:2] == ("GENERAL", "MERCHANT") and s.disguises == ()
    # the revert comes after the passives and before the first turn
    names = [e.WhichOneof("kind") for e in events]
    assert names.index("identities_swapped") > names.index("gold_changed")
    assert names.index("identities_swapped") < names.index("turn_started")


def test_disguise_reverts_only_after_a_disguised_assassin_has_chosen() -> None:
    # Seat 0 (General) takes the Assassin's mask for a round; the next round it is seat 0
    # who is asked for the Assassin's choice, and the masks come back only after it.
    s = six(hands=[["DISGUISE", "TAX", "RALLY"]] + [["TAX"] * 3] * 5)
    s = play(s, 0, "DISGUISE", target=3)
    assert (s.public[0], s.public[3]) == ("ASSASSIN", "GENERAL")
    s, events = start_round(s, QUIET)
    assert s.phase == PASSIVES and to_act(s) == [0]
    assert (s.public[0], s.public[3]) == ("ASSASSIN", "GENERAL")
    assert not of_kind(events, "identities_swapped")
    order = command(assassin=pb.AssassinOrder(discard=card_pb("RALLY"), target=4))
    s, events = act(s, 0, order)
    names = [e.WhichOneof("kind") for e in events]
    assert names.index("passive_resolved") < names.index("identities_swapped")
    assert names.index("identities_swapped") < names.index("turn_started")
    assert (s.public[0], s.public[3]) == ("GENERAL", "ASSASSIN") and s.disguises == ()
    assert s.zone("MILITARY") == 1  # seat 3 still wore the General when its passive triggered
    assert s.phase == ACTIONS


def test_brainwash_changes_the_target_faction() -> None:
    s = table(public=["GENERAL", "MERCHANT", "ASSASSIN", "ALCHEMIST"],
              shadow=["GENERAL", "ASSASSIN", "MERCHANT", "ALCHEMIST"],
              hands=[["BRAINWASH", "TAX"], ["TAX"], ["TAX"], ["TAX"]])
    assert s.faction(1) == "CHAOS"
    s = play(s, 0, "BRAINWASH", target=1)
    assert s.faction(1) == "ORDER" and s.shadow[1] == "MERCHANT"
    assert s.public[1] == "ASSASSIN"  # the new public identity (its passive) is the old shadow
    assert s.facts[-1].kind == "BRAINWASHED"


def test_brainwash_is_permanent() -> None:
    s = table(shadow=["GENERAL", "ASSASSIN", "MERCHANT", "ALCHEMIST"],
              hands=[["BRAINWASH", "TAX"], ["TAX"], ["TAX"], ["TAX"]])
    s = play(s, 0, "BRAINWASH", target=1)
    s, _ = start_round(s, QUIET, round=2)
    s, _ = start_round(s, QUIET, round=3)
    assert s.shadow[1] == "MERCHANT"


def test_guard_lasts_until_the_start_of_the_next_round() -> None:
    s = table(hands=[["GUARD", "TAX"], ["TAX"], ["TAX"], ["TAX"]])
    s = play(s, 0, "GUARD")
    assert s.guarded[0]
    s, _ = start_round(s, QUIET)
    assert not s.guarded[0]
