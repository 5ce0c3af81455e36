"""Pouvoirs des couleurs (rulebook "Pouvoirs", the project ruling "Powers")."""

from __future__ import annotations

import pytest
from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME, board, rules
from services.bubblee.state import scores
from services.core.decider import MalformedCommand, Rng, RuleError
from tests.bubblee.helpers import (
    START_PLANET,
    act,
    apply,
    decline,
    drop,
    kinds,
    of_kind,
    planet,
    swap,
    table,
)

R, P, B, G, Y, K = board.COLOURS
POWERS = pb.PHASE_POWERS
START = START_PLANET


def test_red_swaps_two_adjacent_on_opponent_planet() -> None:
    state = table(planet1=(".....", ".....", ".....", "GB..."), phase=POWERS, pool=(R,))
    events, after = act(state, apply(0, a=(0, 0), b=(1, 0)))
    assert planet(after, 1)[-1] == "BG..."
    assert of_kind(events, "power_applied")[0].swapped.planet == 1


def test_red_swaps_vertically() -> None:
    state = table(planet1=(".....", ".....", "Y....", "GB..."), phase=POWERS, pool=(R,))
    _, after = act(state, apply(0, a=(0, 1), b=(0, 0)))
    assert planet(after, 1)[-2:] == ["G....", "YB..."]


def test_red_and_green_swap_only_occupied_cells() -> None:
    state = table(planet1=(".....", ".....", ".....", "GB..."), phase=POWERS, pool=(R,))
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, apply(0, a=(1, 0), b=(2, 0)), Rng.for_test(0))
    assert e.value.code == "CELL_EMPTY"


def test_swap_power_needs_adjacent_cells() -> None:
    # A rule error, not a malformed command: the same ApplyPower is valid for a column power.
    state = table(planet1=(".....", ".....", ".....", "GBY.."), phase=POWERS, pool=(R,))
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, apply(0, a=(0, 0), b=(2, 0)), Rng.for_test(0))
    assert e.value.code == "NOT_ADJACENT" and not isinstance(e.value, MalformedCommand)
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, apply(0), Rng.for_test(0))
    assert e.value.code == "MISSING_CELL" and not isinstance(e.value, MalformedCommand)
    yellow = table(planet0=(".....", ".....", ".....", "K.K.K"), phase=POWERS, pool=(Y,))
    act(yellow, apply(0))  # the same command is accepted when the pending power is yellow


def test_green_swaps_on_own_planet_and_its_lines_grant_powers() -> None:
    state = table(planet0=(".....", ".....", ".....", "RRGR."), phase=POWERS, pool=(G,))
    events, after = act(state, apply(0, a=(2, 0), b=(3, 0)))
    assert planet(after, 0)[-1] == "...G."
    assert after.zones[0][R - 1] == 3
    assert after.pool == (R,) and after.phase == POWERS  # the new group joins the pool
    assert of_kind(events, "settled")[0].cause == pb.CAUSE_POWER


def test_purple_sends_uncovered_to_same_column_of_opponent() -> None:
    state = table(planet0=(".....", ".....", ".P...", ".B..."),
                  planet1=(".....", ".....", ".....", "K.K.K"), phase=POWERS, pool=(P,))
    events, after = act(state, apply(0, column=1))
    assert planet(after, 0)[-2:] == [".....", ".B..."]
    assert planet(after, 1)[-1] == "KPK.K"
    sent = of_kind(events, "power_applied")[0].sent
    assert (sent.from_planet_cell.column, sent.from_planet_cell.row) == (1, 1)
    assert (sent.to_cell.column, sent.to_cell.row) == (1, 0)


def test_purple_needs_a_bubblee_in_the_column() -> None:
    state = table(planet0=(".....",) * 4, phase=POWERS, pool=(P,))
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, apply(0, column=3), Rng.for_test(0))
    assert e.value.code == "COLUMN_EMPTY"


def test_blue_drops_opponent_sky_bubblee_on_opponent_planet() -> None:
    state = table(sky=("RPBGY", "PBGYR"), phase=POWERS, pool=(B,))
    events, after = act(state, apply(0, column=3))  # the G of seat 1's row, column 4
    assert planet(after, 1)[-1] == "K.KGK"
    assert after.sky[5 + 3] == 0


def test_blue_of_seat_1_uses_row_0() -> None:
    state = table(sky=("RPBGY", "PBGYR"), phase=POWERS, pool=(B,), turn=1)
    _, after = act(state, apply(0, column=1))  # the B of seat 0's row
    assert planet(after, 0)[-2:] == [".....", "KBK.K"]
    assert after.sky[1] == 0


def test_yellow_puts_uncovered_in_score_zone() -> None:
    state = table(planet0=(".....", ".....", "..Y..", "K.G.K"), phase=POWERS, pool=(Y,))
    events, after = act(state, apply(0, column=2))
    assert planet(after, 0)[-2:] == [".....", "K.G.K"]
    assert after.zones[0][Y - 1] == 1
    assert of_kind(events, "power_applied")[0].banked.scorer == 0


