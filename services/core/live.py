"""Live play: one hub per server process pushes new log entries to the streams that follow them.

The log is the truth; a doorbell only says "game G reached version V":

the store's `Doorbells` layer (services/core/store.py) gives one doorbell per process: the
embedded store rings in process on every append; on Redis every server's appends are heard on
one subscriber connection (`redis_store.RedisDoorbell`).

On a doorbell for a game with local streams, the hub reads the new entries once, folds them
into the game's state once, and builds what each seat may see once per seat, whatever the
number of streams. Commands this process applied reach the hub directly (Host.on_append), so
the streams of a game played here cost no read. A stream's catch-up is taken from the steps
the hub holds, else read once from the nearest state it knows, and it is registered in the
same step as its catch-up is built: no entry is lost or sent twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.v1 import arbiter_pb2 as apb

from services.core import log as gamelog
from services.core.decider import Game
from services.core.happened import Journal, Noted, merged, tell
from services.core.reads import Loaded, SnapshotSource
from services.core.store import Doorbell, Store

log = logging.getLogger("arbiter.live")

RING = 64  # recent entries (with the state after each) kept per followed game
MAX_BEHIND = 2000  # messages queued for one stream before it is dropped (a client not reading)


@dataclass(frozen=True)
class Step:
    """One log entry, decoded, with the game's state after it."""

    entry: apb.LogEntry
    event: Any | None  # the game's Event, for an event entry
    state: Any  # None before the first event; UNFOLDED inside a batch nobody watched entry by entry


# Inside a batch this process appended, the states between its entries are only needed by Watch
# streams (a view per entry): with none following the game, the hub takes the host's state
# after the batch and does not fold the batch again.
UNFOLDED = object()


class Ended(Exception):
    """A stream the server ends with a status (a client too slow to read)."""


class Subscriber:
    """One stream's mailbox: the messages (serialized) queued for it, in order.

    A Play stream's answers wait here until the entries of their batch are queued: a client
    never gets an answer before its events."""

    def __init__(self, seat: int | None, play: bool) -> None:
        self.seat, self.play = seat, play
        self.version = 0  # the last version queued for this stream
        self.finished = False  # the game's last entry is queued
        self.closed = False  # the server is shutting down, or the stream fell too far behind
        self.behind = False
        self._items: deque[tuple[bytes, bool]] = deque()  # (message, is an answer)
        self._answers: deque[tuple[int, bytes]] = deque()  # (version, answer) not yet due
        self._live = 0  # live messages queued and not yet taken
        self._ready = asyncio.Event()

    def push(self, version: int, message: bytes, live: bool = True) -> None:
        """Queue a message; `live`: a new entry's, not the catch-up (which may be long)."""
        self._items.append((message, False))
        self.version = max(self.version, version)
        while self._answers and self._answers[0][0] <= self.version:
            self._items.append((self._answers.popleft()[1], True))
        self._live += live
        if self._live > MAX_BEHIND:
            self.behind = self.closed = True
            self._items.clear()
        self._ready.set()

    def answer(self, version: int, message: bytes) -> None:
        if version > self.version or self._answers:
            self._answers.append((version, message))
        else:
            self._items.append((message, True))
            self._ready.set()

    def close(self) -> None:
        self.closed = True
        self._ready.set()

    async def next(self) -> list[tuple[bytes, bool]]:
        """The queued (message, is an answer) pairs; [] once the stream is over."""
        while not self._items:
            if self.behind:
                raise Ended("this stream fell too far behind; reopen it from your version")
            if self.closed or self.finished:
                return []
            self._ready.clear()
            await self._ready.wait()
        items = list(self._items)
        self._items.clear()
        self._live = 0
        return items


