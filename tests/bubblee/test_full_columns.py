"""Full columns, the planet full, elimination (rulebook "Cas particuliers", "Fin de partie")."""

from __future__ import annotations

import pytest
from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME, board, rules
from services.core.decider import Rng, RuleError
from tests.bubblee.helpers import act, apply, drop, kinds, of_kind, place, planet, swap, table

R, P, B, G, Y, K = board.COLOURS
POWERS = pb.PHASE_POWERS
# A full planet without a line: no drop can make room on it.
FULL = ("RPBGY", "PBGYR", "RPBGY", "PBGYR")
# Full, but column 1 holds R over R: only a red landing alone in column 1 makes room.
FULL_BUT_RED_PAIR = ("RPBGY", "RBGYR", "BPBGY", "PBGYR")
ROOM_IN_COLUMN_5 = ("RPBG.", "PBGYR", "RPBGY", "PBGYR")


def test_drop_into_full_column_legal_when_lines_make_room() -> None:
    state = table(planet0=("R....", "R....", "B....", "K...."), sky=("GPBYR", "RYGPB"))
    events, after = act(state, drop((0, 0), (0, 1)))  # R lands above the column, then G
    landings = of_kind(events, "dropped")[0].landings
    assert [lnd.to_cell.row for lnd in landings] == [4, 5]  # above the planet at first
    assert planet(after, 0) == [".....", "G....", "B....", "K...."]


def test_drop_into_full_column_illegal_without_lines() -> None:
    state = table(planet0=("R....", "R....", "B....", "K...."), sky=("GPBYR", "YRGPB"))
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, drop((0, 0), (0, 1)), Rng.for_test(0))
    assert e.value.code == "COLUMN_FULL"


def test_vertical_pair_overflowing_column_illegal_without_room() -> None:
    state = table(planet0=(".....", "G....", "B....", "K...."), sky=("GPBYR", "YRGPB"))
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, drop((0, 0), (0, 1)), Rng.for_test(0))
    assert e.value.code == "COLUMN_FULL"


def test_drop_making_room_but_leaving_a_bubblee_above_is_illegal() -> None:
    # the R in column 1 clears its column, but the P next to it stays above column 2
    state = table(planet0=FULL_BUT_RED_PAIR, sky=("GPBYR", "RPGYB"))
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, drop((0, 0), (1, 0)), Rng.for_test(0))
    assert e.value.code == "COLUMN_FULL"
    _, after = act(state, drop((0, 0), (0, 1)))  # the vertical pair is legal
    assert planet(after, 0)[0] == ".PBGY"


def test_player_with_no_legal_drop_loses_at_once() -> None:
    state = table(planet0=FULL, sky=("GPBYR", "R.GPB"), phase=pb.PHASE_PLACE, drawn=Y)
    events, after = act(state, place(1, 0))
    assert kinds(events)[-1] == "game_over"
    assert after.outcome is not None and after.outcome.winners == (1,)
    assert "no legal drop" in after.outcome.reason


def test_player_who_can_drop_after_a_swap_does_not_lose() -> None:
    # the only legal drop needs the R of seat 1's row moved down into seat 0's row
    state = table(planet0=FULL_BUT_RED_PAIR, sky=("RPGYB", "G.BYP"), phase=pb.PHASE_PLACE,
                  drawn=Y)
    _, after = act(state, place(1, 0))
    assert after.outcome is None
    _, after = act(after, swap((0, 0), (0, 1)))
    _, after = act(after, drop((0, 0), (0, 1)))
    assert after.outcome is None and after.pool == (R,)  # the red line made room


def test_swap_leaving_no_legal_drop_loses() -> None:
    state = table(planet0=FULL_BUT_RED_PAIR, sky=("GPBYR", "RYGPB"))
    assert rules.any_legal_drop(state, 0, allow_swap=False)
    events, after = act(state, swap((0, 0), (1, 0)))
    assert kinds(events) == ["swapped", "game_over"]
    assert after.outcome is not None and after.outcome.winners == (1,)


def test_purple_may_not_target_full_column_while_room() -> None:
    state = table(planet0=(".....", ".....", ".....", "PPPPP"), planet1=ROOM_IN_COLUMN_5,
                  phase=POWERS, pool=(P,))
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, apply(0, column=0), Rng.for_test(0))
    assert e.value.code == "TARGET_COLUMN_FULL"
    _, after = act(state, apply(0, column=4))
    assert planet(after, 1)[0] == "RPBGP"


def test_blue_may_not_target_full_column_while_room() -> None:
    state = table(planet1=ROOM_IN_COLUMN_5, sky=("RPBGY", "PBGYR"), phase=POWERS, pool=(B,))
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, apply(0, column=2), Rng.for_test(0))
    assert e.value.code == "TARGET_COLUMN_FULL"
    assert [t[2] for t in rules.power_targets(state, 0, B)] == [4]


def test_purple_into_all_full_planet_eliminates_opponent() -> None:
    state = table(planet0=(".....", ".....", ".....", "PK..."), planet1=FULL,
                  phase=POWERS, pool=(P,))
    events, after = act(state, apply(0, column=0))
    assert of_kind(events, "power_applied")[0].sent.to_cell.row == 4
    assert kinds(events)[-1] == "game_over"
    assert after.outcome is not None and after.outcome.winners == (0,)
    assert "eliminated" in after.outcome.reason


def test_blue_into_all_full_planet_eliminates_opponent() -> None:
    state = table(planet1=FULL, sky=("RPBGY", "PBGYR"), phase=POWERS, pool=(B,), turn=1,
                  planet0=(".....", ".....", ".....", "....."))
    # seat 1's blue acts on planet 0 (empty): not an elimination
    _, after = act(state, apply(0, column=0))
    assert after.outcome is None
    state = table(planet1=FULL, sky=("RPBGY", "PBGYR"), phase=POWERS, pool=(B,))
    _, after = act(state, apply(0, column=0))
    assert after.outcome is not None and after.outcome.winners == (0,)


def test_vertical_pair_into_column_of_three_legal_when_first_makes_room() -> None:
    # the own-row B lands on B, B (row 4) and lines up; the G above it falls into the room
    state = table(planet0=(".....", "B....", "B....", "K...."), sky=("GPBYR", "BYGPR"))
    events, after = act(state, drop((0, 0), (0, 1)))
    landings = of_kind(events, "dropped")[0].landings
    assert [(lnd.colour, lnd.to_cell.row) for lnd in landings] == [(B, 3), (G, 4)]
    assert planet(after, 0) == [".....", ".....", "G....", "K...."]
    assert after.zones[0][B - 1] == 3


def test_no_legal_drop_with_room_left_does_not_say_the_planet_is_full() -> None:
    """Column 1 has one free cell: no pair fits (a vertical pair needs two cells there, a
    horizontal one puts its other half above a full column), so the player loses (F3), but
    the planet is not full and the reason says where the room is."""
    state = table(planet0=(".PBGY", "PBGYR", "RPBGY", "PBGYR"), sky=("GPBYR", "R.GPB"),
                  phase=pb.PHASE_PLACE, drawn=Y)
    _, after = act(state, place(1, 0))
    assert after.outcome is not None and after.outcome.winners == (1,)
    reason = after.outcome.reason
    assert "planet is full" not in reason
    assert reason.startswith("no legal drop: only column 1 has room")
    _, full = act(table(planet0=FULL, sky=("GPBYR", "R.GPB"), phase=pb.PHASE_PLACE, drawn=Y),
                  place(1, 0))
    assert full.outcome is not None and full.outcome.reason == "no legal drop: the planet is full"
