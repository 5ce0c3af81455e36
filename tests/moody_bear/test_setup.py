"""Preparation: team cards, the deck, hands of 5, the Dark Swallow shuffled in after the deal."""

from __future__ import annotations

from collections import Counter

import pytest
from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import MalformedCommand, Rng, Seat
from services.moody_bear import GAME
from services.moody_bear.cards import BLUE, DARK_SWALLOW, DUO_JEWEL, RED, SHUFFLE, SOLO
from tests.moody_bear.helpers import new_game, setup_events


def all_cards(state) -> Counter:  # type: ignore[no-untyped-def]
    return Counter([c for h in state.hands for c in h] + list(state.deck))


def test_three_players_get_one_red_one_blue_one_solo() -> None:
    assert sorted(new_game(3).teams) == sorted([RED, BLUE, SOLO])


def test_four_players_get_two_red_and_two_blue() -> None:
    assert sorted(new_game(4).teams) == sorted([RED, RED, BLUE, BLUE])


def test_five_players_get_two_red_two_blue_and_solo() -> None:
    assert sorted(new_game(5).teams) == sorted([RED, RED, BLUE, BLUE, SOLO])


def test_four_players_with_the_five_player_structure_set_one_team_card_aside() -> None:
    for seed in range(10):
        state = new_game(4, seed, five_player_structure=True)
        assert len(state.set_aside) == 1
        assert sorted(state.teams + state.set_aside) == sorted([RED, RED, BLUE, BLUE, SOLO])
    aside = {new_game(4, seed, five_player_structure=True).set_aside for seed in range(30)}
    assert len(aside) > 1, "the card set aside is random"


def test_the_five_player_structure_is_an_option_of_the_four_player_game_only() -> None:
    seats = [Seat("a"), Seat("b"), Seat("c")]
    with pytest.raises(MalformedCommand):
        GAME.setup(pb.Options(five_player_structure=True), seats, Rng(b"x", 0))


def test_three_to_five_players() -> None:
    for n in (2, 6):  # the platform refuses it before the set-up
        with pytest.raises(MalformedCommand):
            GAME.check_seat_count(n)


def test_the_deck_holds_48_cards_with_four_shuffle_the_deck() -> None:
    cards = all_cards(new_game(4))
    assert sum(cards.values()) == 48
    assert cards[SHUFFLE] == 4
    assert cards[DUO_JEWEL] == 0


def test_the_duo_jewel_option_adds_the_duo_jewel() -> None:
    cards = all_cards(new_game(4, duo_jewel=True))
    assert sum(cards.values()) == 49
    assert cards[DUO_JEWEL] == 1


def test_each_player_is_dealt_five_cards_and_the_rest_is_the_deck() -> None:
    state = new_game(5)
    assert [len(h) for h in state.hands] == [5] * 5
    assert len(state.deck) == 48 - 25


def test_the_dark_swallow_is_shuffled_in_after_the_deal() -> None:
    positions = set()
    for seed in range(40):
        state = new_game(5, seed)
        assert all(DARK_SWALLOW not in h for h in state.hands)
        positions.add(state.deck.index(DARK_SWALLOW))
    assert len(positions) > 10, "it lands anywhere in the deck"


def test_the_first_player_is_random() -> None:
    assert len({new_game(4, seed).turn for seed in range(30)}) == 4


def test_team_cards_are_dealt_face_down() -> None:
    dealt = []
    for e in setup_events(4):
        if e.HasField("team_dealt"):
            seat = e.team_dealt.seat
            dealt.append(seat)
            assert GAME.redact(e, seat).team_dealt.team != pb.TEAM_UNSPECIFIED
            for other in [s for s in range(4) if s != seat] + [None]:
                assert GAME.redact(e, other).team_dealt.team == pb.TEAM_UNSPECIFIED
    assert sorted(dealt) == [0, 1, 2, 3], "every seat's team card was checked"
