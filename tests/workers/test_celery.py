"""AI turns and simulations through real `arbiter workers ai` and `arbiter workers sim`
processes, on each broker: RabbitMQ (a vhost of its own, results over rpc://) and Redis
(database 1 of the test Redis, results in the same database); the event store is database 0.
Not eager mode: tasks cross the broker to separate worker processes, and each worker's
/metrics is scraped for what its pool processes measured.

Each kind of worker starts once per broker (pytest groups the tests by the module's broker).
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from arbiter.v1 import arbiter_pb2 as apb
from arbiter.v1 import arbiter_pb2_grpc as apb_grpc

from services.core import log as gamelog
from services.core.decider import Seat
from services.core.host import Caller, Host
from services.core.server import Config
from services.process import build
from services.workers.celery_app import make_app, same_database
from services.workers.simulate import Plan, run
from tests.conftest import REDIS_URL, needs_redis
from tests.workers.brokers import arbiter_workers, broker_url, sample, scrape
from tests.workers.conftest import TOY, redis_db_url

pytestmark = [needs_redis, pytest.mark.slow]
os.environ.setdefault("ARBITER_EXTRA_GAMES", "toy=services.toy")


@dataclass
class Deployment:
    broker: str  # redis or rabbitmq
    url: str
    ai_metrics: str  # host:port of each worker's /metrics
    sim_metrics: str


@pytest.fixture(scope="module", params=["redis", "rabbitmq"])
def deployment(request: pytest.FixtureRequest) -> Iterator[Deployment]:
    if not REDIS_URL:
        pytest.skip("needs ARBITER_TEST_REDIS_URL")
    # AI turns need no result backend: the ai workers get one that could not work.
    no_backend = {"ai": {"ARBITER_RESULT_BACKEND": "nowhere://"}}
    with broker_url(request.param) as url, \
            arbiter_workers(url, "ai", "sim", env=no_backend) as (ai, sim):
        yield Deployment(request.param, url, ai, sim)


@pytest.fixture(autouse=True)
def no_result_backend_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests run on each broker's default result backend."""
    monkeypatch.delenv("ARBITER_RESULT_BACKEND", raising=False)


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


