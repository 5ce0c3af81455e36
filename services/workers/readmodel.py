"""Read models: what the projection workers build from the event streams.

Everything here is derived data: it can be dropped and rebuilt from the streams at any time
(`arbiter replay --rebuild`). Each game's read-model record remembers the version it reflects;
a write names the version it was computed from and the version it reaches, and is applied
only if the record is still at the first (compare-and-set, in one script), so every event is
counted exactly once however often a feed entry is delivered.

Redis keys (one hash tag, `{rm}`, so the write script touches one slot):

    arbiter:{rm}:game:<id>        hash: v (version reflected), summary (GameSummary bytes),
                                  status ("active" | "finished")
    arbiter:{rm}:idx:<g>:<s>      zset of game ids by creation time (ms); <g> a game name or
                                  "*", <s> "active", "finished" or "*"
    arbiter:{rm}:seat:<name>      zset of the games a seat name sits in, by creation time
    arbiter:{rm}:stats:<game>     hash of integer counters (see `Projector` for the fields)
    arbiter:{rm}:snap:<id>        hash: v, fp (rules fingerprint), state (pickle)

`MemoryReadModel` keeps the same records in process, for the embedded store.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from arbiter.v1 import arbiter_pb2 as apb

from services.core.decider import Game

PREFIX = "arbiter:{rm}"
STATUSES = ("active", "finished")


@dataclass
class Update:
    """One compare-and-set write of a game's read models."""

    game_id: str
    game: str
    from_version: int
    to_version: int
    created_unix_ms: int
    status: str  # "active" | "finished"
    seat_names: list[str]
    summary: bytes
    stats: Mapping[str, int] = field(default_factory=dict)
    snapshot: tuple[int, str, bytes] | None = None  # (version, fingerprint, pickled state)


@dataclass(frozen=True)
class Snapshot:
    version: int
    fingerprint: str
    state: bytes


class ReadModel(Protocol):
    async def version(self, game_id: str) -> int: ...

    async def apply(self, update: Update) -> tuple[str, int]:
        """("ok" | "stale" | "gap", the version the record is at after the call)."""
        ...

    async def snapshot(self, game_id: str) -> Snapshot | None: ...

    async def page(self, game: str, status: str, seat_name: str, offset: int, size: int
                   ) -> tuple[list[apb.GameSummary], int]:
        """One page of summaries, newest first, and how many match in all."""
        ...

    async def stats(self, game: str) -> dict[str, int]: ...

    async def drop(self) -> None:
        """Delete every read model (before a rebuild)."""
        ...

    async def dump(self) -> dict[str, Any]:
        """Everything, as plain values (to compare two read models)."""
        ...


_FINGERPRINTS: dict[str, str] = {}


def fingerprint(game: Game) -> str:
    """A hash of the game's rules, code and data: a snapshot is used only by the rules that
    wrote it."""
    if game.name not in _FINGERPRINTS:
        _FINGERPRINTS[game.name] = _fingerprint(game)
    return _FINGERPRINTS[game.name]


