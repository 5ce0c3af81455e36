"""Set Up: players, the token table, special tokens, screens, hands and public pacts."""

from __future__ import annotations

import json

import pytest
from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import GAME
from services.bubble_shadow import tokens as tk
from services.bubble_shadow.cards import DATA_FILE, card, regular_ids, special_ids
from services.core.decider import MalformedCommand, Rng

from .helpers import new_game, seats, tokens


@pytest.mark.parametrize("n", [1, 6])
def test_two_to_five_players(n: int) -> None:
    with pytest.raises(MalformedCommand):  # the platform refuses it before the set-up
        GAME.check_seat_count(len(seats(n)))


@pytest.mark.parametrize(
    "n,moons,silver,bubbles", [(2, 7, 11, 7), (3, 10, 16, 10), (4, 13, 21, 13), (5, 13, 21, 13)]
)
def test_token_table(n: int, moons: int, silver: int, bubbles: int) -> None:
    state, _ = new_game(n)
    extra = {"apple": 3, "snake": 5, "rose": 3} if n == 5 else {}
    assert state.pool == tokens(moon=moons, silver=silver, bubble=bubbles, **extra)


def test_five_player_table_adds_apples_snakes_and_roses() -> None:
    state, _ = new_game(5)
    assert (state.pool[pb.APPLE], state.pool[pb.SNAKE], state.pool[pb.ROSE]) == (3, 5, 3)
    assert state.pool[pb.MOON] == 13 and state.pool[pb.SILVER] == 21


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_eleven_tokens_each_behind_the_screen(n: int) -> None:
    state, _ = new_game(n)
    for p in state.players:
        assert tk.total(p.behind) == 11 and tk.total(p.front) == 0
    assert tk.total(state.bag) == tk.total(state.pool) - 11 * n


def test_complacency_draws_five_tokens_each() -> None:
    state, _ = new_game(4, complacency=True)
    assert [tk.total(p.behind) for p in state.players] == [5, 5, 5, 5]


def test_complacency_is_for_three_to_five_players() -> None:
    with pytest.raises(MalformedCommand):
        GAME.setup(pb.Options(complacency=True), seats(2), Rng.for_test(0))


def test_three_public_special_pacts() -> None:
    state, _ = new_game(3)
    assert len(state.public) == 3 and all(card(c).blank for c in state.public)
    assert len(state.specials_left) == 6


def test_six_regular_pact_cards_in_hand() -> None:
    state, _ = new_game(5)
    hands = [p.hand for p in state.players]
    assert all(len(h) == 6 for h in hands)
    dealt = [c for h in hands for c in h]
    assert len(set(dealt)) == 30 and all(not card(c).blank for c in dealt)


def test_first_magician_is_drawn_from_the_seed() -> None:
    firsts = {new_game(4, seed)[0].magician for seed in range(30)}
    assert firsts == {0, 1, 2, 3}
    assert new_game(4, 7)[0].magician == new_game(4, 7)[0].magician


def test_special_tokens_replace_main_tokens_of_their_colour() -> None:
    options = {"special_tokens": pb.SpecialTokens(apples=1, palettes=2, roses=3, chess=1,
                                                  snakes=2, oysters=3)}
    state, _ = new_game(3, **options)
    assert state.pool == tokens(moon=7, apple=1, palette=2, bubble=6, rose=3, chess=1,
                                silver=11, snake=2, oyster=3)


def test_crown_is_added_without_replacing() -> None:
    state, _ = new_game(3, special_tokens=pb.SpecialTokens(crown=True))
    assert state.pool == tokens(moon=10, silver=16, bubble=10, crown=1)


def test_all_special_tokens_at_five_players_adds_the_rest() -> None:
    state, _ = new_game(5, all_special_tokens=True)
    assert state.pool == tokens(moon=10, silver=18, bubble=10, apple=3, snake=5, rose=3,
                                oyster=3, crown=1, palette=3, chess=3)


def test_five_player_game_cannot_ask_for_more_apples() -> None:
    with pytest.raises(MalformedCommand):
        new_game(5, special_tokens=pb.SpecialTokens(apples=1))


def test_special_tokens_limited_by_the_box() -> None:
    with pytest.raises(MalformedCommand):
        new_game(3, special_tokens=pb.SpecialTokens(oysters=4))


def test_crown_is_placed_in_front_of_the_screen() -> None:
    for seed in range(40):
        state, events = new_game(5, seed, special_tokens=pb.SpecialTokens(crown=True))
        if state.crown_holder >= 0:
            holder = state.players[state.crown_holder]
            assert holder.front[pb.CROWN] == 1 and holder.behind[pb.CROWN] == 0
            assert tk.total(holder.behind) == 10
            return
    pytest.fail("no seed dealt the Crown")


def test_pact_cards_are_authored_data() -> None:
    data = json.loads(DATA_FILE.read_text())
    assert "AUTHORED" in data["authored"]
    assert len(regular_ids()) == 36 and len(special_ids()) == 9
    pairs: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for c in regular_ids():
        (a, x), (b, y) = card(c).ends
        pairs.setdefault((a, b), []).append((x, y))
    assert len(pairs) == 3
    for quantities in pairs.values():
        everything = sorted((x, y) for x in (1, 2, 3) for y in (1, 2, 3))
        assert sorted(quantities) == sorted(everything + [(1, 1), (2, 2), (3, 3)])
    blanks = sorted(card(c).ends[0] for c in special_ids())
    assert blanks == sorted((t, q) for t in (pb.MOON, pb.SILVER, pb.BUBBLE) for q in (1, 2, 3))
