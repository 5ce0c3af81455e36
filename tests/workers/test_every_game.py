"""The workers with every registered game: projections, statistics, snapshots and rebuilds
use only the decider contract, so each game that imports must pass these."""

from __future__ import annotations

import pickle

import pytest

from services import games as registry
from services.core import log as gamelog
from services.core.decider import Game, Rng, Seat
from services.core.host import Caller, Host
from services.core.store import MemoryStore
from services.workers.projections import InProcessProjections, rebuild, snapshot_source
from services.workers.readmodel import MemoryReadModel
from services.workers.simulate import Plan, run

MAX_COMMANDS = 80


def load_game(name: str) -> Game:
    try:
        return registry.game(name)
    except Exception as e:  # noqa: BLE001 - a game still being written
        pytest.skip(f"{name} does not import yet: {e}")


async def play(host: Host, game: Game, seed: int) -> str:
    seats = [Seat(f"p{i}") for i in range(game.seat_count)]
    game_id, _, _, _ = await host.create(game.name, seats, game.pb.Options())
    rng = Rng.for_test(seed)
    for _ in range(MAX_COMMANDS):
        loaded = await host.load(game_id)
        if loaded.finished:
            break
        seat = rng.choice(list(game.to_act(loaded.state)))
        command = rng.choice(game.legal_actions(loaded.state, seat))
        await host.act(game_id, Caller(seat=seat, trusted=True), command, "", loaded.version)
    return game_id


@pytest.mark.parametrize("name", list(registry.GAME_MODULES))
async def test_projections_snapshots_and_rebuild(name: str) -> None:
    game = load_game(name)
    store, rm = MemoryStore(), MemoryReadModel()
    host = Host(store, {name: game})
    projections = InProcessProjections(store, rm, {name: game}, snapshot_every=7)
    ids = []
    for seed in range(2):
        ids.append(await play(host, game, seed))
        await projections.catch_up()
    # Summaries reflect the stream.
    page, after = await rm.page(name, "", "", None, 10)
    assert len(page) == 2 and after is None
    for summary in page:
        assert summary.version == await store.version(summary.game_id)
    assert (await rm.stats(name))["started"] == 2
    # A snapshot load equals a full replay.
    for game_id in ids:
        snap = await rm.snapshot(game_id)
        assert snap is not None, f"{name}: no snapshot (does its state pickle?)"
        fresh = Host(store, {name: game})
        fresh.snapshot_source = snapshot_source(rm)
        a = await fresh.load(game_id)
        b = await Host(store, {name: game}).load(game_id)
        assert a.state == b.state and a.version == b.version
        events = [gamelog.game_event(game, e) for e in gamelog.decode(await store.read(game_id))
                  if e.WhichOneof("body") == "event"]
        assert pickle.loads(pickle.dumps(b.state)) == game.replay(events)
    # A rebuild ends where the incremental build did.
    before = await rm.dump()
    await rebuild(store, rm, {name: game}, snapshot_every=7)
    assert await rm.dump() == before


@pytest.mark.parametrize("name", list(registry.GAME_MODULES))
def test_a_short_simulation_is_deterministic(name: str) -> None:
    game = load_game(name)
    if "random" not in game.bots:
        pytest.skip(f"{name} has no random bot yet")
    bots = ["random"] * game.seat_count
    a = run(Plan(name, 2, bots, seed="every"))
    b = run(Plan(name, 2, bots, seed="every"))
    a.pop("timing")
    b.pop("timing")
    assert a == b and a["games"] == 2
