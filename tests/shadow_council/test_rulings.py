"""Our rulings where the rulebook is silent (docs/rulings/shadow_council.md), one test each."""

from __future__ import annotations

from dataclasses import replace

import pytest
from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import RuleError
from services.shadow_council import GAME, data
from services.shadow_council.bots import belief_from_view
from services.shadow_council.rules import card_pb, legal_actions, to_act
from services.shadow_council.state import ACTIONS, GUESS
from tests.shadow_council.helpers import (
    act,
    command,
    new_game,
    of_kind,
    play,
    play_cmd,
    start_round,
    table,
)

view = GAME.view

END = command(end_turn=pb.EndTurn())


def test_ruling_events_are_drawn_with_replacement() -> None:
    repeated = False
    for seed in range(120):
        s = table(round=1, current=3, event="PLAGUE")
        s, _ = act(s, 3, END, seed)
        repeated |= s.event == "PLAGUE" and s.round == 2
    assert repeated


def test_ruling_every_round_starts_with_the_lowest_surviving_seat() -> None:
    s = table(round=1, current=3, alive=(False, True, True, True), event="PLAGUE")
    s, _ = act(s, 3, END, 1)
    assert s.round == 2 and (s.phase != ACTIONS or s.current == 1)


def test_ruling_plague_hits_every_player_tied_for_most() -> None:
    s = table(hands=[["TAX"] * 4, ["TAX"] * 4, ["TAX"] * 2, ["TAX"] * 3])
    s, _ = start_round(s, "PLAGUE", round=1)
    assert [len(h) for h in s.hands] == [2, 2, 2, 3]


def test_ruling_judgment_day_hits_every_player_tied_for_fewest() -> None:
    s = table(hands=[["TAX"], ["TAX"] * 4, ["TAX"], ["TAX"] * 3], deck=["PEEK"] * 9)
    s, _ = start_round(s, "JUDGMENT_DAY", round=1)
    assert s.hands[0] == s.hands[2] == ("PEEK",) * 3


def test_ruling_tax_collector_military_minus_1_per_broke_player() -> None:
    s, _ = start_round(table(gold=[0, 0, 0, 2], zones=(2, 0, 0, 0)), "TAX_COLLECTOR", round=1)
    assert s.zone("MILITARY") == 0  # three broke players, but zones never go below 0


def test_ruling_zones_never_go_below_zero() -> None:
    s = play(table(hands=[["MUTINY", "TAX"], [], [], []]), 0, "MUTINY")
    assert (s.zone("MILITARY"), s.zone("ECONOMY")) == (2, 0)


def test_ruling_only_printed_zone_numbers_move_zones() -> None:
    s = play(table(hands=[["POISON", "TAX"], [], [], []]), 0, "POISON", target=1)
    assert s.zones == (0, 0, 0, 0)


def test_ruling_forge_counts_as_the_faked_suit_for_events() -> None:
    riot = play(table(event="DARK_ALLEY_RIOT", hands=[["FORGE", "TAX"], [], [], []]), 0,
                "FORGE", suit="SHADOW")
    assert riot.zone("SHADOW_ALLEY") == 4
    arms = play(table(event="ARMS_RACE", hands=[["FORGE", "TAX"], [], [], []]), 0, "FORGE",
                suit="MILITARY")
    assert arms.zone("MILITARY") == 3
    strategy = play(table(event="DARK_ALLEY_RIOT", hands=[["FORGE", "TAX"], [], [], []]), 0,
                    "FORGE", suit="STRATEGY")
    assert strategy.zone("STRATEGY") == 2


def test_ruling_arms_race_adds_1_to_the_size_of_each_number() -> None:
    s = play(table(event="ARMS_RACE", zones=(0, 5, 0, 0), hands=[["MUTINY", "TAX"], [], [], []]),
             0, "MUTINY")
    assert (s.zone("MILITARY"), s.zone("ECONOMY")) == (3, 3)


def test_ruling_propaganda_is_not_doubled_by_the_riot() -> None:
    s = play(table(event="DARK_ALLEY_RIOT", hands=[["PROPAGANDA", "TAX"], [], [], []]), 0,
             "PROPAGANDA")
    assert s.zone("SHADOW_ALLEY") == 2


