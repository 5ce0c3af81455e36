"""Connecting to Redis: a standalone server or any node of a Redis Cluster, found out at start.

Every call has a timeout (ARBITER_REDIS_TIMEOUT seconds, default 2) and is retried at most
RETRIES times: with Redis hung, a call fails within about (1 + RETRIES) timeouts (plus a
cluster client's refresh of its slot map, which asks a node that still answers first), and
the store reports it as unavailable instead of waiting for good. redis-py's own default
(10 retries with backoff) let one call on a hung cluster node take over 20 s.
"""

from __future__ import annotations

import os
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

DEFAULT_TIMEOUT = 2.0
# One retry rides over a connection that a restarted node closed, or a slot that moved to
# another master at a failover; more would only stretch the time a hung node holds a call.
RETRIES = 1


def redis_timeout() -> float:
    return float(os.environ.get("ARBITER_REDIS_TIMEOUT", "") or DEFAULT_TIMEOUT)


def _retry() -> Retry:
    return Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.1), RETRIES)


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
        return RedisCluster.from_url(url, max_connections=max_connections, retry=_retry(),
                                     socket_timeout=timeout, socket_connect_timeout=timeout)
    return aioredis.Redis.from_url(url, max_connections=max_connections, retry=_retry(),
                                   socket_timeout=timeout, socket_connect_timeout=timeout)


def node_client(cluster: Any, host: str, port: int, max_connections: int = 64) -> Any:
    """A plain client for one node of `cluster`, with the cluster client's credentials and
    timeouts: for what must run on one connection of that node (an append and its WAIT)."""
    kwargs = cluster.get_connection_kwargs()
    return aioredis.Redis(
        host=host, port=port, username=kwargs.get("username"), password=kwargs.get("password"),
        socket_timeout=kwargs.get("socket_timeout"),
        socket_connect_timeout=kwargs.get("socket_connect_timeout"),
        max_connections=max_connections, retry=Retry(ExponentialWithJitterBackoff(), 0))
