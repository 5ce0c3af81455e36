"""GetView's latency while four clients loop VerifyLog, with whole-log work in a thread beside
the event loop (ARBITER_CPU_PROCESSES=0, the old way) and in a process (=1, the default).

    .venv/bin/python -m loadtests.cpu_offload [--samples 400] [--callers 4]

One run starts one server per mode (embedded store, Shadow Council, whose logs are the
slowest to verify) and measures, on each: GetView alone, then while the callers verify a
long finished log in a loop, then alone again. Figures are ratios of the loaded p50 and p99
to the unloaded ones (before and after, pooled) of the same server in the same run. The
callers are processes of their own, so that this process only measures. Writes
loadtests/results/cpu_offload.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
from arbiter.v1 import arbiter_pb2 as apb

from loadtests.failover import percentile
from services import games as registry
from services.core import log as gamelog
from services.core.decider import Seat
from services.core.host import Host
from services.core.server import in_process_ai
from services.core.store import MemoryStore
from tools.redis_servers import free_port

GAME = registry.game("shadow_council")
RESULTS = Path(__file__).parent / "results" / "cpu_offload.json"




async def finished_log(tries: int = 3) -> list[str]:
    """The longest of a few bot-played games, as exported lines."""
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


def verifier(address: str, lines: list[str], stop: Any, done: Any) -> None:
    """A caller: VerifyLog in a loop until told to stop."""
    with grpc.insecure_channel(address) as channel:
        verify = channel.unary_unary("/arbiter.v1.Arbiter/VerifyLog",
                                     request_serializer=apb.VerifyLogRequest.SerializeToString,
                                     response_deserializer=apb.VerifyLogResponse.FromString)
        request = apb.VerifyLogRequest(log=apb.ExportLogResponse(lines=lines))
        while not stop.is_set():
            assert verify(request, timeout=120).ok
            with done.get_lock():
                done.value += 1




def measure(processes: int, lines: list[str], samples: int, callers: int) -> dict[str, Any]:
    port = free_port()
    address = f"127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data:
        env = dict(os.environ, ARBITER_GRPC_ADDR=address, ARBITER_HTTP_ADDR="",
                   ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}", ARBITER_DATA_DIR=data,
                   ARBITER_GAMES=GAME.name, ARBITER_CPU_PROCESSES=str(processes),
                   ARBITER_CPU_QUEUE=str(callers * 2))
        env.pop("ARBITER_REDIS_URL", None)
        server = subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            return _measure(address, lines, samples, callers)
        finally:
            server.terminate()
            server.wait(timeout=30)


def _measure(address: str, lines: list[str], samples: int, callers: int) -> dict[str, Any]:
    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=120)
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
        seats=[apb.Seat(name=f"p{i}") for i in range(GAME.seat_count)]), timeout=60).game_id
    request = apb.GetViewRequest(game_id=game_id)
    t0 = time.perf_counter()
    assert verify(apb.VerifyLogRequest(log=apb.ExportLogResponse(lines=lines)),
                  timeout=120).ok  # a pool starts on first use: not measured
    first_verify = time.perf_counter() - t0

    def latencies() -> list[float]:
        out = []
        for _ in range(samples):
            started = time.perf_counter()
            get_view(request, timeout=60)
            out.append(time.perf_counter() - started)
            time.sleep(0.003)
        return out

    alone = latencies()
    spawn = multiprocessing.get_context("spawn")
    stop, done = spawn.Event(), spawn.Value("i", 0)
    loaders = [spawn.Process(target=verifier, args=(address, lines, stop, done))
               for _ in range(callers)]
    for p in loaders:
        p.start()
    while done.value < callers:  # every caller is verifying
        time.sleep(0.05)
    started = time.perf_counter()
    loaded = latencies()
    loaded_seconds = time.perf_counter() - started
    verified = done.value
    stop.set()
    for p in loaders:
        p.join(timeout=300)
    alone += latencies()
    channel.close()

    def ms(x: float) -> float:
        return round(x * 1000, 3)

    p50_alone, p99_alone = statistics.median(alone), percentile(alone, 0.99)
    p50_loaded, p99_loaded = statistics.median(loaded), percentile(loaded, 0.99)
    return {"getview_alone_ms": {"p50": ms(p50_alone), "p99": ms(p99_alone)},
            "getview_loaded_ms": {"p50": ms(p50_loaded), "p99": ms(p99_loaded)},
            "p50_ratio": round(p50_loaded / p50_alone, 2),
            "p99_ratio": round(p99_loaded / p99_alone, 2),
            "verifications_while_measuring": verified,
            "loaded_seconds": round(loaded_seconds, 2),
            "first_verify_s": round(first_verify, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--callers", type=int, default=4)
    args = parser.parse_args()
    lines = asyncio.run(finished_log())
    out: dict[str, Any] = {"game": GAME.name, "log_lines": len(lines),
                           "callers": args.callers, "samples": args.samples}
    for name, processes in (("thread", 0), ("process", 1)):
        out[name] = measure(processes, lines, args.samples, args.callers)
        print(name, json.dumps(out[name]), flush=True)
    out["machine"] = {"cpus": os.cpu_count(), "load_average": os.getloadavg()}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
