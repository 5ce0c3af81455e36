"""Set-up and the day phase: reveal, choose an option, execute it, place the card."""

from __future__ import annotations

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import MalformedCommand, Rng, RuleError, Seat
from services.eila import GAME, engine
from services.eila.data import default_index
from tests.eila.helpers import act, choose, present, start


def test_chapter_0_is_cards_001_to_011_green_blue_red() -> None:
    p = start(0).play
    assert p is not None
    assert [p.present, *p.upcoming] == ["001", "002", "003", "004", "005"]
    assert p.decks["blue"] == ["006", "007", "008"]
    assert p.decks["red"] == ["009", "010", "011"]


def test_green_cards_form_the_upcoming_deck_in_ascending_order() -> None:
    p = start(1).play
    assert p is not None
    greens = [p.present, *p.upcoming]
    assert greens == sorted(greens) and greens[0] == "101"


def test_hearts_fill_the_goal_cards_max_hp() -> None:
    p = start(0).play
    assert p is not None and p.hp == p.max_hp == 3


def test_prologue_sets_up_the_starting_resources() -> None:
    p = start(1).play
    assert p is not None and p.res["food"] == 1 and p.res["energy"] == 1


def test_chapter_0_starts_with_an_empty_save_box() -> None:
    state = start(0)
    assert state.box == [] and state.play is not None and state.play.items == []


def test_habits_go_under_the_green_deck_from_chapter_2() -> None:
    p = start(2, box=("H1", "H4")).play
    assert p is not None
    assert p.upcoming[-2:] == ["H1", "H4"]
    assert "H1" not in p.decks["habit"]


def test_the_player_decides_the_order_of_the_habit_cards() -> None:
    """*"put them on the bottom of the green deck … You can decide the order"*."""
    options = pb.Options(first_chapter=2, save_box=["H1", "H4", "I01"], habit_order=["H4", "H1"])
    p = GAME.replay(GAME.setup(options, [Seat("eila")], Rng(b"x", 0))).play
    assert p is not None and p.upcoming[-2:] == ["H4", "H1"]


def test_a_habit_order_must_list_each_kept_habit_once() -> None:
    for order in (["H4"], ["H1", "H1", "H4"], ["H1", "H4", "H2"]):
        options = pb.Options(first_chapter=2, save_box=["H1", "H4"], habit_order=order)
        with pytest.raises(MalformedCommand, match="habit order"):
            GAME.setup(options, [Seat("eila")], Rng(b"x", 0))


def test_kept_habits_are_not_in_the_habit_deck() -> None:
    """*"You will keep all acquired Item and Habit Cards … DO NOT put them back to the
    original decks."*: a kept habit cannot be fetched again, in chapters 0-1 too."""
    for chapter in (1, 2):
        p = start(chapter, box=("H1",)).play
        assert p is not None and "H1" not in p.decks["habit"] and "H2" in p.decks["habit"]


def test_kept_habits_are_held_not_shuffled_into_the_deck_in_chapter_1() -> None:
    p = start(1, box=("H1",)).play
    assert p is not None
    assert "H1" not in p.upcoming and "H1" in p.habits


def test_solo_game_takes_exactly_one_seat() -> None:
    with pytest.raises(MalformedCommand):  # the platform refuses it before the set-up
        GAME.check_seat_count(2)


def test_save_box_holds_only_items_habits_and_support_cards() -> None:
    with pytest.raises(MalformedCommand):
        GAME.setup(pb.Options(save_box=["001"]), [Seat("a")], Rng(b"x", 0))


def test_reveal_puts_the_top_card_in_the_present() -> None:
    state = act(start(0), choose(0))  # 001 A: wrap the crust up
    assert state.play is not None and state.play.present == "002"


def test_an_empty_upcoming_deck_ends_the_day() -> None:
    state = present(start(0), "001")
    state.play.upcoming, state.play.known = [], 0  # type: ignore[union-attr]
    state = act(state, choose(0))
    assert state.play is not None and state.play.phase == "night"


def test_effects_execute_left_to_right() -> None:
    # 003 A: -1 Energy, then +2 Coin, then 011 on top of the upcoming deck.
    state = act(present(start(0), "003", energy=1), choose(0))
    p = state.play
    assert p is not None
    assert (p.res["energy"], p.res["coin"], p.present) == (0, 2, "011")


