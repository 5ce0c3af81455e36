"""Connecting to Redis: a standalone server or a Redis Cluster, found out at start.

ARBITER_REDIS_URL names one node, or several seed nodes of one cluster separated by commas:

    redis://:secret@redis-0:6379/0,redis-1:6379,redis-2:6379

An item without a scheme ("host:port") takes the first URL's scheme, credentials and
database; an item with one ("redis://...", "rediss://...") is used as written (a comma in a
password is written %2C). The process starts as soon as one seed answers, whichever it is:
a cluster client learns the whole cluster from that node and then follows its topology, so
one dead node (the first named included) stops no process from starting. Several seeds are
for a cluster: a standalone Redis answering among several is refused, since its replicas
(the other seeds) cannot take writes.

Every call has a timeout (ARBITER_REDIS_TIMEOUT seconds, default 2) and is retried at most
RETRIES times: with Redis hung, a call fails within about (1 + RETRIES) timeouts (plus a
cluster client's refresh of its slot map, which asks a node that still answers first), and
the store reports it as unavailable instead of waiting for good. redis-py's own default
(10 retries with backoff) let one call on a hung cluster node take over 20 s.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
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


def with_address(url: str, host: str, port: int) -> str:
    """`url` (its scheme, credentials, database and options) for another node."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return urlunsplit(parts._replace(netloc=f"{credentials}@{address}" if credentials
                                     else address))


def address(url: str) -> str:
    """host:port of a node's URL, without its credentials (for messages and logs)."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 6379}"


def seeds(url: str) -> list[str]:
    """The nodes that ARBITER_REDIS_URL names, each as a full URL (see the module's text)."""
    items = [item.strip() for item in url.split(",") if item.strip()]
    if not items or "://" not in items[0]:
        raise ValueError(f"ARBITER_REDIS_URL must start with a redis:// or rediss:// URL, "
                         f"not {address(items[0]) if items else 'nothing'}")
    found = [items[0]]
    for item in items[1:]:
        if "://" in item:
            found.append(item)
            continue
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"ARBITER_REDIS_URL: seed {item!r} is neither a URL nor host:port")
        found.append(with_address(items[0], host.strip("[]"), int(port)))
    return found


def first_answering(url: str, timeout: float | None = None) -> tuple[str, bool]:
    """The first seed of `url` that answers, and whether it is a Redis Cluster member; a
    ConnectionError naming each seed's failure when none does."""
    timeout = redis_timeout() if timeout is None else timeout
    nodes = seeds(url)
    failures = []
    for seed in nodes:
        probe = redis.Redis.from_url(seed, socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            cluster = bool(probe.info("cluster").get("cluster_enabled"))
        except (redis.ConnectionError, redis.TimeoutError, OSError) as e:
            failures.append(f"{address(seed)}: {e}")
            continue
        finally:
            probe.close()
        if not cluster and len(nodes) > 1:
            raise redis.ConnectionError(
                f"ARBITER_REDIS_URL names {len(nodes)} nodes, but {address(seed)} is a "
                "standalone Redis: several seeds are for the nodes of one Redis Cluster "
                "(name a standalone Redis alone)")
        return seed, cluster
    raise redis.ConnectionError("no node of ARBITER_REDIS_URL answers: " + "; ".join(failures))


def is_cluster(url: str, timeout: float | None = None) -> bool:
    """Whether the nodes of `url` form a Redis Cluster (asked once, at start)."""
    return first_answering(url, timeout)[1]


def connect(url: str, max_connections: int = 256, timeout: float | None = None) -> Any:
    """An asyncio client for `url`: a cluster client when its nodes are cluster members,
    which knows every seed (it asks another when one fails to answer for its slot map).

    Typed as Any: redis-py's stubs do not know that replies are bytes here.
    """
    timeout = redis_timeout() if timeout is None else timeout
    seed, cluster = first_answering(url, timeout)
    if cluster:
        others = [ClusterNode(urlsplit(s).hostname or "", urlsplit(s).port or 6379)
                  for s in seeds(url) if s != seed]
        return RedisCluster.from_url(seed, startup_nodes=others, max_connections=max_connections,
                                     retry=_retry(), socket_timeout=timeout,
                                     socket_connect_timeout=timeout)
    return aioredis.Redis.from_url(seed, max_connections=max_connections, retry=_retry(),
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