def test_black_can_be_moved_by_powers() -> None:
    state = table(planet1=(".....", ".....", "R....", "K.K.K"), phase=POWERS, pool=(R, Y))
    _, after = act(state, apply(0, a=(0, 0), b=(0, 1)))
    assert planet(after, 1)[-2:] == ["K....", "R.K.K"]
    _, after = act(after, apply(0, column=4))  # yellow takes the black of column 5
    assert after.zones[0] == (0, 0, 0, 0, 0, 1)


def test_black_in_score_zone_counts_one_point() -> None:
    state = table(zones=((0, 0, 0, 0, 0, 2), (1, 0, 0, 0, 0, 0)))
    assert scores(state) == (2, 1)


def test_lines_on_opponent_planet_score_for_owner_and_grant_no_power() -> None:
    state = table(planet1=(".....", ".....", ".....", "RRKR."), phase=POWERS, pool=(R,))
    events, after = act(state, apply(0, a=(2, 0), b=(3, 0)))
    cleared = of_kind(events, "lines_cleared")[0]
    assert cleared.planet == 1 and cleared.scorer == 1 and cleared.power_gained == 0
    assert after.zones == ((0,) * 6, (3, 0, 0, 0, 0, 0))
    assert after.pool == () and after.turn == 1


def test_opponent_lines_grant_powers_option() -> None:
    state = table(planet1=(".....", ".....", ".....", "RRKR."), phase=POWERS, pool=(R,),
                  opponent_lines_grant_powers=True)
    _, after = act(state, apply(0, a=(2, 0), b=(3, 0)))
    assert after.zones[1][R - 1] == 3  # still scored by the planet's owner
    assert after.pool == (R,) and after.turn == 0  # the power goes to the mover


def test_powers_applied_in_the_players_chosen_order() -> None:
    state = table(planet0=(".....", ".....", ".....", "YB..."), phase=POWERS, pool=(R, Y))
    _, after = act(state, apply(1, column=0))  # yellow first
    assert after.pool == (R,) and after.zones[0][Y - 1] == 1


def test_decline_power() -> None:
    state = table(phase=POWERS, pool=(R, Y))
    events, after = act(state, decline(0))
    assert kinds(events) == ["power_declined"]
    assert after.pool == (Y,) and after.phase == POWERS and after.turn == 0


def test_turn_ends_when_pool_is_empty() -> None:
    state = table(phase=POWERS, pool=(Y,))
    events, after = act(state, decline(0))
    assert "turn_ended" in kinds(events) and after.turn == 1 and after.pool == ()


def test_power_index_out_of_range_rejected() -> None:
    with pytest.raises(RuleError) as e:
        GAME.decide_now(table(phase=POWERS, pool=(R,)), 0, decline(1), Rng.for_test(0))
    assert e.value.code == "NO_SUCH_POWER"
    with pytest.raises(MalformedCommand):
        GAME.decide_now(table(phase=POWERS, pool=(R,)), 0, decline(-1), Rng.for_test(0))


def test_no_power_outside_the_power_step() -> None:
    with pytest.raises(RuleError) as e:
        GAME.decide_now(table(), 0, decline(0), Rng.for_test(0))
    assert e.value.code == "NO_PENDING_POWER"
    with pytest.raises(RuleError) as e:
        GAME.decide_now(table(phase=POWERS, pool=(R,)), 0, drop((0, 0), (1, 0)), Rng.for_test(0))
    assert e.value.code == "POWERS_PENDING"


def test_power_pool_is_listed_once_per_colour_with_targets() -> None:
    state = table(planet0=(".....", ".....", ".....", "K.G.K"), phase=POWERS, pool=(Y, Y))
    legal = rules.legal_actions(state, 0)
    assert {c.apply_power.column for c in legal if c.HasField("apply_power")} == {0, 2, 4}
    assert all(c.apply_power.index == 0 for c in legal if c.HasField("apply_power"))
    assert sum(1 for c in legal if c.HasField("decline_power")) == 1


def test_swap_power_of_two_same_colours_is_allowed() -> None:
    state = table(planet0=(".....", ".....", ".....", "GG..."), phase=POWERS, pool=(G,))
    _, after = act(state, apply(0, a=(0, 0), b=(1, 0)))
    assert planet(after, 0)[-1] == "GG..." and after.pool == ()


def test_purple_line_on_opponent_planet_scores_for_owner_and_grants_no_power() -> None:
    state = table(planet0=(".....", ".....", ".....", "PK..."),
                  planet1=(".....", "P....", "P....", "K.K.K"), phase=POWERS, pool=(P,))
    events, after = act(state, apply(0, column=0))
    cleared = of_kind(events, "lines_cleared")[0]
    assert cleared.planet == 1 and cleared.scorer == 1 and cleared.power_gained == 0
    assert after.zones == ((0,) * 6, (0, 3, 0, 0, 0, 0))
    assert planet(after, 1)[-1] == "K.K.K" and after.pool == () and after.turn == 1


