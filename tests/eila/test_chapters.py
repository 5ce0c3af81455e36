"""The chapter-specific rules: quizzes (2), the mine (3), contracts and privileges (4),
locations and the harsh mountain (5), alternative endings and advanced mode."""

from __future__ import annotations

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import RuleError
from services.eila import GAME
from services.eila.data import default_index
from services.eila.engine import ReplayDice, Table, move
from services.eila.state import Mine, State
from tests.eila.helpers import act, choose, night, present, start, submit

# ---- chapter 2: quizzes ------------------------------------------------------------------


def answer(quiz: str, choice: str) -> pb.Command:
    return pb.Command(answer=pb.AnswerQuiz(quiz=quiz, answer=choice))


def with_quiz() -> State:
    """203 A: sort soldiers, then draw an EQ card (the draw picks EQ-3)."""
    return act(present(start(2), "203", energy=1), choose(0), draws=[2])


def test_an_event_draws_a_quiz_card_of_its_deck() -> None:
    p = with_quiz().play
    assert p is not None and p.quizzes == ["EQ-3"] and "EQ-3" not in p.quiz_decks["EQ"]


def test_a_right_answer_gets_the_reward() -> None:
    state = act(with_quiz(), answer("EQ-3", "d"))
    p = state.play
    assert p is not None and p.res["coin"] == 1 + 2 + 2 and p.quizzes == []


def test_a_wrong_answer_turns_the_card_over_without_reward() -> None:
    state = act(with_quiz(), answer("EQ-3", "a"))
    p = state.play
    assert p is not None and p.res["coin"] == 1 + 2 and p.quizzes == []


def test_a_quiz_can_be_answered_only_while_held() -> None:
    with pytest.raises(RuleError):
        act(start(2), answer("EQ-1", "c"))


def test_every_quiz_clue_is_in_a_card_of_chapter_2() -> None:
    chapter = default_index().content.chapter(2)
    texts = " ".join(c["text"] for c in chapter["cards"])
    assert len(chapter["quizzes"]) == 10
    assert all(q["clue"] in texts for q in chapter["quizzes"])


def test_quiz_answers_follow_the_rulebook_key() -> None:
    key = {"EQ-1": "c", "EQ-2": "b", "EQ-3": "d", "EQ-4": "b", "EQ-5": "c",
           "AQ-1": "c", "AQ-2": "a", "AQ-3": "d", "AQ-4": "d", "AQ-5": "a"}
    quizzes = default_index().content.chapter(2)["quizzes"]
    assert {q["id"]: q["correct"] for q in quizzes} == key


# ---- chapter 3: the mine -------------------------------------------------------------------

LAYOUT = ["M1", "M2a", "M3a", "M2b", "M3b", "M4a", "M3c", "M4b", "MCa"]
E, N, W = pb.EAST, pb.NORTH, pb.WEST
STOP = pb.Command(stop=pb.StopMoving())


def step(direction: int) -> pb.Command:
    return pb.Command(move=pb.Move(direction=direction))


def in_mine(x: int = 0, y: int = 0, moves: int = 3, faceup: tuple[int, ...] = (0,),
            box: tuple[str, ...] = (), **res: int) -> State:
    state = present(start(3, box=box), "301", **res)
    p = state.play
    assert p is not None
    p.mine = Mine(list(LAYOUT), [i in faceup for i in range(9)], x, y, pool=["MCa", "MCb", "MCc"])
    p.queue, p.moves, p.phase = [{"trigger_location": True}], moves, "moving"
    p.place = "future"
    return state


def test_the_mine_starts_with_m1_face_up_and_eila_at_the_bottom_left() -> None:
    m = start(3).play.mine  # type: ignore[union-attr]
    assert m is not None and m.tiles[0] == "M1" and m.faceup == [True] + [False] * 8
    # The face-down tiles are drawn as they are turned over: none lies anywhere yet.
    assert (m.x, m.y) == (0, 0) and m.tiles[1:] == [""] * 8
    assert m.pool == sorted(LAYOUT[1:-1] + ["MCa", "MCb", "MCc"])


def test_a_face_down_tile_is_drawn_from_its_band_as_it_turns_over() -> None:
    state = in_mine(1, 0)
    state.play.mine = start(3).play.mine  # type: ignore[union-attr]
    state.play.mine.x = 1  # type: ignore[union-attr]
    p = act(state, step(E), draws=[1]).play  # M2a and M2b lie on that diagonal
    assert p is not None and p.mine is not None and p.mine.tiles[1] == "M2b"
    assert "M2b" not in p.mine.pool and "M2a" in p.mine.pool


