"""The workers' benchmarks, merged into `make bench`'s results by `run()`.

    replay      one long game in Redis: rebuilding its read models from the stream (events/s),
                and loading it in a fresh host with and without a snapshot
    simulation  bot-against-bot games per second in this process and on Celery workers

Needs ARBITER_TEST_REDIS_URL (make bench starts a private redis-server); without it only the
in-process figures are measured. The Celery figures start a worker with 2 processes on
database 1 of that Redis (the event store is database 0). About 30 s in all.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

from services.core.decider import Rng, Seat
from services.core.host import Caller, Host
from services.workers import gameset
from services.workers.projections import Projector, snapshot_source
from services.workers.readmodel import RedisReadModel
from services.workers.simulate import Plan
from services.workers.simulate import run as simulate

REDIS_URL = os.environ.get("ARBITER_TEST_REDIS_URL", "")
GAME = os.environ.get("BENCH_WORKERS_GAME", "bubblee")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _db(url: str, db: int) -> str:
    return f"{url.rsplit('/', 1)[0] if url.count('/') > 2 else url}/{db}"


async def _long_game(host: Host, tries: int = 6) -> str:
    """The longest of a few random-bot games, played through the host into the store."""
    game = host.games[GAME]
    best, best_len = "", 0
    for t in range(tries):
        seats = [Seat(f"s{i}", "human") for i in range(game.seat_count)]
        game_id = (await host.create(GAME, seats, game.pb.Options())).game_id
        rng = Rng.for_test(t)
        while True:
            loaded = await host.load(game_id)
            if loaded.finished:
                break
            seat = rng.choice(list(game.to_act(loaded.state)))
            view = host.view_of(loaded, seat)
            command = game.bots["random"](view, game.legal_actions(loaded.state, seat), rng)
            await host.act(game_id, Caller(seat=seat, trusted=True), command, "",
                           loaded.version)
        if loaded.version > best_len:
            best, best_len = game_id, loaded.version
    return best


async def bench_replay() -> dict[str, Any]:
    from services.core.redis_store import RedisStore

    store = RedisStore(REDIS_URL)
    games = {GAME: gameset.game(GAME)}
    host = Host(store, games)
    game_id = await _long_game(host)
    entries = await store.version(game_id)
    prefix = f"arbiter:rm-bench-{uuid.uuid4().hex[:6]}"
    rm = RedisReadModel(store.redis, prefix)
    rebuilds = []
    for _ in range(5):
        await rm.drop()
        t0 = time.perf_counter()
        await Projector(store, rm, games, snapshot_every=0, cache_size=0).project(game_id)
        rebuilds.append(time.perf_counter() - t0)
    await rm.drop()
    every = max(10, entries // 10)
    await Projector(store, rm, games, snapshot_every=every).project(game_id)
    snap = await rm.snapshot(game_id)

    async def load(with_snapshot: bool) -> float:
        fresh = Host(store, games, snapshot_source=snapshot_source(rm) if with_snapshot else None)
        t0 = time.perf_counter()
        await fresh.load(game_id)
        return time.perf_counter() - t0

    full = [await load(False) for _ in range(7)]
    snapped = [await load(True) for _ in range(7)]
    await rm.drop()
    await store.close()
    rebuild_s = statistics.median(rebuilds)
    return {
        "game": GAME, "entries": entries,
        "rebuild_ms": round(1000 * rebuild_s, 2),
        "rebuild_events_per_s": round(entries / rebuild_s),
        "load_full_replay_ms": round(1000 * statistics.median(full), 2),
        "load_snapshot_ms": round(1000 * statistics.median(snapped), 2),
        "snapshot_version": snap.version if snap else 0,
        "tail_after_snapshot": entries - (snap.version if snap else 0),
    }


def bench_simulation_in_process(games: int = 60) -> dict[str, Any]:
    bots = ["greedy", "random"] if GAME == "bubblee" else ["random"] * 2
    report = simulate(Plan(GAME, games, bots, seed="bench"))
    return {"games": games, "bots": bots,
            "games_per_s": report["timing"]["games_per_second"]}


def bench_simulation_celery(games: int = 120, concurrency: int = 2) -> dict[str, Any]:
    import redis

    broker = _db(REDIS_URL, 1)
    redis.Redis.from_url(broker).flushdb()
    env = {**os.environ, "ARBITER_BROKER_URL": broker, "ARBITER_REDIS_URL": REDIS_URL,
           "PYTHONPATH": ROOT}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "services.workers.celery_app", "worker",
         "-Q", "sim", "-c", str(concurrency), "--prefetch-multiplier", "1", "-l", "warning",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", "bench@%h"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bots = ["greedy", "random"] if GAME == "bubblee" else ["random"] * 2
    try:
        simulate(Plan(GAME, 2, bots, seed="warm-up", workers=concurrency), broker_url=broker)
        report = simulate(Plan(GAME, games, bots, seed="bench", workers=concurrency),
                          broker_url=broker)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
    return {"games": games, "bots": bots, "worker_processes": concurrency,
            "games_per_s": report["timing"]["games_per_second"]}


def run() -> dict[str, Any]:
    out: dict[str, Any] = {"simulation_in_process": bench_simulation_in_process()}
    if not REDIS_URL:
        out["note"] = "no ARBITER_TEST_REDIS_URL: replay and Celery figures not measured"
        return out
    out["replay"] = asyncio.run(bench_replay())
    out["simulation_celery"] = bench_simulation_celery()
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
