"""The content validator: the authored data passes; broken data is caught."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.eila import engine, rules
from services.eila.data import Content, load_content
from services.eila.tools.validate import run_validate, validate


def broken(change: Any) -> list[str]:
    content = load_content()
    chapters = copy.deepcopy(content.chapters)
    common = copy.deepcopy(content.common)
    change(chapters, common)
    return validate(Content(common, content.habits, content.advanced, chapters))


def card(chapters: dict[int, Any], card_id: str) -> Any:
    return next(c for c in chapters[int(card_id[0])]["cards"] if c["id"] == card_id)


def test_the_authored_content_is_valid() -> None:
    assert validate(load_content()) == []


def test_run_validate_returns_0_on_valid_content() -> None:
    assert run_validate() == 0


def test_a_missing_blue_card_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        card(ch, "002")["options"][0]["effects"][1] = {"blue": "099"}
    assert any("099 does not exist" in p for p in broken(change))


def test_a_reference_to_the_wrong_colour_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        card(ch, "002")["options"][0]["effects"][1] = {"blue": "009"}
    assert any("is red, not blue" in p for p in broken(change))


def test_an_unknown_item_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        card(ch, "007")["options"][0]["requires"] = [{"item": "I99"}]
    assert any("unknown item I99" in p for p in broken(change))


def test_a_card_where_play_could_get_stuck_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        card(ch, "001")["options"] = [{"text": "Pay", "effects": [{"lose": {"coin": 1}}],
                                       "place": "future"}]
    assert any("could get stuck" in p for p in broken(change))


def test_a_card_no_effect_fetches_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        card(ch, "003")["options"][0]["effects"] = [{"gain": {"coin": 2}}]
    assert any("011" in p and "fetches" in p for p in broken(change))


def test_a_repeated_combat_that_cannot_end_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        card(ch, "535")["options"][0]["effects"][0]["combat"]["lose"] = [{"gain": {"fear": 1}}]
    assert any("may never end" in p for p in broken(change))


def test_an_unknown_effect_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        card(ch, "001")["options"][0]["effects"] = [{"teleport": 3}]
    assert any("unknown effect" in p for p in broken(change))


def test_a_goal_resource_without_a_source_is_caught() -> None:
    def change(ch: Any, common: Any) -> None:
        ch[1]["goal"]["normal"]["submit"] = {"stone": 1}
        common["conversions"] = [c for c in common["conversions"] if "stone" not in c["to"]]
    assert any("nothing gives stone" in p for p in broken(change))


def test_a_missing_chapter_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        del ch[4]
    assert any("chapter 4: missing" in p for p in broken(change))


def test_a_later_chapter_needs_25_event_cards() -> None:
    def change(ch: Any, _: Any) -> None:
        ch[1]["cards"] = ch[1]["cards"][:20]
    assert any("at least 25" in p for p in broken(change))


def test_a_quiz_clue_missing_from_the_cards_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        ch[2]["quizzes"][0]["clue"] = "purple elephants"
    assert any("EQ-1" in p and "clue" in p for p in broken(change))


def test_a_mine_grid_without_an_event_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        ch[3]["tiles"][0]["cells"][0]["loc"] = 399
    assert any("location 399" in p for p in broken(change))


def test_an_item_nothing_gives_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        card(ch, "008")["options"][0]["effects"] = [{"lose": {"coin": 2}}]
        card(ch, "007")["options"][0].pop("requires")
    assert any(p.startswith("I01") for p in broken(change))


def test_a_green_card_cannot_return_to_a_deck() -> None:
    def change(ch: Any, _: Any) -> None:
        card(ch, "001")["options"][0]["place"] = "deck"
    assert any("no deck to return to" in p for p in broken(change))


def test_advanced_cards_must_replace_a_card_of_the_same_number() -> None:
    content = load_content()
    advanced = copy.deepcopy(content.advanced)
    advanced["cards"][0]["id"] = "299"
    problems = validate(Content(content.common, content.habits, advanced, content.chapters))
    assert any("advanced" in p for p in problems)


def test_the_schema_documents_every_effect_the_engine_knows() -> None:
    import json

    from services.eila.data import DATA_DIR
    from services.eila.engine import EFFECTS

    schema = json.loads((DATA_DIR / "schema.json").read_text())
    documented = set(schema["$defs"]["effect"]["properties"])
    assert set(EFFECTS) - {"end_combat"} == documented


def test_a_price_storage_can_never_hold_is_caught() -> None:
    def change(ch: Any, _: Any) -> None:
        card(ch, "004")["options"][0]["effects"][0] = {"lose": {"coin": 9}}
    assert any("storage can ever hold" in p for p in broken(change))


def test_the_arbiter_command_validates_the_shipped_content() -> None:
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "services.cli.main", "eila", "validate"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "0 problem(s)" in run.stdout


def test_a_quiz_reward_or_item_use_that_would_wait_for_the_player_is_caught() -> None:
    """Answering a quiz and using an item are free actions done at once: a combat or a move
    inside one would leave the chapter with nothing to resume it."""
    def change(ch: Any, common: Any) -> None:
        ch[2]["quizzes"][0]["reward"] = [{"combat": {"enemy": "Rat", "value": 3, "win": [],
                                                     "lose": []}}]
        item = next(i for i in common["items"] if i["kind"] == "consume")
        item["effects"] = [{"move": 2}]
    problems = broken(change)
    assert any("EQ-1 reward" in p and "'combat'" in p for p in problems)
    assert any("item" in p and "'move'" in p for p in problems)


def item(common: Any, ref: str) -> Any:
    return next(c for c in common["items"] + common["supports"] if c["id"] == ref)


def test_a_repeated_combat_whose_lost_rounds_give_back_is_caught() -> None:
    """A lost round that costs 1 HP but gives Energy could be turned back into HP by
    conversions and healing: the proof that the combat ends needs nothing given back."""
    def change(ch: Any, _: Any) -> None:
        card(ch, "535")["options"][0]["effects"][0]["combat"]["lose"] = [
            {"hurt": 1}, {"gain": {"energy": 1}}]
    assert any("535" in p and "may never end" in p for p in broken(change))


def test_a_shield_card_that_prevents_without_end_is_caught() -> None:
    def change(_: Any, common: Any) -> None:
        item(common, "S04")["shield"] = None
    assert any(p.startswith("S04") and "in total" in p for p in broken(change))


@pytest.mark.parametrize("cards, before, after, wanted", [
    (("I03", "I27"), {"from": {"energy": 1}, "to": {"food": 1}},
     {"from": {"energy": 1}, "to": {"food": 2}}, "+1 food"),
    (("I21", "S10"), {"from": {"food": 1, "knowledge": 1}, "to": {"energy": 1}},
     {"from": {"food": 1, "knowledge": 1}, "to": {"energy": 1, "food": 1}}, "+1 knowledge"),
])
def test_a_conversion_cycle_with_a_net_gain_is_caught(
        cards: tuple[str, str], before: Any, after: Any, wanted: str) -> None:
    """Issue 14: Fishing Rod + Thermos and Cooking Pot + Miner's Song as first authored."""
    def change(_: Any, common: Any) -> None:
        conv = item(common, cards[0])
        assert {"from": conv["from"], "to": conv["to"]} == before
        conv.update(after)
    problems = [p for p in broken(change) if "resources from nothing" in p]
    assert len(problems) == 1 and problems[0].startswith(" + ".join(cards)), problems
    assert wanted in problems[0]


