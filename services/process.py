"""The server process: every configured game on one gRPC port, plus /metrics and HTTP.

The composition root: the one place that knows both core and the workers. It makes the
store, the read model, the games' tables, the host (given every collaborator it needs) and the
workers, and puts the gRPC services in front of them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2

from services.core import grpc_api, guard, offload
from services.core import server as parts
from services.core.decider import Game
from services.core.host import Host
from services.core.live import Tables
from services.core.offload import CpuPool
from services.core.startup import CannotStart
from services.core.store import Store, StoreOnRedis, StoreUnavailable
from services.core.streams import StreamLimits, StreamSlots
from services.workers import gameset
from services.workers.grpc_sim import Limits, simulate_handler
from services.workers.projections import snapshot_source
from services.workers.runtime import Workers, read_model_of

log = logging.getLogger("arbiter")


@dataclass
class Process:
    """A server process as `build` made it, not started."""

    server: grpc.aio.Server
    host: Host
    tables: Tables  # the games held, and the Watch and Play streams following them
    workers: Workers  # read models, snapshots, projections, deadlines
    port: int  # the gRPC port bound
    http: parts.HttpTarget | None  # where the HTTP gateway calls the gRPC server; None: no HTTP


_background: set[asyncio.Task[Any]] = set()


REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"


def serve_reflection(names: list[str], server: grpc.aio.Server) -> None:
    """Reflection as v1alpha and v1. grpcio-reflection implements v1alpha only; v1's messages
    are v1alpha's, field for field, under another package, so the same servicer with the same
    (de)serializers answers v1 too (tools such as grpcurl ask v1 first)."""
    reflection.enable_server_reflection(names, server)
    servicer = reflection.aio.ReflectionServicer(names)
    info = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        REFLECTION_V1, {"ServerReflectionInfo": info}),))


def build(config: parts.Config, games: dict[str, Game], store: Store | None = None,
          health_servicer: health.aio.HealthServicer | None = None) -> Process:
    """A server with every game's service, arbiter.v1, health and reflection; not started."""
    credentials = parts.server_credentials(config)
    store = store or parts.open_store(config)
    rm = read_model_of(store)
    snapshots = snapshot_source(rm)
    tables = Tables(store, games, snapshots, config.stream_behind)
    if config.broker_url:  # AI turns to Celery
        from services.workers.tasks import celery_dispatch

        ai_dispatch = celery_dispatch(config.broker_url)
    else:
        ai_dispatch = parts.in_process_ai
    host = Host(store, games, config.admin_token, ai_dispatch=ai_dispatch,
                tables=tables,
                cpu=CpuPool(config.cpu_processes, config.cpu_queue, lookup=gameset.game),
                lobby_seconds=config.lobby_seconds)
    workers = Workers(host, rm)
    # grpc's own limit is a backstop; ours answers first, with a reason.
    server = grpc.aio.server(
        maximum_concurrent_rpcs=config.max_concurrent_rpcs * 2 + config.max_watches
        + config.max_plays,
        options=parts.grpc_options(config))
    admission = admission_of(config, store)
    in_flight = grpc_api.InFlight(config.max_concurrent_rpcs, admission=admission,
                                  per_client=config.calls_per_client)
    streams = StreamSlots(StreamLimits(config.max_plays, config.max_watches,
                                       config.streams_per_client, config.watches_per_game,
                                       config.streams_per_seat, config.client_watches_per_game))
    names = []
    for game in games.values():
        name, handler = grpc_api.game_service(host, game, in_flight, streams)
        server.add_generic_rpc_handlers((handler,))
        names.append(name)

    # ListGames reads the projections' read model.
    name, handler = grpc_api.arbiter_service(host, workers.list_games, in_flight)
    server.add_generic_rpc_handlers((handler,))
    server.add_generic_rpc_handlers((simulate_handler(host, in_flight, config.broker_url, Limits(
        config.simulate_max_games, config.simulate_at_once, config.simulate_per_client,
        config.simulate_processes)),))
    names.append(name)
    if health_servicer is None:
        health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    for n in ["", parts.LIVENESS, parts.READINESS, *names]:
        asyncio.get_event_loop().create_task(
            health_servicer.set(n, health_pb2.HealthCheckResponse.SERVING))
    if hasattr(store, "ping"):  # liveness never follows the store
        watcher = asyncio.get_event_loop().create_task(parts.watch_store(
            store, health_servicer, ["", parts.READINESS, *names], config.health_seconds))
        _background.add(watcher)
        watcher.add_done_callback(_background.discard)
    http = None
    if config.http_addr:
        # The HTTP gateway calls this server through a socket only this user can open.
        folder = parts.private_socket_folder()
        http = parts.HttpTarget(f"unix:{os.path.join(folder, 'grpc.sock')}",
                          [*names, health.SERVICE_NAME], folder)
        server.add_insecure_port(http.address)
        # gRPC names every socket peer "unix:": the gateway's header is believed only when
        # the gateway is the one socket clients of this server can reach it through.
        if not config.grpc_addr.startswith("unix:"):
            admission.gateway = http.address
    names += [health.SERVICE_NAME, reflection.SERVICE_NAME]
    serve_reflection(names, server)
    hint = "" if config.reuse_port else " (ARBITER_GRPC_REUSE_PORT=1 shares a port on purpose)"
    port = parts.listen(server, config.grpc_addr, credentials, hint)
    return Process(server, host, tables, workers, port, http)