def test_card_placed_in_the_future() -> None:
    state = act(start(0), choose(1))  # 001 B goes to the Future, after the 006 it fetched
    assert state.play is not None and state.play.future == ["006", "001"]


def test_card_placed_in_the_past() -> None:
    state = act(start(0), choose(0))  # 001 A goes to the Past
    assert state.play is not None and state.play.past == ["001"]


def test_card_001_option_a_gains_food_and_option_b_proceeds_the_story() -> None:
    """*"Using event card 001 as an example, you may choose Option A to gain food or choose
    Option B to proceed the story"*: B fetches the chapter's next story card, 006."""
    p = act(start(0), choose(0)).play
    assert p is not None and p.res["food"] == 1 and "006" in p.decks["blue"]
    p = act(start(0), choose(1)).play
    assert p is not None and p.res["food"] == 0 and "006" in p.future


def test_card_returns_to_its_original_deck() -> None:
    state = act(present(start(0), "010"), choose(0))
    assert state.play is not None and "010" in state.play.decks["red"]


def test_red_card_goes_on_top_of_the_upcoming_deck() -> None:
    state = act(start(0), choose(1))  # to 002
    state = act(state, choose(1))  # 002 B fetches red 010
    assert state.play is not None and state.play.present == "010"


def test_blue_card_goes_to_the_future() -> None:
    state = act(present(start(0), "002"), choose(0))
    assert state.play is not None and "006" in state.play.future


def test_habit_card_goes_on_top_of_the_upcoming_deck() -> None:
    state = act(present(start(0), "008", knowledge=2), choose(1))
    assert state.play is not None and state.play.present == "H1"


def test_keeping_a_habit_acquires_it() -> None:
    state = act(present(start(0), "H1", food=1), choose(0))
    p = state.play
    assert p is not None and "H1" in p.habits and "H1" in p.future


def test_an_option_needs_its_prerequisite_item() -> None:
    state = present(start(0), "007")
    with pytest.raises(RuleError) as e:
        act(state, choose(0))
    assert e.value.code == "OPTION_UNAVAILABLE" and "Wicker Basket" in e.value.message


def test_a_minus_effect_needs_enough_resources() -> None:
    state = present(start(0), "004", coin=2)
    with pytest.raises(RuleError, match="3 coin"):
        act(state, choose(0))


def test_a_minus_fear_effect_is_allowed_without_fear() -> None:
    state = act(present(start(0), "005"), choose(0))  # +1 Knowledge, -1 Fear with no Fear
    assert state.play is not None and state.play.res["fear"] == 0


def test_item_search_acquires_the_item_once() -> None:
    state = act(present(start(0), "008", coin=2), choose(0))
    assert state.play is not None and state.play.items == ["I01"]


def test_item_discard_returns_the_item() -> None:
    state = present(start(3, box=("I05",)), "301")
    state.play.nested = "340"  # type: ignore[union-attr]  # the miners' store
    state = act(state, choose(2))  # give back the wooden sword for a pickaxe
    p = state.play
    assert p is not None and "I05" not in p.items and "I20" in p.items


def test_an_item_discard_needs_the_item() -> None:
    state = present(start(3), "301")
    state.play.nested = "340"  # type: ignore[union-attr]
    with pytest.raises(RuleError, match="Wooden Sword"):
        act(state, choose(2))


def test_option_index_out_of_range_is_malformed() -> None:
    with pytest.raises(MalformedCommand):
        act(start(0), choose(7))


def test_choosing_at_night_is_refused() -> None:
    state = start(0)
    state.play.phase = "night"  # type: ignore[union-attr]
    with pytest.raises(RuleError) as e:
        act(state, choose(0))
    assert e.value.code == "WRONG_PHASE"


def test_fetching_a_card_that_is_not_in_its_deck_does_nothing() -> None:
    state = present(start(0), "002")
    state.play.decks["blue"].remove("006")  # type: ignore[union-attr]
    state.play.past.append("006")  # type: ignore[union-attr]
    state = act(state, choose(0))
    assert state.play is not None and "006" not in state.play.future


