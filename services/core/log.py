"""A game's log: its entries, their JSON Lines form, and verification by re-running it.

A log is a list of batches. The first batch is the game's creation: `GameStarted` (with the
seed commitment) and the setup events. Every later batch is one command and the events it
caused; the batch that ends the game also holds `GameFinished`, which reveals the seed.
The randomness of a batch is `Rng(seed, version before the batch)`, so re-running every
command against the revealed seed must give back every recorded event, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.v1 import arbiter_pb2 as apb
from google.protobuf import json_format

from services.core.decider import Game, Rng, RuleError, Seat


def commitment(seed: bytes) -> str:
    return hashlib.sha256(seed).hexdigest()


def seats_from_pb(seats: Iterable[apb.Seat]) -> list[Seat]:
    return [Seat(s.name, "ai" if s.kind == apb.AI else "human", s.bot) for s in seats]


@dataclass
class Batch:
    entries: list[apb.LogEntry]
    line: int  # 1-based line of the first entry in an exported log

    @property
    def first_version(self) -> int:
        return self.entries[0].version

    @property
    def last_version(self) -> int:
        return self.entries[-1].version

    @property
    def command(self) -> apb.CommandRecord | None:
        head = self.entries[0]
        return head.command if head.HasField("command") else None


class BadLog(Exception):
    def __init__(self, line: int, version: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line, self.version, self.reason = line, version, reason


# A running game's log cannot be checked by anyone but the server (its seed is secret): not a
# tampered log. VerifyLog answers this reason; `arbiter verify` tells it apart by it.
NOT_FINISHED = "the game is not finished: its seed is secret"


class NotFinished(BadLog):
    def __init__(self, line: int, version: int) -> None:
        super().__init__(line, version, NOT_FINISHED)


class ReplayOnly(BadLog):
    """A log the game can replay but can no longer re-run against its seed (the game says why,
    through `Game.recheck`): VerifyLog answers not ok with the reason, and ImportLog takes it
    as a replay-only import (`replay_only`), marked so."""


def decode(raw: Sequence[bytes]) -> list[apb.LogEntry]:
    return [apb.LogEntry.FromString(r) for r in raw]


def batches(entries: Sequence[apb.LogEntry]) -> list[Batch]:
    """Group entries into batches, checking that versions are contiguous from 1."""
    out: list[Batch] = []
    i = 0
    while i < len(entries):
        head = entries[i]
        size = head.batch_size or 1
        group = list(entries[i : i + size])
        for k, e in enumerate(group):
            if e.version != i + k + 1:
                raise BadLog(i + k + 1, e.version,
                             f"expected version {i + k + 1}, found {e.version}")
            if k and (e.batch_size or e.HasField("command")):
                raise BadLog(i + k + 1, e.version, "only the first entry of a batch carries "
                             "its command and size")
        if len(group) != size:
            raise BadLog(i + 1, head.version, f"batch of {size} entries is cut short")
        out.append(Batch(group, i + 1))
        i += size
    return out


def game_event(game: Game, entry: apb.LogEntry) -> Any:
    event = game.pb.Event.FromString(entry.event)
    event.version = entry.version
    return event


# ---- JSON Lines ---------------------------------------------------------------------------


def to_json_lines(game: Game, entries: Sequence[apb.LogEntry]) -> list[str]:
    lines = []
    for e in entries:
        row: dict[str, Any] = {"version": e.version}
        if e.batch_size:
            row["batch_size"] = e.batch_size
        if e.HasField("command"):
            c = e.command
            row["command"] = {
                "command_id": c.command_id,
                "seat": None if c.system else c.seat,
                "command": json_format.MessageToDict(game.pb.Command.FromString(c.command)),
            }
        body = e.WhichOneof("body")
        if body == "event":
            row["event"] = json_format.MessageToDict(game.pb.Event.FromString(e.event))
        elif body == "started":
            started = json_format.MessageToDict(e.started)
            started["options"] = json_format.MessageToDict(
                game.pb.Options.FromString(e.started.options))
            row["started"] = started
        elif body == "finished":
            row["finished"] = json_format.MessageToDict(e.finished)
        lines.append(json.dumps(row, separators=(",", ":"), sort_keys=True))
    return lines


# A log is refused before any work past these: the longest games are a few thousand entries,
# and the gRPC message limit (4 MB) bounds the whole anyway.
MAX_LOG_LINES = 100_000
MAX_LINE_CHARS = 100_000


def check_sizes(lines: Sequence[str]) -> None:
    if not lines:
        raise BadLog(1, 1, "the log is empty")
    if len(lines) > MAX_LOG_LINES:
        raise BadLog(MAX_LOG_LINES + 1, MAX_LOG_LINES + 1,
                     f"a log has at most {MAX_LOG_LINES} lines, not {len(lines)}")
    for n, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_CHARS:
            raise BadLog(n, n, f"the line is longer than {MAX_LINE_CHARS} characters")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a log may hold")


def _json(line: str) -> Any:
    """JSON as a log holds it: no NaN or Infinity, no number that overflows to one."""
    return json.loads(line, parse_float=_finite, parse_constant=_no_constant)


def game_of_json_lines(lines: Sequence[str]) -> str:
    try:
        return str(_json(lines[0])["started"]["game"])
    except (IndexError, KeyError, TypeError, ValueError, RecursionError) as e:
        raise BadLog(1, 1, "the first line must be the game's start") from e


def from_json_lines(game: Game, lines: Sequence[str]) -> list[apb.LogEntry]:
    entries = []
    for n, line in enumerate(lines, 1):
        try:
            row = _json(line)
            e = apb.LogEntry(version=int(row["version"]), batch_size=int(row.get("batch_size", 0)))
            if "command" in row:
                c = row["command"]
                cmd = json_format.ParseDict(c["command"], game.pb.Command())
                e.command.CopyFrom(apb.CommandRecord(
                    command_id=c.get("command_id", ""), system=c.get("seat") is None,
                    seat=int(c.get("seat") or 0), command=cmd.SerializeToString()))
            if "event" in row:
                e.event = json_format.ParseDict(row["event"], game.pb.Event()).SerializeToString()
            elif "started" in row:
                started = dict(row["started"])
                options = json_format.ParseDict(started.pop("options", {}), game.pb.Options())
                json_format.ParseDict(started, e.started)
                e.started.options = options.SerializeToString()
            elif "finished" in row:
                json_format.ParseDict(row["finished"], e.finished)
            else:
                raise ValueError("no event, started or finished")
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError,
                json_format.ParseError) as err:
            raise BadLog(n, n, f"unreadable entry: {str(err)[:200]}") from err
        entries.append(e)
    return entries


# ---- Verification --------------------------------------------------------------------------


@dataclass
class Verified:
    state: Any
    entries: int
    finished: bool


def _without_explicit_zeros(message: Any) -> Any:
    """A copy without the zero values of fields with presence (recursively)."""
    out = type(message)()
    out.CopyFrom(message)
    stack = [out]
    while stack:
        m = stack.pop()
        for fd, value in m.ListFields():
            if fd.message_type is not None:
                if not fd.message_type.GetOptions().map_entry:
                    stack.extend(value if _repeated(fd) else [value])
            elif not _repeated(fd) and fd.containing_oneof is not None and \
                    fd.containing_oneof.name == "_" + fd.name and value == fd.default_value:
                m.ClearField(fd.name)
    return out


def _repeated(fd: Any) -> bool:
    return bool(fd.is_repeated)


def same_event(recorded: Any, expected: Any) -> bool:
    """Whether a recorded event is the one the rules give. Seat fields gained presence
    (proto3 `optional`) after games were recorded: seat 0 was left off the wire then and is
    written now, so a recorded absent value equals an explicit zero."""
    if recorded == expected:
        return True
    return bool(_without_explicit_zeros(recorded) == _without_explicit_zeros(expected))


def verify(game: Game, entries: Sequence[apb.LogEntry], seed: bytes | None = None,
           parent: Sequence[Any] | None = None) -> Verified:
    """Re-run the whole log: setup and every command, against the seed.

    The seed is the one revealed in `GameFinished`, or given by the server for a game still
    running. A fork's first batch must be `parent`: the events of the game it was forked from,
    up to the fork's version. Raises BadLog naming the first entry that differs.
    """
    groups, seed = _opening(game, entries, seed)
    started = groups[0].entries[0].started
    options = game.pb.Options.FromString(started.options)
    seats = seats_from_pb(started.seats)
    state: Any = None
    finished = False
    for batch in groups:
        if finished:
            raise BadLog(batch.line, batch.first_version, "entries after the end of the game")
        _check_kinds(batch, batch is groups[0])
        rng = Rng(seed, batch.first_version - 1)
        record = batch.command
        first = None
        if game.recheck is not None:
            first = next((game.pb.Event.FromString(r.event) for r in batch.entries
                          if r.WhichOneof("body") == "event"), None)
        try:
            if batch is groups[0] and started.forked_from:
                # A fork starts from its parent's events, verified against the parent's seed.
                if parent is None:
                    raise BadLog(1, 1, f"a fork starts from its parent's events; the parent "
                                 f"{started.forked_from!r} is needed to check them")
                expected = list(parent)
                recorded = batch.entries[1:]
            elif batch is groups[0]:
                old = _recheck(game, state, None, options, rng, first)
                expected = game.setup(options, seats, rng) if old is None else old
                recorded = batch.entries[1:]
            else:
                if record is None:
                    raise BadLog(batch.line, batch.first_version, "a batch without its command")
                command = game.pb.Command.FromString(record.command)
                seat = None if record.system else record.seat
                game.refuse(state, seat, command)  # old batches too: one gate before the rules
                old = _recheck(game, state, seat, command, rng, first)
                expected = game.decide(state, seat, command, rng) if old is None else old
                recorded = batch.entries
        except RuleError as e:
            raise BadLog(batch.line, batch.first_version,
                         f"the command is illegal here: {e.message}") from e
        recorded_events = [r for r in recorded if r.WhichOneof("body") == "event"]
        for k, want in enumerate(expected):
            if k >= len(recorded_events):
                # It belongs right after the last recorded event (or where the events start).
                at = (list(batch.entries).index(recorded_events[-1]) + 1 if recorded_events
                      else len(batch.entries) - len(recorded))
                raise BadLog(batch.line + at, batch.first_version + at,
                             "an event the command causes is missing")
            got = recorded_events[k]
            if not same_event(game.pb.Event.FromString(got.event), want):
                offset = list(batch.entries).index(got)
                raise BadLog(batch.line + offset, got.version,
                             "the event differs from what the rules give")
            state = game.fold(state, game_event(game, got))
        if len(recorded_events) > len(expected):
            extra = recorded_events[len(expected)]
            offset = list(batch.entries).index(extra)
            raise BadLog(batch.line + offset, extra.version, "an event the rules do not give")
        finished = _check_end(game, batch, state)
    return Verified(state, len(entries), finished)


def replay_only(game: Game, entries: Sequence[apb.LogEntry]) -> Verified:
    """A finished log whose commands cannot be re-run (ReplayOnly), checked as far as it can be
    without that: its form, its seed against the commitment, every recorded event applied in
    turn, and its end where and as the replayed game ends. It does not check that the rules
    gave those events."""
    groups, _ = _opening(game, entries, None)
    state: Any = None
    finished = False
    for batch in groups:
        if finished:
            raise BadLog(batch.line, batch.first_version, "entries after the end of the game")
        _check_kinds(batch, batch is groups[0])
        if batch is not groups[0] and batch.command is None:
            raise BadLog(batch.line, batch.first_version, "a batch without its command")
        for k, entry in enumerate(batch.entries):
            if entry.WhichOneof("body") != "event":
                continue
            try:
                state = game.fold(state, game_event(game, entry))
            except (RuleError, ValueError, KeyError, TypeError, IndexError) as e:
                raise BadLog(batch.line + k, entry.version,
                             f"the event does not apply: {str(e)[:200]}") from e
        finished = _check_end(game, batch, state)
    return Verified(state, len(entries), finished)


def _recheck(game: Game, state: Any, seat: int | None, message: Any, rng: Rng,
             first: Any) -> list[Any] | None:
    """A batch of an event kind the game no longer writes is judged by the rules of its time."""
    return None if game.recheck is None else game.recheck(state, seat, message, rng, first)


def _opening(game: Game, entries: Sequence[apb.LogEntry],
             seed: bytes | None) -> tuple[list[Batch], bytes]:
    """The log's batches and its seed, after checking its start and the seed's commitment."""
    groups = batches(entries)
    if not groups or groups[0].entries[0].WhichOneof("body") != "started":
        raise BadLog(1, 1, "the log must start with the game's start")
    started = groups[0].entries[0].started
    if started.game != game.name:
        raise BadLog(1, 1, f"the log is of {started.game!r}, not {game.name!r}")
    try:
        game.check_seat_count(len(started.seats))
    except RuleError as e:
        raise BadLog(1, 1, e.message) from e
    final = entries[-1]
    if final.WhichOneof("body") == "finished":
        try:
            seed = bytes.fromhex(final.finished.seed)
        except ValueError as e:
            raise BadLog(len(entries), final.version, "the revealed seed is not hex") from e
    if seed is None:
        raise NotFinished(len(entries), final.version)
    if commitment(seed) != started.seed_commitment:
        raise BadLog(1, 1, "the seed does not match the published commitment")
    return groups, seed


def _check_kinds(batch: Batch, first: bool) -> None:
    """Events only, but for the game's start (first batch) and its end (last entry)."""
    last = len(batch.entries) - 1
    for k, entry in enumerate(batch.entries):
        body = entry.WhichOneof("body")
        if (k == 0 and first) or body == "event" or (body == "finished" and k == last):
            continue
        raise BadLog(batch.line + k, entry.version,
                     f"a {body or 'blank'} entry cannot stand here in a batch")


def _check_end(game: Game, batch: Batch, state: Any) -> bool:
    """Whether the game ends with `batch`, which must say so exactly when the rules do."""
    outcome = game.outcome(state)
    tail = batch.entries[-1]
    at = batch.line + len(batch.entries) - 1
    if outcome is not None:
        if tail.WhichOneof("body") != "finished":
            raise BadLog(at, tail.version, "the game ended here but the log does not say so")
        if tail.finished.outcome != outcome.to_pb():
            raise BadLog(at, tail.version, "the recorded result differs from the rules' result")
        return True
    if tail.WhichOneof("body") == "finished":
        raise BadLog(at, tail.version, "the log ends the game before the rules do")
    return False