def admission_of(config: parts.Config, store: Store) -> grpc_api.Admission:
    """The per-client limits: in Redis when the store is Redis (one budget per client for
    every replica), else in this process."""
    redis = (store.workers_redis() if config.shared_limits and isinstance(store, StoreOnRedis)
             else None)
    try:
        trusted = guard.networks(config.trusted_proxies)
    except ValueError as e:
        raise parts.ConfigError(str(e)) from None
    return grpc_api.Admission(
        guard.limit("creations", config.rate_burst, config.rate_per_second, redis),
        config.admin_token,
        guard.limit("commands", config.command_burst, config.command_rate, redis,
                    config.command_queue_seconds),
        guard.limit("seat_commands", config.seat_command_burst, config.seat_command_rate,
                    redis, config.command_queue_seconds),
        trusted)


async def shutdown(process: Process, grace: float = 5.0) -> None:
    """End every Watch and Play stream with OK, then stop the server."""
    await process.tables.close()
    await process.server.stop(grace)


async def serve(config: parts.Config, games: dict[str, Game]) -> int:
    """Run until terminated (0); a ConfigError (a sentence) before anything is served; 1 when
    the store cannot be reached at start."""
    parts.check_admin_token(config.admin_token, config.grpc_addr)
    if config.http_addr:
        parts.check_admin_token(config.admin_token, config.http_addr, "ARBITER_HTTP_ADDR")
    if config.broker_url:  # a broker that cannot work stops the server here, with a reason
        from services.workers.celery_app import check, result_backend

        if not config.redis_url:
            raise CannotStart(
                "ARBITER_BROKER_URL needs ARBITER_REDIS_URL: the ai workers play in the event "
                "store, and the embedded store lives inside this server (unset the broker to "
                "play AI turns in process)")
        check(config.broker_url, config.redis_url, result_backend(config.broker_url))
    # From here on a SIGTERM (a rolling update) or Ctrl-C stops the server cleanly, even one
    # that arrives while it starts (it stops once started).
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    servicer = health.aio.HealthServicer()
    try:
        process = build(config, games, health_servicer=servicer)
    except StoreUnavailable as e:
        log.error("%s", e)
        return 1
    probes = parts.health_only_server(config, servicer) if config.health_addr else None
    parts.start_metrics(config.metrics_addr)
    if config.cpu_processes > 0:  # started now, so that the first VerifyLog does not wait
        offload.process_pool(config.cpu_processes, warm=gameset.all_games)
    await process.server.start()
    http = await parts.start_http(config, process.http)
    if probes:
        await probes.start()
    await process.workers.start()
    log.info("arbiter serving %s on %s (%s; metrics on %s, store: %s)", ", ".join(games),
             config.grpc_addr, "TLS" if config.tls_cert else "plaintext", config.metrics_addr,
             "redis" if config.redis_url else "embedded")
    if http:
        log.info("HTTP on %s: Connect, gRPC-Web, and the console at http://%s/",
                 config.http_addr, config.http_addr)
    try:
        await stopping.wait()
        log.info("stopping: calls in progress have %s s to finish", parts.SHUTDOWN_GRACE_S)
        if probes:
            await probes.stop(None)
        # Streams end with OK (clients reopen from their version elsewhere), not a reset.
        await shutdown(process, parts.SHUTDOWN_GRACE_S)
        if http:
            await http.stop()
    finally:
        await process.workers.stop()
        await process.host.store.close()
    log.info("arbiter stopped")
    return 0
