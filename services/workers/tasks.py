"""Celery tasks: AI turns (queue `ai`) and slices of simulations (queue `sim`).

An AI turn runs `Host.play_ai_turn`, the same code the server runs in process without a
broker: it loads the game, gives the seat's bot that seat's view and legal commands only,
and submits the command through the ordinary command path with command id
ai:<game id>:<version>:<seat> and the expected version. A redelivered task (its worker died
before acknowledging) finds the command id already applied, or the game moved on, and does
nothing; then it plays whatever AI turn the game waits for, if any (one the dead worker may
have been about to play).

AI turns that follow the worker's own command (AI against AI, or the next AI seat after one
human command) are played in the same task, up to ARBITER_AI_INLINE_TURNS (default 8) turns
a task, and only the rest are queued: a task of its own costs the worker several times what
the turn costs (loadtests/bench_workers.py, docs/performance.md).

The worker's host reads the event store named by ARBITER_REDIS_URL (never the broker's
database) and starts long games from their snapshots.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

from services.core.host import Host
from services.core.metrics import METRICS
from services.core.reads import AiDispatch
from services.core.store import StoreUnavailable
from services.workers import gameset
from services.workers.celery_app import app, make_app
from services.workers.simulate import Plan, play_chunk

log = logging.getLogger("arbiter.tasks")

_loop: asyncio.AbstractEventLoop | None = None
_host: Host | None = None
_pid = 0
INLINE_TURNS = max(1, int(os.environ.get("ARBITER_AI_INLINE_TURNS", "8")))
# The AI turns this process's own appends led to, while a task runs: played by that task.
_following: list[tuple[str, int, int]] | None = None


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine on this worker process's own event loop (made after the fork)."""
    global _loop
    if _loop is None or _pid != os.getpid():
        _reset()
    assert _loop is not None
    return _loop.run_until_complete(coro)


def _reset() -> None:
    global _loop, _host, _pid
    _loop = asyncio.new_event_loop()
    _host = None
    _pid = os.getpid()


def worker_host() -> Host:
    """This worker process's host on the event store (made on first use)."""
    global _host
    if _host is None:
        from services.core.redis_store import RedisStore
        from services.workers.projections import snapshot_source
        from services.workers.readmodel import RedisReadModel

        url = os.environ.get("ARBITER_REDIS_URL", "")
        if not url:
            raise RuntimeError("an AI worker needs ARBITER_REDIS_URL (the event store)")
        store = RedisStore(url)
        # AI turns act as the server's own trusted caller: this host needs no admin token.
        # The next AI seat is played by the task that led to it (up to INLINE_TURNS), the
        # rest queued by an app without a result backend: an AI turn has no result.
        host = Host(store, gameset.all_games(), ai_dispatch=_follow_or_queue(celery_dispatch("")),
                    snapshot_source=snapshot_source(RedisReadModel(store.workers_redis())))
        _host = host
    return _host


def _follow_or_queue(queue: AiDispatch) -> AiDispatch:
    """Inside a task, note the AI turn for that task to play; else queue it."""

    def dispatch(host: Host, game_id: str, version: int, seat: int) -> None:
        if _following is not None:
            _following.append((game_id, version, seat))
        else:
            queue(host, game_id, version, seat)

    return dispatch


async def _waiting_ai_turns(host: Host, game_id: str) -> list[tuple[str, int, int]]:
    """The AI turns the game waits for now (none once it is over or while seats are open)."""
    loaded = await host.load(game_id, fresh=True)
    if loaded.finished or loaded.open_seats:
        return []
    return [(game_id, loaded.version, s) for s in loaded.game.to_act(loaded.state)
            if loaded.seats[s].kind == "ai"]


async def play_turns(game_id: str, version: int, seat: int, redelivered: bool = False
                     ) -> int:
    """Play this AI turn and the AI turns it leads to, up to INLINE_TURNS; queue the rest.
    Returns how many were played."""
    global _following
    host = worker_host()
    todo, played = [(game_id, version, seat)], 0
    _following = []
    try:
        while todo and played < INLINE_TURNS:
            turn = todo.pop(0)
            try:
                done = await host.play_ai_turn(*turn)
            except StoreUnavailable:
                if not played:
                    raise  # the task is retried
                todo.insert(0, turn)  # each queued below, retried by its own task
                break
            if done:
                played += 1
            elif redelivered and not played:  # the dead worker may have left one unplayed
                todo += [t for t in await _waiting_ai_turns(host, game_id) if t != turn]
            todo += _following
            _following.clear()
    finally:
        _following = None
    for turn in todo:  # past the budget: tasks of their own, so other games get their turn
        assert host.ai_dispatch is not None
        host.ai_dispatch(host, *turn)
    return played


