"""What the player sees, and what stays hidden: the upcoming deck's order."""

from __future__ import annotations

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import Rng, RuleError
from services.eila import GAME
from tests.eila.helpers import END_NIGHT, act, choose, night, present, start


def test_the_view_shows_the_present_card_and_its_options() -> None:
    v = GAME.view(start(0), 0)
    assert v.present.id == "001" and v.present.title == "A Rumbling Tummy"
    assert [o.label for o in v.present.options] == ["A", "B"]
    assert "+1 food" in v.present.options[0].text and "Past" in v.present.options[0].text


def test_the_view_says_why_an_option_is_unavailable() -> None:
    v = GAME.view(present(start(0), "007"), 0)
    assert not v.present.options[0].available
    assert "Wicker Basket" in v.present.options[0].why_not


def test_the_view_shows_resources_hp_day_and_goal() -> None:
    v = GAME.view(start(1), 0)
    assert v.storage["food"] == 1 and v.hp == v.max_hp == 4 and v.day == 1
    assert v.goal.needed["coin"] == 3 and v.goal.cap == 2


def test_day_1_order_is_known_but_a_shuffled_deck_is_not() -> None:
    v = GAME.view(start(0), 0)
    assert list(v.upcoming_top) == ["002", "003", "004", "005"]
    state = night(start(0), energy=1)
    state.play.future = ["001", "002", "003", "004"]  # type: ignore[union-attr]
    v = GAME.view(act(state, END_NIGHT), 0)
    assert list(v.upcoming_top) == [] and list(v.upcoming_rest) == sorted(v.upcoming_rest)
    assert v.upcoming_count == 3


def test_red_cards_put_on_a_shuffled_deck_are_known() -> None:
    state = night(start(3), energy=1)
    state.play.future = ["301", "302", "303", "304"]  # type: ignore[union-attr]
    state = act(state, END_NIGHT)
    state.play.present = "331"  # type: ignore[union-attr]  # 329 then 330 on top
    v = GAME.view(act(state, choose(0)), 0)
    assert v.present.id == "330" and list(v.upcoming_top) == ["329"]
    assert len(v.upcoming_rest) == 3


def test_redealing_keeps_the_players_view() -> None:
    state = night(start(0), energy=1)
    state.play.future = ["001", "002", "003", "004", "005"]  # type: ignore[union-attr]
    state = act(state, END_NIGHT)
    other = GAME.redeal(state, 0, Rng(b"other", 0))  # type: ignore[misc]
    assert GAME.view(other, 0) == GAME.view(state, 0)


def test_redealing_the_mine_keeps_the_view() -> None:
    state = start(3)
    other = GAME.redeal(state, 0, Rng(b"mine", 3))  # type: ignore[misc]
    assert GAME.view(other, 0) == GAME.view(state, 0)
    assert GAME.view(other, 0).mine.face_down == GAME.view(state, 0).mine.face_down


def test_redact_hides_the_draws_but_keeps_the_log() -> None:
    state = night(start(0), energy=1)
    state.play.future = ["001", "002", "003"]  # type: ignore[union-attr]
    [event] = GAME.decide(state, 0, END_NIGHT, Rng(b"r", 1))
    assert list(event.acted.draws)
    seen = GAME.redact(event, 0)
    assert list(seen.acted.draws) == [] and list(seen.acted.log) == list(event.acted.log)


def test_legal_actions_list_available_options_only() -> None:
    state = present(start(0), "007")
    kinds = [c.choose.option for c in GAME.legal_actions(state, 0) if c.HasField("choose")]
    assert kinds == [1]


def test_rejected_commands_change_nothing() -> None:
    state = present(start(0), "004", coin=1)
    before = state.clone()
    with pytest.raises(RuleError):
        GAME.decide(state, 0, pb.Command(choose=pb.ChooseOption(option=0)), Rng(b"x", 1))
    assert state == before


def test_the_opening_event_names_the_content_version() -> None:
    from services.core.decider import Seat
    from services.eila.data import content_version

    [event] = GAME.setup(pb.Options(), [Seat("eila")], Rng(b"v", 0))
    assert event.started.content_version == content_version() and len(content_version()) == 16
    assert "chapter 0 begins" in event.started.log[0]


def test_a_game_played_with_other_rules_or_content_is_refused_not_replayed_wrongly() -> None:
    from services.core.decider import Seat
    from services.eila.rules import evolve

    event = GAME.setup(pb.Options(), [Seat("eila")], Rng.for_test(0))[0]
    event.started.content_version = "0123456789abcdef"
    with pytest.raises(RuleError) as refused:
        evolve(None, event)
    assert refused.value.code == "RULES_CHANGED" and "0123456789abcdef" in refused.value.message