def test_prerequisites_count_what_the_option_gained_before() -> None:
    # 111 A: -1 Energy, +2 Food; from 3 food and no energy it is unavailable...
    state = present(start(1), "111", energy=0)
    with pytest.raises(RuleError):
        act(state, choose(0))
    # ...while 105 A (-1 Food, +2 Energy) only needs the Food it pays first.
    assert act(present(start(1), "105", food=1), choose(0)).play.res["energy"] == 1 + 2  # type: ignore[union-attr]
    # A gain earlier in the option pays for a later − effect, as far as storage takes it.
    p = present(start(1), "101", food=0, coin=0).play
    assert p is not None
    option = {"text": "t", "place": "past",
              "effects": [{"gain": {"coin": 2}}, {"lose": {"coin": 2}}]}
    assert engine.why_unavailable(p, default_index(), option) == ""
    p.res["food"] = 7  # room for 1 Coin only
    assert "coin" in engine.why_unavailable(p, default_index(), option)


def test_fear_taken_before_a_minus_effect_can_push_out_what_it_needs() -> None:
    """*"When you acquire Fear but there is insufficient storage space, you must discard other
    resources"* + *"You cannot choose an option with a − effect unless you have enough"*: Fear
    taken first may push out the Knowledge a later − effect needs."""
    p = present(start(1), "101", knowledge=1, energy=0, fear=7).play
    assert p is not None
    option = {"text": "t", "effects": [{"gain": {"fear": 1}}, {"lose": {"knowledge": 1}}],
              "place": "past"}
    assert "knowledge" in engine.why_unavailable(p, default_index(), option)
    p.res["fear"] = 6  # room for the Fear: the Knowledge stays
    assert engine.why_unavailable(p, default_index(), option) == ""


def test_an_if_you_possess_gain_counts_for_a_later_minus_effect() -> None:
    """Golden Rule, left to right: a possessed item's gain comes before the next − effect."""
    p = present(start(3), "301", coin=0).play
    assert p is not None
    option = {"text": "t", "place": "past",
              "effects": [{"if_item": {"item": "I02", "then": [{"gain": {"coin": 2}}]}},
                          {"lose": {"coin": 2}}]}
    assert "coin" in engine.why_unavailable(p, default_index(), option)
    p.items.append("I02")
    assert engine.why_unavailable(p, default_index(), option) == ""


def test_an_option_is_available_if_the_player_can_make_room_for_fear_the_right_way() -> None:
    """Ruling 6 with ruling 9: Fear taken first may push out Knowledge or Energy, as the
    player chooses; a later −1 Knowledge can be paid by discarding Energy for the room."""
    p = present(start(1), "101", knowledge=1, energy=1, fear=6).play
    assert p is not None
    option = {"text": "t", "effects": [{"gain": {"fear": 1}}, {"lose": {"knowledge": 1}}],
              "place": "past"}
    assert engine.why_unavailable(p, default_index(), option) == ""
    both = {"text": "t", "effects": [{"gain": {"fear": 1}}, {"lose": {"knowledge": 1}},
                                     {"lose": {"energy": 1}}], "place": "past"}
    assert "energy" in engine.why_unavailable(p, default_index(), both)


def test_a_minus_effect_discards_the_full_amount() -> None:
    """Ruling 8a: "−X … It can be zero" does not let the player pay less: 004 A (−3 Coin)
    takes all 3, and with 2 Coin it cannot be chosen. Fear is the exception: −1 Fear with
    none is allowed and discards nothing."""
    p = act(present(start(0), "004", coin=5), choose(0)).play
    assert p is not None and (p.res["coin"], p.res["food"]) == (2, 1)
    with pytest.raises(RuleError) as e:
        act(present(start(0), "004", coin=2), choose(0))
    assert e.value.code == "OPTION_UNAVAILABLE"
    card = next(c for c in default_index().content.chapter(0)["cards"]
                if any({"lose": {"fear": 1}} in o["effects"] for o in c["options"]))
    option = next(i for i, o in enumerate(card["options"])
                  if {"lose": {"fear": 1}} in o["effects"])
    p = act(present(start(0), card["id"], fear=0), choose(option)).play
    assert p is not None and p.res["fear"] == 0 and p.present != card["id"]
