"""Resources: storage, Fear, discarding, the free conversions, HP."""

from __future__ import annotations

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import RuleError
from services.eila import GAME
from tests.eila.helpers import FIGHT, act, choose, present, start


def test_tangible_resources_share_8_slots() -> None:
    # 004 A: -3 Coin, +1 Food; with 3 Coin and 5 Food the new Food fits (Coin freed first).
    state = act(present(start(0), "004", coin=3, food=5), choose(0))
    assert state.play is not None and state.play.res["food"] == 6


def test_acquiring_takes_only_what_fits() -> None:
    state = act(present(start(0), "011", food=3, coin=4), choose(0))  # +2 Food into 1 slot
    assert state.play is not None and state.play.res["food"] == 4


def test_intangible_resources_share_8_slots() -> None:
    state = act(present(start(0), "002", knowledge=5, energy=3), choose(1))  # +1 Energy
    assert state.play is not None and state.play.res["energy"] == 3


def test_fear_must_be_taken_by_discarding_other_intangibles() -> None:
    """Ruling 9: storage full of Knowledge and Energy, the player discards the one she
    chooses to make room; nothing else may be done before."""
    state = act(present(start(0), "010", knowledge=2, energy=6), choose(0))  # +1 Fear
    p = state.play
    assert p is not None and p.phase == "room" and p.res["fear"] == 0
    room = GAME.legal_actions(state, 0)
    assert [(c.discard.resource, c.discard.count) for c in room] == [(pb.KNOWLEDGE, 1),
                                                                       (pb.ENERGY, 1)]
    with pytest.raises(RuleError) as e:
        act(state, pb.Command(convert=pb.Convert(conversion=0)))
    assert e.value.code == "MAKE_ROOM"
    for command, (knowledge, energy) in zip(room, [(1, 6), (2, 5)], strict=True):
        p = act(state, command).play
        assert p is not None and p.phase == "day" and p.present != "010"
        assert (p.res["fear"], p.res["knowledge"], p.res["energy"]) == (1, knowledge, energy)


def test_making_room_may_not_leave_the_rest_of_the_option_unpaid() -> None:
    """Eila's rulebook, Resources: *"You cannot choose an option with a − effect unless you
    have enough resources to discard."* Alarm! (235) B, "+2 Fear, −1 Energy", with Knowledge
    3, Energy 1, Fear 4: making room with the Energy would leave the −1 Energy unpaid, so only
    the Knowledge is offered and the Energy is refused (rulings 6 and 9)."""
    state = act(present(start(2), "235", knowledge=3, energy=1, fear=4), choose(1))
    p = state.play
    assert p is not None and p.phase == "room"
    room = [c for c in GAME.legal_actions(state, 0) if c.WhichOneof("kind") == "discard"]
    assert [(c.discard.resource, c.discard.count) for c in room] == [(pb.KNOWLEDGE, 1)]
    with pytest.raises(RuleError) as e:
        act(state, pb.Command(discard=pb.Discard(resource=pb.ENERGY, count=1)))
    assert e.value.code == "OPTION_UNPAYABLE"
    state = act(state, room[0])  # the second Fear asks again, and again not the Energy
    assert state.play is not None and state.play.phase == "room"
    assert [c for c in GAME.legal_actions(state, 0) if c.WhichOneof("kind") == "discard"] == room
    state = act(state, room[0])
    p = state.play
    assert p is not None and p.phase == "day" and "235" in p.past
    assert (p.res["knowledge"], p.res["energy"], p.res["fear"]) == (1, 0, 6)


def test_fear_makes_room_by_itself_when_only_one_kind_is_held() -> None:
    state = act(present(start(0), "010", energy=8), choose(0))
    p = state.play
    assert p is not None and p.phase == "day" and (p.res["fear"], p.res["energy"]) == (1, 7)


def test_making_room_for_fear_in_the_middle_of_an_option_keeps_the_rest_of_it() -> None:
    """Clockwork Cat (212) lost with a full storage: its −1 HP, then +1 Fear waits for the
    player's discard, then the combat is over and the card is placed."""
    state = act(present(start(2), "212", knowledge=4, energy=4), choose(0), draws=[0])
    state = act(state, FIGHT)
    p = state.play
    assert p is not None and p.phase == "room" and p.hp == p.max_hp - 1
    p = act(state, pb.Command(discard=pb.Discard(resource=pb.ENERGY, count=1))).play
    assert p is not None and p.combat is None and p.phase == "day" and "212" in p.future
    assert (p.res["fear"], p.res["knowledge"], p.res["energy"]) == (1, 4, 3)


def test_fear_beyond_8_costs_1_hp_each() -> None:
    state = act(present(start(0), "003", fear=8), choose(1))  # +1 Food, +2 Fear
    p = state.play
    assert p is not None and p.res["fear"] == 8 and p.hp == p.max_hp - 2


def test_fear_cannot_be_discarded_by_choice() -> None:
    state = present(start(0), "001", fear=2)
    command = pb.Command(discard=pb.Discard(resource=pb.FEAR, count=1))
    with pytest.raises(RuleError) as e:
        act(state, command)
    assert e.value.code == "FEAR_STAYS"


def test_other_resources_may_be_discarded_any_time() -> None:
    state = present(start(0), "001", food=3)
    state = act(state, pb.Command(discard=pb.Discard(resource=pb.FOOD, count=2)))
    assert state.play is not None and state.play.res["food"] == 1


def test_discarding_more_than_you_have_is_refused() -> None:
    state = present(start(0), "001", food=1)
    with pytest.raises(RuleError):
        act(state, pb.Command(discard=pb.Discard(resource=pb.FOOD, count=2)))


def test_conversion_2_food_to_1_energy() -> None:
    state = act(present(start(0), "001", food=2), pb.Command(convert=pb.Convert(conversion=0)))
    p = state.play
    assert p is not None and (p.res["food"], p.res["energy"]) == (0, 1)


def test_conversion_5_knowledge_to_1_magical_stone() -> None:
    state = act(present(start(0), "001", knowledge=5),
                pb.Command(convert=pb.Convert(conversion=1)))
    assert state.play is not None and state.play.res["stone"] == 1


def test_conversion_needs_the_resources_in_storage() -> None:
    with pytest.raises(RuleError):
        act(present(start(0), "001", food=1), pb.Command(convert=pb.Convert(conversion=0)))


def test_items_add_their_conversions() -> None:
    state = present(start(1, box=("I03",)), "101", energy=1)
    state = act(state, pb.Command(convert=pb.Convert(conversion=3)))  # fishing rod
    p = state.play
    assert p is not None and p.res["food"] == 1 + 1 and p.res["energy"] == 0  # 1 Energy -> 1 Food


def test_selling_an_item_gives_its_coins_and_returns_it() -> None:
    state = act(present(start(4, box=("I17",)), "401"),
                pb.Command(use_item=pb.UseItem(card="I17")))
    p = state.play
    assert p is not None and p.res["coin"] == 3 + 4 and "I17" not in p.items


def test_hp_cannot_exceed_the_chapters_maximum() -> None:
    state = present(start(2), "210")
    state = act(state, choose(1))  # gain 1 HP at full HP
    assert state.play is not None and state.play.hp == state.play.max_hp


def test_losing_the_last_hp_loses_the_chapter() -> None:
    state = present(start(0), "005")
    state.play.hp = 1  # type: ignore[union-attr]
    state = act(state, choose(1))  # jump in puddles: lose 1 HP
    assert state.play is not None and state.play.result == "lost"
    assert state.phase == "between"
