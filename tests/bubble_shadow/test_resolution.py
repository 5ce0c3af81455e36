"""Resolution (3-5 players and 2 players), the new round, the game end and the winner."""

from __future__ import annotations

import itertools
from dataclasses import replace

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import GAME
from services.bubble_shadow import tokens as tk
from services.bubble_shadow.cards import card
from services.bubble_shadow.rules import ROUNDS, SOUL_SUPPLY

from .helpers import act, decide_events, fold, kinds, last_turn, play, sign, tokens


def test_rulebook_resolution_example() -> None:
    # Moons / Silver Coins / Bubbles: Larry, Charles, Paul, Philip, William.
    larry, charles, paul, philip, william = (2, 8, 1), (4, 3, 5), (6, 4, 2), (2, 4, 4), (1, 6, 3)
    souls = tk.resolve_many([larry, charles, paul, philip, william])
    # Charles has the most Bubbles (Larry's 2 extra Silver Coins make his 3): out, nothing.
    # Paul and Philip have the fewest Silver Coins: 1 each. Larry has the most Moons: 3;
    # William 2.
    assert souls == [3, 0, 1, 1, 2]


def test_silver_over_six_counts_as_bubbles_only_in_the_bubble_step() -> None:
    # 9 Silver Coins + 1 Bubble = 4 Bubbles, so A (4) is out, not B (3).
    assert tk.resolve_many([(0, 9, 1), (0, 3, 3), (5, 4, 0)])[0] == 0
    # With 8 Silver Coins, A's excess makes 3 Bubbles, tied with B: both out; C scores 3.
    assert tk.resolve_many([(0, 8, 1), (0, 3, 3), (0, 4, 0)]) == [0, 0, 3]
    # The excess stays Silver for the Silver step: A (7 Silver) is not the fewest.
    assert tk.resolve_many([(0, 7, 0), (0, 2, 0), (0, 3, 5), (1, 4, 0)]) == [2, 1, 0, 3]


def test_tied_most_bubbles_all_leave() -> None:
    assert tk.resolve_many([(3, 3, 4), (3, 3, 4), (1, 2, 1), (0, 5, 1)]) == [0, 0, 1, 3]


def test_everyone_tied_for_most_bubbles_nobody_scores() -> None:
    assert tk.resolve_many([(3, 3, 2), (1, 1, 2), (0, 5, 2)]) == [0, 0, 0]


def test_tied_fewest_silver_all_score_one() -> None:
    assert tk.resolve_many([(0, 1, 0), (0, 1, 0), (5, 3, 0), (0, 4, 9)]) == [1, 1, 3, 0]


def test_everyone_left_tied_for_fewest_silver_nobody_more_scores() -> None:
    assert tk.resolve_many([(0, 2, 0), (4, 2, 0), (0, 4, 9)]) == [1, 1, 0]


def test_tied_most_moons_all_score_three() -> None:
    assert tk.resolve_many([(4, 3, 0), (4, 3, 0), (1, 3, 0), (0, 1, 0), (0, 3, 5)]) == [
        3, 3, 2, 1, 0]


def test_lone_survivor_scores_three_at_once() -> None:
    # After the Bubble step only A is left: 3 Soul Tokens, and the round is over.
    assert tk.resolve_many([(0, 0, 1), (9, 5, 4), (0, 5, 4)]) == [3, 0, 0]
    # After the Silver step only C is left (fewest Moons, still 3).
    assert tk.resolve_many([(9, 1, 0), (9, 1, 0), (0, 4, 0), (0, 0, 7)]) == [1, 1, 3, 0]


def test_two_player_each_condition_scores_one() -> None:
    # A: most Moons. B: most Silver and fewest Bubbles.
    assert tk.resolve_two([(5, 2, 3), (1, 4, 1)]) == [1, 2]


def test_two_player_all_three_conditions_score_a_bonus() -> None:
    assert tk.resolve_two([(5, 5, 0), (1, 4, 1)]) == [4, 0]


def test_two_player_ties_count_for_both() -> None:
    assert tk.resolve_two([(3, 4, 2), (3, 4, 2)]) == [4, 4]
    assert tk.resolve_two([(3, 1, 2), (3, 4, 2)]) == [2, 4]


def test_two_player_silver_over_six_counts_as_bubbles() -> None:
    # A has 8 Silver (2 extra = Bubbles): 2 Bubbles against B's 1, so B has fewest Bubbles.
    assert tk.resolve_two([(1, 8, 0), (1, 3, 1)]) == [2, 2]


# ---- The round, end to end ---------------------------------------------------------------


def end_round(state):  # noqa: ANN001, ANN201
    events = decide_events(act(state, 0, play(0, 1)), 1, sign(1))
    return events, fold(act(state, 0, play(0, 1)), events)


def test_round_ends_when_everyone_has_four_pacts() -> None:
    state = last_turn({0: tokens(moon=2, silver=2), 1: tokens(moon=1, silver=1), 2: tokens()})
    events, after = end_round(state)
    assert kinds(events)[:4] == ["pact_signed", "round_ended", "tokens_revealed",
                                 "round_resolved"]
    assert kinds(events)[4] == "round_started" and after.round == 2