def test_ruling_targets_are_other_surviving_players() -> None:
    s = table(alive=(True, True, False, True), hands=[["PEEK", "TAX"], [], [], []])
    with pytest.raises(RuleError) as err:
        act(s, 0, play_cmd("PEEK", target=2))
    assert err.value.code == "TARGET_ELIMINATED"
    with pytest.raises(RuleError) as err:
        act(s, 0, play_cmd("PEEK", target=0))
    assert err.value.code == "TARGET_IS_SELF"


def test_ruling_sow_discord_with_one_other_survivor_has_one_target() -> None:
    s = table(n=5, alive=(True, False, False, True, True),
              shadow=["GENERAL", "MERCHANT", "PROPHET", "ASSASSIN", "ALCHEMIST"],
              hands=[["SOW_DISCORD", "TAX"], [], [], ["TAX"], ["TAX", "TAX"]])
    s = replace(s, alive=(True, False, False, False, True))
    s = play(s, 0, "SOW_DISCORD", target=4)
    assert len(s.hands[4]) == 1


def test_ruling_guards_do_not_stack() -> None:
    s = table(n=5, hands=[["GUARD", "GUARD"], ["DARK_ASSASSINATE", "DARK_ASSASSINATE"], [], [],
                          []])
    s = play(play(s, 0, "GUARD"), 0, "GUARD")
    s = play(s, 1, "DARK_ASSASSINATE", target=0)
    assert s.alive[0]
    s = play(s, 1, "DARK_ASSASSINATE", target=0)
    assert not s.alive[0]


def test_ruling_bribe_steals_only_what_the_target_has() -> None:
    s = play(table(gold=[4, 0, 4, 4], hands=[["BRIBE", "TAX"], ["TAX"], [], []]), 0, "BRIBE",
             target=1)
    assert s.gold[:2] == (4, 0)


def test_ruling_discards_are_random_and_face_up() -> None:
    seen = set()
    for seed in range(30):
        s = table(hands=[["ASSASSINATE", "TAX"], ["PEEK", "RALLY", "SCHEME"], [], []])
        s = play(s, 0, "ASSASSINATE", seed=seed, target=1)
        seen.add(s.discard[-1])
        assert list(view(s, 3).discard_pile)[-1] == card_pb(s.discard[-1])
    assert seen == {"PEEK", "RALLY", "SCHEME"}


def test_ruling_broke_check_waits_for_the_card_to_resolve() -> None:
    s = play(table(gold=[0, 4, 4, 4], hands=[["TAX"], [], [], []]), 0, "TAX")
    assert s.alive[0] and s.gold[0] == 2


def test_ruling_chaos_checks_eliminations_after_the_draws() -> None:
    s = table(gold=[4, 0, 4, 4], hands=[["CHAOS", "TAX"], ["TAX"], ["TAX"], ["TAX"]],
              deck=["PEEK"] * 4)
    s = play(s, 0, "CHAOS")
    assert s.alive[1] and s.hands[1] == ("PEEK",)


def test_ruling_game_ends_in_the_middle_of_a_card() -> None:
    s = table(alive=(True, True, True, False), hands=[["DARK_ASSASSINATE", "TAX"], [], [], []])
    s, events = act(s, 0, play_cmd("DARK_ASSASSINATE", target=2))
    assert [e.WhichOneof("kind") for e in events][-1] == "game_ended"


def test_ruling_brainwash_reveals_the_old_shadow_as_the_new_public_identity() -> None:
    s = play(table(shadow=["GENERAL", "ALCHEMIST", "MERCHANT", "ASSASSIN"],
                   hands=[["BRAINWASH", "TAX"], [], [], []]), 0, "BRAINWASH", target=1)
    v = view(s, 2)
    assert v.seats[1].public_identity == pb.IDENTITY_ALCHEMIST
    assert (v.facts[-1].kind, v.facts[-1].identity, v.facts[-1].other) == (
        pb.FACT_BRAINWASHED, pb.IDENTITY_ALCHEMIST, pb.IDENTITY_MERCHANT)


def test_ruling_brainwash_may_create_duplicate_identities() -> None:
    s = play(table(shadow=["GENERAL", "MERCHANT", "ASSASSIN", "ALCHEMIST"],
                   public=["GENERAL", "ALCHEMIST", "MERCHANT", "ASSASSIN"],
                   hands=[["BRAINWASH", "TAX"], [], [], []]), 0, "BRAINWASH", target=1)
    assert s.shadow.count("ALCHEMIST") == 2


