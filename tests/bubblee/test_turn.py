"""Tour de jeu: refill, optional swap, drop (rulebook steps 1-3)."""

from __future__ import annotations

import pytest
from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME, board, rules
from services.core.decider import MalformedCommand, Rng, RuleError
from tests.bubblee.helpers import act, drop, kinds, new_game, of_kind, place, planet, swap, table

view = GAME.view


def test_first_turn_skips_refill() -> None:
    state = new_game()
    assert state.first_turn and state.phase == pb.PHASE_ACTION  # no draw before acting
    seat = state.turn
    events, after = act(state, drop((0, seat), (1, seat)))
    assert "drawn" in kinds(events)  # the next turn refills
    assert not after.first_turn and after.turn == 1 - seat


def test_refill_draws_one_at_a_time_and_player_chooses_cell() -> None:
    state = new_game()
    seat = state.turn
    _, state = act(state, drop((0, seat), (1, seat)))
    assert state.phase == pb.PHASE_PLACE and state.drawn
    assert sum(state.bag) == 72  # one drawn, not two
    drawn = state.drawn
    events, state = act(state, place(1, seat))
    assert state.sky[seat * 5 + 1] == drawn
    assert kinds(events) == ["placed", "drawn"]
    events, state = act(state, place(0, seat))
    assert kinds(events) == ["placed"]
    assert state.phase == pb.PHASE_ACTION and 0 not in state.sky


def test_draws_come_from_the_bag_composition() -> None:
    # only yellow is left in the bag: every draw is yellow
    state = table(sky=("RPBGY", "PBGYR"), bag=(0, 0, 0, 0, 3, 0))
    _, state = act(state, drop((3, 0), (4, 0)))
    _, state = act(state, place(3, 0), seat=1)
    assert state.sky[3] == board.YELLOW and state.drawn == board.YELLOW


def test_place_into_occupied_cell_rejected() -> None:
    state = table(sky=("RPBGY", "PB.YR"), phase=pb.PHASE_PLACE, drawn=board.RED)
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, place(0, 0), Rng.for_test(0))
    assert e.value.code == "CELL_OCCUPIED"


def test_drop_before_refill_complete_rejected() -> None:
    state = table(sky=("RPBGY", "PB.YR"), phase=pb.PHASE_PLACE, drawn=board.RED)
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, drop((0, 0), (1, 0)), Rng.for_test(0))
    assert e.value.code == "PLACE_FIRST"


def test_swap_exchanges_two_adjacent_sky_bubblees() -> None:
    state = table(sky=("RPBGY", "PBGYR"))
    events, after = act(state, swap((2, 0), (2, 1)))  # vertical
    assert kinds(events) == ["swapped"]
    assert after.sky[2] == board.BLUE and after.sky[7] == board.GREEN
    _, after = act(after, drop((0, 0), (1, 0)))
    assert after.turn == 1


def test_swap_horizontally_in_either_row() -> None:
    state = table(sky=("RPBGY", "PBGYR"))
    _, after = act(state, swap((3, 1), (4, 1)))  # in the opponent's row: allowed
    assert after.sky[8] == board.YELLOW and after.sky[9] == board.GREEN


def test_swap_only_once_per_turn() -> None:
    state = table(swapped=True)
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, swap((0, 0), (1, 0)), Rng.for_test(0))
    assert e.value.code == "SWAP_ALREADY_USED"


def test_swap_of_non_adjacent_cells_is_malformed() -> None:
    for a, b in (((0, 0), (2, 0)), ((0, 0), (1, 1)), ((4, 0), (0, 1))):
        with pytest.raises(MalformedCommand) as e:
            GAME.decide_now(table(), 0, swap(a, b), Rng.for_test(0))
        assert e.value.code == "NOT_ADJACENT"


def test_drop_of_non_adjacent_cells_is_malformed() -> None:
    with pytest.raises(MalformedCommand):
        GAME.decide_now(table(), 0, drop((0, 0), (3, 0)), Rng.for_test(0))


def test_drop_horizontal_pair_in_own_row() -> None:
    state = table(planet0=(".....",) * 4, sky=("RPBGY", "PBGYR"))
    events, after = act(state, drop((1, 0), (2, 0)))
    assert planet(after, 0)[-1] == ".BG.."
    assert after.sky[1] == 0 and after.sky[2] == 0


def test_drop_horizontal_pair_in_opponent_row_rejected() -> None:
    with pytest.raises(RuleError) as e:
        GAME.decide_now(table(), 0, drop((1, 1), (2, 1)), Rng.for_test(0))
    assert e.value.code == "NOT_YOUR_ROW"
    with pytest.raises(RuleError):
        GAME.decide_now(table(turn=1), 1, drop((1, 0), (2, 0)), Rng.for_test(0))


