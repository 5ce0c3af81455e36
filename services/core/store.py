"""The event store contract, and the embedded store that keeps it in process.

A game is a stream of entries numbered 1, 2, 3... (the version). An append is atomic and
checked before anything is written:

- a command id already seen returns the original result (`duplicate=True`), nothing written;
- an expected version other than the current one raises `Conflict(current)`;
- otherwise the batch is written, the game's metadata updated, and one entry added to the
  game's partition feed (what projection workers read).

Both stores (this one and `RedisStore`) pass the same contract suite (tests/store/).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Protocol

from services.core.partitions import PARTITIONS, partition_of  # noqa: F401 (re-exported)


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


class Store(Protocol):
    async def append(
        self,
        game_id: str,
        entries: Sequence[bytes],
        expected_version: int,
        command_id: str = "",
        meta: Mapping[str, str] | None = None,
    ) -> Appended: ...

    async def read(self, game_id: str, after: int = 0, limit: int = 0) -> list[bytes]:
        """Entries after version `after` (all when limit is 0), oldest first."""
        ...

    async def version(self, game_id: str) -> int: ...

    async def applied(self, game_id: str, command_id: str) -> tuple[int, int] | None:
        """The (first, last) versions a command id was applied as, if it was."""
        ...

    async def meta(self, game_id: str) -> dict[str, str]:
        """The game's metadata ({} for an unknown game)."""
        ...

    async def wait(self, game_id: str, after: int, timeout: float) -> bool:
        """Wait until the game has an entry after `after`; False on timeout."""
        ...

    async def game_ids(self) -> list[str]: ...

    async def read_feed(self, partition: int, after: str, count: int) -> list[FeedEntry]: ...

    async def close(self) -> None: ...


def _open_for_appending(path: str) -> IO[str]:
    """The embedded store's file, readable by its owner only: it holds every running game's
    seed and hidden cards."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    if os.fstat(fd).st_uid == os.geteuid():
        os.fchmod(fd, 0o600)  # a file an older version left readable to all
    return open(fd, "a", encoding="utf-8")


class MemoryStore:
    """The store contract in process, for `make run` without Redis and for tests.

    With a path, every append is also written to an append-only file (one JSON line per
    batch, flushed before the append returns) and replayed on start, so games survive a
    restart of the server.
    """

    def __init__(self, path: str | None = None) -> None:
        self._logs: dict[str, list[bytes]] = {}
        self._meta: dict[str, dict[str, str]] = {}
        self._commands: dict[str, dict[str, tuple[int, int]]] = {}
        self._feeds: dict[int, list[FeedEntry]] = {}
        self._changed: dict[str, asyncio.Event] = {}
        self._file = None
        self._path = path or ""
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
            if os.path.exists(path):
                self._load(path)
            self._file = _open_for_appending(path)

    def _load(self, path: str) -> None:
        good = 0
        with open(path, "rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    break  # a torn last write: that append never returned, so drop it
                rec = json.loads(line)
                entries = [bytes.fromhex(e) for e in rec["entries"]]
                self._apply(rec["game"], entries, rec["command_id"], rec["meta"])
                good += len(line)
        os.truncate(path, good)

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
        return Appended(first, last)

    async def append(
        self,
        game_id: str,
        entries: Sequence[bytes],
        expected_version: int,
        command_id: str = "",
        meta: Mapping[str, str] | None = None,
    ) -> Appended:
        seen = self._commands.get(game_id, {}).get(command_id) if command_id else None
        if seen:
            return Appended(seen[0], seen[1], duplicate=True)
        current = len(self._logs.get(game_id, ()))
        if expected_version != current:
            raise Conflict(current)
        if self._path and self._file is None:
            raise StoreUnavailable("the store's file could not be reopened after a failed write")
        if self._file:
            record = {"game": game_id, "command_id": command_id, "meta": dict(meta or {}),
                      "entries": [e.hex() for e in entries]}
            end = self._file.tell()
            try:
                self._file.write(json.dumps(record) + "\n")
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
        result = self._apply(game_id, entries, command_id, meta or {})
        event = self._changed.pop(game_id, None)
        if event:
            event.set()
        return result

    async def read(self, game_id: str, after: int = 0, limit: int = 0) -> list[bytes]:
        log = self._logs.get(game_id, [])
        return log[after : after + limit] if limit else log[after:]

    async def version(self, game_id: str) -> int:
        return len(self._logs.get(game_id, ()))

    async def applied(self, game_id: str, command_id: str) -> tuple[int, int] | None:
        return self._commands.get(game_id, {}).get(command_id)

    async def meta(self, game_id: str) -> dict[str, str]:
        return dict(self._meta.get(game_id, {}))

    async def wait(self, game_id: str, after: int, timeout: float) -> bool:
        if len(self._logs.get(game_id, ())) > after:
            return True
        event = self._changed.setdefault(game_id, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            return False
        return len(self._logs.get(game_id, ())) > after

    async def game_ids(self) -> list[str]:
        return list(self._logs)

    async def read_feed(self, partition: int, after: str, count: int) -> list[FeedEntry]:
        feed = self._feeds.get(partition, [])
        start = int(after.split("-")[0]) if after else 0
        return feed[start : start + count]

    async def close(self) -> None:
        if self._file:
            self._file.close()
            self._file = None
