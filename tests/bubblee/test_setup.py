"""Mise en place (rulebook "Installation", the project ruling "Setup")."""

from __future__ import annotations

import pytest
from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import board, rules
from services.core.decider import MalformedCommand, Rng, Seat
from tests.bubblee.helpers import bubblee_count, new_game

BLACK = board.BLACK - 1


def test_setup_blacks_on_ground_columns_1_3_5() -> None:
    state = new_game()
    for planet in state.planets:
        assert board.to_rows(planet) == [".....", ".....", ".....", "K.K.K"]


def test_setup_extra_blacks_in_columns_2_then_4() -> None:
    one = new_game(pb.Options(extra_blacks=1))
    two = new_game(pb.Options(extra_blacks=2))
    assert board.to_rows(one.planets[0])[-1] == "KKK.K"
    assert board.to_rows(two.planets[1])[-1] == "KKKKK"


def test_extra_blacks_above_2_is_malformed() -> None:
    with pytest.raises(MalformedCommand) as e:
        rules.setup(pb.Options(extra_blacks=3), [Seat("a"), Seat("b")], Rng.for_test(0))
    assert e.value.code == "BAD_OPTION"


def test_setup_sky_two_of_each_colour_none_adjacent() -> None:
    for seed in range(40):
        sky = new_game(seed=seed).sky
        assert sorted(sky) == sorted(c for c in board.LINE_COLOURS for _ in range(2))
        for a, b in rules.SKY_PAIRS:
            assert sky[a] != sky[b], f"seed {seed}: same colour at sky cells {a} and {b}"


def test_setup_sky_layout_is_random() -> None:
    assert len({new_game(seed=seed).sky for seed in range(20)}) > 10


@pytest.mark.parametrize("extra", [0, 1, 2])
def test_setup_bag_holds_70_coloured_and_exactly_3_black(extra: int) -> None:
    state = new_game(pb.Options(extra_blacks=extra))
    assert state.bag == (14, 14, 14, 14, 14, 3)
    assert state.set_aside[BLACK] == 16 - 3 - 2 * (3 + extra)


def test_setup_all_96_bubblees_accounted_for() -> None:
    for extra in (0, 1, 2):
        assert bubblee_count(new_game(pb.Options(extra_blacks=extra))) == 96


def test_setup_first_player_by_coin_toss() -> None:
    assert {new_game(seed=seed).turn for seed in range(20)} == {0, 1}


def test_duel_needs_exactly_two_seats() -> None:
    for seats in ([Seat("a")], [Seat("a"), Seat("b"), Seat("c")]):
        with pytest.raises(MalformedCommand) as e:
            rules.setup(pb.Options(), seats, Rng.for_test(0))
        assert e.value.code == "BAD_SEATS"


def test_game_starts_on_the_action_step_of_the_first_turn() -> None:
    state = new_game()
    assert state.phase == pb.PHASE_ACTION and state.first_turn and not state.drawn
