"""The workers with every registered game: projections, statistics, snapshots and rebuilds
use only the decider contract, so every game must pass these."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from services import games as registry
from services.cli.main import main
from services.core import log as gamelog
from services.core.decider import Game, Rng, Seat
from services.core.host import Caller, Host
from services.core.store import MemoryStore
from services.workers import gameset
from services.workers.projections import InProcessProjections, rebuild, snapshot_source
from services.workers.readmodel import MemoryReadModel
from services.workers.simulate import Plan, run

MAX_COMMANDS = 80


async def play(host: Host, game: Game, seed: int) -> str:
    seats = [Seat(f"p{i}") for i in range(game.seat_count)]
    game_id = (await host.create(game.name, seats, game.pb.Options())).game_id
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
    game = registry.game(name)
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
        fresh = Host(store, {name: game}, snapshot_source=snapshot_source(rm))
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
    game = registry.game(name)
    bots = ["random"] * game.seat_count
    a = run(Plan(name, 2, bots, seed="every"))
    b = run(Plan(name, 2, bots, seed="every"))
    a.pop("timing")
    b.pop("timing")
    assert a == b and a["games"] == 2


def test_a_game_that_does_not_import_stops_the_workers(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    """A worker left without one of its games would leave that game's AI turns, projections
    and deadlines undone, silently: the workers' game list (and so every worker command)
    fails instead, naming the game, its module and why."""
    (tmp_path / "half_written_game.py").write_text("raise ImportError('no rules yet')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("ARBITER_EXTRA_GAMES", "half=half_written_game")
    with pytest.raises(gameset.BrokenGame, match=r"game half \(half_written_game\) does "
                       r"not import: ImportError\('no rules yet'\)"):
        gameset.all_games()
    with pytest.raises(gameset.BrokenGame, match="half_written_game"):
        main(["simulate", "bubblee", "--games", "1", "--bots", "random,random", "--local"])
    monkeypatch.setenv("ARBITER_EXTRA_GAMES", "nameless=json")
    with pytest.raises(gameset.BrokenGame, match=r"game nameless \(json\).*GAME"):
        gameset.all_games()
    monkeypatch.setenv("ARBITER_EXTRA_GAMES", "")
    assert list(gameset.all_games()) == list(registry.GAME_MODULES)