def test_exploring_moves_then_triggers_the_event_located_there() -> None:
    state = act(present(start(3), "301"), choose(0))
    assert state.play.phase == "moving" and state.play.moves == 2  # type: ignore[union-attr]
    state = act(in_mine(moves=2), step(E))
    state = act(state, STOP)
    p = state.play
    assert p is not None and p.nested == "340" and p.phase == "day"


def test_a_grid_without_a_number_triggers_nothing() -> None:
    state = act(act(in_mine(moves=2), step(N)), STOP)  # M1 NW has no number
    p = state.play
    assert p is not None and p.nested == "" and "301" in p.future


def test_entering_a_face_down_tile_turns_it_over() -> None:
    state = act(in_mine(1, 0), step(E))
    p = state.play
    assert p is not None and p.mine is not None and p.mine.faceup[1]
    assert (p.mine.x, p.mine.y) == (2, 0)


def test_no_diagonal_or_off_the_map_moves() -> None:
    with pytest.raises(RuleError) as e:
        act(in_mine(), step(W))
    assert e.value.code == "EDGE_OF_MINE"


def test_a_wall_cannot_be_passed() -> None:
    # M2b's SE grid (1, 2) has a wall on its east side; M3b (east of it) is face up.
    with pytest.raises(RuleError) as e:
        act(in_mine(1, 2, faceup=(0, 3, 4)), step(E))
    assert e.value.code == "BLOCKED"


def moves_offered(state: State) -> list[int]:
    return [c.move.direction for c in GAME.legal_actions(state, 0)
            if c.WhichOneof("kind") == "move"]


def test_a_wall_behind_a_face_down_tile_returns_without_spending_the_move() -> None:
    """*"you may encounter a wall when entering a face-down tile … return to the previous grid
    without spending the move"*: M2b's wall on its SE grid's east side, met from the east."""
    state = in_mine(2, 2, moves=2, faceup=(0, 4))
    mine = state.play.mine  # type: ignore[union-attr]
    mine.tiles[4], mine.tiles[6] = "M3c", "M3b"  # nothing drawn on Eila's side of the edge
    assert W in moves_offered(state)
    state = act(state, step(W))
    p = state.play
    assert p is not None and p.mine is not None
    assert (p.mine.x, p.mine.y, p.moves) == (2, 2, 2) and p.mine.faceup[3]


def test_a_wall_seen_on_eilas_grid_blocks_a_face_down_tile_without_turning_it_over() -> None:
    """M2b's SE grid shows a wall on its east side: no step there, and no free look at the
    face-down tile beyond."""
    state = in_mine(1, 2, moves=2, faceup=(0, 3))
    assert E not in moves_offered(state)
    p = state.play
    assert p is not None and p.mine is not None
    with pytest.raises(RuleError) as e:
        move(Table(p, default_index(), ReplayDice([]), []), "E")
    assert e.value.code == "BLOCKED" and not p.mine.faceup[4]


def test_a_cliff_costs_1_energy() -> None:
    state = act(in_mine(2, 1, faceup=(0, 1), energy=1), step(E))
    p = state.play
    assert p is not None and p.res["energy"] == 0 and p.mine.x == 3  # type: ignore[union-attr]


def test_a_cliff_costs_1_hp_without_energy() -> None:
    state = act(in_mine(2, 1, faceup=(0, 1), energy=0), step(E))
    assert state.play is not None and state.play.hp == state.play.max_hp - 1


def test_a_cliff_may_cost_1_hp_instead_of_energy() -> None:
    """*"Cliff: Cost 1 Energy or 1 HP"*: the player may keep her Energy and pay HP."""
    state = in_mine(2, 1, faceup=(0, 1), energy=1)
    climbs = [c for c in GAME.legal_actions(state, 0) if c.WhichOneof("kind") == "move"
              and c.move.direction == E]
    assert [c.move.pay_hp for c in climbs] == [False, True]
    state = act(state, pb.Command(move=pb.Move(direction=E, pay_hp=True)))
    p = state.play
    assert p is not None and p.res["energy"] == 1 and p.hp == p.max_hp - 1
    assert p.mine.x == 3  # type: ignore[union-attr]


