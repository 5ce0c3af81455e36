"""Re-running whole logs (VerifyLog, ImportLog, Replay...) happens off the event loop: other
calls keep their latency while such requests arrive.

A real server process; clients in this process's threads. The figures are ratios from the
same run: GetView's p99 while two clients loop VerifyLog of a long log, against its p99 with
no load (measured before and after), and GetView's median against the time one VerifyLog
takes. On the event loop, a GetView arriving
during a verification waits for all of it, so its p99 is about one verification.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core import log as gamelog
from services.core.decider import Seat
from services.core.host import Host
from services.core.server import in_process_ai
from services.core.store import MemoryStore

GAME = registry.game("shadow_council")  # the slowest log to verify of the five
SAMPLES = 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def long_log(tries: int = 3) -> list[str]:
    """The longest of a few finished games (their length varies with the deal)."""
    host = Host(MemoryStore(), {GAME.name: GAME}, ai_dispatch=in_process_ai)
    seats = [Seat(f"p{i}", "ai", "random") for i in range(GAME.seat_count)]
    logs = []
    for _ in range(tries):
        game_id = (await host.create(GAME.name, seats, GAME.pb.Options())).game_id
        while not (await host.load(game_id)).finished:
            await asyncio.sleep(0)
        _, entries = await host.history(game_id)
        logs.append(gamelog.to_json_lines(GAME, entries))
    return max(logs, key=len)


def p99(samples: list[float]) -> float:
    return sorted(samples)[int(len(samples) * 0.99) - 1]


def test_get_view_keeps_its_latency_while_logs_are_verified(tmp_path: Path) -> None:
    lines = asyncio.run(long_log())
    port = free_port()
    env = dict(os.environ, ARBITER_GRPC_ADDR=f"127.0.0.1:{port}",
               ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}", ARBITER_DATA_DIR=str(tmp_path),
               ARBITER_GAMES=GAME.name)
    env.pop("ARBITER_REDIS_URL", None)
    server = subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
        pb = GAME.pb
        create = channel.unary_unary(f"/arbiter.{GAME.name}.v1.Game/CreateGame",
                                     request_serializer=pb.CreateGameRequest.SerializeToString,
                                     response_deserializer=apb.CreateGameResponse.FromString)
        get_view = channel.unary_unary(f"/arbiter.{GAME.name}.v1.Game/GetView",
                                       request_serializer=apb.GetViewRequest.SerializeToString,
                                       response_deserializer=pb.View.FromString)
        verify = channel.unary_unary("/arbiter.v1.Arbiter/VerifyLog",
                                     request_serializer=apb.VerifyLogRequest.SerializeToString,
                                     response_deserializer=apb.VerifyLogResponse.FromString)
        game_id = create(pb.CreateGameRequest(
            seats=[apb.Seat(name=f"p{i}") for i in range(GAME.seat_count)]), timeout=30).game_id
        request = apb.GetViewRequest(game_id=game_id)
        verify_request = apb.VerifyLogRequest(log=apb.ExportLogResponse(lines=lines))
        assert verify(verify_request, timeout=60).ok

        def latencies() -> list[float]:
            out = []
            for _ in range(SAMPLES):
                t0 = time.perf_counter()
                get_view(request, timeout=60)
                out.append(time.perf_counter() - t0)
                time.sleep(0.003)
            return out

        baseline = latencies()
        stop = threading.Event()
        verify_seconds: list[float] = []

        def load() -> None:
            while not stop.is_set():
                t0 = time.perf_counter()
                assert verify(verify_request, timeout=60).ok
                verify_seconds.append(time.perf_counter() - t0)

        loaders = [threading.Thread(target=load) for _ in range(2)]
        for t in loaders:
            t.start()
        try:
            time.sleep(0.3)
            loaded = latencies()
        finally:
            stop.set()
            for t in loaders:
                t.join(timeout=120)
        baseline += latencies()  # before and after: the machine's noise over the test
        one_verify = statistics.median(verify_seconds)
        medians = statistics.median(baseline) * 1e3, statistics.median(loaded) * 1e3
        print(f"GetView p99 {p99(baseline) * 1e3:.2f} ms alone, {p99(loaded) * 1e3:.2f} ms "
              f"under VerifyLog load ({len(verify_seconds)} verifications, median "
              f"{one_verify * 1e3:.0f} ms): x{p99(loaded) / p99(baseline):.1f} the baseline, "
              f"medians {medians[0]:.2f} and {medians[1]:.2f} ms, the latter "
              f"{medians[1] / 1e3 / one_verify:.2f} of one verification")
        assert len(verify_seconds) >= 4, "the load ran alongside the measurement"
        # Measured here (a shared 2-core machine): with the pool, p99 x1.1 to x26 the
        # baseline's (the verifying thread holds the GIL for its switch interval) and medians
        # 0.04 to 0.06 of one verification; on the event loop, p99 x71-97 and the median about
        # one whole verification.
        assert p99(loaded) < 50 * p99(baseline)
        assert statistics.median(loaded) < 0.5 * one_verify
    finally:
        channel.close()
        server.terminate()
        server.wait(timeout=10)


async def test_past_its_queue_the_pool_refuses_work_instead_of_piling_it_up() -> None:
    from services.core.offload import Busy, CpuPool

    pool = CpuPool(processes=0, queue=1)  # a thread: the lambdas do not pickle
    release = threading.Event()
    first = asyncio.ensure_future(pool.run(release.wait, 30))
    second = asyncio.ensure_future(pool.run(lambda: "queued"))
    await asyncio.sleep(0.05)
    try:
        with pytest.raises(Busy):
            await pool.run(lambda: "one too many")
    finally:
        release.set()
    assert await first is True and await second == "queued"
    assert await pool.run(lambda: "room again") == "room again"
