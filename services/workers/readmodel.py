"""Read models: what the projection workers build from the event streams.

Everything here is derived data: it can be dropped and rebuilt from the streams at any time
(`arbiter replay --rebuild`). Each game's record remembers the version it reflects; a write
names the version it was computed from and the version it reaches, and is applied only if the
record is still at the first (compare-and-set, in one script), so every event is counted
exactly once however often a feed entry is delivered.

Redis keys. A game's own read models sit in its partition's slot (tag t, the tag of its
event stream), in hashes with one field per game, so one script writes them together:

    arbiter:rm:{t}:version        hash: game id -> the version its read models reflect
    arbiter:rm:{t}:summary        hash: game id -> GameSummary bytes
    arbiter:rm:{t}:snapshot       hash: game id -> b"<version>\\n<fingerprint>\\n" + pickle
    arbiter:rm:{t}:stats:<game>   hash of integer counters (see `Projector` for the fields),
                                  per partition: `stats` adds them up
    arbiter:rm:{t}:stats-games    set: the game names with counters in this slot

The game list is indexed in SHARDS shards (tag s, see shards.py), one sorted set each, all
scores 0 so that it sorts by member (ZREVRANGEBYLEX pages it from a cursor):

    arbiter:rm:{s}:list           members "g|<game>|<status>|<created>|<id>" and
                                  "s|<len>|<seat name>|<game>|<status>|<created>|<id>",
                                  <game> a name or "*", <status> active, finished or "*",
                                  <created> the creation time in ms on 15 digits

A game's list entries are written when it starts and when it finishes (the only times they
change), before its record: a list entry may be ahead of the record, never behind it, and a
page drops what its summary contradicts. Finished is final: an "active" entry is never
written for a game the shard lists as finished, so two workers racing cannot revive it.

`MemoryReadModel` keeps the same read models in process, for the embedded store, with the
list sorted the same way (SortedList), so a page costs O(log n + page size) there too.
"""

from __future__ import annotations

import hashlib
import heapq
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from arbiter.v1 import arbiter_pb2 as apb
from sortedcontainers import SortedList

from services.core.decider import Game
from services.core.partitions import PARTITIONS, partition_of, partition_tag
from services.workers.shards import SHARDS, ManySlots, pipelined, shard_of, shard_tag

PREFIX = "arbiter:rm"
CREATED_DIGITS = 15

# Where a page starts: after the game created at this time (ms) with this id, newest first.
Cursor = tuple[int, str]


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

    @property
    def relists(self) -> bool:
        """Whether this write changes the game's list entries: its first, or a finished one."""
        return self.from_version == 0 or self.status == "finished"


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

    async def relist(self, update: Update) -> None:
        """Write the game's list entries again (idempotent): a rebuild's repair."""
        ...

    async def snapshot(self, game_id: str) -> Snapshot | None: ...

    async def page(self, game: str, status: str, seat_name: str, after: Cursor | None,
                   size: int) -> tuple[list[apb.GameSummary], Cursor | None]:
        """Up to `size` summaries, newest first, after `after`; and the cursor of the next
        page, None when this is the last."""
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


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _fingerprint(game: Game) -> str:
    """Hashes evolve's module and what the game says its state depends on, file by file."""
    module = __import__(game.evolve.__module__, fromlist=["_"])
    path = getattr(module, "__file__", None) or ""
    folder = os.path.dirname(path)
    if game.state_depends_on:
        paths = [path] + [os.path.join(ROOT, p) for p in game.state_depends_on]
    elif os.path.basename(folder) == game.name:  # services/<game>/: its modules and data
        paths = [os.path.join(folder, n) for n in os.listdir(folder)
                 if n.endswith(".py") or n == "data"]
    else:  # a game defined in a single module
        paths = [path] if path else []
    h = hashlib.sha256(game.name.encode())
    for name in sorted(_files(paths)):
        with open(name, "rb") as f:
            h.update(os.path.relpath(name, ROOT).encode() + b"\0" + f.read())
    return h.hexdigest()[:16]


def _files(paths: list[str]) -> Iterator[str]:
    for path in paths:
        if not os.path.isdir(path):
            yield path  # (a missing file fails here, not silently)
            continue
        for root, folders, names in os.walk(path):
            folders[:] = [f for f in folders if f != "__pycache__"]
            yield from (os.path.join(root, n) for n in names)


def status_filter(status: int) -> str:
    return {apb.ACTIVE: "active", apb.FINISHED: "finished"}.get(status, "*")


# ---- the list's entries ------------------------------------------------------------------


def list_prefix(game: str, status: str, seat_name: str = "") -> bytes:
    """The common start of the entries one ListGames filter pages through. Seat names are
    length-prefixed, so no name can run into the fields after it."""
    game, status = game or "*", status or "*"
    if seat_name:
        name = seat_name.encode()
        return b"s|%d|%s|%s|%s|" % (len(name), name, game.encode(), status.encode())
    return b"g|%s|%s|" % (game.encode(), status.encode())


