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


def test_a_shuffled_deck_and_the_mine_hold_no_order_nobody_has_seen() -> None:
    """Nothing is there to re-deal: the shuffled cards wait sorted and the face-down tiles are
    not laid until they turn over, so no view, event or state can give an order away."""
    state = night(start(0), energy=1)
    state.play.future = ["005", "001", "004", "002", "003"]  # type: ignore[union-attr]
    p = act(state, END_NIGHT).play
    assert p is not None and p.known == 0 and p.upcoming == sorted(p.upcoming)
    m = start(3).play.mine  # type: ignore[union-attr]
    assert m is not None and m.tiles == ["M1"] + [""] * 8
    assert list(GAME.view(start(3), 0).mine.face_down) == [
        f"{pos % 3},{pos // 3}" for pos in range(1, 9)]


def test_redact_hides_a_legacy_events_draws_but_keeps_the_log() -> None:
    from pathlib import Path

    from services.core import log as gamelog

    path = Path(__file__).parent / "logs" / "chapter0_campaign.jsonl"
    entries = gamelog.from_json_lines(GAME, path.read_text().splitlines())
    events = [gamelog.game_event(GAME, e) for e in entries if e.WhichOneof("body") == "event"]
    event = next(e for e in events if e.acted.draws)
    seen = GAME.redact(event, 0)
    assert list(seen.acted.draws) == [] and list(seen.acted.log) == list(event.acted.log)
    assert seen.acted.command == event.acted.command


def test_legal_actions_list_available_options_only() -> None:
    state = present(start(0), "007")
    kinds = [c.choose.option for c in GAME.legal_actions(state, 0) if c.HasField("choose")]
    assert kinds == [1]


def test_rejected_commands_change_nothing() -> None:
    state = present(start(0), "004", coin=1)
    before = state.clone()
    with pytest.raises(RuleError):
        GAME.decide_now(state, 0, pb.Command(choose=pb.ChooseOption(option=0)), Rng(b"x", 1))
    assert state == before


def test_the_opening_event_names_the_content_version() -> None:
    from services.core.decider import Seat
    from services.eila.data import content_version

    opened, changed = GAME.setup(pb.Options(), [Seat("eila")], Rng(b"v", 0))
    assert opened.opened.content_version == content_version() and len(content_version()) == 16
    assert "chapter 0 begins" in changed.changed.log[0]
