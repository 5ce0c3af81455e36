"""The suite every game passes, parametrised by game (docs/architecture.md, "The shared suite").

Random legal play to the end over many seeds; purity (nothing mutates a state); replay of the
log equals the state; the same seed gives the same game; malformed and illegal commands are
rejected and change nothing; no leak (re-deal what a seat cannot see: its view, its legal
commands and the rules' answers to its commands are unchanged); the last two follow the
game's playout policy (Game.playout), which gets further into a game than random play;
export, import and verify round trip, and a tampered log is caught at its line.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
from typing import Any

import pytest

from services.core import log as gamelog
from services.core.decider import Game, MalformedCommand, Rng, RuleError, Seat
from services.core.host import Caller, Host, StaleVersion
from services.core.server import in_process_ai
from services.core.store import MemoryStore
from services.workers import simulate
from tests.conformance import suite
from tests.conformance.playouts import decide_legal, policy

GAMES = list(suite.NAMES)
MAX_COMMANDS = 20_000
SEEDS = range(12)


def seats_for(game: Game, kind: str = "human") -> list[Seat]:
    return [Seat(f"p{i}", kind, "random" if kind == "ai" else "")
            for i in range(game.seat_count)]


def random_game(game: Game, seed: int, check: bool = False) -> tuple[list[Any], Any]:
    """Play random legal commands to the end; return the events and the final state."""
    rng = Rng.for_test(seed)
    events = game.setup(game.pb.Options(), seats_for(game), Rng(b"seed-%d" % seed, 0))
    state = game.replay(events)
    version = len(events)
    for _ in range(MAX_COMMANDS):
        if game.outcome(state) is not None:
            return events, state
        seats = list(game.to_act(state))
        assert seats, "nobody may act but the game is not over"
        seat = rng.choice(seats)
        legal = game.legal_actions(state, seat)
        assert legal, f"seat {seat} must act but has no legal command"
        command = rng.choice(legal)
        before = copy.deepcopy(state) if check else None
        given = state
        new = decide_legal(game, state, seat, command, Rng(b"seed-%d" % seed, version),
                           f"seed {seed}, version {version}")
        for e in new:
            state = game.evolve(state, e)
        if check:
            assert before is not None
            # Deciding and evolving never change the state they were given: the very object
            # (a change in place), and what the log replays to.
            assert given == before, f"version {version}: decide or evolve changed its state"
            assert game.replay(events) == before
        events += new
        version += len(new)
    raise AssertionError(f"no end after {MAX_COMMANDS} commands")


@pytest.fixture(params=GAMES)
def game(request: pytest.FixtureRequest) -> Game:
    return suite.game(request.param)


def test_random_play_reaches_the_end(game: Game) -> None:
    for seed in SEEDS:
        events, state = random_game(game, seed)
        outcome = game.outcome(state)
        assert outcome is not None
        assert all(0 <= w < game.seat_count for w in outcome.winners)


def test_replaying_the_log_gives_the_state_and_nothing_mutates(game: Game) -> None:
    events, state = random_game(game, 1, check=True)
    assert game.replay(events) == state


def test_the_same_seed_gives_the_same_game(game: Game) -> None:
    a, _ = random_game(game, 7)
    b, _ = random_game(game, 7)
    assert [e.SerializeToString() for e in a] == [e.SerializeToString() for e in b]
    c = game.setup(game.pb.Options(), seats_for(game), Rng(b"another", 0))
    d = game.setup(game.pb.Options(), seats_for(game), Rng(b"another", 0))
    assert c == d


def test_the_platform_fills_the_fields_every_view_has(game: Game) -> None:
    """A game shows its own fields; seat, to_act, outcome and hidden come from Game.view
    alone, so they mean the same in every game."""
    events, _ = random_game(game, 3)
    state = game.start(events[0])
    for k, event in enumerate(events[1:]):
        state = game.evolve(state, event)
        if k % 5 and k != len(events) - 2:
            continue
        outcome = game.outcome(state)
        for seat in [None, *range(game.seat_count)]:
            shown = game.show(state, seat)
            assert not [f.name for f, _ in shown.ListFields()
                        if f.name in ("seat", "to_act", "outcome", "hidden", "version")]
            view = game.view(state, seat)
            assert view.HasField("seat") == (seat is not None) and view.seat == (seat or 0)
            assert list(view.to_act) == list(game.to_act(state))
            assert view.outcome == (outcome.to_pb() if outcome else type(view.outcome)())
    assert outcome is not None and state == game.replay(events)


def test_the_platform_refuses_before_the_rules_run(game: Game) -> None:
    """An empty command, a seat not to act and a finished game are refused by the platform
    (Game.decide_now, the path of the host and of log verification) before the game's decide
    runs: a game needs no copy of these checks."""
    decided: list[Any] = []

    def watched_decide(*args: Any) -> Any:
        decided.append(args)
        return game.decide(*args)  # the rules themselves: watched

    watched = dataclasses.replace(game, decide=watched_decide)
    events = game.setup(game.pb.Options(), seats_for(game), Rng(b"s", 0))
    state = game.replay(events)
    seat = list(game.to_act(state))[0]
    before = copy.deepcopy(state)
    with pytest.raises(MalformedCommand) as empty:
        watched.decide_now(state, seat, game.pb.Command(), Rng(b"s", 1))
    assert empty.value.code == "NO_COMMAND"
    command = game.legal_actions(state, seat)[0]
    for idle in (s for s in range(game.seat_count) if s not in game.to_act(state)):
        with pytest.raises(RuleError) as not_yours:
            watched.decide_now(state, idle, command, Rng(b"s", 1))
        assert not_yours.value.code == "NOT_YOUR_TURN"
    _, over = random_game(game, 2)
    for anyone in [None, *range(game.seat_count)]:
        with pytest.raises(RuleError) as finished:
            watched.decide_now(over, anyone, command, Rng(b"s", 1))
        assert finished.value.code == "GAME_OVER"
    if game.deadlines is None:  # the server has no command to send in such a game
        with pytest.raises(RuleError) as server:
            watched.decide_now(state, None, command, Rng(b"s", 1))
        assert server.value.code == "NOT_YOUR_TURN"
    assert decided == [] and state == before


def test_rejected_commands_change_nothing(game: Game) -> None:
    """Every legal command of one moment, replayed later when illegal, is refused cleanly.
    Games are played until some stale command has been refused (in a game whose old
    commands mostly stay legal, such as taking a counter, that may take a few games)."""
    refused = 0
    for seed in range(STALE_GAMES):
        refused += refuse_stale_commands(game, seed)
        if refused:
            return
    raise AssertionError(f"in {STALE_GAMES} games, no stale command was ever refused")


STALE_GAMES = 10


def refuse_stale_commands(game: Game, seed: int) -> int:
    """One game (seed 0: the suite's first), every command of each moment replayed at the
    next; how many the rules refused (each with a code and a sentence, changing nothing, and
    the same when what the seat cannot see is dealt anew)."""
    rng = Rng.for_test(3 + seed)
    events = game.setup(game.pb.Options(), seats_for(game), Rng(b"s%d" % seed if seed else b"s", 0))
    state = game.replay(events)
    refused = 0
    for step in range(200):
        if game.outcome(state) is not None:
            break
        seat = rng.choice(list(game.to_act(state)))
        legal = game.legal_actions(state, seat)
        command = policy(game)(game.view(state, seat), legal, rng)
        new = game.decide_now(state, seat, command, Rng(b"s", step + 1))
        after = state
        for e in new:
            after = game.evolve(after, e)
        # Try the other commands of the old moment now.
        for stale in legal[:5]:
            for s in game.to_act(after):
                snapshot = copy.deepcopy(after)
                try:
                    game.decide_now(after, s, stale, Rng(b"s", 10_000 + step))
                except RuleError as e:
                    refused += 1
                    assert e.code and e.code.upper() == e.code and e.message
                    for k in range(3 if game.redeal else 0):  # the words tell nothing hidden
                        assert game.redeal is not None
                        other = game.redeal(after, s, Rng(b"refused-%d-%d" % (step, k), s))
                        assert answer_to(game, other, s, stale, 10_000 + step) == (
                            type(e).__name__, e.code, e.message), (
                            f"seat {s} is refused in other words in a world it cannot tell "
                            f"apart: {e.code} {e.message!r}")
                assert after == snapshot
        state = after
    return refused


def answer_to(game: Game, state: Any, seat: int, command: Any, step: int) -> Any:
    """What a seat is told when it sends a command: accepted, or the rule's code and sentence."""
    try:
        game.decide_now(state, seat, command, Rng(b"answer", step))
    except (RuleError, MalformedCommand) as refused:
        return type(refused).__name__, refused.code, refused.message
    return "accepted"


def test_no_leak_redealing_hidden_information_keeps_each_view(game: Game) -> None:
    if game.redeal is None:
        pytest.skip(f"{game.title} hides nothing but randomness to come")
    check_no_leak_in_views(game, game.pb.Options(), game.seat_count)


def check_no_leak_in_views(game: Game, options: Any, players: int, every: int = 7) -> None:
    """Every `every` commands of a random game, each seat's world is re-dealt: its view, a
    spectator's, its legal commands and the rules' answers to it must not change."""
    assert game.redeal is not None
    rng = Rng.for_test(5)
    events = game.setup(options, [Seat(f"p{i}") for i in range(players)], Rng(b"s", 0))
    state = game.replay(events)
    checked = 0
    # Commands legal earlier in the game: sent now, the rules refuse many, and a refusal's
    # sentence must not depend on what the seat cannot see either.
    earlier: dict[bytes, Any] = {}
    for step in range(300):
        if game.outcome(state) is not None:
            break
        for someone in game.to_act(state):
            for command in game.legal_actions(state, someone)[:25]:
                if len(earlier) < 50:
                    earlier.setdefault(command.SerializeToString(deterministic=True), command)
        if step % every == 0:
            for seat in range(players):
                other = game.redeal(state, seat, Rng(b"redeal-%d" % step, seat))
                assert game.view(other, seat) == game.view(state, seat)
                assert game.view(other, None) == game.view(state, None)
                # What the seat may do, and how the rules answer it, cannot depend on what it
                # cannot see: not even for commands that name other seats' hidden things.
                assert game.legal_actions(other, seat) == game.legal_actions(state, seat)
                if seat not in game.to_act(state):
                    continue  # "not your turn", whatever is hidden
                tried = [*game.legal_actions(state, seat), *earlier.values()]
                for someone in range(players):
                    if someone != seat:
                        tried += game.legal_actions(state, someone)[:25]
                        tried += game.legal_actions(other, someone)[:25]
                for command in tried:
                    answer = answer_to(game, state, seat, command, step)
                    assert answer_to(game, other, seat, command, step) == answer, (
                        f"seat {seat} is answered differently in worlds it cannot tell apart")
                checked += 1
        seat = rng.choice(list(game.to_act(state)))
        command = policy(game)(game.view(state, seat), game.legal_actions(state, seat), rng)
        for e in game.decide_now(state, seat, command, Rng(b"s", step + 1)):
            state = game.evolve(state, e)
    assert checked > 0


def test_no_leak_in_the_event_feed(game: Game) -> None:
    """Two worlds that a seat cannot tell apart at the start (everything it cannot see dealt
    anew) receive the same commands. While the seat's views stay equal, so must every event
    it is shown: a redaction that lets hidden information through makes them differ."""
    if game.redeal is None:
        pytest.skip(f"{game.title} hides nothing but randomness to come")
    check_no_leak_in_feed(game, game.pb.Options(), game.seat_count)


def check_no_leak_in_feed(game: Game, options: Any, players: int, seeds: int = 4) -> None:
    assert game.redeal is not None
    compared = 0
    for seat in range(players):
        for seed in range(seeds):
            seats = [Seat(f"p{i}") for i in range(players)]
            events = game.setup(options, seats, Rng(b"feed-%d" % seed, 0))
            real = game.replay(events)
            other = game.redeal(real, seat, Rng(b"other-%d" % seed, seat))
            assert game.view(other, seat) == game.view(real, seat)
            chooser = Rng(b"choose-%d" % seed, seat)
            version = len(events)
            for _ in range(400):
                if game.outcome(real) is not None or game.outcome(other) is not None:
                    break
                actor = chooser.choice(list(game.to_act(real)))
                command = policy(game)(game.view(real, actor), game.legal_actions(real, actor),
                                       chooser)
                rng_version = Rng(b"feed-%d" % seed, version)
                mine = game.decide_now(real, actor, command, rng_version)
                try:
                    theirs = game.decide_now(other, actor, command, Rng(b"feed-%d" % seed, version))
                except RuleError:
                    break  # the worlds part here; the seat saw nothing of why
                for e in mine:
                    real = game.evolve(real, e)
                for e in theirs:
                    other = game.evolve(other, e)
                version += len(mine)
                if game.view(real, seat) != game.view(other, seat):
                    break  # the seat has now legitimately learned something hidden
                shown = [game.redact(e, seat) for e in mine]
                shown_other = [game.redact(e, seat) for e in theirs]
                assert [e for e in shown if e is not None] == [
                    e for e in shown_other if e is not None], (
                    f"seat {seat} is shown different events in worlds it cannot tell apart")
                if game.describe is not None:  # and told the same words
                    told = [game.describe(e, seat) for e in mine]
                    told_other = [game.describe(e, seat) for e in theirs]
                    assert [w for w in told if w] == [w for w in told_other if w], (
                        f"seat {seat} is told different things in worlds it cannot tell apart")
                compared += 1
    assert compared > 0


def test_a_game_that_hides_something_can_be_redealt(game: Game) -> None:
    """The leak tests need `redeal`: a game whose views or events name something hidden from
    a seat (View.hidden, Event.hidden) and has no redeal would skip them all."""
    if game.redeal is not None:
        return
    if game.suite.no_redeal:
        pytest.skip(f"{game.title} has no redeal: {game.suite.no_redeal}")
    events, _ = random_game(game, 2)
    state = game.start(events[0])
    hidden = set()
    for event in events:
        state = game.fold(state, event) if event is not events[0] else state
        for viewer in [None, *range(game.seat_count)]:
            shown = game.redact(event, viewer)
            hidden |= set(shown.hidden) if shown is not None else {"(the whole event)"}
            hidden |= set(game.view(state, viewer).hidden)
    assert not hidden, (f"{game.title} hides {sorted(hidden)[:5]} from some seat but has no "
                        "redeal: the leak tests cannot run on it")


def test_no_leak_in_the_opening_batch(game: Game) -> None:
    """What setup deals: see check_no_leak_in_opening."""
    if game.redeal is None:
        pytest.skip(f"{game.title} hides nothing but randomness to come")
    check_no_leak_in_opening(game, game.pb.Options(), game.seat_count)


def leaves(message: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(path, change) for every value the message holds, in its submessages and lists:
    `change(copy)` sets another value at that path of a copy of the message."""
    out: list[tuple[str, Any]] = []
    for fd, value in message.ListFields():
        path = prefix + fd.name
        if fd.message_type is not None:
            items = list(value) if fd.is_repeated else [value]
            for i, item in enumerate(items):
                at = f"{path}[{i}]." if fd.is_repeated else path + "."
                for sub, change in leaves(item, at):
                    out.append((sub, _within(fd.name, i if fd.is_repeated else None, change)))
        elif fd.is_repeated:
            for i in range(len(value)):
                out.append((f"{path}[{i}]", _changer(fd, i)))
        elif not fd.has_presence and fd.name not in ("version", "hidden"):
            # Fields with presence name seats (whose deal this is): changing one moves a
            # secret from seat to seat rather than changing it.
            out.append((path, _changer(fd, None)))
    return out


def _within(name: str, index: int | None, change: Any) -> Any:
    def apply(message: Any) -> None:
        field = getattr(message, name)
        change(field if index is None else field[index])
    return apply


def _changer(fd: Any, index: int | None) -> Any:
    def apply(message: Any) -> None:
        old = getattr(message, fd.name) if index is None else getattr(message, fd.name)[index]
        if fd.enum_type is not None:
            new = next((v.number for v in fd.enum_type.values if v.number not in (old, 0)), old)
        elif fd.type == fd.TYPE_BOOL:
            new = not old
        elif fd.type in (fd.TYPE_STRING, fd.TYPE_BYTES):
            new = old + (b"?" if fd.type == fd.TYPE_BYTES else "?")
        else:
            new = old + 1
        if index is None:
            setattr(message, fd.name, new)
        else:
            getattr(message, fd.name)[index] = new
    return apply


def check_no_leak_in_opening(game: Game, options: Any, players: int, seeds: int = 3,
                             deals: int = 64) -> None:
    """The opening batch, dealt again, shows a seat nothing of what its view hides:

    - one value changed at a time: a change that some seat's view shows but this seat's does
      not (another seat's secret) must not change what this seat is shown of the batch, nor
      what it is told;
    - dealt anew from `deals` seeds: two deals that leave the seat the same view must show
      it the same batch and tell it the same words (this catches a secret copied into
      another event, which no single change shows).

    (The feed test starts after the opening batch: it deals the world anew from the state
    setup left.)"""
    viewers: list[int | None] = [None, *range(players)]
    seats = [Seat(f"p{i}") for i in range(players)]
    compared = 0
    for seed in range(seeds):
        events = game.setup(options, seats, Rng(b"opening-%d" % seed, 0))
        views = {v: game.view(game.replay(events), v) for v in viewers}
        for k, event in enumerate(events):
            for path, change in leaves(event):
                other = type(event)()
                other.CopyFrom(event)
                change(other)
                try:
                    state = game.replay([*events[:k], other, *events[k + 1:]])
                    changed = {v: game.view(state, v) for v in viewers}
                except Exception:  # noqa: BLE001 - no game the rules can build: no world
                    continue
                seen_by = [v for v in viewers if changed[v] != views[v]]
                for seat in viewers:
                    if not seen_by or seat in seen_by:
                        continue  # nobody's secret, or the seat sees it change
                    compared += 1
                    assert game.redact(other, seat) == game.redact(event, seat), (
                        f"opening event {k} shows {path} to seat {seat}, which only seats "
                        f"{seen_by} may see")
                    if game.describe is not None:
                        assert game.describe(other, seat) == game.describe(event, seat), (
                            f"opening event {k} tells seat {seat} its {path}, which only "
                            f"seats {seen_by} may see")
    first: dict[tuple[int | None, bytes], tuple[int, list[Any], list[Any]]] = {}
    for deal in range(deals):
        events = game.setup(options, seats, Rng(b"deal-%d" % deal, 0))
        state = game.replay(events)
        for seat in viewers:
            shown = [game.redact(e, seat) for e in events]
            told = [game.describe(e, seat) for e in events] if game.describe else []
            key = (seat, game.view(state, seat).SerializeToString(deterministic=True))
            if key not in first:
                first[key] = (deal, shown, told)
                continue
            before, shown_before, told_before = first[key]
            compared += 1
            assert shown == shown_before, (
                f"deals {before} and {deal} leave seat {seat} the same view but show it "
                "different opening events: they tell it something its view hides")
            assert told == told_before, (
                f"deals {before} and {deal} leave seat {seat} the same view but tell it "
                "different things of the opening")
    assert compared > 0, "no value of the opening batch is any seat's secret"


# Fields every View has, which the platform fills (not the game's to hide).
VIEW_COMMON = ("version", "seat", "to_act", "outcome", "happened", "hidden")


def unset_here(mine: Any, theirs: Any, prefix: str = "") -> list[str]:
    """The paths (`players[2].team`) of messages and of fields with presence that are set in
    another viewer's view but not in this one."""
    out = []
    for fd, value in theirs.ListFields():
        path = prefix + fd.name
        if not prefix and fd.name in VIEW_COMMON:
            continue
        if fd.is_repeated:
            here = getattr(mine, fd.name)
            if fd.message_type is not None and len(here) == len(value) and \
                    not fd.message_type.GetOptions().map_entry:
                for i, (a, b) in enumerate(zip(here, value, strict=True)):
                    out += unset_here(a, b, f"{path}[{i}].")
        elif fd.message_type is not None or fd.has_presence:
            if not mine.HasField(fd.name):
                out.append(path)
            elif fd.message_type is not None:
                out += unset_here(getattr(mine, fd.name), value, path + ".")
    return out


def check_views_name_what_they_hide(game: Game, state: Any, players: int) -> int:
    """Whatever another viewer's view holds and this one leaves unset, this one names in
    `hidden` (so a client tells "hidden from you" from "none"); and it names nothing it
    shows. Returns how many hidden paths were checked."""
    viewers: list[int | None] = [None, *range(players)]
    views = {v: game.view(state, v) for v in viewers}
    named = 0
    for seat, view in views.items():
        hidden = set(view.hidden)
        unset = {p for v, other in views.items() if v != seat for p in unset_here(view, other)}
        missing = sorted(unset - hidden)
        assert not missing, (f"the view of seat {seat} leaves {missing} unset but does not "
                             "name them in View.hidden (Game.view_hidden)")
        shown = sorted(p for p in hidden if is_set(view, p))
        assert not shown, f"the view of seat {seat} names {shown} as hidden but shows them"
        named += len(hidden)
    return named


def is_set(view: Any, path: str) -> bool:
    """Whether the view holds a value at `path` (`players[2].team`, `hand`)."""
    message = view
    parts = path.split(".")
    for part in parts:
        name, _, index = part.partition("[")
        fd = message.DESCRIPTOR.fields_by_name.get(name)
        assert fd is not None, f"View.hidden names {path}, which is no field"
        value = getattr(message, name)
        if index:
            if int(index[:-1]) >= len(value):
                return False
            value = value[int(index[:-1])]
        elif fd.is_repeated:
            return len(value) > 0
        elif fd.message_type is not None or fd.has_presence:
            if not message.HasField(name):
                return False
        elif part == parts[-1]:
            return bool(value != fd.default_value)
        message = value
    return True


def test_a_view_names_what_it_hides(game: Game) -> None:
    """In the states of a random game, each view names in `hidden` what it leaves unset that
    another viewer is shown (another seat's secret, a hand a spectator does not see)."""
    events, _ = random_game(game, 4)
    state = game.start(events[0])
    named = check_views_name_what_they_hide(game, state, game.seat_count)
    for k, event in enumerate(events[1:]):
        state = game.evolve(state, event)
        if k % 3 == 0:
            named += check_views_name_what_they_hide(game, state, game.seat_count)
    if game.view_hidden is not None:
        assert named > 0, "view_hidden never names anything"


# ---- through the host: AI seats, export, import, verify ------------------------------------


async def finished_game(game: Game) -> tuple[Host, str]:
    host = Host(MemoryStore(), {game.name: game}, admin_token="admin",
                ai_dispatch=in_process_ai)
    game_id = (await host.create(game.name, seats_for(game, "ai"), game.pb.Options())).game_id
    for _ in range(20_000):
        loaded = await host.load(game_id)
        if loaded.finished:
            return host, game_id
        await asyncio.sleep(0)
    raise AssertionError("the AI seats did not finish the game")


async def test_ai_seats_play_to_the_end_through_the_command_path(game: Game) -> None:
    host, game_id = await finished_game(game)
    _, entries = await host.history(game_id)
    commands = [e.command for e in entries if e.HasField("command")]
    assert commands and all(c.command_id.startswith(f"ai:{game_id}:") for c in commands)


async def test_export_import_verify_round_trip(game: Game) -> None:
    host, game_id = await finished_game(game)
    loaded, entries = await host.history(game_id)
    lines = gamelog.to_json_lines(game, entries)
    assert gamelog.verify(game, gamelog.from_json_lines(game, lines)).finished
    other = Host(MemoryStore(), {game.name: game})
    from services.core.grpc_api import import_lines

    new_id, version = await import_lines(other, lines)
    assert version == len(lines)
    _, imported = await other.history(new_id)
    assert gamelog.to_json_lines(game, imported) == lines


async def test_a_tampered_log_is_caught_at_its_line(game: Game) -> None:
    host, game_id = await finished_game(game)
    _, entries = await host.history(game_id)
    lines = gamelog.to_json_lines(game, entries)
    # Tamper with the first command's event: drop the entry's event and put another there.
    target = next(i for i, line in enumerate(lines) if '"command"' in line)
    row = json.loads(lines[target])
    donor = next(json.loads(line) for line in lines[target + 1:] if '"event"' in line
                 and json.loads(line)["event"] != row.get("event"))
    row["event"] = donor["event"]
    tampered = lines[:target] + [json.dumps(row)] + lines[target + 1:]
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.verify(game, gamelog.from_json_lines(game, tampered))
    assert bad.value.line == target + 1
    # A wrong seed is caught at the first line.
    final = json.loads(lines[-1])
    final["finished"]["seed"] = "00" * 32
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.verify(game, gamelog.from_json_lines(game, lines[:-1] + [json.dumps(final)]))
    assert bad.value.line == 1


async def test_the_host_refuses_a_seat_that_may_not_act(game: Game) -> None:
    host = Host(MemoryStore(), {game.name: game}, admin_token="admin")
    made = await host.create(game.name, seats_for(game),
                             game.pb.Options())
    game_id, tokens, version = made.game_id, made.tokens, made.version
    loaded = await host.load(game_id)
    acting = list(game.to_act(loaded.state))
    idle = [s for s in range(game.seat_count) if s not in acting]
    command = game.legal_actions(loaded.state, acting[0])[0]
    if idle:
        with pytest.raises(RuleError) as e:
            await host.act(game_id, Caller(token=tokens[idle[0]]), command, "c1")
        assert e.value.code == "NOT_YOUR_TURN"
    with pytest.raises(StaleVersion):
        await host.act(game_id, Caller(token=tokens[acting[0]]), command, "c2", version - 1)
    assert (await host.load(game_id)).version == version


def refusing_what_the_platform_refuses(game: Game) -> Game:
    """`game`, whose decide fails the test when it is reached by a case the platform refuses
    (an empty command, a finished game, a seat not to act, a server command to a game with
    no deadlines), and with a bot that sends an empty command."""

    def decide(state: Any, seat: int | None, command: Any, rng: Rng) -> list[Any]:
        assert command.WhichOneof("kind") is not None, "decide saw an empty command"
        assert game.outcome(state) is None, "decide saw a finished game"
        if seat is None:
            assert game.deadlines is not None, "decide saw a server command"
        else:
            assert seat in game.to_act(state), f"decide saw seat {seat}, not to act"
        return game.decide(state, seat, command, rng)

    def blank(view: Any, legal: list[Any], rng: Rng) -> Any:
        return game.pb.Command()

    return dataclasses.replace(game, decide=decide, bots={**game.bots, "blank": blank})


async def test_every_path_to_the_rules_goes_through_the_platform(game: Game) -> None:
    """A client's command, the server's own, an AI seat's turn, log verification and a
    simulation reach a game's decide only through the platform's refusals (Game.refuse)."""
    gated = refusing_what_the_platform_refuses(game)
    host = Host(MemoryStore(), {game.name: gated})
    made = await host.create(game.name, seats_for(game), game.pb.Options())
    game_id, tokens = made.game_id, made.tokens
    state = (await host.load(game_id)).state
    acting = list(game.to_act(state))
    command = game.legal_actions(state, acting[0])[0]
    refusals = [("NO_COMMAND", host.act(game_id, Caller(token=tokens[acting[0]]),
                                        game.pb.Command(), "empty"))]
    refusals += [("NOT_YOUR_TURN", host.act(game_id, Caller(token=tokens[idle]), command, "idle"))
                 for idle in range(game.seat_count) if idle not in acting]
    if game.deadlines is None:
        refusals.append(("NOT_YOUR_TURN", host.system_act(game_id, command, "server")))
    for code, refused in refusals:
        with pytest.raises(RuleError) as e:
            await refused
        assert e.value.code == code
    assert (await host.load(game_id)).version == made.version

    # An AI seat whose bot sends nothing: refused, nothing appended.
    ai_seats = [Seat(f"p{i}", "ai", "blank") for i in range(game.seat_count)]
    made = await host.create(game.name, ai_seats, game.pb.Options())
    seat = list(game.to_act((await host.load(made.game_id)).state))[0]
    assert not await host.play_ai_turn(made.game_id, made.version, seat)
    assert (await host.load(made.game_id)).version == made.version

    # A finished game, over the command path and in its log.
    host, game_id = await finished_game(gated)
    with pytest.raises(RuleError) as over:
        await host.act(game_id, Caller(seat=acting[0], trusted=True), command, "late")
    assert over.value.code == "GAME_OVER"
    with pytest.raises(RuleError) as over:
        await host.system_act(game_id, command, "late-server")
    assert over.value.code == "GAME_OVER"
    _, entries = await host.history(game_id)
    at = next(i for i, e in enumerate(entries) if e.HasField("command"))
    forged = {"the command names no action": lambda c: c.ClearField("command"),
              "seat 99 may not act now": lambda c: setattr(c, "seat", 99)}
    if game.deadlines is None:
        forged["the server sends no command in this game"] = lambda c: setattr(c, "system", True)
    for message, forge in forged.items():
        tampered = copy.deepcopy(entries)
        forge(tampered[at].command)
        with pytest.raises(gamelog.BadLog) as bad:
            gamelog.verify(gated, tampered)
        assert (bad.value.line, bad.value.reason) == (at + 1, f"the command is illegal here: "
                                                             f"{message}")

    # A simulation whose bots send nothing stops at the platform's refusal.
    played = simulate.play_one(gated, ["blank"] * game.seat_count, "gate", 0)
    assert not played["finished"] and "NO_COMMAND" in played["error"]
