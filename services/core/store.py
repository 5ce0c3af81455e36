"""The event store, in layers, and the embedded store that keeps them in process.

The host takes a `Store`: the union of the layers below, each a Protocol whose docstring says
what it guarantees. Every store (`MemoryStore` here, `RedisStore` on Redis or Redis Cluster)
passes the same contract tests, one file per layer in tests/store/ (docs/guarantees.md,
"The store's layers", names them).

- `EventStream`    a game's entries: append with an expected version and a command id, read
- `GameMetadata`   the key/value pairs written with each batch (game, seed, status...)
- `PartitionFeeds` one entry per appended batch, per partition: what projections read
- `GameListing`    every game the store holds (rebuilds, statistics)
- `Doorbells`      waiting for new entries: a hint that a game reached a version (Watch, Play)
- `WorkerRedis`    Redis stores only: the connection the out-of-process workers share

Errors, for every layer: `Conflict` (the expected version was not the current one; nothing
written) and `StoreUnavailable` (the store cannot take the call now; nothing was applied, and
the same call with the same command id can be sent again safely). Opening a store: the
embedded one raises `StoreRefused` (`StoreDamaged`: the file is damaged and left as it is;
`StoreLocked`: another process uses it), `RedisStore` raises `StoreUnavailable`.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol, runtime_checkable

from services.core.partitions import PARTITIONS, partition_of  # noqa: F401 (re-exported)

log = logging.getLogger("arbiter")


@dataclass(frozen=True)
class Appended:
    first_version: int
    last_version: int
    duplicate: bool = False


@dataclass(frozen=True)
class FeedEntry:
    """One appended batch, as the partition feed announces it."""

    feed_id: str
    game_id: str
    first_version: int
    last_version: int


class Conflict(Exception):
    """The game is not at the expected version."""

    def __init__(self, current_version: int) -> None:
        super().__init__(f"the game is at version {current_version}")
        self.current_version = current_version


class StoreUnavailable(Exception):
    """The store cannot be reached; the same command id can be retried safely."""


class EventStream(Protocol):
    """A game is a stream of entries numbered 1, 2, 3... (its version), with no gap.

    - An append is atomic: the whole batch is written, or nothing of it is.
    - It is checked before anything is written, in this order: a command id already applied
      to this game answers its first result (`duplicate=True`) and writes nothing, whatever
      the expected version; then an expected version other than the current one raises
      `Conflict(current)`, writes nothing and does not record the command id.
    - Appends to one game are serialized: of concurrent appends at one version, exactly one
      succeeds and the others conflict (never a lost or a doubled entry).
    - A batch without a command id is always a new batch (nothing can tell a retry from it).
    - Games are independent: an append to one changes no other game's version or entries.
    - An acknowledged append is readable at once by every reader of the store, and lasts as
      the store makes it last: the embedded store's file (flushed, and with ARBITER_FSYNC
      fsynced, before the append returns),
      Redis's persistence and, with ARBITER_REDIS_WAIT_REPLICAS, its replicas.
    - An unknown game is at version 0 with no entries.
    """

    async def append(
        self,
        game_id: str,
        entries: Sequence[bytes],
        expected_version: int,
        command_id: str = "",
        meta: Mapping[str, str] | None = None,
    ) -> Appended:
        """Write `entries` as versions expected_version+1... with `meta` (GameMetadata) and one
        feed entry (PartitionFeeds), all in the same atomic step."""
        ...

    async def read(self, game_id: str, after: int = 0, limit: int = 0) -> list[bytes]:
        """Entries after version `after` (all when limit is 0), oldest first."""
        ...

    async def version(self, game_id: str) -> int: ...

    async def applied(self, game_id: str, command_id: str) -> tuple[int, int] | None:
        """The (first, last) versions a command id was applied as, if it was."""
        ...


class GameMetadata(Protocol):
    """A game's key/value pairs (game, seed, status, seat token hashes...).

    - Written by `EventStream.append` in the same atomic step as its batch: a reader never
      sees metadata of a batch that is not there, nor a batch without its metadata.
    - Keys merge: a batch's keys replace the same keys, and keep the others.
    - "version" is the store's: the game's last version, kept up to date by every append.
    - A refused append (conflict, duplicate command id, unavailable) changes nothing here.
    - An unknown game has {}.
    """

    async def meta(self, game_id: str) -> dict[str, str]:
        """The game's metadata ({} for an unknown game)."""
        ...


