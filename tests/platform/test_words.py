"""Events in words, hidden values marked, seats with presence (every game).

Each game describes every kind of its events for a seat and for a spectator; a description
never changes with what the seat may not see; views carry what happened since the seat last
acted; a hidden field is named in `hidden`; seat 0 is printed in the JSON and text forms.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from google.protobuf import json_format, text_format

from services import games as registry
from services.core import log as gamelog
from services.core.decider import Game, Rng, Seat
from services.core.happened import SAID, _probe, naming
from services.core.host import Caller, Host
from services.core.server import in_process_ai
from services.core.store import MemoryStore
from tests.conformance import playouts, suite

GAMES = suite.NAMES  # every game, and the template


def kinds(game: Game) -> list[str]:
    return [f.name for f in game.pb.Event.DESCRIPTOR.oneofs_by_name["kind"].fields]


def played(game: Game, seed: int, commands: int = 300) -> tuple[list[Any], int]:
    """Events of a game of random legal commands (cut after `commands`), and its seats."""
    rng = Rng.for_test(seed)
    seats = [Seat(f"p{i}") for i in range(game.seat_count)]
    events = game.setup(game.pb.Options(), seats, Rng(b"words-%d" % seed, 0))
    state = game.replay(events)
    for _ in range(commands):
        if game.outcome(state) is not None:
            break
        seat = rng.choice(list(game.to_act(state)))
        new = game.decide(state, seat, rng.choice(game.legal_actions(state, seat)),
                          Rng(b"words-%d" % seed, len(events)))
        for e in new:
            state = game.evolve(state, e)
        events += new
    return events, len(seats)


@pytest.fixture(params=GAMES)
def game(request: pytest.FixtureRequest) -> Game:
    return suite.game(request.param)


def test_every_event_kind_is_described_for_a_seat_and_a_spectator(game: Game) -> None:
    assert game.describe is not None
    for kind in kinds(game):
        event = game.pb.Event()
        getattr(event, kind).SetInParent()
        _probe(event)  # every field set to something
        for seat in (0, 1, None):
            said = game.describe(event, seat)
            assert isinstance(said, str) and said.strip(), (kind, seat, said)
            assert "_" not in said and "{" not in said, f"{kind}: not in words: {said!r}"


def test_the_events_of_played_games_are_described(game: Game) -> None:
    assert game.describe is not None
    seen: set[str] = set()
    for seed in range(3):
        events, seats = played(game, seed)
        for event in events:
            for seat in [*range(seats), None]:
                said = game.describe(event, seat)
                assert said is None or said.strip()
            seen.add(event.WhichOneof("kind"))
    assert len(seen) >= min(2, len(kinds(game)))


def perturb(message: Any, path: str) -> None:
    """Change the value at `path` ("card_stolen.card", "round_started.deals[1].hand")."""
    parts = path.split(".")
    for part in parts[:-1]:
        m = re.fullmatch(r"(\w+)\[(\d+)\]", part)
        message = getattr(message, m.group(1))[int(m.group(2))] if m else getattr(message, part)
    name = parts[-1]
    fd = message.DESCRIPTOR.fields_by_name[name]
    value = getattr(message, name)
    if fd.is_repeated:
        if fd.message_type is not None:
            _probe(value.add())
        else:
            value.append(2 if fd.enum_type is None else fd.enum_type.values[-1].number)
    elif fd.message_type is not None:
        value.SetInParent()
        _probe(value)
        for sub in value.DESCRIPTOR.fields:
            if not sub.is_repeated and sub.message_type is None and \
                    sub.type != sub.TYPE_BOOL and sub.type != sub.TYPE_STRING:
                setattr(value, sub.name, getattr(value, sub.name) + 1
                        if sub.enum_type is None else sub.enum_type.values[-1].number)
    elif fd.enum_type is not None:
        numbers = [v.number for v in fd.enum_type.values if v.number != value]
        setattr(message, name, numbers[-1])
    elif fd.type == fd.TYPE_BOOL:
        setattr(message, name, not value)
    elif fd.type in (fd.TYPE_STRING, fd.TYPE_BYTES):
        setattr(message, name, value + type(value)(b"?" if fd.type == fd.TYPE_BYTES else "?"))
    else:
        setattr(message, name, value + 3)


def test_a_description_never_changes_with_what_the_seat_may_not_see(game: Game) -> None:
    """Two events that differ only in what `redact` hides from a seat read the same to it."""
    assert game.describe is not None
    checked = 0
    for seed in range(3):
        events, seats = played(game, seed)
        for event in events:
            for seat in [*range(seats), None]:
                shown = game.redact(event, seat)
                if shown is None:
                    continue
                for path in shown.hidden:
                    other = type(event)()
                    other.CopyFrom(event)
                    perturb(other, path)
                    assert other != event, path
                    assert game.describe(other, seat) == game.describe(event, seat), (
                        f"seat {seat}: the description of {path} tells a hidden value")
                    checked += 1
    if game.redeal is not None:  # a game that hides something: its hidden paths were tried
        assert checked > 0


def test_hidden_fields_are_named_whatever_their_value() -> None:
    from arbiter.moody_bear.v1 import moody_bear_pb2 as mb
    from arbiter.shadow_council.v1 import shadow_council_pb2 as sc

    moody, council = registry.game("moody_bear"), registry.game("shadow_council")
    drawn = mb.Event(card_drawn=mb.CardDrawn(seat=1, card=mb.LAVA_GEM))
    assert list(moody.redact(drawn, 2).hidden) == ["card_drawn.card"]
    assert not moody.redact(drawn, 2).card_drawn.card
    assert list(moody.redact(drawn, 1).hidden) == []
    assert moody.redact(drawn, 1).card_drawn.card == mb.LAVA_GEM
    # What a clue hides is the same list whichever clue it is: the list tells nothing.
    keyword = sc.Event(clue_gained=sc.ClueGained(seat=1, subject=0, kind=sc.CLUE_KEYWORD,
                                                 keyword=sc.KEYWORD_BLADE))
    suits = sc.Event(clue_gained=sc.ClueGained(seat=1, subject=0, kind=sc.CLUE_HAND_SUITS,
                                               suits=[sc.SUIT_ECONOMY]))
    hidden = list(council.redact(keyword, 2).hidden)
    assert hidden == list(council.redact(suits, 2).hidden)
    assert {"clue_gained.kind", "clue_gained.keyword", "clue_gained.suits"} <= set(hidden)
    assert list(council.redact(keyword, 1).hidden) == []


def test_a_view_names_what_it_hides() -> None:
    moody = registry.game("moody_bear")
    state = moody.replay(moody.setup(moody.pb.Options(), [Seat(f"p{i}") for i in range(4)],
                                     Rng(b"v", 0)))
    mine = moody.view(state, 0)
    unknown = [i for i, p in enumerate(mine.players) if not p.team]
    assert unknown and [f"players[{i}].team" for i in unknown] == list(mine.hidden)
    assert "hand" in moody.view(state, None).hidden


def test_seat_zero_is_printed_in_json_and_text() -> None:
    from arbiter.moody_bear.v1 import moody_bear_pb2 as mb

    event = mb.Event(identity_looked=mb.IdentityLooked(seat=0, target=2))
    assert "seat: 0" in text_format.MessageToString(event)
    assert json_format.MessageToDict(event)["identityLooked"] == {"seat": 0, "target": 2}
    back = mb.Event.FromString(event.SerializeToString())
    assert back.identity_looked.HasField("seat") and back.identity_looked.seat == 0
    assert not mb.Event(identity_looked=mb.IdentityLooked(target=2)).identity_looked.HasField(
        "seat")
    # The seat of a token and of legal commands, too.
    from arbiter.v1 import arbiter_pb2 as apb

    assert json_format.MessageToDict(apb.SeatToken(seat=0, token="t")) == {"seat": 0,
                                                                             "token": "t"}
    assert "seat: 0" in text_format.MessageToString(mb.LegalActions(version=3, seat=0))


def test_the_rules_give_seat_zero_its_presence(game: Game) -> None:
    """Every seat field the rules fill holds its value with presence, 0 included."""
    zeros = 0
    for seed in range(2):
        events, _ = played(game, seed, 60)
        for event in events:
            text = text_format.MessageToString(event)
            zeros += len(re.findall(r"\b(seat|target|turn|magician|mortal|planet|next|"
                                    r"next_seat|first_player|first_magician|subject): 0\b", text))
    if game.max_seats > 1:  # a game of one seat names no seat in its events
        assert zeros > 0, "no seat 0 is ever printed"


# ---- what happened since the seat last acted --------------------------------------------


async def test_a_view_tells_what_happened_from_the_seats_last_command_on() -> None:
    game = registry.game("bubblee")
    host = Host(MemoryStore(), {"bubblee": game}, ai_dispatch=in_process_ai)
    made = await host.create(
        "bubblee", [Seat("ann"), Seat("bot", "ai", "greedy")], game.pb.Options())
    game_id, tokens = made.game_id, made.tokens
    acted = told = 0
    while acted < 12:
        loaded = await host.load(game_id)
        if loaded.finished:
            break
        if 0 not in game.to_act(loaded.state):
            await asyncio.sleep(0.01)
            continue
        view = host.view_of(loaded, 0)
        _, entries = await host.history(game_id)
        # The events of seat 0's last command and after, described for seat 0, the bot
        # called by its name.
        batches = list(gamelog.batches(entries))
        mine = [b for b in batches if b.command is not None and not b.command.system
                and b.command.seat == 0]
        after = mine[-1].first_version - 1 if mine else 0
        with naming(["ann", "bot"]):
            want = [game.describe(gamelog.game_event(game, e), 0) for e in entries
                    if e.version > after and e.WhichOneof("body") == "event"]
        assert list(view.happened) == [w for w in want if w][-SAID:]
        if mine:
            assert list(view.happened), "the seat is told its own command's consequences"
        last = batches[-1]
        if last.command is not None and last.command.seat == 1:
            assert view.happened, "the bot's turn is told"
            told += 1
        spectator = host.view_of(loaded, None)
        with naming(["ann", "bot"]):
            told_all = [game.describe(gamelog.game_event(game, e), None) for e in last.entries
                        if e.WhichOneof("body") == "event"]
        assert list(spectator.happened) == [w for w in told_all if w][-SAID:]
        assert not any(re.search(r"\bseat \d", line) for line in spectator.happened), \
            "seats are called by their names"
        legal = game.legal_actions(loaded.state, 0)
        await host.act(game_id, Caller(token=tokens[0]), legal[0], f"c{acted}",
                       loaded.version)
        acted += 1
    assert told > 0


async def test_the_mover_is_told_its_own_command_and_the_end_of_the_game(game: Game) -> None:
    """Whoever makes the last move sees what it caused, the end of the game included, and
    every seat is called by its name."""
    variant = min(playouts.tables(game.name),
                  key=lambda v: len(playouts.play(game, v, 0).commands))
    names = [f"player{i}" for i in range(variant.seats)]
    host = Host(MemoryStore(), {game.name: game})
    made = await host.create(game.name, [Seat(n) for n in names], variant.options)
    rng = Rng.for_test(1)
    for n in range(5000):
        loaded = await host.load(made.game_id)
        if loaded.finished:
            break
        seat = rng.choice(list(game.to_act(loaded.state)))
        command = playouts.policy(game)(loaded.view(seat), loaded.legal(seat), rng)
        await host.act(made.game_id, Caller(token=made.tokens[seat]), command, f"c{n}",
                       loaded.version)
        mover = (await host.load(made.game_id)).view(seat)
        assert mover.happened, f"{game.name}: seat {seat} is told nothing of its own command"
    assert loaded.finished, f"{game.name}: no end in 5000 commands"
    _, entries = await host.history(made.game_id)
    last = [gamelog.game_event(game, e) for e in gamelog.batches(entries)[-1].entries
            if e.WhichOneof("body") == "event"]
    with naming(names):
        end = [said for e in last if (said := game.describe(e, seat))]
    told = list(loaded.view(seat).happened)
    assert end and told[-len(end):] == end, f"{game.name}: the mover is not told the end"
    assert not [line for line in told if re.search(r"\bseat \d", line)]


# ---- logs recorded before seats had presence ----------------------------------------------


# Fields that were `optional` before seats gained presence: old logs hold their zeros.
OPTIONAL_BEFORE = {("Play", "target"), ("Proclaimed", "teammate"),
                   ("DarkSwallowReturned", "position")}


def strip_new_presence(message: Any) -> None:
    """Drop the explicit zeros of seat fields, as a log written before they had presence."""
    for fd, value in message.ListFields():
        if fd.message_type is not None:
            for item in (value if fd.is_repeated else [value]):
                strip_new_presence(item)
        elif fd.has_presence and not fd.is_repeated and value == 0 and \
                fd.containing_oneof is not None and fd.containing_oneof.name == "_" + fd.name \
                and (message.DESCRIPTOR.name, fd.name) not in OPTIONAL_BEFORE:
            message.ClearField(fd.name)


async def test_a_log_recorded_without_seat_presence_still_verifies() -> None:
    game = registry.game("moody_bear")
    host = Host(MemoryStore(), {"moody_bear": game}, ai_dispatch=in_process_ai)
    seats = [Seat(f"b{i}", "ai", "random") for i in range(4)]
    game_id = (await host.create("moody_bear", seats, game.pb.Options())).game_id
    while not (await host.load(game_id)).finished:
        await asyncio.sleep(0)
    _, entries = await host.history(game_id)
    old = []
    stripped = 0
    for entry in entries:
        if entry.WhichOneof("body") == "event":
            event = game.pb.Event.FromString(entry.event)
            strip_new_presence(event)
            raw = event.SerializeToString()
            stripped += raw != entry.event
            entry.event = raw
        old.append(entry)
    assert stripped > 0, "some events held an explicit seat 0"
    gamelog.verify(game, old)


# ---- Eila readable -----------------------------------------------------------------------------


def test_eila_names_what_the_player_holds_and_opens_each_chapter() -> None:
    game = registry.game("eila")
    view = game.view(game.replay(game.setup(game.pb.Options(), [Seat("eila")], Rng(b"e", 0))),
                     0)
    assert view.chapter_title and view.prologue
    later = game.view(game.replay(game.setup(game.pb.Options(first_chapter=1), [Seat("eila")],
                                             Rng(b"e", 0))), 0)
    assert later.chapter_title == "The Crow's Hoard" and later.prologue.startswith("The crow")
    held = 0
    bot = game.bots["greedy"]
    for seed in range(4):
        state = game.replay(game.setup(game.pb.Options(first_chapter=seed % 3),
                                       [Seat("eila")], Rng(b"h-%d" % seed, 0)))
        for step in range(300):
            if game.outcome(state) is not None:
                break
            view = game.view(state, 0)
            for ids, cards in ((view.items, view.item_cards),
                               (view.supports, view.support_cards),
                               (view.habits, view.habit_cards)):
                assert [c.id for c in cards] == list(ids)
                for card in cards:
                    assert card.title and card.title != card.id and card.text, card
                    held += 1
            command = bot(view, game.legal_actions(state, 0), Rng(b"b-%d" % seed, step))
            for e in game.decide(state, 0, command, Rng(b"h-%d" % seed, step + 1)):
                state = game.evolve(state, e)
    assert held > 0, "a campaign holds an item, a support card or a habit"


def test_a_batch_fed_twice_is_told_once() -> None:
    """A read catching a game up can fold the batch that the command appending it feeds too
    (a GetView while an Act waits for the store): the journal keeps each event once."""
    from services.core.happened import Journal, happened

    game = registry.game("bubblee")
    events = game.setup(game.pb.Options(), [Seat("a"), Seat("b")], Rng(b"twice", 0))
    state = game.replay(events)
    seat = game.to_act(state)[0]
    batch = game.decide(state, seat, game.legal_actions(state, seat)[0], Rng(b"twice", 1))
    entries = [gamelog.apb.LogEntry(version=i + 1, event=e.SerializeToString())
               for i, e in enumerate([*events, *batch])]
    entries[len(events)].command.seat = seat  # the command's batch starts here
    journal = Journal(game)
    journal.feed_all(entries)
    once = list(journal.noted)
    journal.feed_all(entries[len(events):])  # the same batch again
    journal.feed_all(entries)
    assert [n.version for n in journal.noted] == [n.version for n in once]
    told = happened(game.describe, list(journal.noted), None, len(entries))
    assert told and len(told) == len(
        [e for e in batch if game.describe(e, None)])
