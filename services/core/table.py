"""One game held in memory: its table.

A process holds each game it serves as one `Table`, the only copy of the game here: its state
and version, the lock its commands take, the journal of recent events that views describe,
the recent steps a new stream catches up from, and the streams that follow it. Every path
(commands, AI turns, views, legal commands, Watch, Play, other replicas' appends) goes through
it; `advance` is the one place where the game moves, and the functions below the one place
where a state becomes a seat's view and an event a seat's update.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from arbiter.v1 import arbiter_pb2 as apb

from services.core import log as gamelog
from services.core.decider import Game, RuleError, Seat
from services.core.happened import Journal, Noted, merged, naming, plural, tell

RING = 64  # recent steps kept per followed game, for streams catching up
STREAM_BEHIND = 2000  # messages queued for one stream before it is ended (ARBITER_STREAM_BEHIND)


class LobbyError(RuleError):
    """A join or a command the lobby refuses (FAILED_PRECONDITION, with a reason)."""


class Ended(Exception):
    """A stream the server ends with a status (a client too slow to read, a game reset)."""


class Reset(Ended):
    """A stream ended because the store no longer holds what it was shown (a lossy failover)."""


@dataclass(frozen=True)
class Step:
    """One log entry, decoded, with the game's state after it (None before the first event)."""

    entry: apb.LogEntry
    event: Any | None  # the game's Event (its version set), for an event entry
    state: Any


# ---- what a seat sees ------------------------------------------------------------------------


@dataclass(frozen=True)
class Seating:
    """Who sits at a table: the seats' names (what happened calls them by), and the seats
    still open (while any is, the game waits: nobody is to act)."""

    names: tuple[str, ...] = ()
    open: frozenset[int] = frozenset()


NOBODY = Seating()


def seat_view(game: Game, state: Any, seat: int | None, version: int,
              noted: Sequence[Noted] = (), seating: Seating = NOBODY) -> Any:
    """`seat`'s view of `state` at `version`, with what happened from the seat's last command
    on. Before the first event (the GameStarted entry) there is nothing to show but the
    version. While seats are open nobody is to act: the view says whom the game waits for."""
    view = game.view(state, seat) if state is not None else game.pb.View()
    view.version = version
    if seating.open:
        view.open_seats.extend(sorted(seating.open))
        del view.to_act[:]
        view.happened.append(waiting_words(len(seating.open)))
    elif state is not None:
        tell(game, view, noted, seat, seating.names)
    return view


def waiting_words(open_seats: int) -> str:
    return (f"waiting for {plural(open_seats, 'more player')}: the game begins when every "
            "seat is filled")


def seat_event(game: Game, event: Any, version: int, seat: int | None) -> Any | None:
    """What `seat` may see of an event (None: nothing), its version set."""
    shown = game.redact(event, seat)
    if shown is not None:
        shown.version = version
    return shown


def seat_legal(game: Game, state: Any, finished: bool, seat: int | None,
               waiting: bool = False) -> list[Any]:
    """The commands `seat` may send now: none unless it is to act in a game not over whose
    seats are all filled (not `waiting`)."""
    if seat is None or finished or waiting or state is None or seat not in game.to_act(state):
        return []
    return game.legal_actions(state, seat)


def legal_actions(game: Game, state: Any, finished: bool, seat: int | None, version: int,
                  seating: Seating = NOBODY, view: Any = None) -> Any:
    """The game's LegalActions for `seat`: its commands, each in words as its view (built
    here unless given) names things, other seats by their names."""
    commands = seat_legal(game, state, finished, seat, bool(seating.open))
    legal = game.pb.LegalActions(version=version, seat=seat, commands=commands)
    if commands:
        view = view if view is not None else game.view(state, seat)
        with naming(seating.names):
            legal.words.extend(apb.CommandWords(label=game.command_label(c, view),
                                                group=game.command_group(c)) for c in commands)
    return legal


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
        shown = seat_event(game, step.event, entry.version, seat)
        return None if shown is None else head + _field(2, shown.SerializeToString())
    if body == "started":
        return head + _field(3, entry.started.SerializeToString())
    return head + _field(4, entry.finished.SerializeToString())


def _view(game: Game, state: Any, seat: int | None, version: int,
          noted: Sequence[Noted], seating: Seating = NOBODY) -> bytes:
    return bytes(seat_view(game, state, seat, version, noted, seating).SerializeToString())