class Feed:
    """One game followed by local streams: its latest version and state, and recent steps."""

    def __init__(self, loaded: Loaded) -> None:
        self.game: Game = loaded.game
        self.game_id = loaded.game_id
        self.version, self.state, self.finished = loaded.version, loaded.state, loaded.finished
        self.seats = len(loaded.seats)
        self.said = Journal(loaded.game)  # the recent events, for View.happened
        self.said.noted.extend(loaded.said.noted)
        self.steps: deque[Step] = deque(maxlen=RING)
        self.start = (loaded.version, loaded.state)  # a state the hub knows before its steps
        self.subscribers: set[Subscriber] = set()
        self.joining = 0  # streams being subscribed (their catch-up may await a read)
        self.reading = False
        self.again = False
        self.wanted = 0  # the latest version a doorbell announced; -1: unknown, read to see

    def steps_after(self, version: int, need_states: bool = False) -> list[Step] | None:
        """The held steps after `version`, up to the latest; None if some are not held (or,
        with `need_states`, held without the state after them)."""
        if version >= self.version:
            return []
        first = self.steps[0].entry.version if self.steps else self.version + 1
        if version + 1 < first:
            return None
        steps = list(self.steps)[version + 1 - first:]
        if need_states and any(step.state is UNFOLDED for step in steps):
            return None
        return steps

    def nearest_state(self, version: int) -> tuple[int, Any]:
        """The latest (version, state) held at or before `version`; (0, None) if none is."""
        best: tuple[int, Any] = (0, None)
        if self.start[0] <= version:
            best = self.start
        for step in self.steps:
            if best[0] < step.entry.version <= version and step.state is not UNFOLDED:
                best = (step.entry.version, step.state)
        return best


# ---- what a seat sees ------------------------------------------------------------------------


# Messages are put together from serialized parts (protobuf's wire format concatenates): a
# view or an event is serialized once per seat and never copied into another message.


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (a message, bytes or a string)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _update(game: Game, step: Step, seat: int | None) -> bytes | None:
    """Update.version and Update.body of one entry for one seat (no view); None when the seat
    sees nothing of it."""
    entry = step.entry
    head = _varint(1 << 3) + _varint(entry.version)
    body = entry.WhichOneof("body")
    if body == "event":
        redacted = game.redact(step.event, seat)
        if redacted is None:
            return None
        redacted.version = entry.version
        return head + _field(2, redacted.SerializeToString())
    if body == "started":
        return head + _field(3, entry.started.SerializeToString())
    return head + _field(4, entry.finished.SerializeToString())


def _view(game: Game, state: Any, seat: int | None, version: int,
          noted: Sequence[Noted] = ()) -> bytes:
    # Before the first event (the GameStarted entry) there is nothing to show but the version.
    view = game.view(state, seat) if state is not None else game.pb.View()
    view.version = version
    if state is not None:
        tell(game, view, noted, seat)
    return bytes(view.SerializeToString())


def watch_messages(game: Game, steps: Sequence[Step], seat: int | None,
                   noted: Sequence[Noted] = ()) -> list[bytes]:
    """Watch: one Update per entry the seat may see, each with the view after it."""
    out = []
    if steps and game.describe is not None:  # a catch-up may reach back before the journal
        noted = merged(noted, game, ((step.entry, step.event) for step in steps))
    for step in steps:
        update = _update(game, step, seat)
        if update is not None:
            out.append(update + _field(5, _view(game, step.state, seat, step.entry.version,
                                                noted)))
    return out


def play_message(game: Game, steps: Sequence[Step], seat: int | None, state: Any, version: int,
                 finished: bool, noted: Sequence[Noted] = ()) -> bytes:
    """Play: the entries the seat may see, the view after them, its legal commands if to act."""
    parts = [_field(2, u) for u in (_update(game, step, seat) for step in steps) if u is not None]
    parts.append(_field(3, _view(game, state, seat, version, noted)))
    if seat is not None and not finished and state is not None and seat in game.to_act(state):
        legal = game.pb.LegalActions(version=version, seat=seat,
                                     commands=game.legal_actions(state, seat))
        parts.append(_field(4, legal.SerializeToString()))
    return b"".join(parts)


# ---- the hub ---------------------------------------------------------------------------------


