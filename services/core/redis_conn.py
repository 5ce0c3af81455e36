"""Connecting to Redis: a standalone server or any node of a Redis Cluster, found out at start.

Every call has a timeout (ARBITER_REDIS_TIMEOUT seconds, default 2): with Redis hung, a call
fails with a timeout that the store reports as unavailable, instead of waiting for good.
Nothing in the server may block on a pooled connection longer than that.
"""

from __future__ import annotations

import os
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

DEFAULT_TIMEOUT = 2.0


def redis_timeout() -> float:
    return float(os.environ.get("ARBITER_REDIS_TIMEOUT", "") or DEFAULT_TIMEOUT)


def is_cluster(url: str, timeout: float | None = None) -> bool:
    """Whether the node at `url` is a member of a Redis Cluster (asked once, at start)."""
    timeout = redis_timeout() if timeout is None else timeout
    probe = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        return bool(probe.info("cluster").get("cluster_enabled"))
    finally:
        probe.close()


def connect(url: str, max_connections: int = 256, timeout: float | None = None) -> Any:
    """An asyncio client for `url`: a cluster client when the node is a cluster member.

    Typed as Any: redis-py's stubs do not know that replies are bytes here.
    """
    timeout = redis_timeout() if timeout is None else timeout
    if is_cluster(url, timeout):
        return RedisCluster.from_url(url, max_connections=max_connections,
                                     socket_timeout=timeout, socket_connect_timeout=timeout)
    return aioredis.Redis.from_url(url, max_connections=max_connections,
                                   socket_timeout=timeout, socket_connect_timeout=timeout)
