"""The drawing deck: running out, reshuffling the discard pile, short looks."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from services.core.decider import Rng
from services.moody_bear import GAME
from services.moody_bear.cards import (
    AMBASSADOR,
    CANCEL,
    DARK_SWALLOW,
    KNIGHT,
    MACE,
    REVEAL,
    SHUFFLE,
)
from services.moody_bear.state import ARRANGE, TURN
from tests.moody_bear.helpers import PASS_TURN, act, all_decline, kinds, new_game, play, table


def test_deck_exhaustion_shuffles_the_discard_pile_into_a_new_deck() -> None:
    discard = [MACE, CANCEL, REVEAL, SHUFFLE]
    state = table(4, discard=discard)
    state, events = act(state, 0, PASS_TURN)
    assert kinds(events) == ["deck_reshuffled", "card_drawn", "turn_ended"]
    assert state.discard == ()
    assert Counter(state.deck) + Counter(state.hands[0]) == Counter(discard)
    assert len(state.deck) == 3 and state.turn == 1


def test_with_no_deck_and_no_discard_pile_nothing_is_drawn() -> None:
    state, events = act(table(4), 0, PASS_TURN)
    assert kinds(events) == ["nothing_to_draw", "turn_ended"]
    assert state.hands[0] == () and state.turn == 1


def test_the_last_card_is_drawn_before_any_reshuffle() -> None:
    state, events = act(table(4, deck=[MACE], discard=[CANCEL]), 0, PASS_TURN)
    assert kinds(events) == ["card_drawn", "turn_ended"]
    assert state.deck == () and state.discard == (CANCEL,)


def test_looking_at_the_top_three_of_a_short_deck_sees_what_is_there() -> None:
    state = table(4, hands=[[KNIGHT, AMBASSADOR], [], [], []], deck=[MACE, CANCEL],
                  discard=[REVEAL])
    state, _ = act(state, 0, play(KNIGHT, AMBASSADOR))
    state, _ = all_decline(state)
    assert state.phase == ARRANGE and state.top == (MACE, CANCEL)


def test_looking_at_an_empty_deck_does_nothing() -> None:
    state = table(4, hands=[[KNIGHT, AMBASSADOR], [], [], []], discard=[REVEAL])
    state, _ = act(state, 0, play(KNIGHT, AMBASSADOR))
    state, events = all_decline(state)
    assert events[-1].top_cards_taken.count == 0 and state.phase == TURN


def test_random_games_run_through_the_deck_and_keep_every_card() -> None:
    """Seeded random play without proclaims or the Dark Swallow, 300 commands a game: the
    deck runs out and is rebuilt, and no card is ever lost or made."""
    reshuffles = 0
    for seed in range(5):
        state = new_game(3, seed)
        state = replace(state, deck=tuple(KNIGHT if c == DARK_SWALLOW else c for c in state.deck))
        total = 48
        rng = Rng.for_test(seed)
        for step in range(300):
            seat = rng.choice(GAME.to_act(state))
            legal = [c for c in GAME.legal_actions(state, seat) if not c.HasField("proclaim")]
            events = GAME.decide_now(state, seat, rng.choice(legal), Rng(b"d%d" % seed, step))
            for e in events:
                reshuffles += e.HasField("deck_reshuffled")
                state = GAME.evolve(state, e)
            held = sum(len(h) for h in state.hands) + len(state.deck) + len(state.discard)
            held += len(state.top) + sum(1 for c in state.choices if c)
            held += sum(len(e.cards) for e in state.stack) + (state.trade is not None)
            assert held == total
    assert reshuffles > 0