class PartitionFeeds(Protocol):
    """One feed per partition (`partition_of(game_id)`): what projection workers read.

    - Every appended batch adds exactly one `FeedEntry` (game, first, last version) to its
      game's partition feed, in the append's atomic step; a refused append adds none.
    - A feed is ordered: its entries come in the order their batches were appended, so one
      game's entries come in version order; `feed_id`s increase along a feed.
    - `read_feed(p, after, count)` returns at most `count` entries after the entry `after`
      ("" for the start), oldest first; reading again from the last id returned misses
      nothing and repeats nothing.
    - Nothing is trimmed: a feed holds every batch since the store began.

    Shared consumption (consumer groups: delivery at least once, pending until acknowledged,
    reclaim from a consumer that died) is Redis's; see `WorkerRedis`. The embedded store's
    projections run in the server process with a cursor of their own over `read_feed`.
    """

    async def read_feed(self, partition: int, after: str, count: int) -> list[FeedEntry]: ...


class GameListing(Protocol):
    """Every game the store holds: a game is listed once its first batch is appended, in no
    particular order. Not a snapshot: games appended during the call may or may not be in it.
    """

    async def game_ids(self) -> list[str]: ...


Ring = Callable[[str, int | None], None]  # (game id, version it reached; None: read to see)


class Doorbell(Protocol):
    subscribed: asyncio.Event  # set while the doorbell hears every append

    def start(self) -> None:
        """Begin hearing appends (again: nothing); `reconnected` is called once subscribed."""
        ...

    async def stop(self) -> None: ...


class Doorbells(Protocol):
    """Waiting for a game's new entries without polling its stream.

    - A started doorbell rings `(game id, last version)` for every append it hears, from any
      server sharing the store: the embedded store rings in process before the append
      returns; Redis publishes in the append's own script, after the batch is written, so a
      ring never comes before the entries it announces can be read.
    - A ring is a hint, not the truth: it may come late, more than once, or, for the appends
      made while the doorbell was not subscribed (Redis down, a reconnect), never. After each
      (re)subscribe the doorbell calls `reconnected`, and the waiter reads the stream from
      the version it has: nothing is lost, since the stream is the truth.
    - `stop` ends the rings; nothing rings after it returns.
    """

    def doorbell(self, ring: Ring, reconnected: Callable[[], None]) -> Doorbell: ...


class Store(EventStream, GameMetadata, PartitionFeeds, GameListing, Doorbells, Protocol):
    """What the host takes: every layer, and `close`."""

    async def close(self) -> None: ...


@runtime_checkable
class WorkerRedis(Protocol):
    """A store on Redis lends its client to the workers that keep state beside the streams:
    read models and deadlines (`RedisReadModel`, `RedisDeadlines`) and the consumer group
    `projections` on the partition feeds (`ProjectionWorker`: XREADGROUP, XACK, XAUTOCLAIM on
    the keys of `redis_store.feed_key`). Those are Redis's own guarantees: an entry is
    delivered to one consumer of the group and stays pending until acknowledged; a pending
    entry idle past a limit can be claimed by another consumer.

    The embedded store has no such layer: workers that run apart from the server (`arbiter
    workers projections|deadlines`, Celery) need Redis; on the embedded store the server runs
    them itself, in memory (`InProcessProjections`, `MemoryReadModel`, `MemoryDeadlines`), and
    builds them again from the feeds at start.
    """

    def workers_redis(self) -> Any:
        """The Redis client (plain or cluster) the workers keep their keys on."""
        ...


