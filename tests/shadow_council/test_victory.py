"""Eliminations, Guard and victory (Shadow Council — Game Manual, "Elimination Conditions",
"Victory Conditions", "Guard"; the project rulings)."""

from __future__ import annotations

import pytest
from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import RuleError
from services.shadow_council import GAME
from services.shadow_council.rules import final_result, tally
from tests.shadow_council.helpers import act, command, of_kind, play, play_cmd, table

view = GAME.view

# Seats 0-3 shadows: General, Merchant (Order), Assassin, Alchemist (Chaos).

# ---- eliminations -----------------------------------------------------------------------


def test_gold_0_and_empty_hand_is_immediate_elimination() -> None:
    s = table(gold=[0, 4, 4, 4], hands=[["RALLY"], ["TAX"], ["TAX"], ["TAX"]])
    s, events = act(s, 0, play_cmd("RALLY"))
    assert not s.alive[0]
    assert of_kind(events, "player_eliminated")[0].cause == pb.CAUSE_BROKE
    assert s.current == 1


def test_zero_gold_discard_can_eliminate_in_the_shadow_phase() -> None:
    s = table(n=5, gold=[4, 4, 4, 4, 0], hands=[["TAX"]] * 4 + [["RALLY"]], current=4,
              deck=["PEEK"] * 20)
    s, events = act(s, 4, command(end_turn=pb.EndTurn()))
    assert not s.alive[4]


def test_dark_assassinate_is_immediate_elimination_and_reveals_the_shadow() -> None:
    s = table(n=5, hands=[["DARK_ASSASSINATE", "TAX"]] + [["TAX"]] * 4)
    s, events = act(s, 0, play_cmd("DARK_ASSASSINATE", target=4))
    (elim,) = of_kind(events, "player_eliminated")
    assert elim.cause == pb.CAUSE_DARK_ASSASSINATED and elim.shadow == pb.IDENTITY_ALCHEMIST
    assert s.facts[-1].kind == "REVEALED" and s.facts[-1].identity == "ALCHEMIST"


def test_eliminated_player_cards_go_face_up_to_the_discard_pile() -> None:
    s = table(n=5, hands=[["DARK_ASSASSINATE", "TAX"], [], [], [], ["PEEK", "SCHEME"]])
    s = play(s, 0, "DARK_ASSASSINATE", target=4)
    assert s.hands[4] == () and s.discard[-2:] == ("PEEK", "SCHEME")


def test_eliminated_players_cannot_act() -> None:
    s = table(alive=(True, False, True, True))
    assert 1 not in GAME.to_act(s)  # the platform refuses a seat not to act
    with pytest.raises(RuleError) as err:
        act(s, 1, command(end_turn=pb.EndTurn()))
    assert err.value.code == "NOT_YOUR_TURN"


# ---- Guard ------------------------------------------------------------------------------


def test_guard_blocks_and_is_consumed_by_dark_assassinate() -> None:
    s = table(n=5, guarded=(False, True, False, False, False),
              hands=[["DARK_ASSASSINATE", "DARK_ASSASSINATE"]] + [["TAX"]] * 4)
    s = play(s, 0, "DARK_ASSASSINATE", target=1)
    assert s.alive[1] and not s.guarded[1]
    s = play(s, 0, "DARK_ASSASSINATE", target=1)
    assert not s.alive[1]


def test_guard_ignored_and_kept_when_poison_is_played_on_a_dark_night() -> None:
    s = table(event="DARK_NIGHT", guarded=(False, True, False, False),
              hands=[["POISON", "TAX"], [], [], []])
    s, events = act(s, 0, play_cmd("POISON", target=1))
    assert s.clues[0] and not of_kind(events, "attack_blocked")
    assert s.guarded[1]  # ignored, not consumed


def test_guard_still_blocks_other_attacks_on_a_dark_night() -> None:
    s = table(event="DARK_NIGHT", guarded=(False, True, False, False),
              hands=[["BANKRUPT", "TAX"], [], [], []])
    s = play(s, 0, "BANKRUPT", target=1)
    assert s.gold[1] == 4 and not s.guarded[1]


@pytest.mark.parametrize("card,kw", [
    ("ASSASSINATE", {"target": 1}), ("SIEGE", {"target": 1}), ("BRIBE", {"target": 1}),
    ("BANKRUPT", {"target": 1}), ("POISON", {"target": 1}),
    ("DARK_ASSASSINATE", {"target": 1}),
])
def test_ruling_attacks_blocked_and_consumed_by_guard(card: str, kw: dict[str, int]) -> None:
    s = table(n=5, guarded=(False, True, False, False, False), hands=[[card, "TAX"]] +
              [["TAX", "TAX"]] * 4)
    s2, events = act(s, 0, play_cmd(card, **kw))
    assert of_kind(events, "attack_blocked") and not s2.guarded[1]
    assert s2.hands[1] == s.hands[1] and s2.gold[1] == 4 and s2.alive[1]
    assert not s2.skip_turn[1] and s2.clues[0] == ()


