"""The workers' subcommands: `arbiter replay --rebuild`, `arbiter simulate`, `arbiter stats`."""

from __future__ import annotations

import asyncio
import json
import os
import uuid

import pytest

from services.cli.main import main
from services.core.host import Host
from services.workers import gameset
from services.workers.projections import ProjectionWorker
from services.workers.readmodel import RedisReadModel
from tests.conftest import needs_redis
from tests.workers.conftest import TOY, play_random


@pytest.fixture(autouse=True)
def toy_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARBITER_EXTRA_GAMES", "toy=services.toy")


def test_simulate_prints_win_rates_with_intervals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "toy", "--games", "60", "--bots", "perfect,random",
                 "--seed", "9", "--local"]) == 0
    out, err = capsys.readouterr()
    assert "95% CI" in out and "perfect" in out and "take histogram" in out
    assert "60/60 games" in err  # the progress bar


def test_simulate_json_is_the_same_for_the_same_seed(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    reports = []
    for _ in range(2):
        main(["simulate", "toy", "--games", "40", "--bots", "random,random", "--seed", "1",
              "--json", "--local", "--options", "pile: 21"])
        report = json.loads(capsys.readouterr().out)
        report.pop("timing")
        reports.append(report)
    assert reports[0] == reports[1] and reports[0]["games"] == 40


def test_simulate_plays_a_side_with_a_bot_of_its_own(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """--side solo=passive: the Solo (whichever seat the deal makes it) never acts; the report
    gives each side's share of the games one side won."""
    args = ["simulate", "moody_bear", "--games", "12", "--bots", "keeper,keeper,keeper,keeper,"
            "keeper", "--seed", "3", "--json", "--local"]
    assert main(args + ["--side", "solo=passive"]) == 0
    passive = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    keepers = json.loads(capsys.readouterr().out)
    assert passive["side_bots"] == {"solo": "passive"} and "side_bots" not in keepers
    for report in (passive, keepers):
        sides = report["sides"]
        assert set(sides) == {"red", "blue", "solo", "decided_games", "games"}
        assert sum(sides[s]["won"] for s in ("red", "blue", "solo")) == sides["decided_games"]
    assert passive["events"] != keepers["events"]  # the Solo played otherwise
    assert main([a for a in args if a != "--json"] + ["--side", "solo=passive"]) == 0
    assert "side solo: won" in capsys.readouterr().out
    assert main(args + ["--side", "solo"]) == 2
    assert "SIDE=BOT" in capsys.readouterr().err
    assert main(["simulate", "toy", "--games", "2", "--bots", "perfect,random", "--local",
                 "--side", "solo=passive"]) == 2
    assert "no sides" in capsys.readouterr().err


def test_simulate_refuses_an_unknown_bot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "toy", "--games", "5", "--bots", "perfect,oracle",
                 "--local"]) == 2
    assert "no bot named oracle" in capsys.readouterr().err


def test_replay_rebuild_ends_equal_to_the_incremental_read_models(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], redis_url: str
        ) -> None:
    monkeypatch.setenv("ARBITER_REDIS_URL", redis_url)
    games = gameset.all_games()

    async def incremental() -> dict:
        from services.core.redis_store import RedisStore

        store = RedisStore(redis_url)
        if store.cluster:
            # Database 0 is the only one: start from an empty cluster, since the store
            # contract tests leave raw entries there that no game (and no rebuild) can read.
            await store.redis.flushall(target_nodes=store.redis.PRIMARIES)
        rm = RedisReadModel(store.redis)
        host = Host(store, {"toy": TOY})
        for s in range(3):
            await play_random(host, TOY, seed=s, stop_at=None if s else 5)
        await rm.drop()
        worker = ProjectionWorker(store, rm, games, group=f"cli-{uuid.uuid4().hex[:6]}")
        await worker.catch_up()
        dump = await rm.dump()
        await store.close()
        return dump

    async def current() -> dict:
        rm = RedisReadModel(redis_url)
        dump = await rm.dump()
        await rm.close()
        return dump

    before = asyncio.run(incremental())
    assert before
    assert main(["replay", "--rebuild"]) == 0
    assert "rebuilt the read models of" in capsys.readouterr().out
    assert asyncio.run(current()) == before


def test_stats_of_the_embedded_store(tmp_path: object, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from services.core.store import MemoryStore

    monkeypatch.delenv("ARBITER_REDIS_URL", raising=False)
    monkeypatch.setenv("ARBITER_DATA_DIR", str(tmp_path))

    async def play() -> None:
        store = MemoryStore(os.path.join(str(tmp_path), "arbiter.aof"))
        for s in range(2):
            await play_random(Host(store, {"toy": TOY}), TOY, seed=s)
        await store.close()

    asyncio.run(play())
    assert main(["stats", "toy"]) == 0
    out = capsys.readouterr().out
    assert "2 games started, 2 finished" in out and "\n  take: " in out  # the takes, in words


@needs_redis
def test_the_projection_and_deadline_workers_run_as_processes_and_serve_metrics() -> None:
    """`arbiter workers projections` and `arbiter workers deadlines`, on a database of their
    own: the read model follows the streams, a lost AI turn is rescued, and each process's
    /metrics shows its part (the projection lag; the rescue)."""
    import signal
    import subprocess
    import sys
    import time

    import redis

    from tests.workers.brokers import free_port, sample, scrape
    from tests.workers.conftest import ROOT, redis_db_url

    url = redis_db_url(5)
    redis.Redis.from_url(url).flushdb()
    metrics = {kind: f"127.0.0.1:{free_port()}" for kind in ("projections", "deadlines")}
    procs = {kind: subprocess.Popen(
        [sys.executable, "-m", "services.cli.main", "workers", kind], cwd=ROOT,
        env={**os.environ, "ARBITER_REDIS_URL": url, "PYTHONPATH": ROOT,
             "ARBITER_EXTRA_GAMES": "toy=services.toy", "ARBITER_BROKER_URL": "",
             "ARBITER_METRICS_ADDR": addr, "ARBITER_AI_RESCUE_SECONDS": "1"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for kind, addr in metrics.items()}

    async def play_and_wait() -> tuple[bool, bool]:
        from services.core.decider import Seat
        from services.core.redis_store import RedisStore

        store = RedisStore(url)
        rm = RedisReadModel(store.redis)
        host = Host(store, {"toy": TOY})  # no AI dispatch: the AI turn is lost
        game_id = await play_random(host, TOY, seed=5)
        for _ in range(30):  # a deal where the AI seat moves first
            made = await host.create(
                "toy", [Seat("bot", "ai", "perfect"), Seat("me")], TOY.pb.Options())
            lost, version = made.game_id, made.version
            if TOY.to_act((await host.load(lost)).state) == [0]:
                break
        deadline = time.monotonic() + 30
        projected = rescued = False
        while time.monotonic() < deadline and not (projected and rescued):
            projected = await rm.version(game_id) == await store.version(game_id)
            rescued = await store.version(lost) > version
            await asyncio.sleep(0.05)
        await store.close()
        return projected, rescued

    try:
        assert asyncio.run(play_and_wait()) == (True, True)
        lag = scrape(metrics["projections"])
        assert any(name == "arbiter_projection_lag_entries" for name, _ in lag)
        assert sample(scrape(metrics["deadlines"]), "arbiter_deadlines_total", kind="ai",
                      result="acted") == 1
    finally:
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            proc.wait(timeout=20)
    for kind, proc in procs.items():
        assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else kind
