"""The event store on Redis Streams: what a deployment uses, on a standalone Redis or on a
Redis Cluster (`connect` finds out which).

Every key of a game carries its partition's hash tag (`partition_tag`), shared with the
partition's feed, so an append is one script on one slot and partitions spread evenly over
a cluster's masters:

    arbiter:{<tag>}:log:<game>    stream, entry id "<version>-0", field e = LogEntry bytes
    arbiter:{<tag>}:cmd:<game>    hash, command id -> "<first>:<last>" (a batch sent without
                                  one gets "append:<random>": a resent call finds it)
    arbiter:{<tag>}:meta:<game>   hash, version, game, seed, seat token hashes...
    arbiter:{<tag>}:feed          stream, one entry per appended batch (g, first, last)

<tag> is "p<n>.<k>" for partition n (services/core/partitions.py). Nothing is ever trimmed:
the streams are the source of truth.

With ARBITER_REDIS_WAIT_REPLICAS=N (N > 0) an append is answered only after N replicas of its
master acknowledged it (Redis WAIT, sent on the same connection right behind the script:
WAIT counts that connection's own writes). Fewer acknowledgements within half the Redis
timeout answer unavailable; the batch stays on the master, and a retry with the same command
id is answered from the command index after a WAIT of its own. That WAIT covers the first
batch even on another connection: Redis sets a connection's WAIT offset to the master's
offset after every command it runs, reads included.

Every append also publishes "<game> <last version>" on the channel arbiter:live (LIVE_CHANNEL),
in its script: the `Doorbells` layer, heard by one `RedisDoorbell` per process (the live hub's,
services/core/live.py), which then reads the log itself.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import (
    AskError,
    ClusterDownError,
    MovedError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from services.core.partitions import partition_tag
from services.core.redis_conn import (
    address,
    connect,
    node_client,
    redis_timeout,
    seeds,
    with_address,
)
from services.core.store import Appended, Conflict, FeedEntry, StoreUnavailable, partition_of

log = logging.getLogger("arbiter.live")

# KEYS: log, cmd, meta, feed. ARGV: expected, command id, game id, n, n entries, meta k/v...
# Every check happens before the first write.
APPEND = """
local expected = tonumber(ARGV[1])
local command_id = ARGV[2]
if command_id ~= '' then
  local seen = redis.call('HGET', KEYS[2], command_id)
  if seen then return {'duplicate', seen} end
end
local current = tonumber(redis.call('HGET', KEYS[3], 'version') or '0')
if current ~= expected then return {'conflict', tostring(current)} end
local n = tonumber(ARGV[4])
for i = 1, n do
  redis.call('XADD', KEYS[1], (current + i) .. '-0', 'e', ARGV[4 + i])
