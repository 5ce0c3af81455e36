"""`arbiter serve` with the template game ("take the last counter") added to the registry, for
the per-move bench (loadtests/bench_moves.py): the same start-up, configuration (ARBITER_*) and
code path as a real server; only the game list differs.

    python -m loadtests.toy_server

For measuring a lever before it goes into the server (`bench_moves --ab`), these switch one
on in this process only:

    BENCH_UVLOOP=1              the event loop is uvloop's
    BENCH_GC_FREEZE=1           gc.freeze() once the modules are imported
    BENCH_GC_THRESHOLD=a,b,c    gc.set_threshold(a, b, c)
    BENCH_NO_METRICS=1          every Prometheus series is a no-op (what metrics cost at most)
    BENCH_GRPC_OPTIONS=json     more gRPC server options, e.g. [["grpc.http2.bdp_probe", 0]]
    BENCH_CPROFILE=path         cProfile the event loop's thread from SIGUSR1 to SIGUSR2,
                                then write the stats to path
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import sys
from typing import Any

from services import games as registry
from services.cli import main as cli
from services.core import server as parts
from services.toy import GAME  # noqa: F401 - imported before a freeze, as a served game is


class _Nothing:
    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def levers() -> None:
    if os.environ.get("BENCH_UVLOOP") == "1":
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    if threshold := os.environ.get("BENCH_GC_THRESHOLD"):
        gc.set_threshold(*(int(n) for n in threshold.split(",")))
    if os.environ.get("BENCH_NO_METRICS") == "1":
        from services.core.metrics import Labelled

        Labelled.__call__ = lambda self, *labels: _Nothing()  # type: ignore[method-assign]
        Labelled.labels = Labelled.__call__  # type: ignore[method-assign]
    if options := os.environ.get("BENCH_GRPC_OPTIONS"):
        base = parts.grpc_options
        extra = [tuple(o) for o in json.loads(options)]
        parts.grpc_options = lambda config: [*base(config), *extra]  # type: ignore[assignment]
    if os.environ.get("BENCH_GC_FREEZE") == "1":
        import services.process  # noqa: F401 - everything the server imports, then freeze

        gc.collect()
        gc.freeze()


def profile_on_signals(path: str) -> None:
    import cProfile
    import time

    profiler = cProfile.Profile(time.thread_time)  # CPU of the loop's thread, not waiting

    def stop(*_: Any) -> None:
        profiler.disable()
        profiler.dump_stats(path)

    signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
    signal.signal(signal.SIGUSR2, stop)


if __name__ == "__main__":
    registry.GAME_MODULES["toy"] = "services.toy"
    levers()
    if path := os.environ.get("BENCH_CPROFILE"):
        profile_on_signals(path)
    sys.exit(cli.main(["serve", "--games", "toy"]))