@runtime_checkable
class StoreOnRedis(Store, WorkerRedis, Protocol):
    """A `Store` that is also `WorkerRedis`: what a `ProjectionWorker` consumes."""


def _open_for_appending(path: str) -> IO[str]:
    """The embedded store's file, readable by its owner only: it holds every running game's
    seed and hidden cards."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    if os.fstat(fd).st_uid == os.geteuid():
        os.fchmod(fd, 0o600)  # a file an older version left readable to all
    return open(fd, "a", encoding="utf-8")


# ---- the embedded store's file ---------------------------------------------------------------
#
# One line per appended batch: `C2 <crc32 of the JSON, 8 hex digits> <JSON>\n`. The JSON holds
# the batch's first version ("v") and the previous record's checksum ("prev"; 8 zeros for the
# first record): a record removed, repeated or moved breaks the chain, or a game's versions,
# where a checksum of its own would not see it. Older files still load: records of the first
# format (`C1 `, checksummed but not chained) and bare JSON lines (from before checksums) are
# accepted before the first chained record; new records are chained after them.

RECORD_TAG = b"C2 "
UNCHAINED_TAG = b"C1 "
CHAIN_START = "0" * 8


class StoreRefused(Exception):
    """The embedded store cannot be opened; the message is one sentence for the operator."""


class StoreDamaged(StoreRefused):
    def __init__(self, path: str, offset: int, what: str) -> None:
        super().__init__(f"{path}: byte {offset}: {what}; the file was left as it is (restore "
                         f"it from a backup, or see `arbiter store check`)")
        self.path, self.offset, self.what = path, offset, what


class StoreLocked(StoreRefused):
    pass


def encode_record(record: Mapping[str, object]) -> str:
    body = json.dumps(record)
    return f"{RECORD_TAG.decode()}{zlib.crc32(body.encode()):08x} {body}\n"


@dataclass
class Record:
    offset: int
    game_id: str
    entries: list[bytes]
    command_id: str
    meta: dict[str, str]


@dataclass
class Scan:
    records: int = 0
    games: int = 0
    good_bytes: int = 0  # where the last whole record ends
    torn_bytes: int = 0  # a torn last record after it (0: none)
    last_link: str = CHAIN_START  # the last whole record's checksum: the next one names it
    unchained: int = 0  # records of the earlier formats, whose order cannot be checked


def _parse(line: bytes) -> tuple[Record, dict[str, Any], str]:
    """One whole line (without its newline): the record, its JSON, and its checksum (what the
    next record's "prev" names). ValueError says what is wrong with it."""
    if line.startswith((RECORD_TAG, UNCHAINED_TAG)):
        checksum, _, body = line[len(RECORD_TAG):].partition(b" ")
        if len(checksum) != 8 or f"{zlib.crc32(body):08x}".encode() != checksum:
            raise ValueError("the record's checksum does not match its content")
        link = checksum.decode()
    elif line.startswith(b"{"):
        body = line  # a record from before checksums
        link = f"{zlib.crc32(body):08x}"
    else:
        raise ValueError("not a record (neither a checksummed line nor a JSON object)")
    try:
        rec = json.loads(body)
        game_id, command_id, meta = rec["game"], rec["command_id"], rec["meta"]
        entries = [bytes.fromhex(e) for e in rec["entries"]]
    except (ValueError, KeyError, TypeError) as e:  # UnicodeDecodeError is a ValueError
        raise ValueError(f"unreadable record ({type(e).__name__}: {str(e)[:120]})") from e
    if not (isinstance(game_id, str) and isinstance(command_id, str) and isinstance(meta, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())):
        raise ValueError("a record field has the wrong type")
    if line.startswith(RECORD_TAG) and not (
            isinstance(rec.get("v"), int) and isinstance(rec.get("prev"), str)):
        raise ValueError("a chained record without its version or its link to the one before")
    return Record(0, game_id, entries, command_id, meta), rec, link


def _out_of_place(rec: dict[str, Any], game_id: str, version: int, prev: str) -> str:
    """What is wrong with where a chained record stands ("" if nothing): its game's versions
    go on from the records before it, and it names the record just before it."""
    first = rec["v"]
    if first > version + 1:
        return (f"the record starts game {game_id} at version {first}, but the records before "
                f"it end that game at version {version}: a record of this game is missing")
    if first <= version:
        return (f"the record starts game {game_id} at version {first}, which the records "
                f"before it already hold (to version {version}): a record is repeated or moved")
    if rec["prev"] != prev:
        return ("the record does not follow the one before it (it names a previous record "
                f"{rec['prev']}, the one before it is {prev}): a record was removed, repeated "
                "or moved")
    return ""


def read_records(path: str, scan: Scan) -> Iterator[Record]:
    """Every whole record of the file, checked; StoreDamaged names the first bad one.

    A last line without its newline is a write that never returned (the process died in it):
    it is counted in `scan.torn_bytes`, not read. Anything else wrong is damage: a record
    whose checksum fails, and a chained record out of its place (a game's versions go on
    with no gap or repeat, and each names the checksum of the record before it)."""
    with open(path, "rb") as f:
        data = f.read()
    versions: dict[str, int] = {}
    prev = CHAIN_START
    chained = False
    offset = 0
    while offset < len(data):
        end = data.find(b"\n", offset)
        if end < 0:
            tail = data[offset:]
            if not (tail.startswith((RECORD_TAG, UNCHAINED_TAG, b"{"))
                    or RECORD_TAG.startswith(tail) or UNCHAINED_TAG.startswith(tail)):
                # A write cut short is the start of a record; this is something else.
                raise StoreDamaged(path, offset, "the last line is not the start of a record")
            scan.torn_bytes = len(tail)
            break
        try:
            record, rec, link = _parse(data[offset:end])
        except ValueError as e:
            raise StoreDamaged(path, offset, str(e)) from None
        version = versions.get(record.game_id, 0)
        if data.startswith(RECORD_TAG, offset):
            chained = True
            wrong = _out_of_place(rec, record.game_id, version, prev)
            if wrong:
                raise StoreDamaged(path, offset, wrong)
        elif chained:
            raise StoreDamaged(path, offset, "an unchained record (of an older format) after "
                               "chained ones: records were moved or copied into the file")
        else:
            scan.unchained += 1
        prev = scan.last_link = link
        record.offset = offset
        versions[record.game_id] = version + len(record.entries)
        scan.records += 1
        scan.games = len(versions)
        offset = end + 1
        scan.good_bytes = offset
        yield record


def check_file(path: str) -> Scan:
    """What opening the file would find, without opening a store (`arbiter store check`)."""
    scan = Scan()
    for _ in read_records(path, scan):
        pass
    return scan


def _fsync_directory(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _lock(path: str) -> int:
    """Hold an exclusive lock beside the file for the life of the process: two servers
    appending to one file would both accept a command at the same version."""
    lock_path = path + ".lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreLocked(f"another Arbiter process already uses the store {path} (it holds "
                          f"{lock_path}); stop it, or give this one another ARBITER_DATA_DIR"
                          ) from None
    return fd


class MemoryStore:
    """The store contract in process, for `make run` without Redis and for tests.

    With a path, every append is also written to an append-only file (one checksummed JSON
    line per batch, chained to the one before, flushed before the append returns) and
    replayed on start, so games survive a restart of the server. With `fsync` the append also
    waits until the file is on disk (os.fsync, off the event loop; appends written while one
    fsync runs share the next), so it survives a power cut too. The file is locked: one
    process at a time. With `read_only` (statistics, rebuilds beside a running server)
    nothing is locked or written.
    """

    def __init__(self, path: str | None = None, read_only: bool = False,
                 fsync: bool = False) -> None:
        self._logs: dict[str, list[bytes]] = {}
        self._meta: dict[str, dict[str, str]] = {}
        self._commands: dict[str, dict[str, tuple[int, int]]] = {}
        self._feeds: dict[int, list[FeedEntry]] = {}
        self.feed_entries = 0  # entries in all feeds: a reader sees at once that none is new
        # Called with (game id, last version) after every append: the live hub's doorbell.
        self.listeners: list[Callable[[str, int], None]] = []
        self._file: IO[str] | None = None
        self._lock_fd = -1
        self._path = path or ""
        self._read_only = read_only
        self._link = CHAIN_START  # the last record's checksum, named by the next record
        self._fsync = fsync
        self._written = 0  # records this process wrote to the file
        self._synced = 0  # of which this many are known to be on disk
        self._syncing: asyncio.Future[None] | None = None
        self._sync_failed = ""  # why an fsync failed: what the disk holds is unknown from then
        if path:
            if read_only:
                if os.path.exists(path):
                    self._load(path)
                return
            directory = os.path.dirname(os.path.abspath(path))
            os.makedirs(directory, mode=0o700, exist_ok=True)
            self._lock_fd = _lock(path)
            try:
                created = not os.path.exists(path)
                if not created:
                    self._load(path)
                self._file = _open_for_appending(path)
                if created and fsync:
                    _fsync_directory(directory)  # the new file's name must survive too
            except BaseException:
                self._unlock()
                raise

    def _unlock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # closing the descriptor releases the lock
            self._lock_fd = -1

    def _load(self, path: str) -> None:
        scan = Scan()
        for r in read_records(path, scan):
            self._apply(r.game_id, r.entries, r.command_id, r.meta)
        self._link = scan.last_link
        if scan.torn_bytes and not self._read_only:
            # That append never returned, so no client was told it happened: drop it, and
            # only it, so that the next record starts on a line of its own.
            log.warning("%s: dropped a torn last record at byte %d (%d bytes, an append cut "
                        "short when the process stopped); %d records kept", path,
                        scan.good_bytes, scan.torn_bytes, scan.records)
            os.truncate(path, scan.good_bytes)

    def _apply(
        self, game_id: str, entries: Sequence[bytes], command_id: str, meta: Mapping[str, str]
    ) -> Appended:
        log = self._logs.setdefault(game_id, [])
        first, last = len(log) + 1, len(log) + len(entries)
        log.extend(entries)
        m = self._meta.setdefault(game_id, {})
        m.update(meta)
        m["version"] = str(last)
        if command_id:
            self._commands.setdefault(game_id, {})[command_id] = (first, last)
        feed = self._feeds.setdefault(partition_of(game_id), [])
        feed.append(FeedEntry(f"{len(feed) + 1}-0", game_id, first, last))
        self.feed_entries += 1
        return Appended(first, last)

    async def append(
        self,
        game_id: str,
        entries: Sequence[bytes],
        expected_version: int,
        command_id: str = "",
        meta: Mapping[str, str] | None = None,
    ) -> Appended:
        if self._sync_failed:
            # Before the duplicate check: a command applied in memory but perhaps not on disk
            # must not be answered as done.
            raise StoreUnavailable(self._sync_failed)
        seen = self._commands.get(game_id, {}).get(command_id) if command_id else None
        if seen:
            return Appended(seen[0], seen[1], duplicate=True)
        current = len(self._logs.get(game_id, ()))
        if expected_version != current:
            raise Conflict(current)
        if self._read_only:
            raise StoreUnavailable("this store was opened read-only")
        if self._path and self._file is None:
            raise StoreUnavailable("the store's file could not be reopened after a failed write")
        if self._file:
            self._write(game_id, entries, current + 1, command_id, meta)
        # Applied at once, so that the next append to this game conflicts rather than
        # writing the same version while this one waits for the disk.
        result = self._apply(game_id, entries, command_id, meta or {})
        if self._fsync and self._file:
            await self._on_disk(self._written)
        for ring in self.listeners:
            ring(game_id, result.last_version)
        return result

    def _write(self, game_id: str, entries: Sequence[bytes], first_version: int,
               command_id: str, meta: Mapping[str, str] | None) -> None:
        """One record at the end of the file, flushed; on failure nothing of it stays there."""
        assert self._file is not None
        record = {"v": first_version, "prev": self._link, "game": game_id,
                  "command_id": command_id, "meta": dict(meta or {}),
                  "entries": [e.hex() for e in entries]}
        line = encode_record(record)
        end = self._file.tell()
        try:
            self._file.write(line)
            self._file.flush()
        except OSError as e:
            # Cut off what part of the line reached the file, so the next append does not
            # land on a torn line; nothing was applied.
            try:
                self._file.close()  # drops what is still buffered
            except OSError:
                pass
            self._file = None
            try:
                os.truncate(self._path, end)
                self._file = _open_for_appending(self._path)
            except OSError:
                pass  # the next append finds no file and reports the store unavailable
            raise StoreUnavailable(f"cannot write the store's file: {e}") from e
        self._link = line[len(RECORD_TAG):len(RECORD_TAG) + 8]
        self._written += 1

    async def _on_disk(self, record: int) -> None:
        """Wait until the file is fsynced past the `record`-th record written. One fsync at a
        time, in a thread: the records written while it runs wait for the next one, which
        covers them all (a group commit)."""
        while self._synced < record:
            if self._syncing is None or self._syncing.done():
                self._syncing = asyncio.ensure_future(self._sync(self._written))
            try:
                # Shielded: a caller that gives up does not cancel the fsync others wait for.
                await asyncio.shield(self._syncing)
            except OSError as e:
                self._sync_failed = (f"fsync of the store's file failed ({e}); restart the "
                                     "server to reload the games from what the file holds")
                log.error("%s: %s", self._path, self._sync_failed)
                raise StoreUnavailable(self._sync_failed) from e

    async def _sync(self, upto: int) -> None:
        if self._file is None:  # a failed write could not reopen it
            raise OSError("the store's file is closed after a failed write")
        await asyncio.to_thread(os.fsync, self._file.fileno())
        self._synced = max(self._synced, upto)

    async def read(self, game_id: str, after: int = 0, limit: int = 0) -> list[bytes]:
        log = self._logs.get(game_id, [])
        return log[after : after + limit] if limit else log[after:]

    async def version(self, game_id: str) -> int:
        return len(self._logs.get(game_id, ()))

    async def applied(self, game_id: str, command_id: str) -> tuple[int, int] | None:
        return self._commands.get(game_id, {}).get(command_id)

    async def meta(self, game_id: str) -> dict[str, str]:
        return dict(self._meta.get(game_id, {}))

    async def game_ids(self) -> list[str]:
        return list(self._logs)

    async def read_feed(self, partition: int, after: str, count: int) -> list[FeedEntry]:
        feed = self._feeds.get(partition, [])
        start = int(after.split("-")[0]) if after else 0
        return feed[start : start + count]

    def doorbell(self, ring: Ring, reconnected: Callable[[], None]) -> InProcessDoorbell:
        return InProcessDoorbell(self, ring, reconnected)

    async def close(self) -> None:
        if self._syncing is not None:
            await asyncio.gather(self._syncing, return_exceptions=True)
        if self._file:
            self._file.close()
            self._file = None
        self._unlock()


class InProcessDoorbell:
    """The embedded store's `Doorbell`: one of its listeners while started (it misses none)."""

    def __init__(self, store: MemoryStore, ring: Ring, reconnected: Callable[[], None]) -> None:
        self.store, self.ring, self.reconnected = store, ring, reconnected
        self.subscribed = asyncio.Event()

    def start(self) -> None:
        if not self.subscribed.is_set():
            self.store.listeners.append(self.ring)
            self.subscribed.set()
            self.reconnected()

    async def stop(self) -> None:
        if self.subscribed.is_set():
            self.store.listeners.remove(self.ring)
            self.subscribed.clear()
