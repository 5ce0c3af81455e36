"""The night: goal submissions with the cap, the time track, the Future shuffled in."""

from __future__ import annotations

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import RuleError
from services.eila import GAME
from tests.eila.helpers import END_NIGHT, act, night, start, submit


def test_chapters_0_and_1_submit_at_most_2_a_night() -> None:
    state = night(start(1), coin=3, knowledge=2)
    state = act(state, submit(pb.COIN, 2))
    with pytest.raises(RuleError) as e:
        act(state, submit(pb.KNOWLEDGE, 1))
    assert e.value.code == "NIGHT_CAP"


def test_later_chapters_have_no_submission_cap() -> None:
    state = night(start(2), coin=5, stone=3)
    state = act(state, submit(pb.COIN, 5))
    state = act(state, submit(pb.STONE, 3))
    assert state.play is not None and state.play.submitted == {"coin": 5, "stone": 3}


def test_only_goal_resources_can_be_submitted() -> None:
    with pytest.raises(RuleError) as e:
        act(night(start(0), coin=2), submit(pb.COIN, 1))
    assert e.value.code == "NOT_NEEDED"


def test_submitting_only_at_night() -> None:
    state = start(0)
    state.play.res["food"] = 1  # type: ignore[union-attr]
    with pytest.raises(RuleError):
        act(state, submit(pb.FOOD, 1))


def test_you_win_immediately_when_the_goal_is_achieved() -> None:
    state = act(night(start(0, single=True), food=2), submit(pb.FOOD, 2))
    assert state.play is not None and state.play.result == "won"
    assert state.play.ending == "A"


def test_one_energy_goes_on_the_time_track() -> None:
    state = act(night(start(0), energy=2), END_NIGHT)
    p = state.play
    assert p is not None and p.track == 1 and p.res["energy"] == 1 and p.hp == p.max_hp


def test_without_energy_a_heart_goes_on_the_time_track() -> None:
    state = act(night(start(0)), END_NIGHT)
    p = state.play
    assert p is not None and p.track == 1 and p.hp == p.max_hp - 1


def test_the_seventh_slot_of_the_time_track_loses() -> None:
    state = night(start(0), energy=1)
    state.play.track, state.play.day = 6, 7  # type: ignore[union-attr]
    state = act(state, END_NIGHT)
    assert state.play is not None and state.play.result == "lost"
    assert "7th slot" in state.play.reason


def test_the_goal_reached_on_night_7_wins() -> None:
    state = night(start(0, single=True), food=2)
    state.play.track, state.play.day = 6, 7  # type: ignore[union-attr]
    state = act(state, submit(pb.FOOD, 2))
    assert state.play is not None and state.play.result == "won"


def test_the_future_is_shuffled_into_the_upcoming_deck() -> None:
    state = night(start(0), energy=1)
    state.play.future = ["001", "002", "003", "004"]  # type: ignore[union-attr]
    state = act(state, END_NIGHT, draws=[0, 0, 0])
    p = state.play
    assert p is not None and p.day == 2 and p.future == []
    assert sorted([p.present, *p.upcoming]) == ["001", "002", "003", "004"]
    assert p.known == 0  # the shuffled order is unknown


def test_the_next_card_of_a_shuffled_deck_is_drawn_as_it_is_revealed() -> None:
    """No order is kept that nobody has seen: the cards wait sorted, and each day's card is
    drawn among them when it is revealed."""
    state = night(start(0), energy=1)
    state.play.future = ["004", "002", "001", "003"]  # type: ignore[union-attr]
    p = act(state, END_NIGHT, draws=[2]).play
    assert p is not None and p.present == "003" and p.upcoming == ["001", "002", "004"]