def test_ruling_brainwash_that_leaves_a_faction_without_survivors_ends_the_game() -> None:
    # Seat 3 (Alchemist) is out; seat 2 is the last Chaos survivor, wearing the General.
    s = table(public=["ASSASSIN", "ALCHEMIST", "GENERAL", "MERCHANT"],
              shadow=["GENERAL", "MERCHANT", "ASSASSIN", "ALCHEMIST"],
              alive=(True, True, True, False),
              hands=[["BRAINWASH", "TAX"], ["TAX"], ["TAX"], []])
    s, events = act(s, 0, play_cmd("BRAINWASH", target=2))
    assert s.faction(2) == "ORDER"
    assert [e.WhichOneof("kind") for e in events][-1] == "game_ended"
    assert s.phase == "OVER" and s.result is not None
    assert s.result.winner == "ORDER" and s.result.reason == "the chaos faction has no survivors"
    assert set(s.result.winners) == {0, 1, 2}


def test_ruling_brainwash_keeps_the_game_going_while_both_factions_survive() -> None:
    s = table(public=["ASSASSIN", "ALCHEMIST", "GENERAL", "MERCHANT"],
              shadow=["GENERAL", "MERCHANT", "ASSASSIN", "ALCHEMIST"],
              hands=[["BRAINWASH", "TAX"], ["TAX"], ["TAX"], ["TAX"]])
    s, _ = act(s, 0, play_cmd("BRAINWASH", target=2))
    assert s.faction(2) == "ORDER" and s.result is None and to_act(s) == [0]


def test_ruling_disguise_reverts_even_if_a_player_was_eliminated() -> None:
    # (seat 3, the Assassin, has no card: its passive does not wait for a choice)
    s = table(n=5, hands=[["DISGUISE", "DARK_ASSASSINATE"], ["TAX"], ["TAX"], [], ["TAX"]])
    s = play(play(s, 0, "DISGUISE", target=4), 0, "DARK_ASSASSINATE", target=4)
    s, _ = start_round(s, "DARK_NIGHT")
    assert s.public[0] == "GENERAL" and s.public[4] == "ALCHEMIST"


def test_ruling_disguise_reverts_the_masks_as_they_are_after_a_brainwash() -> None:
    s = table(n=5, shadow=["PROPHET", "GENERAL", "MERCHANT", "ASSASSIN", "ALCHEMIST"],
              hands=[["DISGUISE", "TAX"], ["BRAINWASH", "TAX"], ["TAX"], [], ["TAX"]])
    s = play(s, 0, "DISGUISE", target=1)  # seat 0 wears the Merchant, seat 1 the General
    s = play(s, 0, "TAX")
    s = play(s, 1, "BRAINWASH", target=0)  # seat 0: mask Merchant <-> shadow Prophet
    assert (s.public[0], s.shadow[0]) == ("PROPHET", "MERCHANT")
    s, _ = start_round(s, "DARK_NIGHT")
    assert (s.public[0], s.public[1]) == ("GENERAL", "PROPHET") and s.shadow[0] == "MERCHANT"
    assert s.disguises == ()


def test_ruling_assassin_passive_is_not_blocked_by_guard() -> None:
    s = table(n=6, guarded=(True,) * 6, deck=["PEEK"] * 10)
    s, _ = start_round(s, "DARK_NIGHT")  # guards expire first anyway
    s = replace(s, guarded=(True,) * 6)
    s, events = act(s, 3, command(assassin=pb.AssassinOrder(discard=card_pb("TAX"), target=0)))
    assert not of_kind(events, "attack_blocked") and len(s.hands[0]) == 2


def test_ruling_assassin_passive_skipped_with_an_empty_hand() -> None:
    s = table(n=6, hands=[["TAX"]] * 3 + [[]] + [["TAX"]] * 2, gold=[4] * 6,
              deck=["PEEK"] * 10)
    s, _ = start_round(s, "DARK_NIGHT")
    assert s.phase == ACTIONS


def test_ruling_reflect_never_repeats_an_exclusion() -> None:
    s = table(free_reflect=(True, False, False, False),
              hands=[["REFLECT", "REFLECT", "REFLECT", "REFLECT"], [], [], []])
    excluded = []
    for seed in range(2):
        s = play(s, 0, "REFLECT", seed=seed)
    s, _ = act(s, 0, command(free_reflect=pb.FreeReflect()))
    excluded = [c.identity for c in s.clues[0]]
    assert len(set(excluded)) == 3 and "GENERAL" not in excluded
    assert all(i in data.IDENTITIES for i in excluded)