def test_bubblees_fall_in_their_column() -> None:
    state = table(planet0=(".....", ".....", "..G..", "..BK."), sky=("RPBGY", "PBRYR"))
    events, after = act(state, drop((2, 0), (3, 0)))
    assert planet(after, 0) == [".....", "..R..", "..GY.", "..BK."]
    landings = of_kind(events, "dropped")[0].landings
    assert [(lnd.to_cell.column, lnd.to_cell.row) for lnd in landings] == [(2, 2), (3, 1)]


def test_vertical_pair_own_row_lands_first() -> None:
    # seat 0: its row is row 0
    state = table(planet0=(".....",) * 4, sky=("RPBGY", "PBGYR"))
    _, after = act(state, drop((2, 1), (2, 0)))  # order in the command does not matter
    assert planet(after, 0)[-2:] == ["..B..", "..G.."]
    # seat 1: its row is row 1
    state = table(planet1=(".....",) * 4, sky=("RPBGY", "PBGYR"), turn=1)
    _, after = act(state, drop((2, 0), (2, 1)))
    assert planet(after, 1)[-2:] == ["..G..", "..B.."]


def test_drop_of_an_empty_sky_cell_rejected() -> None:
    state = table(sky=("RPBGY", "P.GYR"))
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, drop((0, 0), (1, 0)), Rng.for_test(0))
    assert e.value.code == "CELL_EMPTY"


def test_not_your_turn_rejected() -> None:
    for seat in (1, None):
        with pytest.raises(RuleError) as e:
            GAME.decide_now(table(), seat, drop((0, 0), (1, 0)), Rng.for_test(0))
        assert e.value.code == "NOT_YOUR_TURN"


def test_command_without_kind_is_malformed() -> None:
    with pytest.raises(MalformedCommand) as e:
        GAME.decide_now(table(), 0, pb.Command(), Rng.for_test(0))
    assert e.value.code == "NO_COMMAND"


def test_cell_out_of_range_is_malformed() -> None:
    for bad in (place(5, 0), place(0, 2), place(-1, 0)):
        with pytest.raises(MalformedCommand) as e:
            GAME.decide_now(table(phase=pb.PHASE_PLACE, drawn=1), 0, bad, Rng.for_test(0))
        assert e.value.code == "CELL_OUT_OF_RANGE"


def test_missing_cell_is_malformed() -> None:
    cmd = pb.Command()
    cmd.drop.a.column = 1
    with pytest.raises(MalformedCommand) as e:
        GAME.decide_now(table(), 0, cmd, Rng.for_test(0))
    assert e.value.code == "MISSING_CELL"


def test_rejected_command_changes_nothing() -> None:
    state = table()
    before = state
    with pytest.raises(RuleError):
        GAME.decide_now(state, 0, drop((1, 1), (2, 1)), Rng.for_test(0))
    assert state == before


def test_game_over_rejects_commands() -> None:
    state = table()._replace(outcome=rules.Outcome((0,)), phase=pb.PHASE_OVER)
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, drop((0, 0), (1, 0)), Rng.for_test(0))
    assert e.value.code == "GAME_OVER"
    assert rules.legal_actions(state, 0) == [] and rules.to_act(state) == ()


def test_swap_needs_two_bubblees() -> None:
    state = table(sky=("RPBGY", "P.GYR"))
    with pytest.raises(RuleError) as e:
        GAME.decide_now(state, 0, swap((0, 0), (1, 0)), Rng.for_test(0))
    assert e.value.code == "CELL_EMPTY"


def test_seat_1_drops_from_its_own_sky_row_onto_its_own_planet() -> None:
    # RULINGS "Geometry": sky row B (row 1) touches planet B; its lines score for seat 1
    state = table(planet1=(".....", ".....", ".....", "RR..K"), sky=("PBRRY", "BPGYR"), turn=1)
    events, after = act(state, drop((2, 1), (3, 1)))
    assert of_kind(events, "dropped")[0].planet == 1
    assert planet(after, 1)[-2:] == [".....", "....K"]
    assert after.planets[0] == state.planets[0]
    assert after.zones == ((0,) * 6, (4, 0, 0, 0, 0, 0)) and after.pool == (board.RED,)
    assert after.turn == 1 and after.phase == pb.PHASE_POWERS


def test_a_single_empty_sky_cell_still_needs_a_place_command() -> None:
    """T7: « Il pioche 1 Bubblee et le place dans une case vide du Ciel »: the active player
    places every drawn Bubblee, even into the last empty cell, where the place command is
    the only one offered (and the terminal game says it is the only empty cell)."""
    from services.bubblee.words import describe

    state = table(sky=("RPBGY", "P.GYR"), phase=pb.PHASE_PLACE, drawn=board.BLUE)
    legal = rules.legal_actions(state, 0)
    assert legal == [place(1, 0)]
    assert rules.to_act(state) == (0,) and state.phase == pb.PHASE_PLACE
    assert describe(legal[0], view(state, 0)).endswith("(the only empty cell)")
    events, after = act(state, place(1, 0))
    assert kinds(events)[0] == "placed" and after.phase == pb.PHASE_ACTION
