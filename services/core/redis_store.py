"""The event store on Redis Streams: what a deployment uses.

Keys of one game share a hash tag with its partition feed, so one script touches one slot
and the layout works on Redis Cluster:

    arbiter:{p<n>}:log:<game>    stream, entry id "<version>-0", field e = LogEntry bytes
    arbiter:{p<n>}:cmd:<game>    hash, command id -> "<first>:<last>"
    arbiter:{p<n>}:meta:<game>   hash, version, game, seed, seat token hashes...
    arbiter:{p<n>}:feed          stream, one entry per appended batch (g, first, last)

Every append also publishes "<game> <last version>" on the channel arbiter:live (LIVE_CHANNEL):
a doorbell for the live hubs (services/core/live.py), which then read the log itself.

Nothing is ever trimmed: the streams are the source of truth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError

from services.core.store import Appended, Conflict, FeedEntry, StoreUnavailable, partition_of

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
DOWN = (RedisConnectionError, RedisTimeoutError, OutOfMemoryError, ReadOnlyError, OSError)


def _tag(game_id: str) -> str:
    return f"arbiter:{{p{partition_of(game_id)}}}"


def log_key(game_id: str) -> str:
    return f"{_tag(game_id)}:log:{game_id}"


def feed_key(partition: int) -> str:
    return f"arbiter:{{p{partition}}}:feed"


class RedisStore:
    def __init__(self, url: str) -> None:
        # Typed as Any: redis-py's stubs do not know that replies are bytes here.
        self.redis: Any = aioredis.Redis.from_url(url, max_connections=256)
        self.url = url  # the live hub's doorbell subscribes on a connection of its own
        self._append = self.redis.register_script(APPEND)

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
        args: list[bytes | str | int] = [expected_version, command_id, game_id, len(entries)]
        args.extend(entries)
        for k, v in (meta or {}).items():
            args.extend((k, v))
        try:
            status, value = await self._append(keys=self._keys(game_id), args=args)
        except DOWN as e:
            raise StoreUnavailable(str(e)) from e
        if status == b"conflict":
            raise Conflict(int(value))
        first, last = (int(x) for x in value.split(b":"))
        return Appended(first, last, duplicate=status == b"duplicate")

    async def read(self, game_id: str, after: int = 0, limit: int = 0) -> list[bytes]:
        try:
            if limit:
                rows = await self.redis.xrange(log_key(game_id), f"({after}-0", "+", count=limit)
            else:
                rows = await self.redis.xrange(log_key(game_id), f"({after}-0", "+")
        except DOWN as e:
            raise StoreUnavailable(str(e)) from e
        return [fields[b"e"] for _, fields in rows]

    async def applied(self, game_id: str, command_id: str) -> tuple[int, int] | None:
        try:
            found = await self.redis.hget(self._keys(game_id)[1], command_id)
        except DOWN as e:
            raise StoreUnavailable(str(e)) from e
        if found is None:
            return None
        first, last = (int(x) for x in found.split(b":"))
        return first, last

    async def version(self, game_id: str) -> int:
        meta = await self.meta(game_id)
        return int(meta.get("version", 0))

    async def meta(self, game_id: str) -> dict[str, str]:
        try:
            raw = await self.redis.hgetall(self._keys(game_id)[2])
        except DOWN as e:
            raise StoreUnavailable(str(e)) from e
        return {k.decode(): v.decode() for k, v in raw.items()}

    async def game_ids(self) -> list[str]:
        try:
            ids = [key.decode().rsplit(":meta:", 1)[1] async for key in
                   self.redis.scan_iter(match="arbiter:{p*}:meta:*", count=1000)]
        except DOWN as e:
            raise StoreUnavailable(str(e)) from e
        return sorted(ids)

    async def read_feed(self, partition: int, after: str, count: int) -> list[FeedEntry]:
        start = f"({after}" if after else "-"
        try:
            rows = await self.redis.xrange(feed_key(partition), start, "+", count=count)
        except DOWN as e:
            raise StoreUnavailable(str(e)) from e
        return [
            FeedEntry(fid.decode(), f[b"g"].decode(), int(f[b"first"]), int(f[b"last"]))
            for fid, f in rows
        ]

    async def close(self) -> None:
        await self.redis.aclose()
