"""CPU-heavy requests run beside the event loop, not on it.

Verifying or importing a log, exporting one, replaying a long game to a version and forking
re-run the rules over a whole history: on the event loop, one such call would stall every
other client for as long as it runs. They go to a small pool of threads instead, with a
bounded queue: past it, the caller is told to come back (RESOURCE_EXHAUSTED), rather than
piling up work no one will wait for. Threads share the interpreter lock, but it changes hands
every few milliseconds, so other calls wait milliseconds, not the whole computation.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class Busy(Exception):
    """The pool and its queue are full."""

    def __init__(self, waiting: int) -> None:
        super().__init__(f"the server is already re-running {waiting} logs or histories, its "
                         "limit; retry shortly")
        self.waiting = waiting


class CpuPool:
    def __init__(self, threads: int = 1, queue: int = 16) -> None:
        self.threads, self.queue = max(1, threads), max(0, queue)
        self._pool: ThreadPoolExecutor | None = None
        self.pending = 0  # running and waiting

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self.pending >= self.threads + self.queue:
            raise Busy(self.pending)
        if self._pool is None:  # made on first use: most servers never verify anything
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="cpu")
        self.pending += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._pool, functools.partial(fn, *args, **kwargs))
        finally:
            self.pending -= 1
