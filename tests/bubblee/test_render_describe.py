"""Commands in words for the terminal game: columns counted 1-5 as the board draws them."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee.words import describe


def test_describe_names_each_command_with_the_boards_columns() -> None:
    sky = pb.SkyCell(column=2, row=1)
    assert describe(pb.Command(place=pb.Place(cell=sky))) == (
        "place the drawn Bubblee in column 3 of seat 1's sky row")
    drop = pb.Command(drop=pb.Drop(a=pb.SkyCell(column=0), b=pb.SkyCell(column=1)))
    assert describe(drop) == "drop the Bubblees of columns 1 and 2 of seat 0's sky row onto " \
        "the planet"
    swap = pb.Command(apply_power=pb.ApplyPower(index=1, a=pb.PlanetCell(column=4, row=0),
                                                b=pb.PlanetCell(column=4, row=1)))
    assert describe(swap) == ("power 2: swap column 5, row 1 from the ground with column 5, "
                              "row 2 from the ground")
    assert describe(pb.Command(apply_power=pb.ApplyPower(column=3))) == "power 1: column 4"
    assert describe(pb.Command(decline_power=pb.DeclinePower(index=2))) == "decline power 3"
    assert describe(pb.Command()) == "no action"


def test_with_its_view_a_command_names_the_bubblees_and_whose_row() -> None:
    from services.bubblee import GAME
    from tests.bubblee.helpers import table

    state = table(planet0=(".....", ".....", ".....", "....."), phase=pb.PHASE_ACTION)
    view = GAME.view(state, 0)
    column_2 = pb.Command(drop=pb.Drop(a=pb.SkyCell(column=1, row=0),
                                       b=pb.SkyCell(column=1, row=1)))
    assert describe(column_2, view) == "drop the two Bubblees of column 2 onto your planet"
    swap = pb.Command(swap=pb.Swap(a=pb.SkyCell(column=0, row=1), b=pb.SkyCell(column=1, row=1)))
    assert describe(swap, view) == ("swap the red and purple Bubblees of columns 1 and 2 of the "
                                    "opponent's sky row")
    across = pb.Command(swap=pb.Swap(a=pb.SkyCell(column=2, row=1),
                                     b=pb.SkyCell(column=2, row=0)))
    assert describe(across, view) == ("swap the green Bubblee of your sky row with the blue "
                                      "Bubblee of the opponent's sky row in column 3")
    place = pb.Command(place=pb.Place(cell=pb.SkyCell(column=4, row=0)))
    assert describe(place, GAME.view(table(phase=pb.PHASE_PLACE, drawn=3), 0)) == (
        "place the drawn blue Bubblee in column 5 of your sky row")


def test_power_entries_say_which_bubblee_moves() -> None:
    from services.bubblee import GAME, rules
    from tests.bubblee.helpers import table

    state = table(planet0=(".....", ".....", "Y....", "K.G.K"), phase=pb.PHASE_POWERS,
                  pool=(2, 5, 3))  # purple, yellow, blue
    view = GAME.view(state, 0)
    words = [describe(c, view) for c in rules.legal_actions(state, 0)]
    assert ("power 1 (purple): send your yellow Bubblee at column 1, row 2 from the ground "
            "to column 1 of the opponent's planet") in words
    assert ("power 2 (yellow): put your green Bubblee at column 3, row 1 from the ground "
            "in your score zone") in words
    assert ("power 3 (blue): drop the opponent's sky Bubblee of column 4 onto their "
            "planet") in words
