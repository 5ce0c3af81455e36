"""Ending a chapter, resetting it, the save box and the campaign across chapters."""

from __future__ import annotations

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import MalformedCommand, Rng, RuleError, Seat
from services.eila import GAME
from tests.eila.helpers import END_NIGHT, act, night, present, start, submit

NEXT = pb.Command(start_chapter=pb.StartChapter(chapter=1))
RETRY = pb.Command(start_chapter=pb.StartChapter(chapter=0))


def won_chapter_0(**kept: list[str]) -> object:
    state = night(start(0), food=2)
    state.play.items = kept.get("items", [])  # type: ignore[union-attr]
    state.play.habits = kept.get("habits", [])  # type: ignore[union-attr]
    return act(state, submit(pb.FOOD, 2))


def lost_chapter_0(items: list[str]) -> object:
    state = present(start(0), "005")
    state.play.hp = 1  # type: ignore[union-attr]
    state.play.items = items  # type: ignore[union-attr]
    return act(state, pb.Command(choose=pb.ChooseOption(option=1)))


def test_winning_keeps_items_and_habits_in_the_save_box() -> None:
    state = won_chapter_0(items=["I01"], habits=["H1"])
    assert state.phase == "between" and state.box == ["H1", "I01"]  # type: ignore[attr-defined]
    state = act(state, NEXT)  # type: ignore[arg-type]
    assert state.play is not None and state.play.items == ["I01"] and state.play.habits == ["H1"]


def test_resources_reset_each_chapter() -> None:
    state = won_chapter_0()
    state.play.res["coin"] = 5  # type: ignore[attr-defined]
    state = act(state, NEXT)  # type: ignore[arg-type]
    assert state.play is not None and state.play.res["coin"] == 0


def test_losing_returns_the_acquired_cards_and_resets_the_chapter() -> None:
    state = lost_chapter_0(items=["I01"])
    assert state.phase == "between" and state.box == []  # type: ignore[attr-defined]
    state = act(state, RETRY)  # type: ignore[arg-type]
    p = state.play
    assert p is not None and p.items == [] and p.present == "001" and p.day == 1
    assert p.decks["blue"] == ["006", "007", "008"]


def test_you_must_win_to_proceed_to_the_next_chapter() -> None:
    state = lost_chapter_0(items=[])
    with pytest.raises(RuleError) as e:
        act(state, NEXT)  # type: ignore[arg-type]
    assert e.value.code == "WRONG_CHAPTER"


def test_a_chapter_cannot_be_started_while_one_is_played() -> None:
    with pytest.raises(RuleError) as e:
        act(start(0), NEXT)
    assert e.value.code == "CHAPTER_IN_PROGRESS"


def test_the_log_holds_every_chapter_attempt() -> None:
    state = act(lost_chapter_0(items=[]), RETRY)  # type: ignore[arg-type]
    state = act(night(state, food=2), submit(pb.FOOD, 2))
    assert [(c, won) for c, won, *_ in state.history] == [(0, False), (0, True)]


def test_abandoning_ends_the_campaign_without_a_winner() -> None:
    state = act(lost_chapter_0(items=[]), pb.Command(abandon=pb.Abandon()))  # type: ignore[arg-type]
    outcome = GAME.outcome(state)
    assert outcome is not None and outcome.winners == ()


def test_winning_chapter_5_wins_the_campaign() -> None:
    state = night(start(5), stone=2, knowledge=2)
    state.play.location = "L10"  # type: ignore[union-attr]
    state = act(act(state, submit(pb.STONE, 2)), submit(pb.KNOWLEDGE, 2))
    outcome = GAME.outcome(state)
    assert outcome is not None and outcome.winners == (0,)


def test_single_chapter_option_ends_with_the_first_win() -> None:
    state = act(night(start(2, single=True), stone=4, coin=5), submit(pb.STONE, 4))
    state = act(state, submit(pb.COIN, 5))
    assert GAME.outcome(state) is not None


def test_resuming_from_the_save_box() -> None:
    p = start(3, box=("I05", "S01")).play
    assert p is not None and p.items == ["I05"] and p.supports == ["S01"]


def test_losing_by_time_also_resets() -> None:
    state = night(start(0))
    state.play.track = 6  # type: ignore[union-attr]
    state.play.res["energy"] = 1  # type: ignore[union-attr]
    state = act(state, END_NIGHT)
    assert state.phase == "between" and state.history[-1][1] is False


def test_the_next_chapter_may_order_the_kept_habits() -> None:
    state = won_chapter_0(habits=["H1"])
    state.box = ["H1", "H3"]  # type: ignore[attr-defined]
    state.play.result, state.chapter = "won", 1  # type: ignore[attr-defined]
    bad = pb.Command(start_chapter=pb.StartChapter(chapter=2, habit_order=["H1"]))
    with pytest.raises(MalformedCommand, match="habit order"):
        act(state, bad)  # type: ignore[arg-type]
    good = pb.Command(start_chapter=pb.StartChapter(chapter=2, habit_order=["H3", "H1"]))
    state = act(state, good)  # type: ignore[arg-type]
    assert state.play is not None and state.play.upcoming[-2:] == ["H3", "H1"]


def test_between_chapters_the_view_shows_the_chapter_about_to_be_played() -> None:
    """The view's `chapter_title` and `prologue` name "the chapter being played (or about to
    be)": after a win the next chapter's, after a loss the same chapter's again."""
    won = GAME.view(won_chapter_0(), 0)
    assert won.phase == "between" and won.chapter_title == "The Crow's Hoard"
    assert won.prologue.startswith("The crow has flown to the old clock tower")
    lost = GAME.view(lost_chapter_0(items=[]), 0)
    assert lost.phase == "between" and lost.chapter_title == "Something Shiny by the Fence"


def test_the_first_line_of_what_happened_tells_the_campaign_began() -> None:
    """The opening event has no log lines: it is told as the campaign's beginning, not as
    "you acted"."""
    opened = pb.Event(opened=pb.Opened(options=pb.Options()))
    assert GAME.describe is not None and GAME.describe(opened, 0) == "the campaign begins"


def test_a_choice_is_told_as_the_players_choice() -> None:
    state = GAME.replay(GAME.setup(pb.Options(), [Seat("eila")], Rng(b"choice", 0)))
    choose = pb.Command(choose=pb.ChooseOption(option=0))
    [changed] = GAME.decide_now(state, 0, choose, Rng(b"choice", 1))
    assert GAME.describe is not None
    said = GAME.describe(changed, 0)
    assert said is not None and said.startswith("you chose option A: ")
    assert str(GAME.describe(changed, None)).startswith("Eila chose option A: ")