end
local last = current + n
local range = (current + 1) .. ':' .. last
local fields = {'version', last}
for i = 5 + n, #ARGV, 2 do
  fields[#fields + 1] = ARGV[i]
  fields[#fields + 1] = ARGV[i + 1]
end
redis.call('HSET', KEYS[3], unpack(fields))
if command_id ~= '' then redis.call('HSET', KEYS[2], command_id, range) end
redis.call('XADD', KEYS[4], '*', 'g', ARGV[3], 'first', current + 1, 'last', last)
redis.call('PUBLISH', 'arbiter:live', ARGV[3] .. ' ' .. last)
return {'ok', range}
"""


LIVE_CHANNEL = "arbiter:live"  # the channel APPEND publishes on

# The store cannot take the call now; nothing was written (a script stops at its first write
# when Redis is out of memory or a read-only replica), so the same command id can be retried.
# The cluster's errors are those of a failover in progress (a slot moving, no master yet).
DOWN = (RedisConnectionError, RedisTimeoutError, OutOfMemoryError, ReadOnlyError, OSError,
        ClusterDownError, TryAgainError, MovedError, AskError, RedisClusterException)


def _lost_connection(error: BaseException) -> bool:
    """redis-py 8.1 lets a write on a connection closed under it (a node gone, or the cluster
    client closing its connections at a failover) escape as AttributeError or TypeError
    (redis/redis-py#4287): a lost connection like any other when it comes from there."""
    tb = error.__traceback__
    while tb is not None:
        if f"{os.sep}redis{os.sep}asyncio{os.sep}" in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


@contextmanager
def unavailable() -> Iterator[None]:
    """Redis failures inside become StoreUnavailable (the same command id can be retried)."""
    try:
        yield
    except DOWN as e:
        raise StoreUnavailable(str(e)) from e
    except (AttributeError, TypeError) as e:
        if not _lost_connection(e):
            raise
        raise StoreUnavailable(f"the connection to Redis was lost: {e}") from e


def wait_replicas_from_env() -> int:
    return int(os.environ.get("ARBITER_REDIS_WAIT_REPLICAS", "") or 0)


def _tag(game_id: str) -> str:
    return f"arbiter:{{{partition_tag(partition_of(game_id))}}}"


def log_key(game_id: str) -> str:
    return f"{_tag(game_id)}:log:{game_id}"


def meta_key(game_id: str) -> str:
    return f"{_tag(game_id)}:meta:{game_id}"


def feed_key(partition: int) -> str:
    return f"arbiter:{{{partition_tag(partition)}}}:feed"


class RedisStore:
    """Every layer of `Store`, and `WorkerRedis` (store.py says what each guarantees)."""

    def __init__(self, url: str, wait_replicas: int | None = None,
                 timeout: float | None = None) -> None:
        self.timeout = redis_timeout() if timeout is None else timeout
        try:
            # Typed as Any: redis-py's stubs do not know that replies are bytes here.
            self.redis: Any = connect(url, timeout=self.timeout)
        except DOWN as e:
            # Whether it is a cluster node decides the client: nothing to do without it.
            raise StoreUnavailable(f"cannot reach Redis to start: {e}") from e
        except ValueError as e:  # ARBITER_REDIS_URL is not a list of nodes
            raise StoreUnavailable(str(e)) from e
        self.cluster = isinstance(self.redis, RedisCluster)
        self.wait_replicas = wait_replicas_from_env() if wait_replicas is None else wait_replicas
        self.closed = False
        self.url = url  # its seeds: the doorbell subscribes on a connection of its own
        self._append = self.redis.register_script(APPEND)
        self._nodes: dict[str, Any] = {}  # a cluster node's name -> a plain client (WAIT mode)

    def doorbell(self, ring: Callable[[str, int | None], None],
                 reconnected: Callable[[], None]) -> RedisDoorbell:
        """The `Doorbells` layer: a subscriber of its own to every server's appends."""
        return RedisDoorbell(self.url, ring, reconnected)

    def workers_redis(self) -> Any:
        """The `WorkerRedis` layer: this store's client, for the workers' keys."""
        return self.redis

    def _keys(self, game_id: str) -> list[str]:
        tag = _tag(game_id)
        return [f"{tag}:log:{game_id}", f"{tag}:cmd:{game_id}", f"{tag}:meta:{game_id}",
                f"{tag}:feed"]

    async def append(
        self,
        game_id: str,
        entries: Sequence[bytes],
        expected_version: int,
        command_id: str = "",
        meta: Mapping[str, str] | None = None,
    ) -> Appended:
        # The client resends a call whose reply timed out (or whose connection dropped); the
        # script may have run. A batch without a command id gets one of its own, so that the
        # resent script answers from the command index instead of a conflict with itself.
        command_id = command_id or f"append:{secrets.token_hex(8)}"
        args: list[bytes | str | int] = [expected_version, command_id, game_id, len(entries)]
        args.extend(entries)
        for k, v in (meta or {}).items():
            args.extend((k, v))
        keys = self._keys(game_id)
        with unavailable():
            if self.wait_replicas:
                status, value = await self._append_and_wait(keys, args)
            else:
                status, value = await self._append(keys=keys, args=args)
        if status == b"conflict":
            raise Conflict(int(value))
        first, last = (int(x) for x in value.split(b":"))
        return Appended(first, last, duplicate=status == b"duplicate")

    async def _append_and_wait(self, keys: list[str], args: list[bytes | str | int]
                               ) -> tuple[bytes, bytes]:
        """The script, then WAIT, on one connection of the master that holds the game."""
        client = await self._client_for(keys[0])
        pipe = client.pipeline(transaction=False)
        # EVAL, not EVALSHA: a pipeline cannot load a missing script halfway. Redis keeps the
        # compiled script by its hash, so only the text travels again.
        pipe.eval(APPEND, len(keys), *keys, *args)
        pipe.wait(self.wait_replicas, max(1, int(self.timeout * 500)))
        try:
            with unavailable():
                try:
                    (status, value), acked = await pipe.execute()
                except ResponseError as e:
                    if "UNBLOCKED" not in str(e):
                        raise
                    # A failover demoted the master while WAIT was blocked: the batch may
                    # be lost with it; the same command id may be resent.
                    raise StoreUnavailable(f"the master was demoted during WAIT: {e}") from e
        except StoreUnavailable:
            if self.cluster:
                await self._refresh(keys[0])
            raise
        if status != b"conflict" and acked < self.wait_replicas:
            raise StoreUnavailable(
                f"{acked} of {self.wait_replicas} replicas acknowledged the append in time")
        return status, value

    async def _client_for(self, key: str) -> Any:
        if not self.cluster:
            return self.redis
        await self.redis.initialize()
        node = self.redis.get_node_from_key(key)
        client = self._nodes.get(node.name)
        if client is None:
            client = self._nodes[node.name] = node_client(self.redis, node.host, node.port)
        return client

    async def _refresh(self, key: str) -> None:
        """Let the cluster client learn where `key` lives now (after a failover): a read
        through it follows a MOVED reply, or refreshes its slot map after a dead node."""
        try:
            with unavailable():
                await self.redis.exists(key)
        except StoreUnavailable:
            pass  # still failing over: the caller reports unavailable, the client retries

    async def read(self, game_id: str, after: int = 0, limit: int = 0) -> list[bytes]:
        with unavailable():
            if limit:
                rows = await self.redis.xrange(log_key(game_id), f"({after}-0", "+", count=limit)
            else:
                rows = await self.redis.xrange(log_key(game_id), f"({after}-0", "+")
        return [fields[b"e"] for _, fields in rows]

    async def applied(self, game_id: str, command_id: str) -> tuple[int, int] | None:
        with unavailable():
            found = await self.redis.hget(self._keys(game_id)[1], command_id)
        if found is None:
            return None
        first, last = (int(x) for x in found.split(b":"))
        return first, last

    async def version(self, game_id: str) -> int:
        meta = await self.meta(game_id)
        return int(meta.get("version", 0))

    async def meta(self, game_id: str) -> dict[str, str]:
        with unavailable():
            raw = await self.redis.hgetall(meta_key(game_id))
        return {k.decode(): v.decode() for k, v in raw.items()}

    async def game_ids(self) -> list[str]:
        """Every game, from every master of a cluster (the cluster client scans each)."""
        with unavailable():
            # "p*.*": this layout's tags only, not the 16 "{p<n>}" of the layout before it.
            ids = [raw.decode().rsplit(":meta:", 1)[1] async for raw in
                   self.redis.scan_iter(match="arbiter:{p*.*}:meta:*", count=1000)]
        return sorted(ids)

    async def read_feed(self, partition: int, after: str, count: int) -> list[FeedEntry]:
        start = f"({after}" if after else "-"
        with unavailable():
            rows = await self.redis.xrange(feed_key(partition), start, "+", count=count)
        return [
            FeedEntry(fid.decode(), f[b"g"].decode(), int(f[b"first"]), int(f[b"last"]))
            for fid, f in rows
        ]

    async def ping(self) -> bool:
        """Whether Redis answers now (every master of a cluster); never raises."""
        try:
            with unavailable():
                if self.cluster:
                    await self.redis.ping(target_nodes=RedisCluster.PRIMARIES)
                else:
                    await self.redis.ping()
        except StoreUnavailable:
            return False
        return True

    async def close(self) -> None:
        self.closed = True
        for client in self._nodes.values():
            await client.aclose()
        await self.redis.aclose()


# ---- the doorbell ------------------------------------------------------------------------

QUIET_SECONDS = 1.0  # the doorbell connection pings after this long without a message
MAP_SECONDS = 1.0  # on a cluster, the doorbell reads the cluster's map this often
# A node flagged so in the cluster's map is not worth a try (CLUSTER NODES flags).
UNUSABLE_FLAGS = {"fail", "fail?", "handshake", "noaddr"}


def live_nodes(cluster_nodes: str, seed: str) -> list[str]:
    """The URLs (`seed`'s scheme and credentials) of the nodes a CLUSTER NODES reply does
    not flag as failing or unreachable, in its order."""
    found = []
    for line in cluster_nodes.splitlines():
        fields = line.split()
        if len(fields) < 8 or UNUSABLE_FLAGS & set(fields[2].split(",")):
            continue
        if fields[7] != "connected" and "myself" not in fields[2]:
            continue  # the node asked cannot reach it either
        # ip:port@bus-port[,hostname[,aux=value...]]: a node's announced hostname outlives
        # its address (a Kubernetes pod that comes back elsewhere).
        endpoint, _, more = fields[1].partition(",")
        host, _, port = endpoint.split("@", 1)[0].rpartition(":")
        hostname = more.split(",", 1)[0]
        if hostname and "=" not in hostname:
            host = hostname
        if host and port.isdigit():
            found.append(with_address(seed, host, int(port)))
    return found


def masters(cluster_nodes: str) -> frozenset[tuple[str, str]]:
    """(node id, config epoch) of each master serving slots in a CLUSTER NODES reply: a
    failover (a replica promoted) changes it."""
    return frozenset((f[0], f[6]) for f in (line.split() for line in cluster_nodes.splitlines())
                     if len(f) > 8 and "master" in f[2].split(","))


class RedisDoorbell:
    """One plain Redis connection per process, SUBSCRIBEd to LIVE_CHANNEL.

    A PUBLISH reaches every subscriber (on Redis Cluster, every node forwards it to every
    other), so this one connection, to any one node, hears every server's appends. It has no
    read timeout (it is idle for as long as the games are): it pings when quiet, and moves
    when a ping goes unanswered within the Redis timeout or the connection fails. On a
    cluster it moves to another node of the cluster's map as last read (from the node it
    was on, at each subscribe), not flagged as failing, then to the seeds: the node it was
    on is tried last, so a dead or hung node holds it no longer than a ping's wait. After each
    (re)subscribe, `reconnected` makes the hub re-read every followed game's tail, so a ring
    lost meanwhile loses nothing. On a cluster it also calls `reconnected` when the cluster's
    masters change (a failover, read from the map every MAP_SECONDS): a failover may have
    lost the last appends of the old master, and the hub re-reading its games' tails finds
    out which of the entries it holds the store no longer does. `node` is the URL of the
    node it is subscribed on.
    """

    def __init__(self, url: str, ring: Callable[[str, int | None], None],
                 reconnected: Callable[[], None]) -> None:
        self.seeds = seeds(url)
        self.ring, self.reconnected = ring, reconnected
        self.task: asyncio.Task[None] | None = None
        self.subscribed = asyncio.Event()
        self.node = ""
        self.known: list[str] = []  # the cluster's live nodes, as last read
        self.masters: frozenset[tuple[str, str]] = frozenset()  # as last read

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        # Cancelled again until it is done: on Python 3.11 a cancellation that lands as an
        # awaited call completes can be lost (asyncio.wait_for), and the listener would then
        # wait on its subscription for ever, holding the stop with it.
        task, self.task = self.task, None
        while task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=0.5)

    def _candidates(self, failed: list[str]) -> list[str]:
        """Where to subscribe next: the known nodes and the seeds, those that failed last
        (most recent last) at the end."""
        order = list(dict.fromkeys(self.known + self.seeds))
        return [n for n in order if n not in failed] + [n for n in failed if n in order]

    async def _run(self) -> None:
        delay = 0.05
        failed: list[str] = []  # nodes whose subscription failed, the most recent last
        while True:
            for node in self._candidates(failed):
                try:
                    await self._subscribe_on(node)
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.warning("the live doorbell lost Redis node %s (%s); moving on",
                                address(node), e)
                    failed = [n for n in failed if n != node] + [node]
                    if self.node == node:  # it had been subscribed: try every node again
                        self.node = ""
                        delay = 0.05
                        break
            else:
                # Every node failed in turn: wait a little before the next round.
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    async def _subscribe_on(self, node: str) -> None:
        """Subscribe on `node` and listen there until it fails."""
        import redis.asyncio as aioredis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        timeout = redis_timeout()
        # No retries inside redis-py: a reconnect must go through `reconnected` here.
        client = aioredis.Redis.from_url(node, socket_timeout=None,
                                         socket_connect_timeout=timeout,
                                         retry=Retry(NoBackoff(), 0))
        pubsub = client.pubsub()
        try:
            try:
                await self._read_map(client, node, timeout)
            except ResponseError:
                self.known = []  # a standalone Redis: no map to follow
            await pubsub.subscribe(LIVE_CHANNEL)
            await self._confirmed(pubsub, timeout)
            self.node = node
            self.subscribed.set()
            self.reconnected()
            await self._listen(pubsub, client, timeout)
        finally:
            self.subscribed.clear()
            try:
                await pubsub.aclose()
                await client.aclose()
            except Exception:  # the connection is gone already
                pass

    async def _read_map(self, client: Any, node: str, timeout: float) -> bool:
        """Read the cluster's map from `node`: whether its masters changed since last read."""
        # Two words: redis-py parses "CLUSTER NODES" into a dict without the flags.
        reply = await asyncio.wait_for(client.execute_command("CLUSTER", "NODES"), timeout)
        nodes = reply.decode()
        self.known = live_nodes(nodes, node)
        now = masters(nodes)
        changed, self.masters = now != self.masters, now
        return changed

    @staticmethod
    async def _confirmed(pubsub: Any, timeout: float) -> None:
        """Until the node confirms the subscription: from then on it forwards every ring."""
        loop = asyncio.get_running_loop()
        until = loop.time() + timeout
        while loop.time() < until:
            message = await pubsub.get_message(timeout=max(0.0, until - loop.time()))
            if message is not None and message["type"] in (b"subscribe", "subscribe"):
                return
        raise ConnectionError("the node did not confirm the subscription in time")

    async def _listen(self, pubsub: Any, client: Any, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        heard = mapped = loop.time()
        pinged = False
        while True:
            message = await pubsub.get_message(timeout=QUIET_SECONDS if not pinged else timeout)
            now = loop.time()
            if self.known and now - mapped >= MAP_SECONDS:
                mapped = now
                if await self._read_map(client, self.node, timeout):
                    log.info("the Redis Cluster's masters changed (a failover): the streams "
                             "re-read what they hold")
                    self.reconnected()
            if message is not None:
                heard, pinged = now, False
                if message["type"] == b"message" or message["type"] == "message":
                    game_id, _, version = message["data"].decode().rpartition(" ")
                    self.ring(game_id, int(version) if version.isdigit() else None)
            elif pinged and now - heard >= QUIET_SECONDS + timeout:
                raise ConnectionError("the doorbell connection answers no ping")
            elif not pinged and now - heard >= QUIET_SECONDS:
                await pubsub.ping()
                pinged = True


# ---- the layout before 256 partitions ------------------------------------------------------

OLD_PARTITIONS = 16


def old_tag(game_id: str) -> str:
    """The hash tag of a game in stores written with 16 partitions: arbiter:{p<n>}."""
    return f"arbiter:{{p{zlib.crc32(game_id.encode()) % OLD_PARTITIONS}}}"


async def migrate_old_layout(store: RedisStore) -> tuple[int, int]:
    """Copy every game kept under the 16-partition tags to this layout: (copied, already
    there). The old keys stay until the operator deletes them; running it again copies what
    is missing. Each game's command index is written first, then its log, metadata and a feed
    entry in one append, so an interrupted run leaves no game half-copied, and projection
    workers pick the copies up from their partition feeds."""
    copied = present = 0
    with unavailable():
        metas = [raw.decode() async for raw in
                 store.redis.scan_iter(match="arbiter:{p*}:meta:*", count=1000)]
    for key in sorted(metas):
        tag, _, game_id = key.partition(":meta:")
        if tag != old_tag(game_id):
            continue  # a key of this layout ("{p<n>.<k>}")
        if await store.meta(game_id):
            present += 1
            continue
        with unavailable():
            meta = {k.decode(): v.decode()
                    for k, v in (await store.redis.hgetall(key)).items()}
            rows = await store.redis.xrange(f"{tag}:log:{game_id}", "-", "+")
            commands = await store.redis.hgetall(f"{tag}:cmd:{game_id}")
            if commands:
                await store.redis.hset(store._keys(game_id)[1], mapping=commands)
        meta.pop("version", None)
        await store.append(game_id, [fields[b"e"] for _, fields in rows], 0, "", meta)
        copied += 1
    return copied, present
