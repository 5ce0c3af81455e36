"""Shards: how the workers' shared keys (the game list's indexes, the deadline queues) spread
over a Redis Cluster, and one helper to send a command to many slots at once.

The per-game read models (version, summary, snapshot, statistics) live with their game's
partition (services/core/partitions.py): 256 slots spread evenly over the masters. The
indexes that ListGames pages through and the deadline queues are shared by many games, and a
reader must visit every shard of them, so they get fewer shards: SHARDS = 32.

Why 32: ListGames reads every index shard for each page (a few entries from each, see
`RedisReadModel.page`), and every deadline scheduler claims from every queue shard at each
tick, so the cost of a read grows with the shard count, while the write load on them is
small (an index entry is written when a game starts and when it ends; a deadline once per
turn). 32 keeps a page at 32 short range reads, pipelined per node, and still spreads the
shared keys over 32 slots: no hot slot, and each of up to 32 masters holds 32 / masters
shards, rounded up or down (10 or 11 on 3 masters).

Shard s uses the hash tag of partition s * PARTITIONS / SHARDS, so the shards are spaced
evenly over the slots like the partitions, and a shard sits in the slot range of the
partitions whose games it indexes (the same master, where masters own contiguous ranges).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from redis.asyncio.cluster import RedisCluster

from services.core.partitions import PARTITIONS, partition_of, partition_tag

SHARDS = 32


def shard_of(game_id: str) -> int:
    return partition_of(game_id) * SHARDS // PARTITIONS


def shard_tag(shard: int) -> str:
    return partition_tag(shard * PARTITIONS // SHARDS)


async def pipelined(redis: Any, method: str, calls: Iterable[Sequence[Any]],
                    raise_on_error: bool = True, **options: Any) -> list[Any]:
    """The command `method` once per argument list in `calls` (each with `options`), queued
    on a pipeline and sent together: one round trip on a standalone Redis, one per node
    (concurrently) on a cluster. Replies in order."""
    async with redis.pipeline(transaction=False) as pipe:
        for args in calls:
            getattr(pipe, method)(*args, **options)
        if not len(pipe):
            return []
        return list(await pipe.execute(raise_on_error=raise_on_error))


class ManySlots:
    """A Lua script run once per (keys, args), each call on its own slot: pipelined on a
    standalone Redis; on a cluster (whose pipelines refuse scripts) sent CONCURRENCY at a
    time. The script is loaded on every master first, and again if a node answers that it
    does not know it (a replica promoted since, a restart)."""

    CONCURRENCY = 32

    def __init__(self, redis: Any, script: str) -> None:
        self.redis, self.script = redis, script
        self.sha = ""

    async def __call__(self, calls: Sequence[tuple[Sequence[Any], Sequence[Any]]]
                       ) -> list[Any]:
        from redis.exceptions import NoScriptError

        replies: list[Any] = []
        for attempt in range(2):
            if not self.sha or attempt:
                self.sha = await self.redis.script_load(self.script)
            replies = await self._run(calls)
            if not any(isinstance(r, NoScriptError) for r in replies):
                break
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies

    async def _run(self, calls: Sequence[tuple[Sequence[Any], Sequence[Any]]]) -> list[Any]:
        if not isinstance(self.redis, RedisCluster):
            return await pipelined(self.redis, "evalsha",
                                   [(self.sha, len(keys), *keys, *args) for keys, args in calls],
                                   raise_on_error=False)
        replies: list[Any] = []
        for i in range(0, len(calls), self.CONCURRENCY):
            replies += await asyncio.gather(*(
                self.redis.evalsha(self.sha, len(keys), *keys, *args)
                for keys, args in calls[i : i + self.CONCURRENCY]), return_exceptions=True)
        return replies
