"""The workers inside the server process: read models for ListGames, snapshots for loading,
in-process projections and deadlines (services/process.py wires them to the host).

    ARBITER_PROJECTIONS   inprocess (default): this server also consumes the feeds;
                          external: separate `arbiter workers projections` processes do;
                          ListGames then reads what they have written (eventually consistent)
    ARBITER_DEADLINES     inprocess (default) | external (`arbiter workers deadlines`)
    ARBITER_SNAPSHOT_EVERY  versions between snapshots (default 200)
    ARBITER_IDLE_SECONDS  hand an idle human seat to its bot after this long (default 0: never)
    ARBITER_AI_RESCUE_SECONDS  play a lost AI turn from the scheduler after this long (30)
    ARBITER_BROKER_URL    set: AI turns go to Celery (queue `ai`); unset: they run in process
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from arbiter.v1 import arbiter_pb2 as apb

from services.core.host import Host
from services.core.store import Store, StoreOnRedis
from services.workers.deadlines import MemoryDeadlines, RedisDeadlines, Scheduler
from services.workers.projections import InProcessProjections, ProjectionWorker
from services.workers.readmodel import (
    Cursor,
    MemoryReadModel,
    ReadModel,
    RedisReadModel,
    status_filter,
)

log = logging.getLogger("arbiter.workers")


def _mode(env: dict[str, str], name: str) -> str:
    """inprocess or external; a typo must not quietly turn a server's workers off."""
    mode = env.get(name, "") or "inprocess"
    if mode not in ("inprocess", "external"):
        raise ValueError(f"{name} must be inprocess or external, not {mode!r}")
    return mode


def read_model_of(store: Store) -> ReadModel:
    """Where a server's workers keep ListGames' summaries and the snapshots: beside the events
    on Redis, else in memory."""
    if isinstance(store, StoreOnRedis):
        return RedisReadModel(store.workers_redis())
    return MemoryReadModel()


class Workers:
    """A server's projections (into `rm`) and deadlines, for its host."""

    def __init__(self, host: Host, rm: ReadModel | None = None,
                 env: dict[str, str] | None = None) -> None:
        env = dict(os.environ if env is None else env)
        self.host = host
        self.mode = _mode(env, "ARBITER_PROJECTIONS")
        self.deadlines_mode = _mode(env, "ARBITER_DEADLINES")
        self.idle_seconds = float(env.get("ARBITER_IDLE_SECONDS", "0") or 0)
        snapshot_every = int(env.get("ARBITER_SNAPSHOT_EVERY", "200"))
        store = host.store
        self.rm = rm or read_model_of(store)
        self.projections: InProcessProjections | ProjectionWorker | None
        queue: MemoryDeadlines | RedisDeadlines
        if isinstance(store, StoreOnRedis):
            queue = RedisDeadlines(store.workers_redis())
            self.projections = (ProjectionWorker(store, self.rm, host.games,
                                                 snapshot_every=snapshot_every)
                                if self.mode == "inprocess" else None)
        else:
            queue = MemoryDeadlines()
            self.projections = InProcessProjections(store, self.rm, host.games, snapshot_every)
        self.deadlines = Scheduler(queue, host, self.idle_seconds)
        if self.projections is not None:
            self.projections.projector.listeners.append(self.deadlines.schedule_for)
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []

    async def list_games(self, request: apb.ListGamesRequest, after: Cursor | None, size: int
                         ) -> tuple[list[apb.GameSummary], Cursor | None]:
        """One page of the read model's summaries, and where the next page starts."""
        if self.projections is not None:
            await self.projections.catch_up()  # read-your-writes on a single server
        return await self.rm.page(request.game, status_filter(request.status),
                                  request.seat_name, after, size)

    async def start(self) -> None:
        if self.projections is not None:
            self._tasks.append(asyncio.create_task(self.projections.run(self._stop)))
        if self.deadlines_mode == "inprocess":
            self._tasks.append(asyncio.create_task(self.deadlines.run(self._stop)))

    async def stop(self) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
