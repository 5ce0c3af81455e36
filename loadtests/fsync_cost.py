"""What ARBITER_FSYNC costs the embedded store, per append, in one run.

    python -m loadtests.fsync_cost [--appends 400] [--rounds 5] [--concurrent 16] [--dir DIR]

Appends a typical batch (one entry of 120 bytes, a command id, one metadata key) to the
embedded store's file in a fresh directory (by default a temporary one under --dir, `var` if
not given, so on the disk the server would use), with fsync off and on, in alternating rounds
so both see the same machine. Two loads:

  - sequential: one append at a time (a single player): each append's own latency;
  - concurrent: --concurrent games appending at once, each waiting for its answer before the
    next (players of many games): appends written while an fsync runs share the next one (a
    group commit), so the fsyncs per append show what grouping saves.

The sequential load also reports the process's CPU time per append (every thread, from
/proc through time.process_time), which fsync raises far less than the wait. Also times
encoding one record with and without the fields that chain it (its first version
and the previous record's checksum). Prints JSON and writes loadtests/results/fsync.json,
with each figure as a ratio to the same load without fsync.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from typing import Any
from unittest import mock

from services.core.store import MemoryStore, encode_record

ENTRY = bytes(range(120))


def quantiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_us": round(ordered[len(ordered) // 2] * 1e6, 1),
            "p99_us": round(ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)] * 1e6, 1)}


async def one_round(folder: str, fsync: bool, appends: int, concurrent: int
                    ) -> tuple[list[float], list[float], int, float, float]:
    """Latencies of sequential appends, of concurrent ones, the fsyncs the concurrent load
    made, its appends per second, and the CPU seconds (every thread of the process) the
    sequential appends took."""
    path = os.path.join(folder, f"round-{time.monotonic_ns()}.aof")
    store = MemoryStore(path, fsync=fsync)
    sequential: list[float] = []
    cpu = time.process_time()
    for v in range(appends):
        start = time.perf_counter()
        await store.append("solo", [ENTRY], v, f"c{v}", {"status": "running"})
        sequential.append(time.perf_counter() - start)
    cpu = time.process_time() - cpu

    together: list[float] = []
    fsyncs = 0
    real_fsync = os.fsync

    def counted(fd: int) -> None:
        nonlocal fsyncs
        fsyncs += 1
        real_fsync(fd)

    async def player(game: str) -> None:
        for v in range(appends // concurrent):
            start = time.perf_counter()
            await store.append(game, [ENTRY], v, f"c{v}", {"status": "running"})
            together.append(time.perf_counter() - start)

    with mock.patch.object(os, "fsync", counted):
        start = time.perf_counter()
        await asyncio.gather(*(player(f"g{i}") for i in range(concurrent)))
        elapsed = time.perf_counter() - start
    await store.close()
    os.unlink(path)
    os.unlink(path + ".lock")
    return sequential, together, fsyncs, len(together) / elapsed, cpu


def encoding_cost(records: int = 20_000) -> dict[str, float]:
    """Microseconds to encode one record, with and without the chain's two fields."""
    plain = {"game": "g" * 22, "command_id": "c" * 16, "meta": {"status": "running"},
             "entries": [ENTRY.hex()]}
    chained = {"v": 1234, "prev": "0123abcd", **plain}
    figures = {}
    for name, record in (("unchained", plain), ("chained", chained)):
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(records):
                encode_record(record)
            best = min(best, (time.perf_counter() - start) / records)
        figures[f"{name}_us"] = round(best * 1e6, 2)
    figures["chained_ratio"] = round(figures["chained_us"] / figures["unchained_us"], 3)
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrent", type=int, default=16)
    parser.add_argument("--dir", default="var")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="fsync-cost-", dir=args.dir)
    runs: dict[bool, dict[str, Any]] = {
        flag: {"sequential": [], "concurrent": [], "fsyncs": 0, "rates": [], "cpu": 0.0}
        for flag in (False, True)}
    try:
        for _ in range(args.rounds):
            for flag in (False, True):
                seq, conc, fsyncs, rate, cpu = await one_round(folder, flag, args.appends,
                                                               args.concurrent)
                runs[flag]["cpu"] += cpu
                runs[flag]["sequential"] += seq
                runs[flag]["concurrent"] += conc
                runs[flag]["fsyncs"] += fsyncs
                runs[flag]["rates"].append(rate)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    result: dict[str, Any] = {"appends_per_round": args.appends, "rounds": args.rounds,
                              "concurrent_games": args.concurrent, "dir": args.dir}
    for load in ("sequential", "concurrent"):
        off, on = quantiles(runs[False][load]), quantiles(runs[True][load])
        result[load] = {"fsync_off": off, "fsync_on": on,
                        "p50_ratio": round(on["p50_us"] / off["p50_us"], 1),
                        "p99_ratio": round(on["p99_us"] / off["p99_us"], 1)}
    for flag, name in ((False, "fsync_off"), (True, "fsync_on")):
        result["sequential"][name]["cpu_us_per_append"] = round(
            runs[flag]["cpu"] / len(runs[flag]["sequential"]) * 1e6, 1)
    appended = len(runs[True]["concurrent"])
    result["concurrent"]["fsyncs_per_append"] = round(runs[True]["fsyncs"] / appended, 3)
    result["concurrent"]["appends_per_s"] = {
        "fsync_off": round(sorted(runs[False]["rates"])[args.rounds // 2]),
        "fsync_on": round(sorted(runs[True]["rates"])[args.rounds // 2])}
    result["encoding"] = encoding_cost()
    print(json.dumps(result, indent=2))
    os.makedirs("loadtests/results", exist_ok=True)
    with open("loadtests/results/fsync.json", "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