def position(created_unix_ms: int, game_id: str) -> bytes:
    """What follows the prefix: sorts by creation time, then id (byte order, as Redis does)."""
    return b"%0*d|%s" % (CREATED_DIGITS, max(0, created_unix_ms), game_id.encode())


def cursor_of(position_bytes: bytes) -> Cursor:
    created, _, game_id = position_bytes.partition(b"|")
    return int(created), game_id.decode()


def list_entries(u: Update, status: str) -> list[tuple[bytes, bytes]]:
    """Every (list prefix, position) listing the game under `status`: with or without the
    game and status filters, with or without each seat name."""
    at = position(u.created_unix_ms, u.game_id)
    return [(list_prefix(game, st, name), at) for name in ["", *sorted(set(u.seat_names))]
            for game in ("*", u.game) for st in ("*", status)]


def changed_entries(u: Update) -> tuple[bytes, list[tuple[bytes, bytes]],
                                         list[tuple[bytes, bytes]]]:
    """(the entry whose presence makes this write stale, b"" for none; entries to add;
    entries to remove). A finished game's active entries go; an active listing is stale
    once the game is listed as finished."""
    if u.status == "finished":
        active = [e for e in list_entries(u, "active") if e[0].endswith(b"|active|")]
        return b"", list_entries(u, "finished"), active
    finished_mark = list_prefix("*", "finished") + position(u.created_unix_ms, u.game_id)
    return finished_mark, list_entries(u, "active"), []


def _consistent(summaries: Sequence[apb.GameSummary | None], status: str
                ) -> list[apb.GameSummary]:
    """The summaries a page shows: not those of games listed before their first record was
    written, nor those listed under a status their record has left (written in between)."""
    wanted = {"active": apb.ACTIVE, "finished": apb.FINISHED}.get(status)
    return [s for s in summaries if s is not None and (wanted is None or s.status == wanted)]


def _snapshot_blob(snapshot: tuple[int, str, bytes] | None) -> bytes:
    if snapshot is None:
        return b""
    v, fp, state = snapshot
    return b"%d\n%s\n" % (v, fp.encode()) + state


def _parse_snapshot(blob: bytes | None) -> Snapshot | None:
    if not blob:
        return None
    v, fp, state = blob.split(b"\n", 2)
    return Snapshot(int(v), fp.decode(), state)


# ---- Redis -----------------------------------------------------------------------------

# The game's own read models, in its partition's slot.
# KEYS: version, summary, snapshot, stats, stats-games.
# ARGV: from, to, game id, summary, snapshot blob ("": none), game name, n, n (field, +n).
APPLY = """
local id = ARGV[3]
local cur = tonumber(redis.call('HGET', KEYS[1], id) or '0')
local from_v = tonumber(ARGV[1])
local to_v = tonumber(ARGV[2])
if cur >= to_v then return {'stale', cur} end
if cur ~= from_v then return {'gap', cur} end
redis.call('HSET', KEYS[1], id, to_v)
redis.call('HSET', KEYS[2], id, ARGV[4])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[3], id, ARGV[5]) end
local n = tonumber(ARGV[7])
if n > 0 then redis.call('SADD', KEYS[5], ARGV[6]) end
for i = 1, n do
  redis.call('HINCRBY', KEYS[4], ARGV[6 + 2 * i], ARGV[7 + 2 * i])
end
return {'ok', to_v}
"""

# The game's list entries, in its shard's slot. KEYS: the list.
# ARGV: an entry whose presence makes the write stale ("" for none: the game listed as
# finished, for an active listing), the number of entries to add, those, then those to remove.
LIST = """
local adding = tonumber(ARGV[2])
if ARGV[1] ~= '' and redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
for i = 3, 2 + adding do redis.call('ZADD', KEYS[1], 0, ARGV[i]) end
for i = 3 + adding, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
return 1
"""

# Drops one partition slot's read models at once. KEYS: version, summary, snapshot,
# stats-games. ARGV: the start of its stats keys' names (the game name follows).
DROP = """
for _, name in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  redis.call('UNLINK', ARGV[1] .. name)
end
return redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
"""


