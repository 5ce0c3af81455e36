"""What a seat is told: events in words since it last acted, and hidden values marked.

`happened` turns a game's recent log (a journal of (version, batch, actor, event)) into the
descriptions a view carries: the events after the seat's own last command, oldest first,
each described by the game for that seat (`Game.describe`, which sees only what `redact`
leaves the seat). A spectator is told what the last command caused.

`marked(redact)` wraps a game's redaction so that every field it clears is named in the
event's `hidden` list: a client tells "hidden from you" from "zero" by the list, never by a
missing value.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from arbiter.v1 import arbiter_pb2 as apb

JOURNAL = 64  # events kept per game for `happened`
SAID = 24  # descriptions at most in one view (the latest)


@dataclass(frozen=True)
class Noted:
    """One event of a game's recent log: its version, the first version of its batch, and
    the seat whose command caused it (None: the setup, a server command, a fork's start)."""

    version: int
    batch: int
    actor: int | None
    event: Any
    # The description for each seat (and the seats' names) asked so far (views are built
    # again and again).
    said: dict[tuple[int | None, tuple[str, ...]], str | None] = field(default_factory=dict,
                                                                        compare=False)

    def words(self, describe: Callable[[Any, int | None], str | None],
              seat: int | None) -> str | None:
        key = (seat, SEAT_NAMES.get())
        if key not in self.said:
            self.said[key] = describe(self.event, seat)
        return self.said[key]


class Journal:
    """The recent events of one game, fed with log entries in order."""

    def __init__(self, game: Any, keep: int | None = JOURNAL) -> None:
        self.game = game
        self.noted: deque[Noted] = deque(maxlen=keep)
        self._batch, self._actor = 0, None  # of the entries being fed
        self._fed = 0  # the last version fed

    def feed(self, entry: apb.LogEntry, event: Any = None) -> None:
        """Add one log entry (the event decoded if the caller has it). An entry fed again is
        skipped: a read catching a game up can fold a batch that the command appending it
        feeds too, while that command waits for the store."""
        if entry.version <= self._fed:
            return
        self._fed = entry.version
        if entry.HasField("command") or entry.WhichOneof("body") == "started":
            record = entry.command
            self._batch = entry.version
            self._actor = record.seat if entry.HasField("command") and not record.system \
                else None
        if entry.WhichOneof("body") != "event":
            return
        if event is None:
            event = self.game.pb.Event.FromString(entry.event)
        self.noted.append(Noted(entry.version, self._batch, self._actor, event))

    def feed_all(self, entries: Iterable[apb.LogEntry]) -> None:
        for entry in entries:
            self.feed(entry)

    def clear(self) -> None:
        self.noted.clear()
        self._fed = 0


def journal_of(game: Any, entries: Sequence[apb.LogEntry], upto: int) -> list[Noted]:
    """The journal a server following the game would hold at version `upto` (its last
    JOURNAL events), read from the log: for a view of an earlier version (Replay)."""
    start = max(0, upto - JOURNAL)
    while start > 0 and not (entries[start].HasField("command")
                             or entries[start].WhichOneof("body") == "started"):
        start -= 1  # from its batch's first entry, which names who acted
    journal = Journal(game)
    journal.feed_all(entries[start:upto])
    return list(journal.noted)


def merged(noted: Sequence[Noted], game: Any, entries: Iterable[tuple[apb.LogEntry, Any]]
           ) -> list[Noted]:
    """`noted` and the events of `entries` (a stream's catch-up) it lacks, by version."""
    extra = Journal(game, keep=None)
    for entry, event in entries:
        extra.feed(entry, event)
    known = {n.version for n in noted}
    return sorted([*noted, *(n for n in extra.noted if n.version not in known)],
                  key=lambda n: n.version)


def happened(describe: Callable[[Any, int | None], str | None], noted: Sequence[Noted],
             seat: int | None, version: int) -> list[str]:
    """The descriptions for `seat` of the events from its last command on, that command's
    own consequences included, up to `version` (a spectator: the events of the last
    command), the latest SAID of them, oldest first."""
    said: list[str] = []
    batch = None  # the spectator's last batch, or the seat's own last one once reached
    for n in reversed(noted):  # from the latest back to the seat's own last command
        if n.version > version:
            continue
        if seat is None or n.actor == seat:
            if batch is None:
                batch = n.batch
            elif n.batch != batch:
                break
        elif batch is not None:  # past the start of the seat's own last command
            break
        text = n.words(describe, seat)
        if text:
            said.append(text)
            if len(said) == SAID:
                break
    said.reverse()
    return said


def tell(game: Any, view: Any, noted: Sequence[Noted], seat: int | None,
         names: Sequence[str] = ()) -> None:
    """Fill `view.happened` (the view's version set) for `seat`, other seats called by their
    `names`."""
    if game.describe is not None:
        with naming(names):
            view.happened.extend(happened(game.describe, noted, seat, view.version))


# ---- hidden values --------------------------------------------------------------------------


def cleared_paths(before: Any, after: Any, prefix: str = "") -> list[str]:
    """Paths of the fields set in `before` that `after` lacks or holds otherwise."""
    paths = []
    for fd, value in before.ListFields():
        path = prefix + fd.name
        if fd.name == "hidden" or fd.name == "version" and not prefix:
            continue
        repeated = fd.is_repeated
        has = (len(getattr(after, fd.name)) > 0) if repeated else after.HasField(fd.name) \
            if fd.has_presence else getattr(after, fd.name) != fd.default_value
        if not has:
            paths.append(path)
            continue
        other = getattr(after, fd.name)
        if fd.message_type is not None and not repeated:
            paths += cleared_paths(value, other, path + ".")
        elif fd.message_type is not None and repeated and len(value) == len(other) and \
                not fd.message_type.GetOptions().map_entry:
            for i, (a, b) in enumerate(zip(value, other, strict=True)):
                paths += cleared_paths(a, b, f"{path}[{i}].")
        elif value != other:
            paths.append(path)
    return paths


def _filler(fd: Any) -> Any:
    """A value other than the zero of a scalar field."""
    if fd.enum_type is not None:
        numbers = [v.number for v in fd.enum_type.values if v.number]
        return numbers[0] if numbers else 0
    if fd.type == fd.TYPE_BOOL:
        return True
    if fd.type == fd.TYPE_STRING:
        return "?"
    if fd.type == fd.TYPE_BYTES:
        return b"?"
    return 1


def _probe(message: Any) -> None:
    """Fill, in place, every zero scalar and empty scalar list of `message` and of the
    messages it holds (fields with presence, such as seats, are left as they are): what a
    redaction clears of the probe is what it hides, whatever the values were. Hidden paths
    taken from the event itself would tell a zero from a value (a leak)."""
    for fd in message.DESCRIPTOR.fields:
        value = getattr(message, fd.name)
        if fd.is_repeated:
            if fd.message_type is not None:
                if not fd.message_type.GetOptions().map_entry:
                    for item in value:
                        _probe(item)
            elif not value:
                value.append(_filler(fd))
        elif fd.message_type is not None:
            if message.HasField(fd.name):
                _probe(value)
        elif not fd.has_presence and value == fd.default_value and fd.name != "version":
            setattr(message, fd.name, _filler(fd))


def _shape(message: Any) -> tuple[Any, ...]:
    """What a redaction may decide on: which messages are set (and how many of a list), and
    the fields with presence (seats); not the values it hides."""
    out: list[Any] = []
    for fd, value in message.ListFields():
        if fd.message_type is not None:
            if not fd.is_repeated:
                out.append((fd.number, _shape(value)))
            elif not fd.message_type.GetOptions().map_entry:
                out.append((fd.number, tuple(_shape(v) for v in value)))
        elif fd.has_presence:
            out.append((fd.number, value))
    return tuple(out)


PATHS_KEPT = 4096  # hidden-path lists remembered per game (one per event shape and seat)


def marked(redact: Callable[[Any, int | None], Any]) -> Callable[[Any, int | None], Any]:
    """A game's redact that names, in the event's `hidden`, every field it hides from the
    seat (found on a probe, so the list depends on the event's kind and seats only)."""
    known: dict[tuple[Any, ...], list[str]] = {}

    def hidden_paths(event: Any, seat: int | None) -> list[str]:
        key = (seat, _shape(event))
        paths = known.get(key)
        if paths is None:
            probe = type(event)()
            probe.CopyFrom(event)
            _probe(probe)
            cleared = redact(probe, seat)
            paths = [p for p in cleared_paths(probe, cleared) if p != "hidden"] \
                if cleared is not None else []
            if len(known) >= PATHS_KEPT:
                known.clear()
            known[key] = paths
        return paths

    def redact_marked(event: Any, seat: int | None) -> Any:
        shown = redact(event, seat)
        if shown is None or shown is event:
            return shown
        del shown.hidden[:]
        shown.hidden.extend(hidden_paths(event, seat))
        return shown

    redact_marked.__wrapped__ = redact  # type: ignore[attr-defined]
    return redact_marked


# ---- words shared by the games' descriptions -------------------------------------------------

# The seats' names while a view is told (`naming`): "ann", not "seat 2".
SEAT_NAMES: ContextVar[tuple[str, ...]] = ContextVar("seat_names", default=())


@contextmanager
def naming(names: Sequence[str]) -> Iterator[None]:
    """Within it, the words below call each seat by its name (when it has one of its own)."""
    token = SEAT_NAMES.set(tuple(names))
    try:
        yield
    finally:
        SEAT_NAMES.reset(token)


def seat_name(seat: int) -> str:
    """The seat's name, else (no name, or one two seats share) "seat N"."""
    names = SEAT_NAMES.get()
    name = names[seat] if 0 <= seat < len(names) else ""
    return name if name.strip() and names.count(name) == 1 else f"seat {seat}"


def who(seat: int, viewer: int | None) -> str:
    """"you" for the viewer's own seat, else the seat's name."""
    return "you" if seat == viewer else seat_name(seat)


def whose(seat: int, viewer: int | None) -> str:
    """"your" for the viewer's own seat, else "ann's"."""
    return "your" if seat == viewer else f"{seat_name(seat)}'s"


def does(seat: int, viewer: int | None, you_form: str, other_form: str) -> str:
    """"you play" for the viewer, else "ann plays"."""
    return f"you {you_form}" if seat == viewer else f"{seat_name(seat)} {other_form}"


def named(enum: Any, value: int) -> str:
    """An enum value in words: LAVA_GEM -> "lava gem" (the zero value: "a hidden one")."""
    if not value:
        return "a hidden one"
    return _short_names(enum.DESCRIPTOR)[value]


@lru_cache(maxsize=64)
def _short_names(descriptor: Any) -> dict[int, str]:
    """Value names without the words every non-zero value starts with (CARD_, EVENT_)."""
    names = {v.number: v.name.split("_") for v in descriptor.values if v.number}
    common = 0
    while all(len(n) > common + 1 and n[common] == next(iter(names.values()))[common]
              for n in names.values()):
        common += 1
    return {k: " ".join(n[common:]).lower() for k, n in names.items()}


def seat_label(view: Any, seat: int) -> str:
    """"seat 2", and "(you)" on the seat the view is for."""
    return f"seat {seat}" + (" (you)" if view.HasField("seat") and view.seat == seat else "")


def listed(items: Sequence[str]) -> str:
    """["a", "b", "c"] -> "a, b and c"."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items) or "nothing"
    return ", ".join(items[:-1]) + " and " + items[-1]


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"