def watch_messages(game: Game, steps: Sequence[Step], seat: int | None,
                   noted: Sequence[Noted] = (), seating: Seating = NOBODY) -> list[bytes]:
    """Watch: one Update per entry the seat may see, each with the view after it."""
    out = []
    if steps and game.describe is not None:  # a catch-up may reach back before the journal
        noted = merged(noted, game, ((step.entry, step.event) for step in steps))
    for step in steps:
        update = _update(game, step, seat)
        if update is not None:
            out.append(update + _field(5, _view(game, step.state, seat, step.entry.version,
                                                noted, seating)))
    return out


def play_message(game: Game, steps: Sequence[Step], seat: int | None, state: Any, version: int,
                 finished: bool, noted: Sequence[Noted] = (), seating: Seating = NOBODY
                 ) -> bytes:
    """Play: the entries the seat may see, the view after them, its legal commands if to act."""
    parts = [_field(2, u) for u in (_update(game, step, seat) for step in steps) if u is not None]
    view = seat_view(game, state, seat, version, noted, seating)
    parts.append(_field(3, view.SerializeToString()))
    legal = legal_actions(game, state, finished, seat, version, seating, view)
    if legal.commands:
        parts.append(_field(4, legal.SerializeToString()))
    return b"".join(parts)


# ---- a stream's mailbox ----------------------------------------------------------------------


class Subscriber:
    """One stream's mailbox: the messages (serialized) queued for it, in order.

    A Play stream's answers wait here until the entries of their batch are queued: a client
    never gets an answer before its events. Live messages and answers not yet taken count
    against `behind` (the catch-up, taken whole, does not): past it, the stream is ended and
    what it held is dropped, so a client that stops reading costs a bounded amount."""

    def __init__(self, seat: int | None, play: bool, behind: int = STREAM_BEHIND) -> None:
        self.seat, self.play, self.limit = seat, play, behind
        self.version = 0  # the last version queued for this stream
        self.finished = False  # the game's last entry is queued
        self.closed = False  # no more messages: shutting down, fell behind, or reset
        self.ended: Ended | None = None  # why the server ends it, if it does
        self._items: deque[tuple[bytes, bool]] = deque()  # (message, is an answer)
        self._answers: deque[tuple[int, bytes]] = deque()  # (version, answer) not yet due
        self._queued = 0  # live messages and answers queued and not yet taken
        self._ready = asyncio.Event()
        self.over = asyncio.Event()  # set when the server ends the stream

    def _count(self) -> None:
        self._queued += 1
        if self._queued > self.limit:
            self.end(Ended(f"this stream fell {self.limit} messages behind (its client does "
                           "not read); reopen it from your version"))

    def push(self, version: int, message: bytes, live: bool = True) -> None:
        """Queue a message; `live`: a new entry's, not the catch-up (which may be long)."""
        if self.ended is not None:
            return
        self._items.append((message, False))
        self.version = max(self.version, version)
        while self._answers and self._answers[0][0] <= self.version:
            self._items.append((self._answers.popleft()[1], True))
        if live:
            self._count()
        self._ready.set()

    def answer(self, version: int, message: bytes) -> None:
        if self.ended is not None:
            return
        if version > self.version or self._answers:
            self._answers.append((version, message))
        else:
            self._items.append((message, True))
        self._count()
        self._ready.set()

    def end(self, why: Ended) -> None:
        """End the stream with a status: what it held is dropped."""
        self.ended = why
        self._items.clear()
        self._answers.clear()
        self.close()
        self.over.set()

    def close(self) -> None:
        self.closed = True
        self._ready.set()

    async def next(self) -> list[tuple[bytes, bool]]:
        """The queued (message, is an answer) pairs; [] once the stream is over."""
        while not self._items:
            if self.ended is not None:
                raise self.ended
            if self.closed or self.finished:
                return []
            self._ready.clear()
            await self._ready.wait()
        items = list(self._items)
        self._items.clear()
        self._queued = len(self._answers)
        return items


# ---- the table -------------------------------------------------------------------------------


