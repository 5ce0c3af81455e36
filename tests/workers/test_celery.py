"""AI turns and simulations through a real Celery worker process and a real broker.

The broker is database 1 of the test Redis; the event store is database 0. Not eager mode:
tasks cross the broker to a separate `celery worker` process.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from services.core import log as gamelog
from services.core.decider import Seat
from services.core.host import Caller, Host
from services.workers.celery_app import same_database
from services.workers.simulate import Plan, run
from tests.conftest import REDIS_URL, needs_redis
from tests.workers.conftest import ROOT, TOY, redis_db_url

pytestmark = [needs_redis, pytest.mark.slow]


def worker_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": ROOT, "ARBITER_REDIS_URL": REDIS_URL,
            "ARBITER_BROKER_URL": redis_db_url(1),
            "ARBITER_EXTRA_GAMES": "toy=tests.workers.toygame"}


@pytest.fixture(scope="module")
def celery_worker() -> Iterator[subprocess.Popen[bytes]]:
    if not REDIS_URL:
        pytest.skip("needs ARBITER_TEST_REDIS_URL")
    import redis

    redis.Redis.from_url(redis_db_url(1)).flushdb()  # no tasks left from an earlier run
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "services.workers.celery_app", "worker",
         "-Q", "ai,sim", "-c", "2", "--prefetch-multiplier", "1", "-l", "warning",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", "test@%h"],
        cwd=ROOT, env=worker_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    yield proc
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_the_broker_and_the_event_store_are_different_databases() -> None:
    assert not same_database(redis_db_url(1), REDIS_URL)
    assert same_database("redis://h:6379/0", "redis://h/0")
    assert same_database("redis://h:6379", "redis://h:6379/0")


async def wait_finished(host: Host, game_id: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (await host.store.meta(game_id)).get("status") == "finished":
            return
        await asyncio.sleep(0.05)
    version = await host.store.version(game_id)
    raise AssertionError(f"{game_id} did not finish: at version {version}")


async def test_an_ai_game_is_played_to_the_end_by_a_celery_worker(
        celery_worker: subprocess.Popen[bytes]) -> None:
    from services.core.redis_store import RedisStore
    from services.workers.tasks import celery_dispatch

    store = RedisStore(REDIS_URL)
    host = Host(store, {"toy": TOY})
    host.ai_dispatch = celery_dispatch(redis_db_url(1))
    game_id, tokens, _, _ = await host.create(
        "toy", [Seat("a", "ai", "perfect"), Seat("b", "ai", "random")], TOY.pb.Options(pile=12))
    assert tokens == {}
    await wait_finished(host, game_id)
    entries = gamelog.decode(await store.read(game_id))
    verified = gamelog.verify(TOY, entries)
    assert verified.finished
    commands = [e.command for e in entries if e.HasField("command")]
    assert commands and all(c.command_id.startswith(f"ai:{game_id}:") for c in commands)
    assert celery_worker.poll() is None
    await store.close()


async def test_a_human_plays_against_an_ai_seat_on_celery(
        celery_worker: subprocess.Popen[bytes]) -> None:
    from services.core.redis_store import RedisStore
    from services.workers.runtime import attach_workers

    store = RedisStore(REDIS_URL)
    host = Host(store, {"toy": TOY})
    attach_workers(host, redis_db_url(1))  # what the server does when a broker is set
    game_id, tokens, _, _ = await host.create(
        "toy", [Seat("me"), Seat("bot", "ai", "perfect")], TOY.pb.Options(pile=10))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        loaded = await host.load(game_id, fresh=True)
        if loaded.finished:
            break
        if 0 in TOY.to_act(loaded.state):
            await host.act(game_id, Caller(token=tokens[0]), TOY.pb.Command(take=1),
                           f"me-{loaded.version}", loaded.version)
        await asyncio.sleep(0.02)
    loaded = await host.load(game_id, fresh=True)
    assert loaded.finished
    seats = {e.command.seat for e in gamelog.decode(await store.read(game_id))
             if e.HasField("command")}
    assert seats == {0, 1}
    await store.close()


async def test_a_redelivered_ai_turn_changes_nothing(
        celery_worker: subprocess.Popen[bytes]) -> None:
    from services.core.redis_store import RedisStore
    from services.workers.celery_app import make_app

    store = RedisStore(REDIS_URL)
    host = Host(store, {"toy": TOY})
    for _ in range(30):  # (no dispatch here) a deal where the AI seat moves first
        game_id, _, _, version = await host.create(
            "toy", [Seat("a", "ai", "perfect"), Seat("b")], TOY.pb.Options(pile=9))
        if TOY.to_act((await host.load(game_id)).state) == [0]:
            break
    sender = make_app(redis_db_url(1))
    first = sender.send_task("arbiter.ai_turn", args=[game_id, version, 0], queue="ai")
    again = sender.send_task("arbiter.ai_turn", args=[game_id, version, 0], queue="ai")
    results = await asyncio.get_running_loop().run_in_executor(
        None, lambda: sorted([first.get(timeout=30), again.get(timeout=30)]))
    # Both deliveries may run at once on two worker processes: whichever comes second finds
    # the command id applied (and answers with its first result) or the game moved on.
    assert True in results
    assert await store.version(game_id) == version + 1
    commands = [e.command.command_id for e in gamelog.decode(await store.read(game_id))
                if e.HasField("command")]
    assert commands == [f"ai:{game_id}:{version}:0"]
    await store.close()


def test_a_simulation_on_celery_workers_gives_the_same_report_as_in_process(
        celery_worker: subprocess.Popen[bytes]) -> None:
    os.environ.setdefault("ARBITER_EXTRA_GAMES", "toy=tests.workers.toygame")
    plan = Plan("toy", 300, ["perfect", "random"], seed="celery", workers=2)
    seen: list[int] = []
    remote = run(plan, progress=lambda done, total: seen.append(done),
                 broker_url=redis_db_url(1))
    local = run(Plan("toy", 300, ["perfect", "random"], seed="celery"))
    assert seen[-1] == 300 and seen == sorted(seen)
    remote.pop("timing")
    local.pop("timing")
    assert remote == local