def test_a_gain_cycle_of_three_cards_through_healing_is_caught() -> None:
    """Knowledge -> Energy -> Magical Stone -> HP and back: HP counts as a gain too."""
    def change(_: Any, common: Any) -> None:
        item(common, "S02")["cost"] = {"energy": 1}  # Mending Light: 1 Energy -> 1 HP
    assert not [p for p in broken(change) if "resources from nothing" in p]

    def free_heal(_: Any, common: Any) -> None:
        item(common, "S02")["cost"] = {}
    problems = [p for p in broken(free_heal) if "resources from nothing" in p]
    assert problems and problems[0].startswith("S02") and "+1 hp" in problems[0]


def s11_required_nowhere(ch: Any, common: Any, advanced: Any) -> None:
    for cards in (ch[4]["cards"], advanced["cards"]):
        for c in cards:
            c["options"] = [o for o in c["options"]
                            if {"support": "S11"} not in o.get("requires", [])]


def chapter_4_opportunities_gone(ch: Any, _: Any) -> None:
    card(ch, "401")["title"] = "Notices"


def goal_location_missing(ch: Any, _: Any) -> None:
    ch[5]["goal"]["normal"]["reach"] = "L11"


def goal_location_unreachable(ch: Any, _: Any) -> None:
    for loc in ch[5]["locations"]:
        for option in loc["options"]:
            option["effects"] = [e for e in option["effects"] if e.get("go") != "L10"]


def location_event_on_no_grid(ch: Any, _: Any) -> None:
    for tile in ch[3]["tiles"]:
        for cell in tile["cells"]:
            if cell.get("loc") == 345:
                cell.pop("loc")


def requires_missing_location(ch: Any, _: Any) -> None:
    card(ch, "501")["options"][0]["requires"] = [{"location": "L42"}]


def requires_missing_ending(ch: Any, _: Any) -> None:
    card(ch, "301")["options"][0]["requires"] = [{"ending": "2Z"}]


def requires_later_ending(ch: Any, _: Any) -> None:
    card(ch, "301")["options"][0]["requires"] = [{"no_ending": "4B"}]


def eight_contracts(ch: Any, _: Any) -> None:
    ch[4]["contracts"] = ch[4]["contracts"][:8]


def ten_privileges(ch: Any, _: Any) -> None:
    ch[4]["privileges"].append(dict(ch[4]["privileges"][0], id="P10"))