@dataclass(eq=False)
class Table:
    """One game held in memory at its latest known version, and the streams following it."""

    game: Game
    game_id: str
    seats: list[Seat]
    seed: bytes
    forked_from: str = ""  # "<parent id>@<version>" for a fork
    ancestors_over: bool = field(default=False, init=False)  # every game it came from is over
    tokens: dict[str, int] = field(default_factory=dict, init=False)  # sha256 of a token -> seat
    state: Any = field(default=None, init=False)
    version: int = field(default=0, init=False)
    finished: bool = field(default=False, init=False)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)  # commands, one by one
    said: Journal = field(init=False)  # the recent events, for View.happened
    # The lobby (from the store's metadata): seats still open, when they stop waiting (ms
    # since the epoch), the names the joining players gave. Empty for most games.
    open_seats: set[int] = field(default_factory=set, init=False)
    lobby_until_ms: int = field(default=0, init=False)
    joined: dict[int, str] = field(default_factory=dict, init=False)
    # Streams, and the steps they catch up from (kept only while some stream follows).
    subscribers: set[Subscriber] = field(default_factory=set, init=False)
    steps: deque[Step] = field(default_factory=lambda: deque(maxlen=RING), init=False)
    start: tuple[int, Any] = field(default=(0, None), init=False)  # a state before the steps
    joining: int = field(default=0, init=False)  # streams subscribing (their catch-up may read)
    appending: int = field(default=0, init=False)  # the last version of our append under way
    reading: bool = field(default=False, init=False)  # other replicas' appends being read
    again: bool = field(default=False, init=False)
    tip: bytes = field(default=b"", init=False)  # the last entry as stored (else: a reset)
    gone: bool = field(default=False, init=False)  # reset: no longer this game's copy

    def __post_init__(self) -> None:
        self.said = Journal(self.game)

    @property
    def followed(self) -> bool:
        return bool(self.subscribers or self.joining)

    def expired(self, now_ms: int) -> bool:
        return bool(self.open_seats) and now_ms >= self.lobby_until_ms

    def check_started(self, now_ms: int) -> None:
        """A game takes commands once JoinGame has filled its open seats, in time."""
        if not self.open_seats:
            return
        if self.expired(now_ms):
            raise LobbyError("GAME_EXPIRED", "this game's open seats were not filled in time; "
                             "it expired and takes no command")
        seats = ", ".join(str(s) for s in sorted(self.open_seats))
        raise LobbyError("WAITING_FOR_PLAYERS", f"the game starts when every seat is filled; "
                         f"still open: {seats} (JoinGame with their invitation codes)")

    def lobby_from_meta(self, meta: dict[str, str]) -> None:
        self.open_seats = {int(k[5:]) for k, v in meta.items() if k.startswith("open:")
                           and v == "1"}
        self.lobby_until_ms = int(meta.get("lobby_until", "0"))
        self.joined = {int(k[5:]): v for k, v in meta.items() if k.startswith("name:")}
        self.tokens.update({k[4:]: int(v) for k, v in meta.items() if k.startswith("tok:")})

    # ---- what a seat sees now ------------------------------------------------------------

    def view(self, seat: int | None, state: Any = None, version: int | None = None,
             noted: Sequence[Noted] | None = None) -> Any:
        """`seat`'s view now (or of `state` at `version`, told from `noted`)."""
        now = state is None
        seating = self.seating if now else Seating(self.seating.names)
        return seat_view(self.game, self.state if now else state, seat,
                         self.version if version is None else version,
                         self.said.noted if noted is None else noted, seating)

    def legal(self, seat: int | None) -> list[Any]:
        """The commands `seat` may send now (none while seats are open)."""
        return seat_legal(self.game, self.state, self.finished, seat, bool(self.open_seats))

    def legal_actions(self, seat: int | None) -> Any:
        """`seat`'s LegalActions now: its commands, in words."""
        return legal_actions(self.game, self.state, self.finished, seat, self.version,
                             self.seating)

    @property
    def seating(self) -> Seating:
        names = tuple(self.joined.get(i) or s.name for i, s in enumerate(self.seats))
        return Seating(names, frozenset(self.open_seats))

    # ---- the one fold loop ---------------------------------------------------------------

    def advance(self, entries: Sequence[apb.LogEntry],
                decoded: Sequence[tuple[Any, Any]] | None = None) -> int:
        """Move the game past `entries` (those at or below its version are skipped): with
        `decoded`, the (event, state after) of each entry as the caller already has them (a
        command's own batch), else decoded and folded here, once. Feeds the journal, keeps the
        steps while streams follow, and queues for each stream what its seat may see.
        Returns how many entries were new."""
        game, state = self.game, self.state
        steps = []
        for i, entry in enumerate(entries):
            if entry.version <= self.version:
                continue  # a read catching up got here first, or a ring came twice
            if decoded is not None:
                event, state = decoded[i]
            else:
                event = None
                body = entry.WhichOneof("body")
                if body == "event":
                    event = gamelog.game_event(game, entry)
                    state = game.fold(state, event)
            if entry.WhichOneof("body") == "finished":
                self.finished = True
            self.said.feed(entry, event)
            steps.append(Step(entry, event, state))
            self.state, self.version = state, entry.version
        if steps and self.followed:
            self.steps.extend(steps)
            self._push(steps)
        elif steps:
            self.start = (self.version, self.state)
        return len(steps)

    def _push(self, steps: list[Step]) -> None:
        """Queue the new steps for every stream; one message per (kind, seat), built once."""
        built: dict[tuple[bool, int | None], list[bytes]] = {}
        first = steps[0].entry.version
        for sub in list(self.subscribers):
            fresh = steps if sub.version < first else \
                [s for s in steps if s.entry.version > sub.version]
            if fresh:
                key = (sub.play, sub.seat)
                messages = built.get(key) if fresh is steps else None
                if messages is None:
                    messages = self.messages(fresh, sub.play, sub.seat)
                    if fresh is steps:
                        built[key] = messages
                for message in messages:
                    sub.push(self.version, message)
                sub.version = self.version
            if self.finished:  # (a stream asked from a later version ends too)
                sub.finished = True
                sub.close()
        if self.finished:
            self.subscribers.clear()
            self.unfollowed()

    def messages(self, steps: Sequence[Step], play: bool, seat: int | None) -> list[bytes]:
        if play:
            return [play_message(self.game, steps, seat, self.state, self.version,
                                 self.finished, self.said.noted, self.seating)]
        return watch_messages(self.game, steps, seat, self.said.noted, self.seating)

    def seats_filled(self) -> None:
        """A seat was joined: every Play stream gets the view now (and, once the last seat
        is filled, its legal commands), though no entry was appended."""
        for sub in list(self.subscribers):
            if sub.play:
                sub.push(self.version, play_message(
                    self.game, (), sub.seat, self.state, self.version, self.finished,
                    self.said.noted, self.seating))

    # ---- streams -------------------------------------------------------------------------

    def steps_after(self, version: int) -> list[Step] | None:
        """The held steps after `version`, up to the latest; None if some are not held."""
        if version >= self.version:
            return []
        first = self.steps[0].entry.version if self.steps else self.version + 1
        if version + 1 < first:
            return None
        return list(self.steps)[version + 1 - first:]

    def nearest_state(self, version: int) -> tuple[int, Any]:
        """The latest (version, state) held at or before `version`; (0, None) if none is."""
        best: tuple[int, Any] = (0, None)
        if self.start[0] <= version:
            best = self.start
        for step in self.steps:
            if best[0] < step.entry.version <= version:
                best = (step.entry.version, step.state)
        return best

    def join(self, sub: Subscriber, steps: Sequence[Step]) -> None:
        """Queue a new stream's catch-up (`steps`) and follow the game from here on."""
        sub.version = max(sub.version, self.version)
        for message in self.messages(steps, sub.play, sub.seat):
            sub.push(self.version, message, live=False)
        sub.finished = self.finished
        if not sub.finished:
            self.subscribers.add(sub)

    def leave(self, sub: Subscriber) -> None:
        self.subscribers.discard(sub)
        self.unfollowed()

    def unfollowed(self) -> None:
        """No stream follows: the steps are not worth their memory."""
        if not self.followed:
            self.steps.clear()
            self.start = (self.version, self.state)

    def reset(self, why: str) -> None:
        """This copy is wrong (the store lost what it holds): every stream is ended so that
        its client reopens from the store's truth, and the table is no longer used."""
        self.gone = True
        for sub in self.subscribers:
            sub.end(Reset(f"{why}; reopen the stream from the store's version"))
        self.subscribers.clear()
        self.steps.clear()
