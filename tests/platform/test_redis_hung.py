"""Redis hung (its process stopped with SIGSTOP, the way a stalled host or a long fork looks
to a client): calls that need it answer UNAVAILABLE within a bounded time, even without a
deadline, health says NOT_SERVING until Redis answers again, and a command resent with the
same id after that is applied once."""

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
from services.core.redis_conn import RETRIES
from services.core.redis_store import RedisStore
from services.core.server import Config
from services.process import build
from tests.platform.test_grpc import GAME, Client, details, free_port
from tools.redis_servers import redis_server_binary, start_standalone

TIMEOUT = 0.5  # ARBITER_REDIS_TIMEOUT for this test
# A call needing Redis fails after its first try and RETRIES more, each cut at TIMEOUT; the
# rest is slack for a loaded machine.
BOUND = (1 + RETRIES) * TIMEOUT + 1.0
HEALTH_EVERY = 0.2

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGSTOP is POSIX")


async def status_of(channel: grpc.aio.Channel) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return (await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)).status


async def wait_status(channel: grpc.aio.Channel, wanted: int, seconds: float) -> float:
    t0 = time.monotonic()
    while await status_of(channel) != wanted:
        assert time.monotonic() - t0 < seconds, f"health did not become {wanted} in {seconds}s"
        await asyncio.sleep(0.05)
    return time.monotonic() - t0


async def unavailable_within(call: object, bound: float) -> float:
    t0 = time.monotonic()
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call  # type: ignore[misc]
    elapsed = time.monotonic() - t0
    assert info.value.code() == grpc.StatusCode.UNAVAILABLE, info.value.details()
    assert details(info.value)[0] == "STORE_UNAVAILABLE"
    assert elapsed < bound, f"answered after {elapsed:.2f}s, bound {bound:.2f}s"
    return elapsed


async def test_a_hung_redis_is_unavailable_in_bounded_time_and_not_serving_until_back() -> None:
    redis_server_binary()
    servers = start_standalone()
    pid = servers.procs[0].pid
    store = RedisStore(servers.url, timeout=TIMEOUT)
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", health_seconds=HEALTH_EVERY)
    process = build(config, {"bubblee": registry.game("bubblee")}, store)
    server, port = process.server, process.port
    await server.start()
    stopped = False
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            client = Client(channel)
            created = await client.create()
            token, _ = await client.mover(created)
            command = (await client.legal(created.game_id, token)).commands[0]
            assert await status_of(channel) == health_pb2.HealthCheckResponse.SERVING

            os.kill(pid, signal.SIGSTOP)
            stopped = True
            # No deadline on either call: the store's own timeout must end them.
            act = bpb.ActRequest(game_id=created.game_id, command=command,
                                 command_id="while-hung", expected_version=created.version)
            await unavailable_within(
                client.call(GAME + "Act", act, bpb.ActResponse, token, timeout=None), BOUND)
            await unavailable_within(
                client.call(GAME + "GetView", apb.GetViewRequest(game_id=created.game_id),
                            bpb.View, timeout=None), BOUND)
            await wait_status(channel, health_pb2.HealthCheckResponse.NOT_SERVING,
                              BOUND + HEALTH_EVERY)

            os.kill(pid, signal.SIGCONT)
            stopped = False
            await wait_status(channel, health_pb2.HealthCheckResponse.SERVING,
                              BOUND + HEALTH_EVERY)
            # The hung Redis may have run the script once it woke: the same id, resent,
            # is answered from the command index either way, and applied once.
            first = await client.act(created.game_id, token, command, "while-hung",
                                     created.version)
            again = await client.act(created.game_id, token, command, "while-hung",
                                     created.version)
            assert first.version == again.version > created.version
            assert await store.applied(created.game_id, "while-hung") is not None
            assert (await client.view(created.game_id)).version == first.version
    finally:
        if stopped:
            os.kill(pid, signal.SIGCONT)
        await server.stop(None)
        await store.close()
        servers.stop()


async def test_a_server_whose_redis_does_not_answer_at_start_stops_with_a_sentence(caplog
                                                                                  ) -> None:
    from services.process import serve

    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", metrics_addr="127.0.0.1:0",
                    redis_url=f"redis://127.0.0.1:{free_port()}/0")
    assert await serve(config, {"bubblee": registry.game("bubblee")}) == 1
    assert "cannot reach Redis to start" in caplog.text