def thirteen_hearts(ch: Any, _: Any) -> None:
    ch[2]["goal"]["advanced"]["max_hp"] = 13


def red_die_changed(_: Any, common: Any) -> None:
    common["red_die"][0]["value"] = 2  # the paw is 1


def green_die_changed(_: Any, common: Any) -> None:
    common["green_die"][4]["shield"] = False


def no_mountain_meal(ch: Any, _: Any) -> None:
    ch[5].pop("night_food")


@pytest.mark.parametrize("change, wanted", [
    (goal_location_missing, "location 'L11', which does not exist"),
    (goal_location_unreachable, "no path of locations leads to L10"),
    (location_event_on_no_grid, "location event 345 is on no grid"),
    (requires_missing_location, "requires location L42, which does not exist"),
    (requires_missing_ending, "requires ending '2Z'"),
    (requires_later_ending, "requires ending '4B'"),
    (chapter_4_opportunities_gone, "Opportunities card"),
    (eight_contracts, "contracts must be C01 to C09"),
    (ten_privileges, "privileges must be P01 to P09"),
    (thirteen_hearts, "above the 12 hearts"),
    (red_die_changed, "red_die: the faces must be"),
    (green_die_changed, "green_die: the faces must be"),
    (s11_required_nowhere, "S11: no option requires it"),
    (no_mountain_meal, "night meal"),
])
def test_each_content_mistake_of_issue_14_is_reported(change: Any, wanted: str) -> None:
    content = load_content()
    assert validate(content) == []
    chapters = copy.deepcopy(content.chapters)
    common = copy.deepcopy(content.common)
    advanced = copy.deepcopy(content.advanced)
    if change is s11_required_nowhere:
        change(chapters, common, advanced)
    else:
        change(chapters, common)
    problems = validate(Content(common, content.habits, advanced, chapters))
    assert any(wanted in p for p in problems), problems


def test_fear_gained_in_a_free_action_is_caught() -> None:
    """Making room for Fear may wait for the player (ruling 9): a free action cannot wait."""
    def change(ch: Any, _: Any) -> None:
        ch[2]["quizzes"][0]["reward"] = [{"gain": {"coin": 1, "fear": 1}}]
    assert any("EQ-1 reward" in p and "Fear cannot be gained" in p for p in broken(change))


def test_either_one_item_icons_are_separate_options() -> None:
    """Ruling 11: an item effect names one item, so no effect asks a question; an "either
    one" icon is two options of its card."""
    from services.eila.tools.validate import all_cards, walk

    content = load_content()
    things = list(content.advanced["cards"]) + list(content.habits["habits"])
    for data in content.chapters.values():
        things += all_cards(data)
    named = [e for t in things for o in t["options"] for e in walk(o["effects"])
             if "item" in e or "drop_item" in e]
    assert named and all(isinstance(v, str) and v in content.items()
                         for e in named for v in e.values())
    broken_content = broken(lambda ch, _: card(ch, "007")["options"][0]["effects"].append(
        {"item": ["I01", "I02"]}))
    assert any("does not exist" in p for p in broken_content)


def test_no_option_can_go_unpaid_by_making_room(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eila's rulebook, Resources: *"You cannot choose an option with a − effect unless you
    have enough resources to discard."* The validator plays every option that takes Fear
    before a − effect from every intangible storage: the shipped rules leave nothing unpaid,
    and rules that accepted any discard to make room (as before ruling 9a) are reported,
    with Alarm! (235) B among them."""
    assert not [p for p in validate(load_content()) if "unpaid when room" in p]
    monkeypatch.setattr(engine, "room_leaves_unpaid", lambda *_: "")
    problems = [p for p in validate(load_content()) if "unpaid when room" in p]
    assert any(p.startswith("card 235 option B") for p in problems), problems


def test_no_free_action_dodges_a_night_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eila's rulebook, Chapter 5, Harsh Environment: *"At the beginning of each night phase,
    you lose 1 Food or 1 HP."* The validator takes each free action the night offers before
    its cost, then each way of paying offered: the shipped rules always take Food, Energy or
    HP; rules that offered the Food after it was converted away (as before ruling 17's fix)
    are reported."""
    assert not [p for p in validate(load_content()) if "night's" in p]

    def old_meal(t: engine.Table, pay_hp: bool) -> None:  # the meal as it was: what is there
        t.p.phase = "night"
        t.hurt(1, blockable=False) if pay_hp else t.lose("food", 1)

    monkeypatch.setattr(engine, "night_meal", old_meal)
    monkeypatch.setattr(rules, "night_meals", lambda p: [
        pb.Command(night_meal=pb.NightMeal(pay_hp=False)),
        pb.Command(night_meal=pb.NightMeal(pay_hp=True))])
    problems = [p for p in validate(load_content()) if "night's" in p]
    assert problems and problems[0].startswith("chapter 5: the night's food cost goes unpaid")
