"""Former des lignes, chutes, réactions en chaîne (rulebook steps 4-5)."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import board
from services.bubblee.metrics import observe
from tests.bubblee.helpers import act, drop, kinds, of_kind, planet, table

R, P, B, G, Y, K = board.COLOURS
EMPTY = (".....",) * 4


def test_horizontal_line_of_three_removed() -> None:
    state = table(planet0=(".....", ".....", ".....", "RR..."), sky=("PBGYR", "GYRPB"))
    events, after = act(state, drop((2, 0), (3, 0)))  # R lands at column 3, P at column 4
    cleared = of_kind(events, "lines_cleared")
    assert len(cleared) == 1 and cleared[0].colour == R and len(cleared[0].cells) == 3
    assert planet(after, 0)[-1] == "...P."


def test_vertical_line_of_three_removed() -> None:
    state = table(planet0=(".....", ".....", "R....", "R...."), sky=("GPBYR", "RYGPB"))
    events, after = act(state, drop((0, 0), (0, 1)))  # own R lands first, then G on top
    assert of_kind(events, "lines_cleared")[0].colour == R
    assert planet(after, 0) == [".....", ".....", ".....", "G...."]


def test_diagonal_never_counts() -> None:
    state = table(planet0=(".....", ".....", ".RG..", "RGG.."), sky=("PBGYR", "GYRPB"))
    events, after = act(state, drop((2, 0), (3, 0)))  # R on top of column 3: a diagonal
    assert "lines_cleared" not in kinds(events)
    assert planet(after, 0)[1:] == ["..R..", ".RG..", "RGGP."]


def test_connected_same_colour_removed_with_line() -> None:
    state = table(planet0=(".....", ".....", "R....", "RR..R"), sky=("PBGYR", "GYRGB"))
    events, after = act(state, drop((2, 0), (3, 0)))  # R at column 3, G at column 4
    cleared = of_kind(events, "lines_cleared")
    assert len(cleared) == 1 and len(cleared[0].cells) == 4  # the line and the R above it
    assert planet(after, 0)[-1] == "...GR"  # the R beyond the G is not connected


def test_black_never_removed_by_line() -> None:
    state = table(planet0=(".....", ".....", ".....", "KK..."), sky=("PBGYR", "GYKPB"))
    events, after = act(state, drop((2, 0), (3, 0)))
    assert "lines_cleared" not in kinds(events)
    assert planet(after, 0)[-1] == "KKKP."


def test_removed_bubblees_score_one_point_each_for_the_mover() -> None:
    state = table(planet0=(".....", ".....", "R....", "RR..."), sky=("PBGYR", "GYRPB"))
    events, after = act(state, drop((2, 0), (3, 0)))
    assert after.zones[0] == (4, 0, 0, 0, 0, 0)
    assert of_kind(events, "lines_cleared")[0].scorer == 0


def test_gravity_after_removal() -> None:
    state = table(planet0=(".....", ".....", "GB...", "RR..."), sky=("PBYYR", "GYRPB"))
    events, after = act(state, drop((2, 0), (2, 1)))  # R lands first, Y on it
    moves = of_kind(events, "gravity")[0].moves
    assert sorted((m.from_cell.column, m.from_cell.row, m.to_cell.row) for m in moves) == [
        (0, 1, 0), (1, 1, 0), (2, 1, 0)
    ]
    assert planet(after, 0) == [".....", ".....", ".....", "GBY.."]


def test_chain_reaction() -> None:
    state = table(planet0=(".....", ".....", "G....", "RR.GG"), sky=("PBGYR", "GYRPB"))
    events, after = act(state, drop((2, 0), (2, 1)))  # R lands first, then G on it
    cleared = of_kind(events, "lines_cleared")
    assert [(c.colour, c.wave) for c in cleared] == [(R, 1), (G, 2)]
    settled = of_kind(events, "settled")[0]
    assert settled.waves == 2 and settled.cause == pb.CAUSE_DROP
    assert planet(after, 0)[-1] == "G...."
    assert after.pool == (R, G) and after.phase == pb.PHASE_POWERS


def test_observe_reports_cascade_depth_of_a_drop() -> None:
    state = table(planet0=(".....", ".....", "G....", "RR.GG"), sky=("PBGYR", "GYRPB"))
    events, _ = act(state, drop((2, 0), (2, 1)))
    observed = [observe(ev) for ev in events if observe(ev)]
    assert observed == [{"cascade_depth": 2.0}]


def test_drop_without_lines_has_cascade_depth_zero() -> None:
    events, _ = act(table(), drop((0, 0), (1, 0)))
    assert of_kind(events, "settled")[0].waves == 0


def test_each_removed_group_gives_a_power() -> None:
    # a red row line and a green column line in one drop: two groups, two powers
    state = table(planet0=(".....", ".....", "...G.", "RR.G."), sky=("PBGYR", "GYRGB"))
    events, after = act(state, drop((2, 0), (3, 0)))
    assert [c.power_gained for c in of_kind(events, "lines_cleared")] == [R, G]
    assert after.pool == (R, G)


def test_two_lines_connected_give_one_power() -> None:
    # a row line and a column line sharing a Bubblee are one connected group
    state = table(planet0=(".....", ".....", "RR...", "GGR.."), sky=("PBRYR", "GYRPB"))
    events, after = act(state, drop((2, 0), (2, 1)))  # R at (2,1), then R at (2,2)
    cleared = of_kind(events, "lines_cleared")
    assert len(cleared) == 1 and len(cleared[0].cells) == 5
    assert after.pool == (R,)


def test_no_powers_option_grants_none() -> None:
    state = table(planet0=(".....", ".....", "...G.", "RR.G."), sky=("PBGYR", "GYRGB"),
                  no_powers=True)
    events, after = act(state, drop((2, 0), (3, 0)))
    assert all(c.power_gained == 0 for c in of_kind(events, "lines_cleared"))
    assert after.pool == () and after.turn == 1  # the turn ends at once
    assert after.zones[0] == (3, 0, 0, 3, 0, 0)  # the lines still score
