"""Liveness apart from readiness: "liveness" is SERVING while the process runs, whatever Redis
does; readiness ("", "readiness" and each game's service) stays SERVING while any master of
the store answers, so one hung master of three does not take a server out of service while
the other masters' games are played; it is NOT_SERVING only when no master answers."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import grpc
import pytest
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services import games as registry
from services.core.redis_store import RedisStore, log_key
from services.core.server import LIVENESS, READINESS, Config
from services.process import build
from tests.conftest import CLUSTER_URL, needs_cluster
from tests.platform.test_grpc import GAME, Client, free_port
from tools.redis_servers import RedisServers, redis_server_binary, start_cluster, start_standalone

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGSTOP is POSIX")

TIMEOUT = 0.5  # ARBITER_REDIS_TIMEOUT for these tests
HEALTH_EVERY = 0.2
GAME_SERVICE = "arbiter.bubblee.v1.Game"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


async def statuses(channel: grpc.aio.Channel) -> dict[str, int]:
    stub = health_pb2_grpc.HealthStub(channel)
    return {name: (await stub.Check(health_pb2.HealthCheckRequest(service=name),
                                    timeout=5)).status
            for name in ("", READINESS, GAME_SERVICE, LIVENESS)}


async def settled(channel: grpc.aio.Channel, readiness: int, seconds: float = 10
                  ) -> dict[str, int]:
    """The statuses once readiness is `readiness`, after a few more health rounds (so that a
    change that was coming has come)."""
    deadline = time.monotonic() + seconds
    while (await statuses(channel))[""] != readiness:
        assert time.monotonic() < deadline, f"readiness did not become {readiness}"
        await asyncio.sleep(0.05)
    await asyncio.sleep(2 * TIMEOUT + 5 * HEALTH_EVERY)
    return await statuses(channel)


def pid_of_port(servers: RedisServers, port: int) -> int:
    return servers.procs[servers.ports.index(port)].pid


@needs_cluster
async def test_a_server_on_a_cluster_is_ready_before_its_first_call() -> None:
    """The cluster client learns its masters at its first command: readiness must not wait
    for a call (a load balancer sends none to a server that is not ready)."""
    store = RedisStore(CLUSTER_URL, timeout=TIMEOUT)
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", health_seconds=HEALTH_EVERY)
    process = build(config, {"bubblee": registry.game("bubblee")}, store)
    await process.server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{process.port}") as channel:
            assert set((await settled(channel, SERVING)).values()) == {SERVING}
    finally:
        await process.server.stop(None)
        await store.close()


async def test_one_hung_master_of_three_leaves_the_server_ready_and_alive() -> None:
    redis_server_binary()
    try:
        # No replicas and a long node timeout: the hung master stays the master (no failover).
        cluster = start_cluster(masters=3, replicas=0, node_timeout_ms=120_000)
    except RuntimeError as e:
        pytest.skip(f"no Redis Cluster here: {e}")
    store = RedisStore(cluster.url, timeout=TIMEOUT)
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", health_seconds=HEALTH_EVERY)
    process = build(config, {"bubblee": registry.game("bubblee")}, store)
    await process.server.start()
    stopped: list[int] = []
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{process.port}") as channel:
            client = Client(channel)
            games = [await client.create() for _ in range(3)]

            def master_port(game_id: str) -> int:
                return int(store.redis.get_node_from_key(log_key(game_id)).port)

            hung = master_port(games[0].game_id)
            while all(master_port(g.game_id) == hung for g in games):
                games.append(await client.create())
            served = next(g for g in games if master_port(g.game_id) != hung)
            assert set((await settled(channel, SERVING)).values()) == {SERVING}

            os.kill(pid_of_port(cluster, hung), signal.SIGSTOP)
            stopped.append(pid_of_port(cluster, hung))
            assert set((await settled(channel, SERVING)).values()) == {SERVING}
            # The other masters' games are played meanwhile.
            token, _ = await client.mover(served)
            command = (await client.legal(served.game_id, token)).commands[0]
            acted = await client.act(served.game_id, token, command, "during", served.version)
            assert acted.version > served.version
            with pytest.raises(grpc.aio.AioRpcError) as hung_game:
                await client.call(GAME + "GetView", apb.GetViewRequest(game_id=games[0].game_id),
                                  bpb.View)
            assert hung_game.value.code() == grpc.StatusCode.UNAVAILABLE

            # No master answers: not ready; still alive.
            for port in cluster.ports:
                if port != hung:
                    os.kill(pid_of_port(cluster, port), signal.SIGSTOP)
                    stopped.append(pid_of_port(cluster, port))
            now = await settled(channel, NOT_SERVING)
            assert now == {"": NOT_SERVING, READINESS: NOT_SERVING,
                           GAME_SERVICE: NOT_SERVING, LIVENESS: SERVING}

            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
            stopped.clear()
            assert set((await settled(channel, SERVING)).values()) == {SERVING}
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        await process.server.stop(None)
        await store.close()
        cluster.stop()


async def test_a_hung_redis_makes_the_server_not_ready_but_never_not_alive() -> None:
    redis_server_binary()
    servers = start_standalone()
    pid = servers.procs[0].pid
    store = RedisStore(servers.url, timeout=TIMEOUT)
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", health_seconds=HEALTH_EVERY)
    process = build(config, {"bubblee": registry.game("bubblee")}, store)
    await process.server.start()
    stopped = False
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{process.port}") as channel:
            assert set((await settled(channel, SERVING)).values()) == {SERVING}
            os.kill(pid, signal.SIGSTOP)
            stopped = True
            assert await settled(channel, NOT_SERVING) == {
                "": NOT_SERVING, READINESS: NOT_SERVING, GAME_SERVICE: NOT_SERVING,
                LIVENESS: SERVING}
            os.kill(pid, signal.SIGCONT)
            stopped = False
            assert set((await settled(channel, SERVING)).values()) == {SERVING}
    finally:
        if stopped:
            os.kill(pid, signal.SIGCONT)
        await process.server.stop(None)
        await store.close()
        servers.stop()