def test_the_cliff_choice_is_offered_before_a_face_down_tile_turns_over() -> None:
    """Energy or HP is the player's choice for a cliff she cannot see yet too; it is offered
    toward every face-down tile, so the offer does not tell whether a cliff lies there."""
    def offers(state: object, direction: int) -> list[bool]:
        return [c.move.pay_hp for c in GAME.legal_actions(state, 0)
                if c.WhichOneof("kind") == "move" and c.move.direction == direction]

    cliff_unseen = in_mine(2, 1, faceup=(0,), energy=1)  # a cliff east, on face-down tile 1
    open_ground = in_mine(1, 0, faceup=(0,), energy=1)  # no cliff east, onto tile 1
    assert offers(cliff_unseen, E) == offers(open_ground, E) == [False, True]
    state = act(cliff_unseen, pb.Command(move=pb.Move(direction=E, pay_hp=True)))
    p = state.play
    assert p is not None and p.res["energy"] == 1 and p.hp == p.max_hp - 1


def test_a_rope_climbs_cliffs_for_free() -> None:
    state = act(in_mine(2, 1, faceup=(0, 1), box=("I12",), energy=1), step(E))
    assert state.play is not None and state.play.res["energy"] == 1


def test_a_hidden_passage_needs_a_magnifier() -> None:
    with pytest.raises(RuleError, match="magnifier"):
        act(in_mine(5, 0, faceup=(0, 2, 5)), step(N))
    state = act(in_mine(5, 0, faceup=(0, 2, 5), box=("I13",)), step(N))
    assert state.play.mine.y == 1  # type: ignore[union-attr]


def test_entering_a_dark_area_gives_a_fear() -> None:
    state = act(in_mine(2, 0, faceup=(0, 1)), step(E))
    assert state.play is not None and state.play.res["fear"] == 1


def test_a_covered_location_cannot_be_triggered_again() -> None:
    state = act(in_mine(1, 1, moves=1, energy=1), STOP)  # trigger 341 where Eila stands
    state = act(state, choose(0))  # chip the stone and cover the location
    assert state.play is not None and 341 in state.play.mine.covered  # type: ignore[union-attr]
    again = in_mine(1, 1, moves=1)
    again.play.mine.covered = [341]  # type: ignore[union-attr]
    assert act(again, STOP).play.nested == ""  # type: ignore[union-attr]


def test_shelter_options_need_a_shelter_grid() -> None:
    state = present(start(3), "325")  # Runaway cart: "Duck into a shelter"
    state.play.mine.x, state.play.mine.y = 1, 0  # type: ignore[union-attr]
    with pytest.raises(RuleError, match="shelter"):
        act(state, choose(1))
    state.play.mine.x = 0  # type: ignore[union-attr]
    assert act(state, choose(1)).play.present != "325"  # type: ignore[union-attr]


def test_if_you_possess_events_check_each_item() -> None:
    state = act(present(start(3, box=("I02",)), "311", fear=3), choose(0))
    p = state.play
    assert p is not None and p.res["coin"] == 2 + 2 and p.res["fear"] == 3
    state = act(present(start(3), "311"), choose(0))
    assert state.play is not None and state.play.res["coin"] == 2


# ---- chapter 4: contracts and privileges ----------------------------------------------------


def test_five_contracts_and_five_privileges_are_drawn() -> None:
    p = start(4).play
    assert p is not None and len(p.offers["contracts"]) == 5 and len(p.offers["privileges"]) == 5


def test_a_contract_costs_1_knowledge_and_goes_to_the_future() -> None:
    state = act(present(start(4), "401", knowledge=2), choose(0))
    assert state.play.phase == "picking"  # type: ignore[union-attr]
    card = state.play.offers["contracts"][0]  # type: ignore[union-attr]
    state = act(state, pb.Command(pick=pb.Pick(card=card)))
    state = act(state, pb.Command(done_picking=pb.DonePicking()))
    p = state.play
    assert p is not None and card in p.future and p.res["knowledge"] == 1
    assert card not in p.offers["contracts"]


def test_a_contract_returned_to_its_deck_is_on_offer_again() -> None:
    """*"This event card returns to its original deck"*: a contract's deck is the row of
    contracts on offer in the Chapter Element Area, so it can be bought again."""
    state = start(4)
    p = state.play
    assert p is not None
    card = p.offers["contracts"][0]
    p.offers["contracts"].remove(card)
    p.present, p.place = card, "deck"
    Table(p, default_index(), ReplayDice([]), []).resolve_present()
    assert card in p.offers["contracts"] and card not in p.decks.get("contract", [])