async def wait_for(condition, timeout: float = 30) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def test_an_ai_game_is_played_to_the_end_by_the_ai_workers(
        deployment: Deployment) -> None:
    from services.core.redis_store import RedisStore
    from services.workers.tasks import celery_dispatch

    before = scrape(deployment.ai_metrics)
    store = RedisStore(REDIS_URL)
    host = Host(store, {"toy": TOY}, ai_dispatch=celery_dispatch(deployment.url))
    made = await host.create(
        "toy", [Seat("a", "ai", "perfect"), Seat("b", "ai", "random")], TOY.pb.Options(pile=12))
    game_id, tokens = made.game_id, made.tokens
    assert tokens == {}
    await wait_finished(host, game_id)
    entries = gamelog.decode(await store.read(game_id))
    verified = gamelog.verify(TOY, entries)
    assert verified.finished
    commands = [e.command for e in entries if e.HasField("command")]
    assert commands and all(c.command_id.startswith(f"ai:{game_id}:") for c in commands)
    await store.close()

    # The ai worker's /metrics, summed over its pool processes, has every bot turn: the bot's
    # thinking time and the timings of the command it sent, as the server has for clients'.
    after = scrape(deployment.ai_metrics)

    def counted(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    def last_task_counted() -> bool:  # the game ends with the last append; the task after it
        nonlocal after
        after = scrape(deployment.ai_metrics)
        return counted("arbiter_ai_tasks_total", result="played") >= len(commands)

    await wait_for(last_task_counted)
    assert counted("arbiter_ai_turn_seconds_count", game="toy") == len(commands)
    assert counted("arbiter_ai_tasks_total", result="played") == len(commands)
    assert counted("arbiter_command_seconds_count", game="toy", command="take",
                   outcome="ok") == len(commands)
    for name in ("arbiter_decide_seconds_count", "arbiter_evolve_seconds_count",
                 "arbiter_append_seconds_count"):
        assert counted(name, game="toy") == len(commands), name


async def test_a_human_plays_against_an_ai_seat_on_the_ai_workers(
        deployment: Deployment) -> None:
    from services.core.redis_store import RedisStore
    from services.workers.tasks import celery_dispatch

    store = RedisStore(REDIS_URL)
    # What the server does when a broker is set.
    host = Host(store, {"toy": TOY}, ai_dispatch=celery_dispatch(deployment.url))
    made = await host.create(
        "toy", [Seat("me"), Seat("bot", "ai", "perfect")], TOY.pb.Options(pile=10))
    game_id, tokens = made.game_id, made.tokens
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


async def test_a_redelivered_ai_turn_changes_nothing(deployment: Deployment) -> None:
    from services.core.redis_store import RedisStore

    store = RedisStore(REDIS_URL)
    host = Host(store, {"toy": TOY})
    for _ in range(30):  # (no dispatch here) a deal where the AI seat moves first
        made = await host.create(
            "toy", [Seat("a", "ai", "perfect"), Seat("b")], TOY.pb.Options(pile=9))
        game_id, version = made.game_id, made.version
        if TOY.to_act((await host.load(game_id)).state) == [0]:
            break
    before = scrape(deployment.ai_metrics)
    with make_app(deployment.url, results=False) as sender:
        for _ in range(2):
            sender.send_task("arbiter.ai_turn", args=[game_id, version, 0], queue="ai",
                             ignore_result=True)

    def ran(result: str) -> float:
        return (sample(scrape(deployment.ai_metrics), "arbiter_ai_tasks_total", result=result)
                - sample(before, "arbiter_ai_tasks_total", result=result))

    await wait_for(lambda: ran("played") + ran("nothing_to_do") == 2)
    # Both deliveries may run at once on the two pool processes: whichever comes second finds
    # the command id applied (and answers with its first result) or the game moved on.
    assert ran("played") >= 1
    assert await store.version(game_id) == version + 1
    commands = [e.command.command_id for e in gamelog.decode(await store.read(game_id))
                if e.HasField("command")]
    assert commands == [f"ai:{game_id}:{version}:0"]
    await store.close()


def test_a_simulation_on_the_sim_workers_gives_the_same_report_as_in_process(
        deployment: Deployment) -> None:
    before = sample(scrape(deployment.sim_metrics), "arbiter_simulation_games_total",
                    game="toy")
    plan = Plan("toy", 300, ["perfect", "random"], seed="celery", workers=2)
    seen: list[int] = []
    remote = run(plan, progress=lambda done, total: seen.append(done),
                 broker_url=deployment.url)
    local = run(Plan("toy", 300, ["perfect", "random"], seed="celery"))
    assert seen[-1] == 300 and seen == sorted(seen)
    remote.pop("timing")
    local.pop("timing")
    assert remote == local
    after = sample(scrape(deployment.sim_metrics), "arbiter_simulation_games_total", game="toy")
    assert after - before == 300  # every game counted once, in whichever pool process


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_simulate_over_grpc_runs_on_the_sim_workers(deployment: Deployment) -> None:
    from services.core.redis_store import RedisStore

    store = RedisStore(REDIS_URL)
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", redis_url=REDIS_URL,
                    broker_url=deployment.url)
    process = build(config, {"toy": TOY}, store)
    server, port = process.server, process.port
    await server.start()
    before = scrape(deployment.sim_metrics)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = apb_grpc.ArbiterStub(channel)
            # Two at once: with a broker the server does not run them one at a time.
            replies = await asyncio.gather(*[stub.Simulate(apb.SimulateRequest(
                game="toy", games=120, bots=["perfect", "random"], seed=seed, workers=2),
                timeout=60) for seed in ("g1", "g2")])
    finally:
        await server.stop(None)
        await store.close()
    for seed, reply in zip(("g1", "g2"), replies, strict=True):
        local = run(Plan("toy", 120, ["perfect", "random"], seed=seed))
        assert [b.wins for b in reply.bots] == [b["wins"] for b in local["bots"]]
    after = scrape(deployment.sim_metrics)
    played = (sample(after, "arbiter_simulation_games_total", game="toy")
              - sample(before, "arbiter_simulation_games_total", game="toy"))
    timed = (sample(after, "arbiter_simulation_game_seconds_count", game="toy")
             - sample(before, "arbiter_simulation_game_seconds_count", game="toy"))
    assert played == timed == 240
