"""Setup and the round: actions, gold-peek, the shadow phase, the guess phase, the end
(Shadow Council — Game Manual, "Game Flow", "Guess System", "Identity Assignment Rules")."""

from __future__ import annotations

from dataclasses import replace

import pytest
from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import MalformedCommand, Rng, RuleError
from services.shadow_council import GAME, data
from services.shadow_council.rules import identity_pb, legal_actions, to_act
from services.shadow_council.state import ACTIONS, GUESS, NOT_DRAWN, OVER
from tests.shadow_council.helpers import (
    act,
    command,
    kinds,
    new_game,
    of_kind,
    play,
    shadow_phase,
    table,
)

END = command(end_turn=pb.EndTurn())
SKIP = command(skip_guess=pb.SkipGuess())


def guess(target: int, identity: str) -> pb.Command:
    return command(guess=pb.Guess(target=target, identity=identity_pb(identity)))


# ---- setup ------------------------------------------------------------------------------


def test_4_players_get_2_order_and_2_chaos_identities() -> None:
    for seed in range(20):
        s, _ = new_game(4, seed)
        factions = [data.FACTION[i] for i in s.in_play]
        assert factions.count("ORDER") == factions.count("CHAOS") == 2


def test_5_players_get_3_plus_2_or_2_plus_3_half_each() -> None:
    order_counts = []
    for seed in range(40):
        s, _ = new_game(5, seed)
        order_counts.append(sum(data.FACTION[i] == "ORDER" for i in s.in_play))
    assert set(order_counts) == {2, 3}


def test_6_players_use_all_6_identities() -> None:
    s, _ = new_game(6, 1)
    assert sorted(s.public) == sorted(s.shadow) == sorted(data.IDENTITIES)


def test_public_and_shadow_identities_are_unique_and_independent() -> None:
    same_somewhere = False
    for seed in range(30):
        s, _ = new_game(5, seed)
        assert len(set(s.public)) == len(set(s.shadow)) == 5
        assert set(s.public) == set(s.shadow) == set(s.in_play)
        same_somewhere |= any(p == q for p, q in zip(s.public, s.shadow, strict=True))
    assert same_somewhere  # a shadow may equal its owner's public identity


def test_start_with_4_gold_and_6_cards_each() -> None:
    _, events = new_game(6, 3)
    before_round_1 = events[: kinds(events).index("round_started")]
    s = GAME.replay(before_round_1)
    assert s.gold == (4,) * 6 and all(len(h) == 6 for h in s.hands)
    assert len(s.deck) == 64 - 36


def test_seat_count_outside_4_to_6_is_refused() -> None:
    for count in (3, 7):  # the platform refuses it before the set-up
        with pytest.raises(MalformedCommand):
            GAME.check_seat_count(count)


def test_first_round_starts_with_seat_0_to_act() -> None:
    s, events = new_game(4, 0)
    assert s.round == 1 and s.phase == ACTIONS and to_act(s) == [0]
    assert "round_started" in kinds(events)


def test_ai_seats_come_from_seat_kind() -> None:
    s, _ = new_game(4, 0, ai=[False, True, False, True])
    assert s.ai == (False, True, False, True)


# ---- actions ----------------------------------------------------------------------------


def test_end_turn_passes_to_the_next_surviving_seat() -> None:
    s = table(alive=(True, False, True, True))
    s, _ = act(s, 0, END)
    assert s.current == 2 and s.actions == 2


def test_siege_target_skips_their_next_turn() -> None:
    s = table(hands=[["SIEGE", "TAX"], ["TAX"], ["TAX"], ["TAX"]])
    s = play(s, 0, "SIEGE", target=1)
    s, events = act(s, 0, END)
    assert s.current == 2
    assert of_kind(events, "turn_started")[0].skipped
    assert not s.skip_turn[1]


def test_gold_peek_costs_1_action_and_3_plus_2_per_round_gold() -> None:
    assert [data.gold_peek_cost(r) for r in range(1, 6)] == [3, 5, 7, 9, 11]
    s = table(round=2, gold=[6, 4, 4, 4])
    s, events = act(s, 0, command(gold_peek=pb.GoldPeek(target=2)))
    assert s.gold[0] == 1 and s.actions == 1
    assert s.clues[0][0].source == "GOLD_PEEK"


def test_gold_peek_without_enough_gold_is_refused() -> None:
    with pytest.raises(RuleError) as err:
        act(table(round=2, gold=[4, 4, 4, 4]), 0, command(gold_peek=pb.GoldPeek(target=2)))
    assert err.value.code == "NOT_ENOUGH_GOLD"


