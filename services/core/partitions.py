"""Partitions: how games spread over a store's shards.

A game belongs to one of PARTITIONS partitions (by a hash of its id). On Redis every key of a
partition shares one hash tag, so an append (the game's stream, command index, metadata and the
partition's feed) is one script on one slot. The tags are chosen so that partition p lands in
the p-th of PARTITIONS equal slices of Redis Cluster's 16,384 slots: a cluster whose masters
own equal contiguous slot ranges (what `redis-cli --cluster create` makes) gets
PARTITIONS / masters partitions on each master, within one, for any number of masters up to
PARTITIONS. 256 keeps that within 10% for up to 25 masters and within 20% up to 50, while a
projection worker still reads every feed in a few pipelined round trips.
"""

from __future__ import annotations

import zlib
from functools import cache

from redis.crc import key_slot

PARTITIONS = 256
SLOTS = 16384


def partition_of(game_id: str) -> int:
    return zlib.crc32(game_id.encode()) % PARTITIONS


@cache
def partition_tag(partition: int) -> str:
    """The hash tag of a partition: "p<n>.<k>", the first k whose slot is in the n-th slice."""
    lo, hi = partition * SLOTS // PARTITIONS, (partition + 1) * SLOTS // PARTITIONS
    k = 0
    while not lo <= key_slot(f"p{partition}.{k}".encode()) < hi:
        k += 1
    return f"p{partition}.{k}"