class Hub:
    """A process's Watch and Play streams; its host hands it every batch it appends
    (`Host(on_append=hub.appended)`)."""

    def __init__(self, store: Store, snapshot_source: SnapshotSource | None = None) -> None:
        self.store, self.snapshot_source = store, snapshot_source
        self.feeds: dict[str, Feed] = {}
        self.closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self.doorbell: Doorbell = self.store.doorbell(self.ring, self.ring_all)

    # ---- subscribing -------------------------------------------------------------------

    async def subscribe(self, loaded: Loaded, seat: int | None, play: bool, after: int
                        ) -> Subscriber:
        """A stream of `loaded`'s game for `seat`, its catch-up after version `after` queued."""
        if self.closed:
            raise Ended("the server is shutting down")
        self.doorbell.start()
        after = max(0, after)
        feed = self.feeds.get(loaded.game_id)
        if feed is None:
            feed = self.feeds[loaded.game_id] = Feed(loaded)
            self.ring(loaded.game_id, None)  # what other servers appended since the load
        feed.joining += 1  # the feed stays while this stream's catch-up is read
        try:
            steps = feed.steps_after(after, need_states=not play)
            while steps is None:  # not all held: read them (again if the feed moved meanwhile)
                steps = await self._history(feed, after, need_states=not play)
        finally:
            feed.joining -= 1
        if self.closed:
            raise Ended("the server is shutting down")
        # From here to the end nothing awaits: no delivery can slip between catch-up and joining.
        sub = Subscriber(seat, play)
        sub.version = max(after, feed.version)
        if play:
            sub.push(feed.version, play_message(feed.game, steps, seat, feed.state, feed.version,
                                                feed.finished, feed.said.noted), live=False)
        else:
            for message in watch_messages(feed.game, steps, seat, feed.said.noted):
                sub.push(feed.version, message, live=False)
        sub.finished = feed.finished
        if not sub.finished:
            feed.subscribers.add(sub)
        self._drop_if_idle(feed)
        return sub

    def unsubscribe(self, loaded: Loaded, sub: Subscriber) -> None:
        feed = self.feeds.get(loaded.game_id)
        if feed is not None:
            feed.subscribers.discard(sub)
            self._drop_if_idle(feed)

    def _drop_if_idle(self, feed: Feed) -> None:
        """Forget a game no stream follows, once nothing is reading it or joining it."""
        if not (feed.subscribers or feed.reading or feed.joining) and \
                self.feeds.get(feed.game_id) is feed:
            del self.feeds[feed.game_id]

    async def _history(self, feed: Feed, after: int, need_states: bool) -> list[Step] | None:
        """Steps after `after` up to the feed's latest, read once from the nearest known state;
        None if the feed moved on during the read past the steps it holds (read again)."""
        base, state = after, None
        if need_states:
            base, state = feed.nearest_state(after)
            if base < after and self.snapshot_source is not None:
                snap = await self.snapshot_source(feed.game_id, feed.game)
                if snap is not None and base < snap[0] <= after:
                    base, state = snap[0], snap[1]
        entries = gamelog.decode(await self.store.read(feed.game_id, base))
        steps = []
        for entry in entries:
            event = None
            if entry.WhichOneof("body") == "event":
                event = gamelog.game_event(feed.game, entry)
                if need_states:
                    state = feed.game.fold(state, event)
            if entry.version > after:
                steps.append(Step(entry, event, state))
        # Entries the feed has not folded yet come to the stream from the feed, once joined.
        steps = [step for step in steps if step.entry.version <= feed.version]
        rest = feed.steps_after(steps[-1].entry.version if steps else after, need_states)
        return None if rest is None else steps + rest

    # ---- doorbells and appends ---------------------------------------------------------

    def appended(self, game_id: str, entries: list[apb.LogEntry], state: Any) -> None:
        """A batch this process appended, and the game's state after it: followed games take it
        without reading the store."""
        feed = self.feeds.get(game_id)
        if feed is None or not entries or entries[-1].version <= feed.version:
            return
        if entries[0].version != feed.version + 1:
            self.ring(game_id, None)  # entries from elsewhere came first: read them
            return
        self._advance(feed, entries, state)

    def ring(self, game_id: str, version: int | None) -> None:
        """The doorbell: `game_id` has reached `version` (None: unknown, read to see)."""
        feed = self.feeds.get(game_id)
        if feed is None or (version is not None and version <= feed.version):
            return
        feed.wanted = -1 if version is None or feed.wanted < 0 else max(feed.wanted, version)
        if feed.reading:
            feed.again = True
            return
        feed.reading = True
        task = asyncio.get_running_loop().create_task(self._read(feed))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def ring_all(self) -> None:
        """After the doorbell (re)connects: any ring may have been missed, read every tail."""
        for game_id in list(self.feeds):
            self.ring(game_id, None)

    async def _read(self, feed: Feed) -> None:
        delay = 0.05
        try:
            while not self.closed:
                feed.again = False
                if 0 <= feed.wanted <= feed.version:
                    break  # this process appended it meanwhile: nothing to read
                feed.wanted = 0
                try:
                    raw = await self.store.read(feed.game_id, feed.version)
                except Exception:
                    log.warning("cannot read %s for its live streams; retrying", feed.game_id,
                                exc_info=True)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 2.0)
                    feed.again, feed.wanted = True, -1
                    continue
                entries = [e for e in gamelog.decode(raw) if e.version > feed.version]
                if entries:
                    self._advance(feed, entries)
                if not feed.again or not feed.subscribers:
                    break
        finally:
            feed.reading = False
            self._drop_if_idle(feed)

    def _advance(self, feed: Feed, entries: Sequence[apb.LogEntry], after: Any = UNFOLDED
                 ) -> None:
        """Fold entries (the next versions of the feed) once, unless the state `after` them is
        given and no Watch stream needs the states between them; then queue them for each
        stream."""
        game, state = feed.game, feed.state
        fold = after is UNFOLDED or any(not sub.play for sub in feed.subscribers)
        steps = []
        for entry in entries:
            event = None
            body = entry.WhichOneof("body")
            if body == "event":
                event = gamelog.game_event(game, entry)
                if fold:
                    state = game.fold(state, event)
            elif body == "finished":
                feed.finished = True
            steps.append(Step(entry, event, state if fold else UNFOLDED))
            feed.said.feed(entry, event)
        if not fold:
            state = after
            steps[-1] = Step(steps[-1].entry, steps[-1].event, state)
        feed.steps.extend(steps)
        feed.state, feed.version = state, entries[-1].version
        built: dict[tuple[bool, int | None], list[bytes]] = {}
        for sub in list(feed.subscribers):
            fresh = steps if sub.version < steps[0].entry.version else \
                [s for s in steps if s.entry.version > sub.version]
            if not fresh:
                continue
            key = (sub.play, sub.seat)
            messages = built.get(key) if fresh is steps else None
            if messages is None:
                messages = self._messages(feed, fresh, sub)
                if fresh is steps:
                    built[key] = messages
            for message in messages:
                sub.push(feed.version, message)
            sub.version = feed.version
            if feed.finished:
                sub.finished = True
                sub.close()
        if feed.finished:
            feed.subscribers.clear()

    def _messages(self, feed: Feed, steps: list[Step], sub: Subscriber) -> list[bytes]:
        if sub.play:
            return [play_message(feed.game, steps, sub.seat, feed.state, feed.version,
                                 feed.finished, feed.said.noted)]
        return watch_messages(feed.game, steps, sub.seat, feed.said.noted)

    # ---- shutdown ----------------------------------------------------------------------

    async def close(self) -> None:
        """End every stream (they finish with OK) and stop listening."""
        self.closed = True
        for feed in self.feeds.values():
            for sub in feed.subscribers:
                sub.close()
        self.feeds.clear()
        await self.doorbell.stop()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