def test_ruling_sow_discord_is_blocked_per_target() -> None:
    s = table(guarded=(False, True, False, False),
              hands=[["SOW_DISCORD", "TAX"], ["TAX", "TAX"], ["TAX", "TAX"], []])
    s = play(s, 0, "SOW_DISCORD", target=1, second=2)
    assert (len(s.hands[1]), len(s.hands[2])) == (2, 1)


def test_ruling_blocked_siege_still_adds_its_military_points() -> None:
    s = table(guarded=(False, True, False, False), hands=[["SIEGE", "TAX"], [], [], []])
    s = play(s, 0, "SIEGE", target=1)
    assert s.zone("MILITARY") == 2 and not s.skip_turn[1]


# ---- victory ----------------------------------------------------------------------------


def test_more_order_survivors_order_wins() -> None:
    s = table(alive=(True, True, True, False), zones=(0, 0, 0, 0))
    assert tally(s).winner == "ORDER"


def test_more_chaos_survivors_chaos_wins() -> None:
    s = table(alive=(True, False, True, True))
    assert tally(s).winner == "CHAOS"


def test_higher_zone_total_gives_1_effective_survivor() -> None:
    s = table(alive=(True, False, True, False), zones=(0, 0, 3, 0))
    t = tally(s)
    assert t.zone_bonus == "CHAOS" and t.winner == "CHAOS"


def test_zone_bonus_can_tie_and_gold_breaks_the_tie() -> None:
    s = table(alive=(True, True, True, False), zones=(0, 0, 2, 3), gold=[1, 1, 5, 0])
    assert tally(s).winner == "CHAOS"  # 2 vs 1+1; gold 2 vs 5


def test_gold_tie_break_when_effective_survivors_are_equal() -> None:
    s = table(alive=(True, False, True, False), gold=[6, 0, 5, 0])
    assert tally(s).winner == "ORDER"


def test_equal_survivors_and_gold_is_a_draw() -> None:
    s = table(gold=[3, 2, 1, 4])
    t = tally(s)
    assert t.winner == ""
    result = final_result(s, "after round 5")
    assert list(result.winners) == [] and result.reason.endswith("draw")


def test_ruling_eliminated_members_of_the_winning_faction_win_too() -> None:
    s = table(alive=(True, False, True, False), zones=(5, 0, 0, 0))
    assert list(final_result(s, "after round 5").winners) == [0, 1]


def test_ruling_victory_uses_the_shadow_identity_after_brainwash() -> None:
    s = table(alive=(True, True, True, True), hands=[["BRAINWASH", "TAX"], [], [], []],
              public=["GENERAL", "ASSASSIN", "MERCHANT", "ALCHEMIST"],
              shadow=["GENERAL", "MERCHANT", "ASSASSIN", "ALCHEMIST"])
    s = play(s, 0, "BRAINWASH", target=2)  # seat 2: Assassin -> Merchant (Order)
    assert tally(s).winner == "ORDER"


@pytest.mark.parametrize(
    ("zones", "gold", "winner", "winners"),
    [
        ((0, 0, 2, 3), (1, 1, 5, 1), pb.FACTION_CHAOS, [2, 3]),  # 2+2 survivors, Chaos zones
        ((4, 0, 0, 1), (1, 1, 5, 1), pb.FACTION_ORDER, [0, 1]),  # ... Order zones
        ((0, 0, 0, 0), (3, 3, 1, 1), pb.FACTION_ORDER, [0, 1]),  # equal: Order has more gold
        ((0, 0, 0, 0), (2, 2, 2, 2), pb.FACTION_UNSPECIFIED, []),  # all equal: a draw
    ],
)
def test_the_end_after_round_5_tallies_survivors_zone_bonus_and_gold(
    zones: tuple[int, int, int, int], gold: tuple[int, ...], winner: int, winners: list[int]
) -> None:
    s = table(round=5, current=3, zones=zones, gold=list(gold), deck=["PEEK"] * 40)
    s, events = act(s, 3, command(end_turn=pb.EndTurn()))
    (ended,) = of_kind(events, "game_ended")
    assert ended.winner == winner and list(ended.winners) == winners
    assert (ended.order_survivors, ended.chaos_survivors) == (2, 2)
    v = view(s, 0)
    assert list(v.outcome.winners) == winners
    assert [sv.shadow_identity for sv in v.seats] == [
        pb.IDENTITY_GENERAL, pb.IDENTITY_MERCHANT, pb.IDENTITY_ASSASSIN, pb.IDENTITY_ALCHEMIST]
