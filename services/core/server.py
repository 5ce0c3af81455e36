"""The server process: every configured game on one gRPC port, plus /metrics.

Configuration comes from the environment (see `Config`); the defaults run everything in one
process with the embedded store, so `make run` needs nothing else.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import weakref
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from services.core import grpc_api, live
from services.core.decider import Game
from services.core.guard import Guard, TokenBuckets
from services.core.host import Host
from services.core.offload import CpuPool
from services.core.store import MemoryStore, Store, StoreUnavailable
from services.workers.grpc_sim import simulate_handler
from services.workers.runtime import attach_workers, workers_of

log = logging.getLogger("arbiter")


@dataclass
class Config:
    grpc_addr: str = "127.0.0.1:50051"
    metrics_addr: str = "127.0.0.1:9464"
    redis_url: str = ""  # empty: the embedded store
    broker_url: str = ""  # empty: AI turns run in process
    admin_token: str = ""
    data_dir: str = "var"  # the embedded store's append-only file lives here
    games: list[str] = field(default_factory=list)  # empty: every game
    max_concurrent_rpcs: int = 2000
    # Watch and Play streams at once. An idle stream holds no store connection: about 30 KB
    # of memory (loadtests/streams.py measured 10,000 on one process, none dropped).
    max_watches: int = 10_000
    health_seconds: float = 1.0  # how often health pings the store (Redis)
    # Per client (peer address, or the admin identity): CreateGame, ImportLog, ForkGame and
    # Simulate draw from a bucket of `rate_burst` calls refilled at `rate_per_second`.
    rate_burst: float = 100
    rate_per_second: float = 5
    # Threads that re-run whole logs and histories (verify, import, export, replay, fork),
    # and how many such calls may wait for one before the next is refused.
    cpu_threads: int = 1
    cpu_queue: int = 16

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Config:
        env = dict(os.environ if env is None else env)
        c = cls()
        c.grpc_addr = env.get("ARBITER_GRPC_ADDR", c.grpc_addr)
        c.metrics_addr = env.get("ARBITER_METRICS_ADDR", c.metrics_addr)
        c.redis_url = env.get("ARBITER_REDIS_URL", "")
        c.broker_url = env.get("ARBITER_BROKER_URL", "")
        c.admin_token = env.get("ARBITER_ADMIN_TOKEN", "")
        c.data_dir = env.get("ARBITER_DATA_DIR", c.data_dir)
        c.games = [g for g in env.get("ARBITER_GAMES", "").split(",") if g]
        c.max_concurrent_rpcs = int(env.get("ARBITER_MAX_CONCURRENT_RPCS", c.max_concurrent_rpcs))
        c.max_watches = int(env.get("ARBITER_MAX_WATCHES", c.max_watches))
        c.rate_burst = float(env.get("ARBITER_RATE_BURST", c.rate_burst))
        c.rate_per_second = float(env.get("ARBITER_RATE_PER_SECOND", c.rate_per_second))
        c.cpu_threads = int(env.get("ARBITER_CPU_THREADS", c.cpu_threads))
        c.cpu_queue = int(env.get("ARBITER_CPU_QUEUE", c.cpu_queue))
        return c


def open_store(config: Config) -> Store:
    if config.redis_url:
        from services.core.redis_store import RedisStore

        return RedisStore(config.redis_url)
    return MemoryStore(os.path.join(config.data_dir, "arbiter.aof") if config.data_dir else None)


def in_process_ai(host: Host, game_id: str, version: int, seat: int) -> None:
    """Play an AI seat's turn on this event loop, right after the reply that led to it."""
    task = asyncio.get_running_loop().create_task(host.play_ai_turn(game_id, version, seat))
    _ai_tasks.add(task)
    task.add_done_callback(_ai_done)


_ai_tasks: set[asyncio.Task[Any]] = set()


def _ai_done(task: asyncio.Task[Any]) -> None:
    _ai_tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("AI turn failed", exc_info=task.exception())


_background: set[asyncio.Task[Any]] = set()


