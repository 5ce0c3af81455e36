"""ListGames on the embedded store with many games: the indexed read model against the full
scan it replaced, both measured in the same run.

    python -m loadtests.bench_listgames [--games 20000] [--seconds 3] [--rounds 3]

Starts two embedded servers (subprocesses, Bubblee Pop only), each holding the same number of
games: `indexed` runs the code as it is; `scan` swaps in the former read model (every page
sorted every matching game, and every ListGames visited the 256 partition feeds first), kept
here as the baseline. Each round measures both, one after the other:

    list        ListGames p50, page of 50, no filter (one client)
    seat        ListGames p50 filtered by a seat name that sits in 1 game of 7
    view        another client's GetView p50 while nothing else runs
    view+list   that client's GetView p50 while two clients loop ListGames

and, in this process, the read model alone: CPU microseconds (process time) per page of 50,
first and deep (after a cursor half way down), for the same number of games.

The machine is shared and noisy: read the ratios (scan / indexed), measured in the same run.
Writes loadtests/results/listgames.json and prints it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from services.core.metrics import METRICS
from services.core.store import PARTITIONS
from services.workers.projections import InProcessProjections
from services.workers.readmodel import Cursor, MemoryReadModel, Update

RESULTS = os.path.join(os.path.dirname(__file__), "results", "listgames.json")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---- the baseline: ListGames as it was before the indexes ------------------------------------


class ScanningReadModel(MemoryReadModel):
    """Keeps, beside the indexed model (for the records), the former per-filter dicts of
    game id -> creation time, and pages the former way: sort every game the filter matches,
    newest first, then slice."""

    def __init__(self) -> None:
        super().__init__()
        self.zsets: dict[str, dict[str, float]] = {}

    async def apply(self, u: Update) -> tuple[str, int]:
        result = await super().apply(u)
        if result[0] == "ok":
            other = "finished" if u.status == "active" else "active"
            for key in ("idx:*:*", f"idx:{u.game}:*", f"idx:*:{u.status}",
                        f"idx:{u.game}:{u.status}", *(f"seat:{n}" for n in u.seat_names)):
                self.zsets.setdefault(key, {})[u.game_id] = float(u.created_unix_ms)
            for key in (f"idx:*:{other}", f"idx:{u.game}:{other}"):
                self.zsets.get(key, {}).pop(u.game_id, None)
        return result

    def _newest_first(self, key: str) -> list[str]:
        members = self.zsets.get(key, {})
        return [m for m, _ in sorted(members.items(), key=lambda ms: (ms[1], ms[0]),
                                     reverse=True)]

    async def page(self, game: str, status: str, seat_name: str, after: Cursor | None,
                   size: int) -> tuple[list[apb.GameSummary], Cursor | None]:
        base = f"idx:{game or '*'}:{status or '*'}"
        if seat_name:
            allowed = self.zsets.get(base, {})
            ids = [i for i in self._newest_first(f"seat:{seat_name}") if i in allowed]
        else:
            ids = self._newest_first(base)
        start = 0
        if after is not None:  # the former offset, found the way a slice of it would be
            start = next((n + 1 for n, i in enumerate(ids) if i == after[1]), len(ids))
        shown = ids[start : start + size]
        page = [apb.GameSummary.FromString(self.summaries[i]) for i in shown]
        more = start + size < len(ids)
        return page, (page[-1].created_unix_ms, page[-1].game_id) if more and page else None


class ScanningProjections(InProcessProjections):
    """The former catch-up: every call visits the 256 partition feeds and sets their lag."""

    async def catch_up(self) -> int:
        self._projected = None
        done = await super().catch_up()
        for p in range(PARTITIONS):
            METRICS.projection_lag.labels("in-process", str(p)).set(0)
        return done


# ---- the server -------------------------------------------------------------------------------


async def serve(port: int, variant: str, games: int) -> None:
    from services import games as registry
    from services.core.decider import Seat
    from services.core.server import Config
    from services.core.store import MemoryStore
    from services.process import build

    bubblee = registry.game("bubblee")
    store = MemoryStore()
    process = build(Config(grpc_addr=f"127.0.0.1:{port}"), {"bubblee": bubblee}, store)
    server, host, workers = process.server, process.host, process.workers
    if variant == "scan":
        workers.rm = ScanningReadModel()
        workers.projections = ScanningProjections(store, workers.rm, host.games)
        workers.projections.projector.listeners.append(workers.deadlines.schedule_for)
    for i in range(games):
        await host.create("bubblee", [Seat(f"p{i % 1000}"), Seat(f"q{i % 7}")],
                          bubblee.pb.Options())
    await workers.projections.catch_up()  # type: ignore[union-attr]
    await server.start()
    await workers.start()
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until closed
    await workers.stop()
    await server.stop(None)


# ---- the client -------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else 0.0


async def p50_while(seconds: float, measured: Callable[[], Awaitable[Any]],
                    background: Callable[[], Awaitable[Any]] | None = None,
                    loops: int = 0) -> float:
    """The p50 (ms) of `measured`, looped by one client for `seconds`, while `loops` other
    clients loop `background`."""
    stop = time.perf_counter() + seconds
    latencies: list[float] = []

    async def timed() -> None:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            await measured()
            latencies.append(time.perf_counter() - t0)

    async def busy() -> None:
        assert background is not None
        while time.perf_counter() < stop:
            await background()

    await asyncio.gather(timed(), *(busy() for _ in range(loops)))
    return percentile(latencies, 0.5) * 1000


async def measure(port: int, seconds: float) -> dict[str, float]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        list_games = channel.unary_unary(
            "/arbiter.v1.Arbiter/ListGames",
            request_serializer=apb.ListGamesRequest.SerializeToString,
            response_deserializer=apb.ListGamesResponse.FromString)
        get_view = channel.unary_unary(
            "/arbiter.bubblee.v1.Game/GetView",
            request_serializer=apb.GetViewRequest.SerializeToString,
            response_deserializer=bpb.View.FromString)
        first = await list_games(apb.ListGamesRequest(page_size=50))
        assert len(first.games) == 50 and first.next_page_token
        game_id = first.games[0].game_id

        async def page() -> None:
            await list_games(apb.ListGamesRequest(page_size=50))

        async def seat_page() -> None:
            reply = await list_games(apb.ListGamesRequest(seat_name="q3", page_size=50))
            assert reply.games

        async def view() -> None:
            await get_view(apb.GetViewRequest(game_id=game_id))

        return {
            "list_p50_ms": await p50_while(seconds, page),
            "seat_p50_ms": await p50_while(seconds, seat_page),
            "view_p50_ms": await p50_while(seconds, view),
            "view_while_listing_p50_ms": await p50_while(seconds, view, page, loops=2),
        }


def page_cpu(games: int, calls: int = 200) -> dict[str, dict[str, float]]:
    """CPU µs per page of 50 of each read model holding `games` games (no server)."""

    async def go() -> dict[str, dict[str, float]]:
        out = {}
        for name, rm in (("indexed", MemoryReadModel()), ("scan", ScanningReadModel())):
            for i in range(games):
                summary = apb.GameSummary(game_id=f"g{i:06}", game="bubblee",
                                          created_unix_ms=1_700_000_000_000 + i)
                await rm.apply(Update(f"g{i:06}", "bubblee", 0, 2, 1_700_000_000_000 + i,
                                      "active", [f"p{i % 1000}", f"q{i % 7}"],
                                      summary.SerializeToString()))
            middle = (1_700_000_000_000 + games // 2, f"g{games // 2:06}")
            figures = {}
            for label, args in (("first_page_us", ("", "", "", None)),
                                ("deep_page_us", ("", "", "", middle)),
                                ("seat_page_us", ("", "", "q3", None))):
                t0 = time.process_time()
                for _ in range(calls):
                    page, _ = await rm.page(*args, 50)  # type: ignore[arg-type]
                    assert len(page) == 50
                figures[label] = (time.process_time() - t0) / calls * 1e6
            out[name] = figures
        return out

    return asyncio.run(go())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    servers: dict[str, tuple[int, subprocess.Popen[str]]] = {}
    try:
        for variant in ("indexed", "scan"):
            port = free_port()
            servers[variant] = port, subprocess.Popen(
                [sys.executable, "-m", "loadtests.bench_listgames", "serve", str(port),
                 variant, str(args.games)], cwd=ROOT, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": ROOT})
        for _, proc in servers.values():
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        rounds: dict[str, list[dict[str, float]]] = {v: [] for v in servers}
        for _ in range(args.rounds):
            for variant, (port, _) in servers.items():
                rounds[variant].append(asyncio.run(measure(port, args.seconds)))
    finally:
        for _, proc in servers.values():
            if proc.stdin:
                proc.stdin.close()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
    figures = {v: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
               for v, rs in rounds.items()}
    alone = page_cpu(args.games)
    for variant, values in alone.items():
        figures[variant].update(values)
    report = {"games": args.games, "seconds": args.seconds, "rounds": args.rounds,
              "median_of_rounds": figures,
              "scan_over_indexed": {k: figures["scan"][k] / figures["indexed"][k]
                                    for k in figures["indexed"]}}
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(report, f, indent=2, sort_keys=True)
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        asyncio.run(serve(int(sys.argv[2]), sys.argv[3], int(sys.argv[4])))
    else:
        sys.exit(main())
