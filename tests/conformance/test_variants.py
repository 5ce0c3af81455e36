"""Every game's option variants (Game.variants), played to the end, and every version of those
games viewed as each seat and as a spectator: directly, and through the host's Watch and
Replay. A view that cannot be built at some version (a state between two events of one
batch) answers INTERNAL to whoever watches or replays the game there."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.core import log as gamelog
from services.core.decider import Game, Rng, Seat, Variant
from services.core.host import Host
from services.core.server import in_process_ai
from services.core.store import MemoryStore
from tests.conformance import suite
from tests.conformance.playouts import decide_legal, tables
from tests.conformance.test_conformance import (
    check_no_leak_in_feed,
    check_no_leak_in_opening,
    check_no_leak_in_views,
)

SEEDS = range(3)
MAX_COMMANDS = 20_000
REPLAYS = 40


TABLES = [(name, variant) for name in suite.NAMES for variant in tables(name)]
IDS = [f"{name}: {variant.name}" for name, variant in TABLES]
# The variants of games that hide something (the default tables have their own leak tests).
HIDDEN = [(n, v) for n, v in TABLES if v.name != "default" and suite.game(n).redeal]
HIDDEN_IDS = [f"{name}: {variant.name}" for name, variant in HIDDEN]


def seats(variant: Variant, kind: str = "human") -> list[Seat]:
    return [Seat(f"p{i}", kind, "random" if kind == "ai" else "")
            for i in range(variant.seats)]


def every_viewer(variant: Variant) -> list[int | None]:
    return [None, *range(variant.seats)]


def test_every_game_supplies_variants_and_a_playout() -> None:
    for game in suite.all_games():
        assert game.variants is not None and game.playout is not None, game.name
    for name, variant in TABLES:
        game = suite.game(name)
        assert game.min_seats <= variant.seats <= game.max_seats, (name, variant.name)
        game.setup(variant.options, seats(variant), Rng(b"variant", 0))


def test_a_table_size_is_the_number_of_seats_dealt() -> None:
    """A game that tells its table size (Game.table_size: a search level's depth may depend on
    it) tells the number of seats its setup was given, at every table it plays."""
    for name, variant in TABLES:
        game = suite.game(name)
        if game.table_size is None:
            continue
        state = game.replay(game.setup(variant.options, seats(variant), Rng(b"size", 0)))
        assert game.table_size(state) == variant.seats, (name, variant.name)


@pytest.mark.parametrize("name,variant", TABLES, ids=IDS)
def test_every_version_of_every_variant_can_be_viewed(name: str, variant: Variant) -> None:
    """Random legal play to the end; after every event (not only every command), each seat's
    and a spectator's view, each acting seat's legal commands and each seat's redaction of the
    event can be built; replaying the log gives the final state."""
    game = suite.game(name)
    for seed in SEEDS:
        rng = Rng.for_test(seed)
        events = game.setup(variant.options, seats(variant), Rng(b"variant-%d" % seed, 0))
        state: Any = None
        for event in events:
            state = game.fold(state, event)
            for viewer in every_viewer(variant):
                game.view(state, viewer)
        version = len(events)
        for _ in range(MAX_COMMANDS):
            if game.outcome(state) is not None:
                break
            acting = list(game.to_act(state))
            assert acting, f"version {version}: nobody may act but the game is not over"
            for seat in acting:
                assert game.legal_actions(state, seat), f"seat {seat} must act but may not"
            seat = rng.choice(acting)
            command = rng.choice(game.legal_actions(state, seat))
            new = decide_legal(game, state, seat, command, Rng(b"variant-%d" % seed, version),
                               f"{variant.name}, seed {seed}, version {version}")
            for event in new:
                state = game.evolve(state, event)
                for viewer in every_viewer(variant):
                    game.view(state, viewer)
                    game.redact(event, viewer)
            events += new
            version += len(new)
        else:
            pytest.fail(f"seed {seed}: no end after {MAX_COMMANDS} commands")
        assert game.replay(events) == state


async def finished(game: Game, variant: Variant) -> tuple[Host, str]:
    host = Host(MemoryStore(), {game.name: game}, admin_token="admin",
                ai_dispatch=in_process_ai)
    game_id = (await host.create(game.name, seats(variant, "ai"), variant.options)).game_id
    for _ in range(MAX_COMMANDS):
        if (await host.load(game_id)).finished:
            return host, game_id
        await asyncio.sleep(0)
    raise AssertionError("the AI seats did not finish the game")


@pytest.mark.parametrize("name,variant", TABLES, ids=IDS)
async def test_watch_and_replay_answer_at_every_version(name: str, variant: Variant) -> None:
    """A finished game of the variant through the host: Watch from the start as each seat and
    as a spectator yields a view at every version, and Replay answers at the versions inside
    batches and others (a seeded sample in a long game)."""
    game = suite.game(name)
    host, game_id = await finished(game, variant)
    loaded, entries = await host.history(game_id)
    hub = host.tables
    for viewer in every_viewer(variant):
        # Watch from the start: an update, with its view, for every entry the seat may see.
        sub = await hub.subscribe(loaded, viewer, play=False, after=0)
        updates = [game.pb.Update.FromString(m) for m, _ in await sub.next()]
        hub.unsubscribe(loaded, sub)
        seen = [e.version for e in entries if e.WhichOneof("body") != "event"
                or game.redact(gamelog.game_event(game, e), viewer) is not None]
        assert [u.version for u in updates] == seen
        assert [u.view.version for u in updates] == seen
    # Replay reads the whole log each time: a seeded sample, most of it inside batches (the
    # versions between two events of one command, which no Act reply shows).
    inside = [e.version for e, after in zip(entries, entries[1:], strict=False)
              if not after.batch_size]
    between = [e.version for e in entries if e.version not in set(inside)]
    pick = Rng.for_test(len(entries))
    versions = sorted(pick.shuffled(inside)[:REPLAYS] + pick.shuffled(between)[:REPLAYS // 5])
    for version in versions:
        _, state, at = await host.replay_to(game_id, version)
        for viewer in every_viewer(variant):
            assert host.view_of(loaded, viewer, state, at).version == at


@pytest.mark.parametrize("name,variant", HIDDEN, ids=HIDDEN_IDS)
def test_no_leak_in_any_variant(name: str, variant: Variant) -> None:
    """The conformance leak tests (test_conformance.py) on each variant: the opening batch
    shows no seat another's secret, and re-dealing what a seat cannot see changes neither its
    view, a spectator's, its legal commands, the rules'
    answers to it, nor the events it is shown. Checked every 3 commands, so that short steps
    (the Snake answers before resolution) are met."""
    game = suite.game(name)
    check_no_leak_in_opening(game, variant.options, variant.seats, seeds=2)
    check_no_leak_in_views(game, variant.options, variant.seats, every=3)
    check_no_leak_in_feed(game, variant.options, variant.seats, seeds=2)