def test_round_resolution_end_to_end() -> None:
    # Seat 1 pays 1 Silver for 1 Moon: 0 -> (1 Moon, 3 Silver), 1 -> (3 Moons, 0 Silver).
    state = last_turn({0: tokens(moon=2, silver=2), 1: tokens(moon=2, silver=1),
                       2: tokens(bubble=1, silver=5)})
    events, after = end_round(state)
    resolved = events[kinds(events).index("round_resolved")].round_resolved
    assert [(t.moons, t.silver, t.bubbles) for t in resolved.tallies] == [
        (1, 3, 0), (3, 0, 0), (0, 5, 1)]
    # Seat 2 has most Bubbles: out. Seat 1 fewest Silver: 1. Seat 0 alone: 3.
    assert [t.soul for t in resolved.tallies] == [3, 1, 0]
    assert [p.soul for p in after.players] == [3, 1, 0]


def test_new_round_returns_tokens_and_deals_again() -> None:
    state = last_turn({0: tokens(moon=2, silver=2), 1: tokens(moon=1, silver=1), 2: tokens()})
    _, after = end_round(state)
    assert all(tk.total(p.behind) == 11 and tk.total(p.front) == 0 for p in after.players)
    assert all(len(p.hand) == 6 and p.pacts == () for p in after.players)
    assert tk.total(after.bag) == tk.total(after.pool) - 33


def test_new_round_draws_three_new_special_pacts() -> None:
    state = last_turn({0: tokens(), 1: tokens(), 2: tokens()})
    _, after = end_round(state)
    assert len(after.public) == 3 and all(card(c).blank for c in after.public)
    assert not set(after.public) & set(state.public)
    assert len(after.specials_left) == 3


def test_last_mortal_starts_the_new_round() -> None:
    state = last_turn({0: tokens(), 1: tokens(), 2: tokens()})
    _, after = end_round(state)
    assert after.magician == 1


def test_game_ends_after_round_three() -> None:
    state = replace(last_turn({0: tokens(moon=1), 1: tokens(silver=1), 2: tokens()}), round=3)
    events, after = end_round(state)
    assert kinds(events)[-1] == "game_ended"
    assert GAME.outcome(after) is not None and after.stage == pb.STAGE_OVER
    assert GAME.to_act(after) == []


def test_game_ends_when_someone_has_six_soul_tokens() -> None:
    state = last_turn({0: tokens(moon=2, silver=2), 1: tokens(moon=2, silver=1),
                       2: tokens(bubble=1, silver=5)})
    players = list(state.players)
    players[0] = replace(players[0], soul=3)  # scores 3 more: 6
    events, after = end_round(replace(state, players=tuple(players)))
    assert kinds(events)[-1] == "game_ended"
    outcome = GAME.outcome(after)
    assert outcome is not None and outcome.winners == (0,) and outcome.scores == (6, 1, 0)


def test_five_soul_tokens_do_not_end_the_game() -> None:
    state = last_turn({0: tokens(moon=2, silver=2), 1: tokens(moon=2, silver=1),
                       2: tokens(bubble=1, silver=5)})
    players = list(state.players)
    players[0] = replace(players[0], soul=2)  # 5 after this round
    events, _ = end_round(replace(state, players=tuple(players)))
    assert kinds(events)[-1] == "round_started"


def test_tied_most_soul_tokens_share_the_win() -> None:
    state = replace(last_turn({0: tokens(moon=2, silver=2), 1: tokens(moon=2, silver=1),
                               2: tokens(bubble=1, silver=5)}), round=3)
    players = list(state.players)
    players[1] = replace(players[1], soul=2)  # 2 + 1 = 3, as seat 0's 0 + 3
    _, after = end_round(replace(state, players=tuple(players)))
    outcome = GAME.outcome(after)
    assert outcome is not None and outcome.winners == (0, 1)


def test_two_player_round_end_to_end() -> None:
    state = last_turn({0: tokens(moon=2, silver=2), 1: tokens(moon=2, silver=1)}, n=2)
    events, _ = end_round(state)
    resolved = events[kinds(events).index("round_resolved")].round_resolved
    # 0: (1 Moon, 3 Silver, 0 Bubbles); 1: (3, 0, 0). 0: Silver + Bubbles; 1: Moons + Bubbles.
    assert [t.soul for t in resolved.tallies] == [2, 2]


def most_souls_in_a_round(n: int) -> int:
    """The most Soul Tokens one round's resolution can hand out at n players. Scoring depends
    only on who ties with whom for most Bubbles (Silver over 6 included), fewest Silver and
    most Moons, so every such pattern is reached with Moons and Bubbles in {0, 1} and Silver
    in {0, 1, 7}; scoring ignores seat order, so combinations of tallies suffice."""
    kinds = list(itertools.product((0, 1), (0, 1, 7), (0, 1)))
    scoring = tk.resolve_two if n == 2 else tk.resolve_many
    return max(sum(scoring(t)) for t in itertools.combinations_with_replacement(kinds, n))


def test_soul_supply_cannot_run_out() -> None:
    """The box has 30 Soul Tokens and the game has at most 3 rounds. A round hands out at most
    3n - 5 at 3-5 players (one player leaves on Bubbles, one scores 1 on Silver, the rest tie
    on Moons for 3 each) and 8 at 2 players (both meet all three conditions): 10 x 3 = 30 at
    5 players, so even the worst game uses the whole supply and no more."""
    worst = {n: most_souls_in_a_round(n) for n in (2, 3, 4, 5)}
    assert worst == {2: 8, 3: 4, 4: 7, 5: 10}
    assert all(most * ROUNDS <= SOUL_SUPPLY for most in worst.values())
    assert worst[5] * ROUNDS == SOUL_SUPPLY