def test_ruling_reflect_gives_nothing_once_all_five_are_excluded() -> None:
    from services.shadow_council.state import Clue

    known = tuple(Clue(1, 1, 0, "NOT_IDENTITY", "REFLECT", identity=i)
                  for i in data.IDENTITIES if i != "GENERAL")
    s = play(table(clues=(known, (), (), ()), hands=[["REFLECT", "TAX"], [], [], []]), 0,
             "REFLECT")
    assert len(s.clues[0]) == 5


def test_ruling_reflect_after_a_brainwash_gives_a_clue_only_as_the_public_count_says() -> None:
    """Seat 0 holds 3 Reflect clues in a 4-identity game. Whether it is now the General (not
    excluded) or, after a Brainwash, the Merchant (excluded by a clue that is now stale), the
    table sees the same thing: no clue. Else the table would learn what a hidden clue named."""
    from services.shadow_council.state import Clue

    known = tuple(Clue(1, 1, 0, "NOT_IDENTITY", "REFLECT", identity=i)
                  for i in ("MERCHANT", "ASSASSIN", "ALCHEMIST"))
    for now in ("GENERAL", "MERCHANT"):
        s = table(shadow=[now, "MERCHANT", "ASSASSIN", "ALCHEMIST"],
                  clues=(known, (), (), ()), hands=[["REFLECT", "TAX"], [], [], []])
        _, events = act(s, 0, play_cmd("REFLECT"))
        assert of_kind(events, "clue_gained") == [], now


def test_ruling_reflect_names_only_identities_in_play() -> None:
    # 4 players: General, Merchant, Assassin, Alchemist are in play; Prophet and Spy are not,
    # which everybody knows, so "you are not the Spy" would be no clue at all.
    for seed in range(12):
        s = table(hands=[["REFLECT"] * 3 + ["TAX"], [], [], []], actions=3)
        for k in range(3):
            s = play(s, 0, "REFLECT", seed=seed * 3 + k)
        excluded = [c.identity for c in s.clues[0]]
        assert sorted(excluded) == ["ALCHEMIST", "ASSASSIN", "MERCHANT"]
        assert belief_from_view(view(s, 0)).p(0, "GENERAL") == 1.0
        # nothing is left to exclude: a fourth Reflect gives no clue
        s = replace(s, hands=(("REFLECT",) + s.hands[0],) + s.hands[1:], current=0,
                    turn_open=True, actions=1)
        s = play(s, 0, "REFLECT")
        assert len(s.clues[0]) == 3


def test_ruling_free_actions_expire_at_the_next_round() -> None:
    s = table(free_peek=(True,) * 4, free_reflect=(True,) * 4)
    s, _ = start_round(s, "PLAGUE", round=2)
    assert s.free_peek == (False,) * 4 and s.free_reflect == (False,) * 4


def test_ruling_free_actions_are_used_on_your_own_turn() -> None:
    s = table(free_peek=(True,) * 4)
    with pytest.raises(RuleError) as err:
        act(s, 2, command(free_peek=pb.FreePeek(target=1)))
    assert err.value.code == "NOT_YOUR_TURN"


def test_ruling_skipped_turn_skips_free_actions_too() -> None:
    s = table(free_peek=(True,) * 4, skip_turn=(False, True, False, False))
    s, _ = act(s, 0, END)
    assert s.current == 2 and s.free_peek[1]


def test_ruling_siege_skip_carries_into_the_next_round() -> None:
    s = table(skip_turn=(True, False, False, False))
    s, _ = start_round(s, "PLAGUE", round=1)
    assert s.current == 1 and not s.skip_turn[0]


def test_ruling_guesses_and_their_results_are_public() -> None:
    s = replace(table(n=5, round=1), phase=GUESS, current=-1, actions=0, turn_open=False)
    s, events = act(s, 0, command(guess=pb.Guess(target=1, identity=pb.IDENTITY_SPY)))
    v = view(s, 1)
    assert v.facts[0].kind == pb.FACT_WRONG_GUESS and v.facts[0].identity == pb.IDENTITY_SPY


def test_ruling_you_cannot_guess_yourself() -> None:
    s = replace(table(n=5), phase=GUESS, current=-1, actions=0, turn_open=False)
    with pytest.raises(RuleError) as err:
        act(s, 0, command(guess=pb.Guess(target=0, identity=pb.IDENTITY_GENERAL)))
    assert err.value.code == "TARGET_IS_SELF"
    assert all(c.guess.target != 0 for c in legal_actions(s, 0) if c.HasField("guess"))