def test_blue_line_on_opponent_planet_scores_for_owner_and_grants_no_power() -> None:
    # DEFAULT_SKY: seat 1's row is RPBGY, so column 3 holds a B
    state = table(planet1=(".....", ".....", "..B..", "K.B.K"), phase=POWERS, pool=(B,))
    events, after = act(state, apply(0, column=2))
    cleared = of_kind(events, "lines_cleared")[0]
    assert cleared.planet == 1 and cleared.scorer == 1 and cleared.power_gained == 0
    assert after.zones == ((0,) * 6, (0, 0, 3, 0, 0, 0))
    assert after.pool == () and after.turn == 1


def test_power_on_opponent_planet_resolves_chain_reaction_for_owner() -> None:
    # red swaps Y and R of column 3: a red row goes, the greens fall into a column of 3
    state = table(planet1=("G....", "G.R..", "RRY..", "GKK.."), phase=POWERS, pool=(R,))
    events, after = act(state, apply(0, a=(2, 1), b=(2, 2)))
    assert [c.wave for c in of_kind(events, "lines_cleared")] == [1, 2]
    assert of_kind(events, "settled")[0].waves == 2
    assert planet(after, 1) == [".....", ".....", "..Y..", ".KK.."]
    assert after.zones[1] == (3, 0, 0, 3, 0, 0) and after.zones[0] == (0,) * 6
    assert after.pool == ()


def test_green_and_purple_move_black() -> None:
    # "Noir: ... Il ne peut pas être retiré, sauf grâce à un pouvoir"
    state = table(planet0=(".....", ".....", "K....", "RK..."), phase=POWERS, pool=(G, P))
    _, after = act(state, apply(0, a=(0, 0), b=(0, 1)))
    assert planet(after, 0)[-2:] == ["R....", "KK..."]
    _, after = act(after, apply(0, column=1))  # purple sends the black of column 2
    assert planet(after, 0)[-1] == "K...."
    assert planet(after, 1)[-1] == "KKK.K"  # black lines are never removed


def test_swaps_of_one_colour_are_accepted_but_not_listed() -> None:
    """T6: a swap of two Bubblees of one colour changes nothing; the rules accept it (P1)
    but legal_actions does not offer it, in the sky or by red and green."""
    state = table(sky=("RRBGY", "PBGYR"))  # seat 1's row starts R R; seat 0's is PBGYR
    swaps = {(c.swap.a.column, c.swap.a.row, c.swap.b.column, c.swap.b.row)
             for c in rules.legal_actions(state, 0) if c.HasField("swap")}
    assert (0, 1, 1, 1) not in swaps and (0, 0, 1, 0) in swaps
    act(state, swap((0, 1), (1, 1)))  # still accepted
    for power, planet_at in ((G, 0), (R, 1)):
        pictures = {planet_at: (".....", ".....", ".....", "GGB..")}
        state = table(planet0=pictures.get(0, START), planet1=pictures.get(1, START),
                      phase=POWERS, pool=(power,))
        pairs = {(c.apply_power.a.column, c.apply_power.b.column)
                 for c in rules.legal_actions(state, 0) if c.apply_power.HasField("b")}
        assert pairs == {(1, 2)}, power  # G G is not offered, G B is
        act(state, apply(0, a=(0, 0), b=(1, 0)))  # still accepted


def test_purple_and_yellow_entries_name_the_bubblee_that_moves() -> None:
    state = table(planet0=(".....", ".....", "Y....", "K.G.K"), phase=POWERS, pool=(P, Y))
    legal = [c.apply_power for c in rules.legal_actions(state, 0) if c.HasField("apply_power")]
    moving = {(p.index, p.column): (p.a.column, p.a.row) for p in legal}
    assert all(p.HasField("a") and not p.HasField("b") for p in legal)
    # column 1's uncovered Bubblee is the yellow one on row 2; columns 3 and 5 on the ground
    assert moving == {(i, c): (c, 1 if c == 0 else 0) for i in (0, 1) for c in (0, 2, 4)}
    with pytest.raises(RuleError) as e:  # naming a covered Bubblee is refused
        GAME.decide_now(state, 0, apply(0, a=(0, 0), column=0), Rng.for_test(0))
    assert e.value.code == "NOT_UNCOVERED"
    events, _ = act(state, apply(1, a=(0, 1), column=0))
    assert of_kind(events, "power_applied")[0].banked.colour == Y
    _, after = act(state, apply(0, column=2))  # the column alone still names it
    assert planet(after, 0)[-1] == "K...K"