async def watch_store(store: Any, servicer: health.aio.HealthServicer, names: list[str],
                      every: float) -> None:
    """Health follows the store: NOT_SERVING while it does not answer a ping (each ping is
    bounded by the Redis timeout), SERVING again once it does. Ends when the store closes."""
    serving = True
    while not store.closed:
        answers = await store.ping()
        if answers != serving and not store.closed:
            serving = answers
            status = health_pb2.HealthCheckResponse.SERVING if serving else \
                health_pb2.HealthCheckResponse.NOT_SERVING
            for n in names:
                await servicer.set(n, status)
            if serving:
                log.warning("the event store answers again: serving")
            else:
                log.error("the event store does not answer: health is NOT_SERVING")
        await asyncio.sleep(every)


_HUBS: weakref.WeakKeyDictionary[Host, live.Hub] = weakref.WeakKeyDictionary()


def hub_of(host: Host) -> live.Hub:
    """The live hub `build` made for a server's host."""
    return _HUBS[host]


async def shutdown(server: grpc.aio.Server, host: Host, grace: float = 5.0) -> None:
    """End every Watch and Play stream with OK, then stop the server."""
    await _HUBS[host].close()
    await server.stop(grace)


def build(config: Config, games: dict[str, Game], store: Store | None = None
          ) -> tuple[grpc.aio.Server, Host, int]:
    """A server with every game's service, arbiter.v1, health and reflection; not started."""
    host = Host(store or open_store(config), games, config.admin_token)
    hub = live.Hub(host)  # Watch and Play streams
    _HUBS[host] = hub
    host.ai_dispatch = in_process_ai
    host.cpu = CpuPool(config.cpu_threads, config.cpu_queue)
    # Read models, snapshots, projections, deadlines; AI turns to Celery with a broker.
    workers = attach_workers(host, config.broker_url)
    # grpc's own limit is a backstop; ours answers first, with a reason.
    buckets = (TokenBuckets(config.rate_burst, config.rate_per_second)
               if config.rate_burst > 0 and config.rate_per_second > 0 else None)
    server = grpc.aio.server(
        maximum_concurrent_rpcs=config.max_concurrent_rpcs * 2 + config.max_watches,
        interceptors=[Guard(buckets, config.admin_token)])
    in_flight = grpc_api.InFlight(config.max_concurrent_rpcs)
    watching = grpc_api.InFlight(config.max_watches, "Watch and Play streams")
    names = []
    for game in games.values():
        name, handler = grpc_api.game_service(host, hub, game, in_flight, watching)
        server.add_generic_rpc_handlers((handler,))
        names.append(name)

    # ListGames reads the projections' read model.
    name, handler = grpc_api.arbiter_service(host, workers.list_games, in_flight)
    server.add_generic_rpc_handlers((handler,))
    server.add_generic_rpc_handlers((simulate_handler(host, in_flight, config.broker_url),))
    names.append(name)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for n in ["", *names]:
        asyncio.get_event_loop().create_task(
            health_servicer.set(n, health_pb2.HealthCheckResponse.SERVING))
    if hasattr(host.store, "ping"):
        watcher = asyncio.get_event_loop().create_task(
            watch_store(host.store, health_servicer, ["", *names], config.health_seconds))
        _background.add(watcher)
        watcher.add_done_callback(_background.discard)
    names += [health.SERVICE_NAME, reflection.SERVICE_NAME]
    reflection.enable_server_reflection(names, server)
    port = server.add_insecure_port(config.grpc_addr)
    if port == 0:
        raise OSError(f"cannot listen on {config.grpc_addr}")
    return server, host, port


async def serve(config: Config, games: dict[str, Game]) -> int:
    try:
        server, host, port = build(config, games)
    except StoreUnavailable as e:
        log.error("%s", e)
        return 1
    mhost, _, mport = config.metrics_addr.rpartition(":")
    start_http_server(int(mport), addr=mhost or "0.0.0.0")
    await server.start()
    await workers_of(host).start()
    log.info("arbiter serving %s on %s (metrics on %s, store: %s)", ", ".join(games),
             config.grpc_addr, config.metrics_addr, "redis" if config.redis_url else "embedded")
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    try:
        await stopping.wait()
        # Streams end with OK (clients reopen from their version elsewhere), not a reset.
        await shutdown(server, host)
    finally:
        await workers_of(host).stop()
        await host.store.close()
    return 0