class RedisReadModel:
    """The read models in Redis or a Redis Cluster. `prefix` is "arbiter:rm" (tests use
    their own; it must hold no hash tag)."""

    def __init__(self, url_or_client: Any, prefix: str = PREFIX) -> None:
        if "{" in prefix or "}" in prefix:
            raise ValueError(f"a read-model prefix holds no hash tag: {prefix!r}")
        self.prefix = prefix
        if isinstance(url_or_client, str):
            from services.core.redis_conn import connect

            self.redis: Any = connect(url_or_client)
        else:
            self.redis = url_or_client
        self._apply = self.redis.register_script(APPLY)
        self._list = self.redis.register_script(LIST)
        self._drop = ManySlots(self.redis, DROP)

    # ---- key names

    def _game_key(self, game_id: str, kind: str) -> str:
        return self._part_key(partition_of(game_id), kind)

    def _part_key(self, partition: int, kind: str) -> str:
        return f"{self.prefix}:{{{partition_tag(partition)}}}:{kind}"

    def _list_key(self, shard: int) -> str:
        return f"{self.prefix}:{{{shard_tag(shard)}}}:list"

    # ---- writes

    async def version(self, game_id: str) -> int:
        return int(await self.redis.hget(self._game_key(game_id, "version"), game_id) or 0)

    async def apply(self, u: Update) -> tuple[str, int]:
        if u.relists:  # first: a list entry may be ahead of the record, never behind it
            await self.relist(u)
        k = self._game_key
        keys = [k(u.game_id, "version"), k(u.game_id, "summary"), k(u.game_id, "snapshot"),
                k(u.game_id, f"stats:{u.game}"), k(u.game_id, "stats-games")]
        args: list[Any] = [u.from_version, u.to_version, u.game_id, u.summary,
                           _snapshot_blob(u.snapshot), u.game, len(u.stats)]
        for field_name, n in sorted(u.stats.items()):
            args += [field_name, n]
        status, current = await self._apply(keys=keys, args=args)
        return status.decode(), int(current)

    async def relist(self, u: Update) -> None:
        stale_if, add, remove = changed_entries(u)
        await self._list(keys=[self._list_key(shard_of(u.game_id))],
                         args=[stale_if, len(add), *(p + at for p, at in add),
                               *(p + at for p, at in remove)])

    # ---- reads

    async def snapshot(self, game_id: str) -> Snapshot | None:
        return _parse_snapshot(await self.redis.hget(self._game_key(game_id, "snapshot"),
                                                     game_id))

    async def page(self, game: str, status: str, seat_name: str, after: Cursor | None,
                   size: int) -> tuple[list[apb.GameSummary], Cursor | None]:
        """Merges the shards newest first: a first round takes a few entries of each shard
        (about twice its share of the page), a second round more only from the shards whose
        entries all made the page. Nothing is counted or scanned beyond that."""
        prefix = list_prefix(game, status, seat_name)
        want = size + 1  # one more than the page says whether there is a next page
        upper = {s: b"(" + prefix + (position(*after) if after else b"\xff")
                 for s in range(SHARDS)}
        got: dict[int, list[bytes]] = {s: [] for s in range(SHARDS)}
        todo = list(range(SHARDS))
        count = min(want, 2 * want // SHARDS + 2)
        while todo:
            replies = await pipelined(
                self.redis, "zrevrangebylex",
                [(self._list_key(s), upper[s], b"[" + prefix, 0, count) for s in todo])
            for s, rows in zip(todo, replies, strict=True):
                got[s] += rows
                upper[s] = b"(" + rows[-1] if len(rows) == count else b""
            top = list(heapq.merge(*got.values(), reverse=True))[:want]
            floor = top[-1] if len(top) == want else b""
            # A shard still holding entries matters only if all it gave made the page.
            todo = [s for s in todo if upper[s] and got[s][-1] > floor]
            count = want
        more = len(top) > size
        shown = top[:size]
        positions = [entry[len(prefix):] for entry in shown]
        ids = [cursor_of(p)[1] for p in positions]
        page = _consistent(await self._summaries(ids), status)
        return page, cursor_of(positions[-1]) if more else None

    async def _summaries(self, ids: Sequence[str]) -> list[apb.GameSummary | None]:
        """The summaries of `ids`; None for a game whose list entry is ahead of its record
        (listed, its first write not done yet)."""
        raw = await pipelined(self.redis, "hget",
                              [(self._game_key(i, "summary"), i) for i in ids])
        return [apb.GameSummary.FromString(r) if r is not None else None for r in raw]

    async def stats(self, game: str) -> dict[str, int]:
        replies = await pipelined(self.redis, "hgetall",
                                  [(self._part_key(p, f"stats:{game}"),)
                                   for p in range(PARTITIONS)])
        total: dict[str, int] = {}
        for reply in replies:
            for k, v in reply.items():
                total[k.decode()] = total.get(k.decode(), 0) + int(v)
        return total

    # ---- drop and dump

    async def drop(self) -> None:
        """Delete every read model. Each slot's keys go in one command, the list shards
        first: a live worker's write landing between two slots' drops keeps a record only
        if it also keeps the record's statistics and snapshot (same slot), and a record
        whose list entries were dropped is found current by the rebuild, which then writes
        its list entries again (`Projector(relist_current=True)`)."""
        await pipelined(self.redis, "execute_command",
                        [("UNLINK", self._list_key(s)) for s in range(SHARDS)])
        await self._drop([([self._part_key(p, kind) for kind in
                            ("version", "summary", "snapshot", "stats-games")],
                           [self._part_key(p, "stats:")]) for p in range(PARTITIONS)])

    async def dump(self) -> dict[str, Any]:
        """Per game: version, summary and snapshot; statistics per game name; the list."""
        out: dict[str, Any] = {}
        kinds = ("version", "summary", "snapshot")
        replies = await pipelined(self.redis, "hgetall",
                                  [(self._part_key(p, kind),)
                                   for p in range(PARTITIONS) for kind in kinds])
        for i, reply in enumerate(replies):
            for k, v in reply.items():
                out[f"{kinds[i % len(kinds)]}:{k.decode()}"] = v
        names = set().union(*await pipelined(
            self.redis, "smembers",
            [(self._part_key(p, "stats-games"),) for p in range(PARTITIONS)]))
        for name in sorted(n.decode() for n in names):
            out[f"stats:{name}"] = await self.stats(name)
        entries = [e for reply in await pipelined(
            self.redis, "zrange", [(self._list_key(s), 0, -1) for s in range(SHARDS)])
            for e in reply]
        if entries:
            out["list"] = sorted(entries)
        return dict(sorted(out.items()))

    async def close(self) -> None:
        await self.redis.aclose()


# ---- in process ------------------------------------------------------------------------


class MemoryReadModel:
    """The same read models in process (for the embedded store), the list in sorted lists
    per filter: a page is O(log n + page size), however many games there are."""

    def __init__(self) -> None:
        self.versions: dict[str, int] = {}
        self.summaries: dict[str, bytes] = {}
        self.snapshots: dict[str, bytes] = {}
        self.counters: dict[str, dict[str, int]] = {}
        self.lists: dict[bytes, SortedList] = {}  # list prefix -> positions

    async def version(self, game_id: str) -> int:
        return self.versions.get(game_id, 0)

    async def apply(self, u: Update) -> tuple[str, int]:
        cur = self.versions.get(u.game_id, 0)
        if cur >= u.to_version:
            return "stale", cur
        if cur != u.from_version:
            return "gap", cur
        if u.relists:
            await self.relist(u)
        self.versions[u.game_id] = u.to_version
        self.summaries[u.game_id] = u.summary
        if u.snapshot:
            self.snapshots[u.game_id] = _snapshot_blob(u.snapshot)
        stats = self.counters.setdefault(u.game, {})
        for k, n in u.stats.items():
            stats[k] = stats.get(k, 0) + n
        return "ok", u.to_version

    async def relist(self, u: Update) -> None:
        stale_if, add, remove = changed_entries(u)
        finished = self.lists.get(list_prefix("*", "finished"), ())
        if stale_if and position(u.created_unix_ms, u.game_id) in finished:
            return
        for prefix, at in add:
            positions = self.lists.setdefault(prefix, SortedList())
            if at not in positions:
                positions.add(at)
        for prefix, at in remove:
            if prefix in self.lists:
                self.lists[prefix].discard(at)

    async def snapshot(self, game_id: str) -> Snapshot | None:
        return _parse_snapshot(self.snapshots.get(game_id))

    async def page(self, game: str, status: str, seat_name: str, after: Cursor | None,
                   size: int) -> tuple[list[apb.GameSummary], Cursor | None]:
        positions = self.lists.get(list_prefix(game, status, seat_name))
        if not positions:
            return [], None
        end = positions.bisect_left(position(*after)) if after else len(positions)
        start = max(0, end - size)
        shown = list(reversed(positions[start:end]))
        summaries = [self.summaries.get(cursor_of(p)[1]) for p in shown]
        page = _consistent([apb.GameSummary.FromString(s) if s else None for s in summaries],
                           status)
        return page, cursor_of(shown[-1]) if start > 0 and shown else None

    async def stats(self, game: str) -> dict[str, int]:
        return dict(self.counters.get(game, {}))

    async def drop(self) -> None:
        self.versions.clear()
        self.summaries.clear()
        self.snapshots.clear()
        self.counters.clear()
        self.lists.clear()

    async def dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kind, values in (("version", self.versions), ("summary", self.summaries),
                             ("snapshot", self.snapshots)):
            for game_id, v in values.items():
                out[f"{kind}:{game_id}"] = str(v).encode() if isinstance(v, int) else v
        for name, stats in self.counters.items():
            if stats:
                out[f"stats:{name}"] = dict(stats)
        entries = [prefix + at for prefix, positions in self.lists.items() for at in positions]
        if entries:
            out["list"] = sorted(entries)
        return dict(sorted(out.items()))

    async def close(self) -> None:
        return None