@app.task(name="arbiter.ai_turn", bind=True, acks_late=True, max_retries=20,
          ignore_result=True)
def ai_turn(self: Any, game_id: str, version: int, seat: int) -> int:
    """Play the AI seat's turn if the game is still where the task found it, and the AI turns
    that follow it (see the module's docstring).

    Nobody reads the result: the turns' effect is the commands in the game's stream."""
    t0 = time.perf_counter()
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    try:
        played = _run(play_turns(game_id, version, seat, redelivered))
    except StoreUnavailable as e:
        METRICS.ai_tasks("retried").inc()
        raise self.retry(exc=e, countdown=1) from e
    if played:
        METRICS.ai_tasks("played").inc(played)
    else:
        METRICS.ai_tasks("nothing_to_do").inc()
    log.debug("ai turn %s v%s seat %s: %d played in %.1f ms", game_id, version, seat, played,
              1000 * (time.perf_counter() - t0))
    return played


@app.task(name="arbiter.simulate_chunk", acks_late=True)
def simulate_chunk(game: str, bots: list[str], seed: str, indexes: list[int],
                   options_hex: str = "", rotate: bool = True,
                   side_bots: dict[str, str] | None = None) -> list[dict[str, Any]]:
    return play_chunk(game, bots, seed, indexes, bytes.fromhex(options_hex), rotate, side_bots)


# ---- the sending side -----------------------------------------------------------------------


def celery_dispatch(broker_url: str, celery_app: Any = None) -> AiDispatch:
    """An `AiDispatch` that queues the turn on `ai` instead of playing it in this process."""
    sender = celery_app or make_app(broker_url, results=False)

    def send(game_id: str, version: int, seat: int) -> None:
        try:
            sender.send_task("arbiter.ai_turn", args=[game_id, version, seat], queue="ai",
                             ignore_result=True)
        except Exception:  # noqa: BLE001 - the broker is down: the turn waits for a retry
            log.exception("could not queue the AI turn of %s v%s seat %s", game_id, version,
                          seat)

    def dispatch(host: Host, game_id: str, version: int, seat: int) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            send(game_id, version, seat)
            return
        if loop is _loop:  # inside a Celery worker: sending inline is fine (no server)
            send(game_id, version, seat)
        else:  # in the server: keep the broker round trip off the event loop
            loop.run_in_executor(None, partial(send, game_id, version, seat))

    return dispatch


_senders: dict[str, Any] = {}
_senders_lock = threading.Lock()


def simulation_sender(broker_url: str) -> Any:
    """This process's app for sending simulations, one per broker, kept for the process's
    life: with rpc:// each thread that waits for results has one reply queue, reused by
    every simulation it runs (a queue per simulation would linger an hour after it)."""
    with _senders_lock:
        if broker_url not in _senders:
            _senders[broker_url] = make_app(broker_url)
        return _senders[broker_url]


def run_on_celery(broker_url: str, plan: Plan, chunks: list[list[int]],
                  done: Callable[[list[dict[str, Any]]], None], timeout: float = 3600) -> None:
    """Send a simulation's slices to the `sim` queue and collect them as they finish."""
    sender = simulation_sender(broker_url)
    pending = [sender.send_task("arbiter.simulate_chunk",
                                args=[plan.game, plan.bots, plan.seed, c, plan.options.hex(),
                                      plan.rotate, plan.side_bots], queue="sim")
               for c in chunks]
    deadline = time.monotonic() + timeout
    while pending:
        still = []
        for result in pending:
            if result.ready():
                done(result.get(disable_sync_subtasks=False))
                result.forget()
            else:
                still.append(result)
        pending = still
        if pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(pending)} simulation tasks did not finish in time")
            time.sleep(0.02)
