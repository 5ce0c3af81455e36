"""The server process: every configured game on one gRPC port, plus /metrics.

Configuration comes from the environment (see `Config`); the defaults run everything in one
process with the embedded store, so `make run` needs nothing else.
"""

from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from services.core import grpc_api
from services.core.decider import Game
from services.core.host import Host
from services.core.metrics import serve_metrics
from services.core.startup import CannotStart
from services.core.store import MemoryStore, Store
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
    max_watches: int = 1000  # each idle Watch waits on its own Redis connection

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


def build(config: Config, games: dict[str, Game], store: Store | None = None
          ) -> tuple[grpc.aio.Server, Host, int]:
    """A server with every game's service, arbiter.v1, health and reflection; not started."""
    host = Host(store or open_store(config), games, config.admin_token)
    host.ai_dispatch = in_process_ai
    # Read models, snapshots, projections, deadlines; AI turns to Celery with a broker.
    workers = attach_workers(host, config.broker_url)
    # grpc's own limit is a backstop; ours answers first, with a reason.
    server = grpc.aio.server(
        maximum_concurrent_rpcs=config.max_concurrent_rpcs * 2 + config.max_watches)
    in_flight = grpc_api.InFlight(config.max_concurrent_rpcs)
    watching = grpc_api.InFlight(config.max_watches, "Watch streams")
    names = []
    for game in games.values():
        name, handler = grpc_api.game_service(host, game, in_flight, watching)
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
    names += [health.SERVICE_NAME, reflection.SERVICE_NAME]
    reflection.enable_server_reflection(names, server)
    port = server.add_insecure_port(config.grpc_addr)
    if port == 0:
        raise OSError(f"cannot listen on {config.grpc_addr}")
    return server, host, port


async def serve(config: Config, games: dict[str, Game]) -> None:
    if config.broker_url:  # a broker that cannot work stops the server here, with a reason
        from services.workers.celery_app import check, result_backend

        if not config.redis_url:
            raise CannotStart(
                "ARBITER_BROKER_URL needs ARBITER_REDIS_URL: the ai workers play in the event "
                "store, and the embedded store lives inside this server (unset the broker to "
                "play AI turns in process)")
        check(config.broker_url, config.redis_url, result_backend(config.broker_url))
    serve_metrics(config.metrics_addr)
    server, host, port = build(config, games)
    await server.start()
    await workers_of(host).start()
    log.info("arbiter serving %s on %s (metrics on %s, store: %s)", ", ".join(games),
             config.grpc_addr, config.metrics_addr, "redis" if config.redis_url else "embedded")
    try:
        await server.wait_for_termination()
    finally:
        await workers_of(host).stop()
        await host.store.close()