def test_free_peek_costs_no_action_and_is_usable_after_the_actions() -> None:
    s = table(free_peek=(True, False, False, False), hands=[["TAX", "TAX"], [], [], []])
    s = play(play(s, 0, "TAX"), 0, "TAX")
    assert to_act(s) == [0] and s.actions == 0  # the turn waits for the free Peek
    kinds_left = {c.WhichOneof("kind") for c in legal_actions(s, 0)}
    assert kinds_left == {"free_peek", "end_turn"}
    s, _ = act(s, 0, command(free_peek=pb.FreePeek(target=1)))
    assert s.current == 1


def test_gold_never_goes_below_zero() -> None:
    s = play(table(gold=[4, 4, 4, 1], hands=[["BANKRUPT", "TAX"], [], [], ["TAX"]]), 0,
             "BANKRUPT", target=3)
    assert s.gold[3] == 0


# ---- shadow phase -----------------------------------------------------------------------


def test_zero_gold_players_discard_1_card_in_the_shadow_phase() -> None:
    s, _ = shadow_phase(table(gold=[0, 4, 4, 4], hands=[["TAX", "RALLY"]] + [["TAX"]] * 3))
    assert len(s.hands[0]) == 1 and len(s.hands[1]) == 1


def test_order_zone_lead_gives_all_survivors_1_gold() -> None:
    s, _ = shadow_phase(table(zones=(3, 1, 2, 1), alive=(True, True, False, True)))
    assert s.gold == (5, 5, 4, 5)


def test_chaos_zone_lead_gives_all_survivors_1_card() -> None:
    s, _ = shadow_phase(table(zones=(1, 1, 2, 1), deck=["PEEK"] * 4))
    assert all(len(h) == 4 for h in s.hands)


def test_equal_zones_give_no_reward() -> None:
    s, events = shadow_phase(table(zones=(2, 1, 2, 1)))
    assert events == []


def test_economy_milestone_every_5_points_all_plus_1_gold() -> None:
    s, _ = shadow_phase(table(zones=(0, 10, 12, 0), deck=["PEEK"] * 20))
    assert s.gold == (6,) * 4  # 2 milestones (chaos leads: no zone gold)


def test_strategy_milestone_every_5_points_all_draw_1_card() -> None:
    s, _ = shadow_phase(table(zones=(20, 0, 5, 0), deck=["PEEK"] * 20))
    assert all(len(h) == 4 for h in s.hands)  # 1 milestone (order leads: gold instead)


# ---- guess phase ------------------------------------------------------------------------


def last_turn(n: int = 4, round: int = 1, **kw: object):
    return table(n=n, round=round, current=n - 1, deck=["PEEK"] * 40, **kw)  # type: ignore


def test_guess_phase_each_player_draws_2_cards() -> None:
    s, events = act(last_turn(5), 4, END)
    assert s.phase == GUESS
    draws = [d for d in of_kind(events, "cards_drawn") if d.count == 2]
    assert sorted(d.seat for d in draws) == [0, 1, 2, 3, 4]


def test_humans_guess_in_seat_order_and_may_skip() -> None:
    s, _ = act(last_turn(5), 4, END)
    assert to_act(s) == [0]
    s, _ = act(s, 0, SKIP)
    assert to_act(s) == [1]


def test_correct_guess_eliminates_the_target() -> None:
    s, _ = act(last_turn(5), 4, END)
    s, events = act(s, 0, guess(3, "ASSASSIN"))
    assert not s.alive[3]
    assert of_kind(events, "player_eliminated")[0].cause == pb.CAUSE_GUESSED


def test_wrong_guess_eliminates_the_guesser() -> None:
    s, _ = act(last_turn(5), 4, END)
    s, events = act(s, 0, guess(3, "SPY"))
    assert not s.alive[0] and s.alive[3]
    assert of_kind(events, "player_eliminated")[0].cause == pb.CAUSE_WRONG_GUESS
    assert s.facts[-2].kind == "WRONG_GUESS"  # "seat 3 is not the Spy" is public


def test_4_player_game_guesses_only_in_even_rounds() -> None:
    s, events = act(last_turn(4, round=1), 3, END)
    assert "guess_made" not in kinds(events) and s.round == 2 and s.phase != GUESS
    s, _ = act(last_turn(4, round=2), 3, END)
    assert s.phase == GUESS and to_act(s) == [0]


def test_5_player_game_guesses_every_round() -> None:
    s, _ = act(last_turn(5, round=1), 4, END)
    assert s.phase == GUESS and s.guessing_round()


