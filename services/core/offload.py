"""CPU-heavy requests run in other processes, not on the event loop nor beside it.

Verifying or importing a log, exporting one, replaying a long game to a version and forking
re-run the rules over a whole history: on the event loop, one such call would stall every
other client for as long as it runs. A thread beside the loop is not enough either: it holds
the interpreter lock for as long as the loop does, so four verifications in a thread made
every other call several times slower. They go to a small pool of processes instead, with a
bounded queue: past it, the caller is told to come back (RESOURCE_EXHAUSTED), rather than
piling up work no one will wait for.

A game is sent to a process by its name and looked up there with the lookup the
composition root hands the pool (a game holds its generated module, which does not pickle).
A game the lookup cannot name, one whose messages do not pickle (a module generated in this
process only, as the template's), or a pool given no lookup, runs in a thread, as before.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, TypeVar

from services.core.decider import Game

T = TypeVar("T")
# The game of a name, in any process: a module-level function, so that it pickles by name.
Lookup = Callable[[str], Game]


class Busy(Exception):
    """The pool and its queue are full."""

    def __init__(self, waiting: int) -> None:
        super().__init__(f"the server is already re-running {waiting} logs or histories, its "
                         "limit; retry shortly")
        self.waiting = waiting


@dataclass(frozen=True)
class _GameNamed:
    """A game as sent to another process: by name."""

    name: str


def _named(game: Game, lookup: Lookup) -> _GameNamed | None:
    """The game as a name another process can look up; None if it cannot."""
    try:
        return _GameNamed(game.name) if lookup(game.name) is game else None
    except Exception:  # noqa: BLE001 - unknown or broken: not sent by name
        return None


@dataclass(frozen=True)
class _Raised:
    """An exception as sent back from another process: its class and attributes, since
    pickling would call its __init__ again with the wrong arguments (BadLog's, RuleError's)."""

    kind: type[Exception]
    args: tuple[Any, ...]
    attributes: dict[str, Any]

    def rebuilt(self) -> Exception:
        error = self.kind.__new__(self.kind)
        error.args = self.args
        error.__dict__.update(self.attributes)
        return error


def _call_named(lookup: Lookup, fn: Callable[..., Any], games: tuple[str, ...],
                payload: bytes) -> Any:
    """In the pool's process: the games looked up first (a game may generate the module of
    its messages when imported), then the arguments read, then the call."""
    for name in games:
        lookup(name)
    args, kwargs = pickle.loads(payload)

    def back(value: Any) -> Any:
        return lookup(value.name) if isinstance(value, _GameNamed) else value

    try:
        return fn(*[back(a) for a in args], **{k: back(v) for k, v in kwargs.items()})
    except Exception as error:  # noqa: BLE001 - the caller raises it again
        return _Raised(type(error), error.args, dict(error.__dict__))


def _payload(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes | None:
    """The arguments as another process reads them; None where they do not pickle (messages
    of a game whose module exists only in this process, as a test's game may be)."""
    try:
        return pickle.dumps((args, kwargs))
    except (pickle.PicklingError, TypeError, AttributeError):
        return None


def _start(parent: int, warm: Callable[[], object] | None) -> None:
    """In the pool's processes: follow the parent, then import the games once, before a
    caller waits for them."""
    _follow_parent(parent)
    if warm is not None:
        warm()


def _ready() -> None:
    """Nothing: submitted once per process so that the pool starts them all at once."""


def _follow_parent(parent: int) -> None:
    """In the pool's processes: they end with the server. Ctrl-C stops the server, which
    stops them (without a traceback of each); a server killed outright leaves them waiting
    on a queue they also hold open, so a thread watches for their parent to be gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


# By use and size: every server of a process (a test's) shares them.
_pools: dict[tuple[str, int], ProcessPoolExecutor] = {}


def process_pool(processes: int, use: str = "cpu",
                 warm: Callable[[], object] | None = None) -> ProcessPoolExecutor:
    """The process's pool for this use (re-running logs, simulations) and size, made on first
    use (most servers never verify anything); `warm` (picklable) runs once in each process."""
    processes = max(1, processes)
    pool = _pools.get((use, processes))
    if pool is None:
        # Spawned, not forked: a fork of a process running gRPC's threads may hang.
        pool = _pools[use, processes] = ProcessPoolExecutor(
            processes, mp_context=multiprocessing.get_context("spawn"),
            initializer=_start, initargs=(os.getpid(), warm))
        for _ in range(processes):  # started now, not at the first caller's call
            pool.submit(_ready)
    return pool


def forget(pool: Executor) -> None:
    """A pool one of whose processes died (killed, out of memory): the next call gets a new
    one."""
    for key, known in list(_pools.items()):
        if known is pool:
            del _pools[key]


class CpuPool:
    """`processes` processes (0, or no `lookup` of games by name: one thread beside the
    event loop) and `queue` calls waiting for them."""

    def __init__(self, processes: int = 1, queue: int = 16, lookup: Lookup | None = None
                 ) -> None:
        self.processes, self.queue = max(0, processes), max(0, queue)
        self.lookup = lookup
        self._thread: ThreadPoolExecutor | None = None
        self.pending = 0  # running and waiting

    def _executor(self, threaded: bool) -> Executor:
        if not threaded:
            return process_pool(self.processes)
        if self._thread is None:  # made on first use: most servers never verify anything
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="cpu")
        return self._thread

    def _in_a_process(self, fn: Callable[..., Any], args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Callable[[], Any] | None:
        """The call as a pool's process makes it; None where it cannot: no processes or no
        lookup, a game the lookup does not name, arguments that do not pickle."""
        lookup = self.lookup
        if self.processes == 0 or lookup is None:
            return None
        names = {id(v): _named(v, lookup) for v in (*args, *kwargs.values())
                 if isinstance(v, Game)}
        if None in names.values():
            return None

        def sent(v: Any) -> Any:
            return names.get(id(v), v) if isinstance(v, Game) else v

        payload = _payload(tuple(sent(a) for a in args), {k: sent(v) for k, v in kwargs.items()})
        if payload is None:
            return None
        games = tuple(sorted({n.name for n in names.values() if n is not None}))
        return functools.partial(_call_named, lookup, fn, games, payload)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self.pending >= max(1, self.processes) + self.queue:
            raise Busy(self.pending)
        bound_to = getattr(fn, "__self__", None)
        if inspect.ismethod(fn) and isinstance(bound_to, Game):  # game.replay
            fn, args = fn.__func__, (bound_to, *args)
        remote = self._in_a_process(fn, args, kwargs)
        call: Callable[[], T] = remote or functools.partial(fn, *args, **kwargs)
        self.pending += 1
        try:
            executor = self._executor(threaded=remote is None)
            try:
                result = await asyncio.get_running_loop().run_in_executor(executor, call)
            except BrokenProcessPool:
                forget(executor)
                raise
        finally:
            self.pending -= 1
        if isinstance(result, _Raised):
            raise result.rebuilt()
        return result  # type: ignore[no-any-return]
