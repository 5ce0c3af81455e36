"""The process's tables: loading games, keeping them, and keeping the followed ones live.

`Tables` holds one `Table` per game this process serves (services/core/table.py): loaded from
a snapshot and the tail of its stream, or the whole stream; the recently used ones kept, those
a stream follows never dropped (a second copy of a game could then appear).

The log is the truth; a doorbell only says "game G reached version V". The store's
`Doorbells` layer (services/core/store.py) gives one doorbell per process. An append made
here reaches its table directly, with its events decoded (`Host`); the doorbell brings the
appends of other replicas: for a followed game the tail is read once, decoded and folded once,
and each seat's message built once whatever the number of streams. A ring for the append this
process is making itself is dropped without a read.

Every read of a tail starts at the entry the table holds last and checks it is still the
store's: a store that lost it (a lossy Redis failover, the game gone) resets the table, its
streams are ended so that their clients reopen from the store's truth, and the game is loaded
again (or is NOT_FOUND).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from services.core import log as gamelog
from services.core.decider import Game
from services.core.happened import JOURNAL
from services.core.metrics import METRICS
from services.core.store import Doorbell, Store
from services.core.table import STREAM_BEHIND, Ended, Step, Subscriber, Table

log = logging.getLogger("arbiter.live")

CACHE_SIZE = 10_000  # games held while no stream follows them (the least recently used go)

# (game id, game) -> (version, state, finished) of a snapshot, or None (the workers').
SnapshotSource = Callable[[str, Game], Awaitable[tuple[int, Any, bool] | None]]


class NotFound(Exception):
    pass


class Dropped(Exception):
    """The store no longer holds what a table held: the table was dropped; load it again."""



class Tables:
    def __init__(self, store: Store, games: dict[str, Game],
                 snapshot_source: SnapshotSource | None = None,
                 stream_behind: int = STREAM_BEHIND) -> None:
        self.store, self.games = store, games
        self.snapshot_source = snapshot_source
        self.stream_behind = stream_behind
        self._held: OrderedDict[str, Table] = OrderedDict()
        self.closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self.doorbell: Doorbell = store.doorbell(self.ring, self.ring_all)

    # ---- loading -----------------------------------------------------------------------

    async def load(self, game_id: str, fresh: bool = False) -> Table:
        """The game at its latest known version (`fresh`: also take what other replicas
        appended). A table the store contradicts is reset and the game loaded again."""
        table = self._held.get(game_id)
        if table is None:
            return await self._load(game_id, snapshot=True)
        self._held.move_to_end(game_id)
        try:
            if table.open_seats:  # another server may have filled them: read the metadata
                meta = await self.store.meta(game_id)
                if not meta:
                    self.reset(table, "the store no longer holds this game")
                    raise Dropped
                table.lobby_from_meta(meta)
            if fresh:
                await self.catch_up(table)
        except Dropped:
            return await self._load(game_id, snapshot=False)
        return table

    async def _load(self, game_id: str, snapshot: bool) -> Table:
        """Read a game from the store: a snapshot (unless the store was found behind a table:
        a snapshot may hold the lost batches too) and the tail, else the whole stream."""
        meta = await self.store.meta(game_id)
        if not meta or meta.get("game") not in self.games:
            raise NotFound(f"no game {game_id!r}")
        game = self.games[meta["game"]]
        snap = await self.snapshot_source(game_id, game) \
            if snapshot and self.snapshot_source else None
        raw = await self.store.read(game_id, snap[0] if snap else 0)
        head = gamelog.decode(await self.store.read(game_id, 0, 1)) if snap else \
            gamelog.decode(raw[:1])
        if not head:
            raise NotFound(f"no game {game_id!r}")
        started = head[0].started
        table = Table(game, game_id, gamelog.seats_from_pb(started.seats),
                      bytes.fromhex(meta["seed"]), started.forked_from)
        if snap:
            table.version, table.state, table.finished = snap
            # The events just before the snapshot, for what each seat is told happened.
            start = max(0, snap[0] - JOURNAL)
            for entry in gamelog.decode(await self.store.read(game_id, start, snap[0] - start)):
                table.said.feed(entry, gamelog.game_event(game, entry)
                                if entry.WhichOneof("body") == "event" else None)
            table.start = (table.version, table.state)
        METRICS.loads(game.name).inc()
        table.advance(gamelog.decode(raw))
        table.tip = raw[-1] if raw else b""
        table.lobby_from_meta(meta)
        existing = self._held.get(game_id)
        if existing is not None and not existing.gone:
            return existing  # another call loaded it meanwhile: one table per game
        self.add(table)
        return table

    def _evict(self) -> bool:
        """Forget the least recently used game no stream follows."""
        for game_id, table in self._held.items():
            if not table.followed:
                del self._held[game_id]
                return True
        return False

    def held(self, game_id: str) -> Table | None:
        """The game's table if this process holds it (nothing is read)."""
        return self._held.get(game_id)

    def add(self, table: Table) -> None:
        """Hold a game this process has just created."""
        self._held[table.game_id] = table
        while len(self._held) > CACHE_SIZE and self._evict():
            pass

    async def catch_up(self, table: Table) -> int:
        """Fold what the store holds past the table. The read starts at the table's last
        entry: if the store no longer holds it as the table knows it, the table is reset and
        Dropped raised (load the game again)."""
        if table.gone:
            raise Dropped
        version, tip = table.version, table.tip  # (an append of ours may move them meanwhile)
        after = max(0, version - 1)
        raw = await self.store.read(table.game_id, after)
        if table.gone:
            raise Dropped
        if version:
            if not raw or (tip and raw[0] != tip):
                self.reset(table, "the store no longer holds this game's history as this "
                           "server knew it (a failover lost some of it)")
                raise Dropped
            if not table.tip and table.version == version:
                table.tip = raw[0]
            raw = raw[1:]
        # Entries folded meanwhile (a command's own batch) are skipped by advance.
        folded = table.advance(gamelog.decode(raw))
        if raw and table.version == after + 1 + len(raw):
            table.tip = raw[-1]
        if folded:
            METRICS.caught_up(table.game.name).inc(folded)
        return folded

    def reset(self, table: Table, why: str) -> None:
        log.warning("game %s: %s; dropping what this server held of it", table.game_id, why)
        if self._held.get(table.game_id) is table:
            del self._held[table.game_id]
        table.reset(why)

    # ---- streams -----------------------------------------------------------------------

    async def subscribe(self, table: Table, seat: int | None, play: bool, after: int
                        ) -> Subscriber:
        """A stream of `table`'s game for `seat`, its catch-up after version `after` queued."""
        if self.closed:
            raise Ended("the server is shutting down")
        self.doorbell.start()
        after = max(0, after)
        first = not table.followed
        if first:
            table.start = (table.version, table.state)
        table.joining += 1  # the steps stay while this stream's catch-up is read
        try:
            steps = table.steps_after(after)
            while steps is None:  # not all held: read them (again if the game moved meanwhile)
                steps = await self._history(table, after)
        finally:
            table.joining -= 1
        if self.closed:
            raise Ended("the server is shutting down")
        if table.gone:
            raise Ended("this game was reset; reopen the stream")
        # From here to the end nothing awaits: no delivery can slip between catch-up and joining.
        sub = Subscriber(seat, play, self.stream_behind)
        sub.version = after
        table.join(sub, steps)
        if sub.finished:
            table.unfollowed()
        elif first:
            self.ring(table.game_id, None)  # what other replicas appended while unfollowed
        return sub

    def unsubscribe(self, table: Table, sub: Subscriber) -> None:
        table.leave(sub)

    async def _history(self, table: Table, after: int) -> list[Step] | None:
        """Steps after `after` up to the table's version, read once from the nearest state
        held; None if the table moved on during the read past the steps it holds."""
        base, state = table.nearest_state(after)
        if base < after and self.snapshot_source is not None:
            snap = await self.snapshot_source(table.game_id, table.game)
            if snap is not None and base < snap[0] <= after:
                base, state = snap[0], snap[1]
        entries = gamelog.decode(await self.store.read(table.game_id, base))
        steps = []
        for entry in entries:
            if entry.version > table.version:
                break  # the table brings these to the stream once joined
            event = None
            if entry.WhichOneof("body") == "event":
                event = gamelog.game_event(table.game, entry)
                state = table.game.fold(state, event)
            if entry.version > after:
                steps.append(Step(entry, event, state))
        rest = table.steps_after(steps[-1].entry.version if steps else after)
        return None if rest is None else steps + rest

    # ---- doorbells ---------------------------------------------------------------------

    def ring(self, game_id: str, version: int | None) -> None:
        """The doorbell: `game_id` has reached `version` (None: unknown, read to see). A ring
        below the table's version is read too: the store may have gone back (a failover)."""
        table = self._held.get(game_id)
        if table is None or not table.followed:
            return
        if version is not None and version in (table.version, table.appending):
            return  # held already, or the append this process is making
        if table.reading:
            table.again = True
            return
        table.reading = True
        task = asyncio.get_running_loop().create_task(self._read(table))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def ring_all(self) -> None:
        """After the doorbell (re)connects: any ring may have been missed, read every tail."""
        for game_id in list(self._held):
            self.ring(game_id, None)

    async def _read(self, table: Table) -> None:
        delay = 0.05
        try:
            while not self.closed and not table.gone:
                table.again = False
                try:
                    await self.catch_up(table)
                except Dropped:
                    break
                except Exception:
                    log.warning("cannot read %s for its live streams; retrying", table.game_id,
                                exc_info=True)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 2.0)
                    table.again = True
                    continue
                if not table.again or not table.subscribers:
                    break
        finally:
            table.reading = False

    # ---- shutdown ----------------------------------------------------------------------

    async def close(self) -> None:
        """End every stream (they finish with OK) and stop listening."""
        self.closed = True
        for table in self._held.values():
            for sub in table.subscribers:
                sub.close()
            table.subscribers.clear()
        await self.doorbell.stop()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