def test_a_privilege_costs_3_coin() -> None:
    state = act(present(start(4), "401", coin=2), choose(1))
    card = state.play.offers["privileges"][0]  # type: ignore[union-attr]
    with pytest.raises(RuleError, match="3 coin"):
        act(state, pb.Command(pick=pb.Pick(card=card)))


def test_cards_returned_to_the_box_cannot_be_bought() -> None:
    state = act(present(start(4), "401", knowledge=8), choose(0))
    unused = sorted({f"C0{i}" for i in range(1, 10)} - set(state.play.offers["contracts"]))[0]  # type: ignore[union-attr]
    with pytest.raises(RuleError):
        act(state, pb.Command(pick=pb.Pick(card=unused)))


# ---- chapter 5: locations -------------------------------------------------------------------


def test_the_first_location_is_l01() -> None:
    assert start(5).play.location == "L01"  # type: ignore[union-attr]


def test_a_location_action_executes_an_option_of_the_current_location() -> None:
    state = act(start(5), choose(0))  # 501 A: press on
    assert state.play.nested == "L01"  # type: ignore[union-attr]
    state = act(state, choose(1))  # rest in the camp
    assert state.play.res["energy"] == 3 + 1 and state.play.nested == ""  # type: ignore[union-attr]


def test_leading_onward_reveals_the_next_location() -> None:
    state = act(act(start(5), choose(0)), choose(0))  # set off up the trail
    assert state.play is not None and state.play.location == "L02"


def test_the_mountain_goal_needs_the_summit_too() -> None:
    state = present(start(5, single=True), "501")
    p = state.play
    assert p is not None
    p.submitted = {"stone": 2, "knowledge": 2}
    p.location = "L09"
    p.nested = "L09"
    state = act(state, choose(0))  # scramble to the summit
    assert state.play is not None and state.play.result == "won"


def test_the_mountain_goal_is_not_won_below_the_summit() -> None:
    state = night(start(5, single=True), stone=2, knowledge=2)
    state = act(act(state, submit(pb.STONE, 2)), submit(pb.KNOWLEDGE, 2))
    p = state.play
    assert p is not None and p.submitted == {"stone": 2, "knowledge": 2}
    assert p.location == "L01" and p.result == "" and p.phase == "night"


# ---- alternative endings, endings across chapters, advanced mode ----------------------------


def test_an_alternative_ending_wins_the_chapter() -> None:
    state = act(present(start(2, box=("S09",)), "226", stone=1), choose(0))
    p = state.play
    assert p is not None and p.result == "won" and p.ending == "B"
    assert state.history[-1] == (2, True, "B", 1, "alternative ending B")


def test_later_chapters_know_the_endings_reached() -> None:
    state = act(present(start(2, box=("S09",)), "226", stone=1), choose(0))
    state = act(state, pb.Command(start_chapter=pb.StartChapter(chapter=3)))
    assert state.play is not None and state.play.endings == ["2B"]


def test_advanced_mode_uses_the_advanced_side_of_the_goal_card() -> None:
    p = start(2, advanced=True).play
    assert p is not None and p.max_hp == 4


def test_advanced_mode_replaces_cards_by_number() -> None:
    state = act(present(start(2, advanced=True), "216"), choose(0))
    assert state.play is not None and state.play.hp == 4 - 1  # the wire hurts


def test_there_are_22_advanced_events_as_the_rulebook_lists() -> None:
    ids = sorted(default_index().advanced)
    assert len(ids) == 22 and ids[:5] == ["216", "227", "236", "240", "242"]


def test_a_location_event_returns_to_its_deck_and_can_trigger_again() -> None:
    state = act(in_mine(1, 0, moves=1), STOP)
    state = act(state, choose(3))  # the miners' store: trade news for bread
    assert state.play is not None and state.play.nested == "" and "340" not in state.play.past
    assert act(in_mine(1, 0, moves=1), STOP).play.nested == "340"  # type: ignore[union-attr]


def test_court_manners_is_needed_by_some_castle_options() -> None:
    """S11 says "Needed by some options in the castle": The Great Hall (403) has one."""
    without = GAME.view(present(start(4), "403"), 0).present.options
    with_it = GAME.view(present(start(4, box=("S11",)), "403"), 0).present.options
    manners = [i for i, o in enumerate(without) if "court manners" in o.text]
    assert manners and all(not without[i].available and "Court Manners" in without[i].why_not
                           for i in manners)
    assert all(with_it[i].available for i in manners)