def test_ai_guess_half_the_time_one_random_ai_seat() -> None:
    drawn, seats = 0, set()
    for seed in range(60):
        s, events = act(last_turn(5, ai=(True, False, True, True, False)), 4, END, seed)
        s, _ = act(s, 1, SKIP, seed)
        s, events = act(s, 4, SKIP, seed)
        (draw,) = of_kind(events, "ai_guess_drawn")
        if draw.drawn:
            drawn += 1
            seats.add(draw.seat)
            assert to_act(s) == [draw.seat]
        else:
            assert s.round == 2
    assert 20 <= drawn <= 40 and seats == {0, 2, 3}


def test_ai_guess_is_a_command_of_the_drawn_ai_seat() -> None:
    s = replace(last_turn(5, ai=(True,) * 5), phase=GUESS, ai_guesser=2, current=-1)
    assert to_act(s) == [2]
    s, events = act(s, 2, guess(4, "ALCHEMIST"))
    assert not s.alive[4]


def test_no_ai_guess_when_no_ai_survives() -> None:
    s = replace(last_turn(5), phase=GUESS, ai_guesser=NOT_DRAWN, current=-1,
                guessed=(True,) * 5)
    s2, events = act(replace(s, guessed=(True, True, True, True, False)), 4, SKIP)
    assert not of_kind(events, "ai_guess_drawn")[0].drawn


# ---- the end ----------------------------------------------------------------------------


def test_game_ends_after_round_5() -> None:
    s, events = act(last_turn(4, round=5), 3, END)
    assert s.phase == OVER and s.result is not None
    assert of_kind(events, "game_ended")[0].reason.startswith("after round 5")


def test_rounds_option_changes_the_length() -> None:
    s, _ = new_game(4, 0, rounds=3)
    assert s.rounds == 3
    s = replace(s, round=3, current=3, phase=ACTIONS, turn_open=True, actions=2)
    s, _ = act(s, 3, END)
    assert s.phase == OVER


def test_game_ends_when_a_faction_has_no_survivors() -> None:
    s = table(alive=(True, True, True, False), hands=[["DARK_ASSASSINATE", "TAX"], [], [], []])
    s = play(s, 0, "DARK_ASSASSINATE", target=2)
    assert s.phase == OVER and s.result is not None and s.result.winner == "ORDER"


def test_game_ends_when_only_1_player_remains() -> None:
    s = table(alive=(True, False, True, False), shadow=["GENERAL", "MERCHANT", "PROPHET",
              "ASSASSIN"], public=["GENERAL", "MERCHANT", "ASSASSIN", "ALCHEMIST"],
              hands=[["DARK_ASSASSINATE", "TAX"], [], [], []])
    s = play(s, 0, "DARK_ASSASSINATE", target=2)
    assert s.phase == OVER and s.result is not None
    assert s.result.reason.startswith("one player remains")


def test_nothing_can_be_done_once_the_game_is_over() -> None:
    s, _ = act(last_turn(4, round=5), 3, END)
    with pytest.raises(RuleError) as err:
        act(s, 0, END)
    assert err.value.code == "GAME_OVER"


def test_4_player_guessing_happens_in_rounds_2_and_4_only_over_whole_games() -> None:
    """Whole 4-player games (2 humans who always skip, 2 sleuth AI seats): guesses, skips and
    the AI guess draw happen in rounds 2 and 4 and in no other round; every player still
    draws 2 in the guess phase of every round."""
    guess_rounds: set[int] = set()
    draw_rounds: set[int] = set()
    for seed in range(6):
        s, _ = new_game(4, seed, ai=[False, True, False, True])
        version = 1
        while GAME.outcome(s) is None:
            seat = to_act(s)[0]
            rng = Rng(b"four-%d" % seed, version)
            if s.phase == GUESS and not s.ai[seat]:
                cmd = SKIP
            else:
                cmd = GAME.bots["sleuth"](GAME.view(s, seat), legal_actions(s, seat), rng)
            for e in GAME.decide_now(s, seat, cmd, rng):
                kind = e.WhichOneof("kind")
                if kind in ("guess_made", "guess_skipped", "ai_guess_drawn"):
                    assert s.round % 2 == 0, f"{kind} in round {s.round}"
                    guess_rounds.add(s.round)
                if kind == "cards_drawn" and s.phase == GUESS and e.cards_drawn.count == 2:
                    draw_rounds.add(s.round)
                s = GAME.evolve(s, e)
            version += 1
    assert guess_rounds == {2, 4}
    assert {1, 3} <= draw_rounds