def test_ruling_4_player_rule_counts_seats_at_the_start() -> None:
    s = table(n=5, round=1, current=4, alive=(True, True, True, False, True),
              deck=["PEEK"] * 20)
    s, _ = act(s, 4, END)
    assert s.phase == GUESS and to_act(s) == [0]


def test_ruling_rounds_option_zero_means_5() -> None:
    s, _ = new_game(4, 0)
    assert s.rounds == data.ROUNDS == 5


def test_ruling_4_player_odd_rounds_still_draw_2() -> None:
    s = table(round=1, current=3, deck=["PEEK"] * 40, event="PLAGUE")
    s, events = act(s, 3, END)
    draws = [d for d in of_kind(events, "cards_drawn") if d.count == 2]
    assert sorted(d.seat for d in draws) == [0, 1, 2, 3]


def test_ruling_scout_shows_a_random_card_suit_to_its_player_only() -> None:
    """Scout, "Reveal 1 card suit from target": a card drawn at random from the target's hand;
    its suit reaches the player of the Scout alone, as a clue. The target, the others and a
    spectator see that a Scout clue about the target was gained, never the suit."""
    from services.shadow_council.view import redact

    suits = set()
    for seed in range(12):
        s = table(hands=[["SCOUT", "TAX"], ["PEEK", "CHARGE"], ["TAX"], ["TAX"]])
        s, events = act(s, 0, play_cmd("SCOUT", target=1), seed)
        (clue,) = [e for e in events if e.WhichOneof("kind") == "clue_gained"]
        mine = redact(clue, 0).clue_gained
        assert (mine.seat, mine.subject, mine.kind) == (0, 1, pb.CLUE_SUIT)
        suits.add(mine.suit)
        for other in (1, 2, 3, None):
            shown = redact(clue, other).clue_gained
            assert (shown.kind, shown.suit, list(shown.suits)) == (0, 0, [])
            assert (shown.seat, shown.subject, shown.source) == (0, 1, mine.source)
            assert list(view(s, other).clues) == []
        assert [c.suit for c in view(s, 0).clues] == [mine.suit]
    assert suits == {pb.SUIT_STRATEGY, pb.SUIT_MILITARY}, "the card is drawn at random"


def test_ruling_scout_public_reading_reveals_the_suit_to_the_table() -> None:
    """Ruling 22a, the other reading: the rulebook marks private effects "(only you see)"
    (Peek) and says "Reveal" for Scout, so with `Options.scout_public` the suit drawn is shown
    to every seat and to a spectator, and every seat gains the clue."""
    from services.shadow_council.view import redact

    for seed in range(6):
        s = table(hands=[["SCOUT", "TAX"], ["PEEK", "CHARGE"], ["TAX"], ["TAX"]],
                  scout_public=True)
        s, events = act(s, 0, play_cmd("SCOUT", target=1), seed)
        (clue,) = [e for e in events if e.WhichOneof("kind") == "clue_gained"]
        mine = redact(clue, 0).clue_gained
        assert (mine.seat, mine.subject, mine.kind) == (0, 1, pb.CLUE_SUIT) and mine.public
        for other in (1, 2, 3, None):
            shown = redact(clue, other)
            assert shown == clue and list(GAME.redact(clue, other).hidden) == []
        for seat in range(4):
            assert [c.suit for c in view(s, seat).clues] == [mine.suit]


def test_ruling_scout_reading_is_set_up_from_the_options() -> None:
    """The option reaches the set-up event, so a stored game keeps the reading it began
    with; without it the suit is the Scout's player's alone (the default reading)."""
    from services.core.decider import Rng, Seat

    seats = [Seat(f"p{i}") for i in range(4)]
    for public in (False, True):
        events = GAME.setup(pb.Options(scout_public=public), seats, Rng.for_test(1))
        assert events[0].set_up.scout_public is public
        assert GAME.replay(events).scout_public is public


def test_ruling_scout_on_an_empty_hand_shows_nothing() -> None:
    s = table(hands=[["SCOUT", "TAX"], [], ["TAX"], ["TAX"]], gold=(4, 3, 4, 4))
    s, events = act(s, 0, play_cmd("SCOUT", target=1))
    assert of_kind(events, "clue_gained") == [] and s.clues[0] == ()