def test_the_mountain_night_costs_1_food_or_1_hp() -> None:
    """Ruling 17: with Food, the player chooses "1 Food or 1 HP" before anything else."""
    state = start(5)
    p = state.play
    assert p is not None
    p.upcoming, p.known = [], 0
    state = act(state, pb.Command(choose=pb.ChooseOption(option=1)))  # day ends
    assert state.play is not None and state.play.phase == "meal"
    meals = [c for c in GAME.legal_actions(state, 0) if c.WhichOneof("kind") == "night_meal"]
    assert [c.night_meal.pay_hp for c in meals] == [False, True]
    with pytest.raises(RuleError):
        act(state, END_NIGHT)  # the meal comes first
    food = act(state, meals[0]).play
    assert food is not None and food.phase == "night"
    assert (food.res["food"], food.hp) == (3 - 1, food.max_hp)
    hp = act(state, meals[1]).play
    assert hp is not None and hp.phase == "night" and (hp.res["food"], hp.hp) == (3, hp.max_hp - 1)


def test_food_converted_away_during_the_meal_leaves_hp_to_pay() -> None:
    """Eila's rulebook, Chapter 5, Harsh Environment: *"At the beginning of each night phase,
    you lose 1 Food or 1 HP."* Food converted away while the meal waits cannot pay it: the
    meal is paid with what is held when the command is sent (ruling 17)."""
    state = start(5)
    p = state.play
    assert p is not None
    p.upcoming, p.known, p.res["food"] = [], 0, 2
    state = act(state, pb.Command(choose=pb.ChooseOption(option=1)))
    assert state.play is not None and state.play.phase == "meal"
    state = act(state, pb.Command(convert=pb.Convert(conversion=0)))  # 2 Food -> 1 Energy
    assert state.play is not None and state.play.res["food"] == 0
    meals = [c for c in GAME.legal_actions(state, 0) if c.WhichOneof("kind") == "night_meal"]
    assert [c.night_meal.pay_hp for c in meals] == [True]
    with pytest.raises(RuleError) as e:
        act(state, pb.Command(night_meal=pb.NightMeal(pay_hp=False)))
    assert e.value.code == "NOT_ENOUGH"
    paid = act(state, meals[0]).play
    assert paid is not None and paid.phase == "night" and paid.hp == paid.max_hp - 1


def test_the_mountain_night_without_food_costs_hp() -> None:
    state = start(5)
    p = state.play
    assert p is not None
    p.upcoming, p.known, p.res["food"] = [], 0, 0
    state = act(state, pb.Command(choose=pb.ChooseOption(option=1)))
    assert state.play is not None and state.play.hp == state.play.max_hp - 1


def test_submitting_more_than_the_goal_needs_is_refused() -> None:
    with pytest.raises(RuleError) as e:
        act(night(start(2), coin=8), submit(pb.COIN, 6))
    assert e.value.code == "TOO_MANY"


PEEK_KEEP = pb.Command(peek=pb.Peek(delay=False))
PEEK_DELAY = pb.Command(peek=pb.Peek(delay=True))


def watch_night() -> object:
    state = night(start(1, box=("I16",)), energy=1)
    state.play.future = ["101", "102", "103"]  # type: ignore[union-attr]
    return act(state, END_NIGHT, draws=[1])  # the watch shows the 2nd of 101, 102, 103


def test_the_pocket_watch_previews_the_first_card_of_the_next_day() -> None:
    state = watch_night()
    assert state.play.phase == "peek"  # type: ignore[attr-defined]
    from services.eila import GAME

    assert list(GAME.view(state, 0).upcoming_top) == ["102"]
    state = act(state, PEEK_KEEP)  # type: ignore[arg-type]
    assert state.play is not None and state.play.present == "102"


def test_the_pocket_watch_may_make_it_the_last_event_of_the_day() -> None:
    state = act(watch_night(), PEEK_DELAY, draws=[1])  # type: ignore[arg-type]  # 103 of 101, 103
    p = state.play
    assert p is not None and p.present == "103" and p.upcoming == ["101", "102"]
    assert p.bottom == "102"
    from services.eila import GAME

    v = GAME.view(state, 0)
    assert v.upcoming_bottom == "102" and list(v.upcoming_rest) == ["101"]