def _fingerprint(game: Game) -> str:
    module = __import__(game.evolve.__module__, fromlist=["_"])
    path = getattr(module, "__file__", None) or ""
    folder = os.path.dirname(path)
    h = hashlib.sha256(game.name.encode())
    if os.path.basename(folder) == game.name:  # services/<game>/: its modules and data files
        files = sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".py"))
        data = os.path.join(folder, "data")  # cards, levels, chapters: evolve reads them too
        files += sorted(os.path.join(root, n) for root, _, names in os.walk(data) for n in names)
    else:  # a game defined in one module (the tests' toy game)
        files = [path] if path else []
    for name in files:
        with open(name, "rb") as f:
            h.update(os.path.relpath(name, folder).encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def status_name(summary: apb.GameSummary) -> str:
    return "finished" if summary.status == apb.FINISHED else "active"


def status_filter(status: int) -> str:
    return {apb.ACTIVE: "active", apb.FINISHED: "finished"}.get(status, "*")


# ---- Redis -----------------------------------------------------------------------------

# KEYS: game, stats, snap, idx *:*, idx g:*, idx *:s, idx g:s, idx *:other, idx g:other,
#       seat zsets...
# ARGV: from, to, game id, created, summary, status, snap v (0: none), snap fp, snap state,
#       n, then n (field, increment) pairs.
APPLY = """
local cur = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
local from_v = tonumber(ARGV[1])
local to_v = tonumber(ARGV[2])
if cur >= to_v then return {'stale', cur} end
if cur ~= from_v then return {'gap', cur} end
redis.call('HSET', KEYS[1], 'v', to_v, 'summary', ARGV[5], 'status', ARGV[6])
local id = ARGV[3]
local created = tonumber(ARGV[4])
for i = 4, 7 do redis.call('ZADD', KEYS[i], created, id) end
redis.call('ZREM', KEYS[8], id)
redis.call('ZREM', KEYS[9], id)
for i = 10, #KEYS do redis.call('ZADD', KEYS[i], created, id) end
if tonumber(ARGV[7]) > 0 then
  redis.call('HSET', KEYS[3], 'v', ARGV[7], 'fp', ARGV[8], 'state', ARGV[9])
end
local n = tonumber(ARGV[10])
for i = 1, n do
  redis.call('HINCRBY', KEYS[2], ARGV[9 + 2 * i], ARGV[10 + 2 * i])
end
return {'ok', to_v}
"""


# KEYS: any key of the read models (it names their slot). ARGV: the pattern of their keys.
# One script, so no write lands between finding the keys and deleting them: a write a live
# worker made in between would lose its index entries and counts but keep its record, and
# the rebuild would then find that record current and skip the game.
DROP = """
local keys = redis.call('KEYS', ARGV[1])
for i = 1, #keys, 1000 do
  redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys)))
end
return #keys
"""


def _k(*parts: str) -> str:
    return ":".join((PREFIX, *parts))


class RedisReadModel:
    """The read models in Redis. `prefix` is "arbiter:{rm}" (tests use their own)."""

    def __init__(self, url_or_client: Any, prefix: str = PREFIX) -> None:
        self.prefix = prefix
        if isinstance(url_or_client, str):
            import redis.asyncio as aioredis

            self.redis: Any = aioredis.Redis.from_url(url_or_client)
        else:
            self.redis = url_or_client
        self._apply = self.redis.register_script(APPLY)
        self._drop = self.redis.register_script(DROP)

    def _k(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    async def version(self, game_id: str) -> int:
        return int(await self.redis.hget(self._k("game", game_id), "v") or 0)

    async def apply(self, u: Update) -> tuple[str, int]:
        other = "finished" if u.status == "active" else "active"
        k = self._k
        keys = [k("game", u.game_id), k("stats", u.game), k("snap", u.game_id),
                k("idx", "*", "*"), k("idx", u.game, "*"), k("idx", "*", u.status),
                k("idx", u.game, u.status), k("idx", "*", other), k("idx", u.game, other)]
        keys += [k("seat", name) for name in sorted(set(u.seat_names))]
        snap_v, snap_fp, snap_state = u.snapshot or (0, "", b"")
        args: list[Any] = [u.from_version, u.to_version, u.game_id, u.created_unix_ms,
                           u.summary, u.status, snap_v, snap_fp, snap_state, len(u.stats)]
        for field_name, n in sorted(u.stats.items()):
            args += [field_name, n]
        status, current = await self._apply(keys=keys, args=args)
        return status.decode(), int(current)

    async def snapshot(self, game_id: str) -> Snapshot | None:
        raw = await self.redis.hgetall(self._k("snap", game_id))
        if not raw:
            return None
        return Snapshot(int(raw[b"v"]), raw[b"fp"].decode(), raw[b"state"])

    async def page(self, game: str, status: str, seat_name: str, offset: int, size: int
                   ) -> tuple[list[apb.GameSummary], int]:
        base = self._k("idx", game or "*", status or "*")
        if not seat_name:
            total = await self.redis.zcard(base)
            ids = await self.redis.zrevrange(base, offset, offset + size - 1)
        else:
            ids = await self.redis.zrevrange(self._k("seat", seat_name), 0, -1)
            if ids and base != self._k("idx", "*", "*"):
                scores = await self.redis.zmscore(base, ids)
                ids = [i for i, s in zip(ids, scores, strict=True) if s is not None]
            total = len(ids)
            ids = ids[offset : offset + size]
        return await self._summaries([i.decode() for i in ids]), total

    async def _summaries(self, ids: Sequence[str]) -> list[apb.GameSummary]:
        if not ids:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for i in ids:
                pipe.hget(self._k("game", i), "summary")
            raw = await pipe.execute()
        return [apb.GameSummary.FromString(r) for r in raw if r is not None]

    async def stats(self, game: str) -> dict[str, int]:
        raw = await self.redis.hgetall(self._k("stats", game))
        return {k.decode(): int(v) for k, v in raw.items()}

    async def _keys(self) -> list[bytes]:
        return [k async for k in self.redis.scan_iter(match=f"{self.prefix}:*", count=1000)]

    async def drop(self) -> None:
        # Atomic, at the price of blocking Redis while it runs (KEYS: about 40 ms per
        # million keys in the database, then the deletes).
        await self._drop(keys=[self._k("idx", "*", "*")], args=[f"{self.prefix}:*"])

    async def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in sorted(await self._keys()):
            kind = (await self.redis.type(key)).decode()
            if kind == "hash":
                out[key.decode()] = {k.decode(): v for k, v in
                                     (await self.redis.hgetall(key)).items()}
            elif kind == "zset":
                out[key.decode()] = [(m.decode(), s) for m, s in
                                     await self.redis.zrange(key, 0, -1, withscores=True)]
        return out

    async def close(self) -> None:
        await self.redis.aclose()


# ---- in process ------------------------------------------------------------------------


class MemoryReadModel:
    """The same read models in process (for the embedded store); the same key names."""

    def __init__(self) -> None:
        self.hashes: dict[str, dict[str, Any]] = {}
        self.zsets: dict[str, dict[str, float]] = {}

    async def version(self, game_id: str) -> int:
        return int(self.hashes.get(_k("game", game_id), {}).get("v", 0))

    async def apply(self, u: Update) -> tuple[str, int]:
        record = self.hashes.setdefault(_k("game", u.game_id), {})
        cur = int(record.get("v", 0))
        if cur >= u.to_version:
            return "stale", cur
        if cur != u.from_version:
            return "gap", cur
        record.update(v=u.to_version, summary=u.summary, status=u.status)
        other = "finished" if u.status == "active" else "active"
        for key in (_k("idx", "*", "*"), _k("idx", u.game, "*"), _k("idx", "*", u.status),
                    _k("idx", u.game, u.status), *(_k("seat", n) for n in u.seat_names)):
            self.zsets.setdefault(key, {})[u.game_id] = float(u.created_unix_ms)
        for key in (_k("idx", "*", other), _k("idx", u.game, other)):
            self.zsets.get(key, {}).pop(u.game_id, None)
        if u.snapshot:
            v, fp, state = u.snapshot
            self.hashes[_k("snap", u.game_id)] = {"v": v, "fp": fp, "state": state}
        stats = self.hashes.setdefault(_k("stats", u.game), {})
        for k, n in u.stats.items():
            stats[k] = int(stats.get(k, 0)) + n
        return "ok", u.to_version

    async def snapshot(self, game_id: str) -> Snapshot | None:
        raw = self.hashes.get(_k("snap", game_id))
        return Snapshot(int(raw["v"]), raw["fp"], raw["state"]) if raw else None

    def _newest_first(self, key: str) -> list[str]:
        members = self.zsets.get(key, {})
        return [m for m, _ in sorted(members.items(), key=lambda ms: (ms[1], ms[0]),
                                     reverse=True)]

    async def page(self, game: str, status: str, seat_name: str, offset: int, size: int
                   ) -> tuple[list[apb.GameSummary], int]:
        base = _k("idx", game or "*", status or "*")
        if seat_name:
            allowed = self.zsets.get(base, {})
            ids = [i for i in self._newest_first(_k("seat", seat_name)) if i in allowed]
        else:
            ids = self._newest_first(base)
        page = ids[offset : offset + size]
        return [apb.GameSummary.FromString(self.hashes[_k("game", i)]["summary"])
                for i in page], len(ids)

    async def stats(self, game: str) -> dict[str, int]:
        return {k: int(v) for k, v in self.hashes.get(_k("stats", game), {}).items()}

    async def drop(self) -> None:
        self.hashes.clear()
        self.zsets.clear()

    async def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, h in self.hashes.items():
            out[key] = {k: v if isinstance(v, bytes) else str(v).encode() for k, v in h.items()}
        for key, z in self.zsets.items():
            if z:
                out[key] = sorted(z.items(), key=lambda ms: (ms[1], ms[0]))
        return dict(sorted(out.items()))

    async def close(self) -> None:
        return None


def ids_of(summaries: Iterable[apb.GameSummary]) -> list[str]:
    return [s.game_id for s in summaries]
