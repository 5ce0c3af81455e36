"""The contract every game's rules implement: a pure decider.

A game is a handful of plain functions over its own state type. They do no I/O, read no
clock and draw no global randomness; the host around them loads, stores and serves.

    setup(options, seats, rng)      -> the opening events (shuffles included)
    start(event)                    -> the state the first of them sets up
    decide(state, seat, cmd, rng)   -> the events a command causes, or a RuleError; called
                                       only past the platform's refusals (Game.refuse)
    evolve(state, event)            -> the next state (total, deterministic, no randomness)
    show(state, seat)               -> the game's part of what one seat (or a spectator,
                                       seat None) may see; `Game.view` adds the rest
    redact(event, seat)             -> what that seat may see of an event (None: nothing)
    describe(event, seat)           -> the event in words for that seat (None: nothing to say)
    to_act(state)                   -> the seats that may act now
    legal_actions(state, seat)      -> ready-to-send commands for that seat
    outcome(state)                  -> the result once the game is over, else None

Commands, events, options and views are the game's protobuf messages (`Command`, `Event`,
`Options`, `View` in `arbiter.<game>.v1`): the schema is the contract, so old logs keep
replaying. States are the game's own immutable values: `evolve` returns a new state and never
changes the one it was given, so `decide` may fold its own events to look ahead.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable, MutableSequence, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from arbiter.v1 import arbiter_pb2 as apb

if TYPE_CHECKING:
    from services.core.search import Budget

S = TypeVar("S")
Message = Any  # a protobuf message of the game's package


class RuleError(Exception):
    """A command the rules forbid now: FAILED_PRECONDITION with a stable code.

    `code` is a machine code that never changes meaning (`NOT_YOUR_TURN`, `COLUMN_FULL`);
    `message` is one sentence a player understands ("column 3 is full").
    """

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field


class MalformedCommand(RuleError):
    """A command that could never be valid (missing oneof, cell out of range): INVALID_ARGUMENT."""


@dataclass(frozen=True)
class Seat:
    """A seat at the table. `kind` is "human" or "ai"; `bot` names the AI's bot."""

    name: str
    kind: str = "human"
    bot: str = ""


@dataclass(frozen=True)
class Outcome:
    """How a game ended: the winning seats (several on a shared win, none when all lose)."""

    winners: tuple[int, ...]
    scores: tuple[int, ...] = ()
    reason: str = ""

    def to_pb(self) -> apb.Outcome:
        return apb.Outcome(winners=self.winners, scores=self.scores, reason=self.reason)


_FOUR_WORDS = struct.Struct(">4Q")
_INNER_PAD = bytes(x ^ 0x36 for x in range(256))  # HMAC's ipad and opad (RFC 2104)
_OUTER_PAD = bytes(x ^ 0x5C for x in range(256))


@lru_cache(maxsize=256)
def _hmac_pads(seed: bytes) -> tuple[Any, Any]:
    """SHA-256 after absorbing the padded HMAC key `seed` (inner, outer): every decision of a
    game keys its stream from the same seed, so this half of the HMAC is done once per game."""
    key = seed if len(seed) <= 64 else hashlib.sha256(seed).digest()
    key = key.ljust(64, b"\0")
    return hashlib.sha256(key.translate(_INNER_PAD)), hashlib.sha256(key.translate(_OUTER_PAD))


def _hmac_sha256(seed: bytes, message: bytes) -> bytes:
    """HMAC-SHA256(seed, message), the same bytes as hmac.digest(seed, message, "sha256")."""
    inner_pad, outer_pad = _hmac_pads(seed)
    inner = inner_pad.copy()
    inner.update(message)
    outer = outer_pad.copy()
    outer.update(inner.digest())
    return outer.digest()


class Rng:
    """Deterministic randomness for one decision, derived from the game's secret seed.

    The stream is SHA-256 in counter mode over HMAC-SHA256(seed, "<version>"), so anyone holding
    the revealed seed re-derives every shuffle and draw in any language:
        block_i = SHA-256(key || i as 8 big-endian bytes); each block yields four 64-bit words;
        below(n) takes words until one is < n * floor(2^64 / n) and returns it mod n.
    docs/randomness.md gives every step, and known answers that the tests check.
    """

    __slots__ = ("_seed", "_version", "_key", "_counter", "_words")

    def __init__(self, seed: bytes, version: int) -> None:
        # The key is derived on the first draw: most decisions draw nothing.
        self._seed, self._version = seed, version
        self._key = b""
        self._counter = 0
        self._words: list[int] = []

    @classmethod
    def for_test(cls, n: int) -> Rng:
        return cls(b"test-seed-%d" % n, 0)

    def _word(self) -> int:
        if not self._words:
            if not self._key:
                self._key = _hmac_sha256(self._seed, str(self._version).encode())
            block = hashlib.sha256(self._key + self._counter.to_bytes(8, "big")).digest()
            self._counter += 1
            w0, w1, w2, w3 = _FOUR_WORDS.unpack(block)
            self._words = [w3, w2, w1, w0]  # popped from the end: w0 first
        return self._words.pop()

    def below(self, n: int) -> int:
        """A uniform integer in [0, n)."""
        if n <= 0:
            raise ValueError("below() needs n > 0")
        limit = (1 << 64) - (1 << 64) % n
        while True:
            w = self._word()
            if w < limit:
                return w % n

    def choice(self, items: Sequence[Any]) -> Any:
        return items[self.below(len(items))]

    def shuffle(self, items: MutableSequence[Any]) -> None:
        """Fisher-Yates from the end, in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def shuffled(self, items: Sequence[Any]) -> list[Any]:
        out = list(items)
        self.shuffle(out)
        return out

    def chance(self, numerator: int, denominator: int) -> bool:
        """True with probability numerator/denominator."""
        return self.below(denominator) < numerator


class Decision(Generic[S]):
    """The events of one decision and the state after them, so that decide can read its own
    consequences. Each event is emitted with its effect on the state: evolve by default, or
    the change the rules already know (`change(state, *args)`), so that decide need not decode
    its own messages. Effects are applied when the state is next read, so the last ones of a
    decision cost nothing."""

    __slots__ = ("_state", "_evolve", "_pending", "events")

    def __init__(self, state: S, evolve: Callable[[S, Message], S]) -> None:
        self._state = state
        self._evolve = evolve
        self._pending: list[tuple[Callable[..., S], tuple[object, ...]]] = []
        self.events: list[Message] = []

    @property
    def state(self) -> S:
        if self._pending:
            state = self._state
            for change, args in self._pending:
                state = change(state, *args)
            self._state = state
            self._pending.clear()
        return self._state

    def emit(self, event: Message, change: Callable[..., S] | None = None, *args: object
             ) -> None:
        """Record `event`; its effect is `change(state, *args)`, or evolve's."""
        self.events.append(event)
        if change is None:
            self._pending.append((self._evolve, (event,)))
        else:
            self._pending.append((change, args))


class Bot(Protocol):
    """An AI player: it sees only its seat's view and the commands it may send."""

    def __call__(self, view: Message, legal: list[Message], rng: Rng) -> Message: ...


def exploring(bot: Bot, numerator: int, denominator: int) -> Bot:
    """`bot`, except that with chance numerator/denominator it sends any legal command: its
    games also go where a good player would not (a playout that reaches the rules)."""

    def play(view: Message, legal: list[Message], rng: Rng) -> Message:
        if rng.chance(numerator, denominator):
            return rng.choice(legal)
        return bot(view, legal, rng)

    return play


@dataclass(frozen=True)
class Variant:
    """A way to play a game besides its default options: a seat count and the options."""

    name: str
    seats: int
    options: Message


@dataclass(frozen=True)
class SuiteNeeds:
    """What the shared conformance suite (tests/conformance/) cannot find out about a game by
    itself, declared by the game so that adding one touches no shared test."""

    # Playouts per table (the default game and each variant): a short game plays more, so
    # that every kind is reached several times and the contract is checked in enough states.
    playout_seeds: int = 2
    # Kinds of Command and of Event that no playout reaches -> why, naming the test that
    # covers each instead (a kind listed here that a playout reaches after all fails).
    unreached_commands: dict[str, str] = field(default_factory=dict)
    unreached_events: dict[str, str] = field(default_factory=dict)
    # At least this many rulings and tests named in docs/rulings/<game>.md: a doc whose
    # layout the suite's reader no longer understands finds fewer.
    rulings: tuple[int, int] = (1, 1)
    # Why a game that hides something from a seat (Event.hidden, View.hidden) has no redeal,
    # so that no leak test runs on it; empty: such a game must have one.
    no_redeal: str = ""


@dataclass(frozen=True)
class CatalogEntry:
    """One thing a game's views and commands name by id (a card, a token, an item, a zone):
    its display name and its rules text, served by Arbiter.GetCatalog."""

    id: str  # as the views name it: an enum value's name ("THUNDER_ASSASSIN") or a card's id
    kind: str  # "card", "token", "item", "zone", ...
    name: str
    text: str


@dataclass(frozen=True)
class Figure:
    """How a key of a game's `observe` is recorded: a histogram arbiter_<game>_<series> with
    these labels; `timed`, when set: the decide time of the commands whose figure is above
    zero, in arbiter_<game>_<timed> with the same labels."""

    series: str
    help: str
    buckets: tuple[float, ...]
    labels: tuple[tuple[str, str], ...] = ()
    timed: str = ""
    timed_help: str = ""


@dataclass(frozen=True)
class Game(Generic[S]):
    """Everything the platform needs to know about one game."""

    name: str  # short name used in ids, metrics and the CLI: "bubblee"
    title: str
    pb: Any  # the generated module of arbiter.<game>.v1 (Command, Event, Options, View, ...)
    min_seats: int
    max_seats: int
    setup: Callable[[Message, Sequence[Seat], Rng], list[Message]]
    start: Callable[[Message], S]
    decide: Callable[[S, int | None, Message, Rng], list[Message]]
    evolve: Callable[[S, Message], S]
    # The game's own fields of a seat's View; `view` fills those every View has.
    show: Callable[[S, int | None], Message]
    redact: Callable[[Message, int | None], Message | None]
    to_act: Callable[[S], Sequence[int]]
    legal_actions: Callable[[S, int], list[Message]]
    outcome: Callable[[S], Outcome | None]
    bots: dict[str, Bot] = field(default_factory=dict)
    # The seat count of a standard game with default options (tests and tools use it).
    standard_seats: int = 0
    default_bot: str = "random"
    # Re-deal everything `seat` cannot see (for the leak test); None when nothing is hidden.
    redeal: Callable[[S, int, Rng], S] | None = None
    # The same state with the chance to come that it already holds (a solo level's seeded
    # draws) drawn anew, so that a search bot cannot foresee it. None: decide draws it all.
    redraw: Callable[[S, Rng], S] | None = None
    # The game's own planner for the search bots (easy, medium, hard, <N>ms): (a state already
    # re-dealt from the seat's viewpoint, the seat, the bot's rng, its budget) -> a command.
    # None: the generic search of services/core/search.py.
    search: Callable[[S, int, Rng, Budget], Message] | None = None
    # The commands a search bot weighs, from the seat's view and its legal commands: the
    # legal ones less near-duplicates that would only thin its budget. None: every one.
    candidates: Callable[[Message, list[Message]], list[Message]] | None = None
    # How many seats a state's table has, where a search level's settings depend on it
    # (services/core/bots.py, Level.depths). None: the same settings at every table size.
    table_size: Callable[[S], int] | None = None
    # How likely `seat` is to win from a state, in [0, 1]: where a search bot's playout stops
    # short of the end (its level's depth). None: playouts go to the end.
    estimate: Callable[[S, int], float] | None = None
    # The commands the generic search weighs for a seat: its legal commands as the game's
    # heuristic bot would send them (Bubble and Shadow's pacts with the bot's pay order:
    # a legal command leaves it out, and the default order pays Moons before Apples).
    # None: legal_actions.
    search_commands: Callable[[S, int], list[Message]] | None = None
    # The paths of a shown View that are unset because its seat may not see them (View.hidden:
    # a client tells "hidden from you" from "none"). None when a view hides nothing.
    view_hidden: Callable[[Message], list[str]] | None = None
    # Timeouts the server must enforce now: (seconds, the command it sends as seat None once
    # they have passed). The command names what it closes (a window, a turn): one deadline
    # per distinct command, timed from when it first appears, sent at whatever version the
    # game has reached; the rules refuse it (a RuleError) once that thing is closed.
    deadlines: Callable[[S], list[tuple[float, Message]]] | None = None
    # Per-event observations for statistics ({"cascade_depth": 3}), and how the server's
    # metrics record each key (without a Figure, a key only reaches the statistics).
    observe: Callable[[Message], dict[str, float]] | None = None
    figures: dict[str, Figure] = field(default_factory=dict)
    # What a state snapshot depends on, besides evolve's own module: the modules and data
    # folders (paths from the project root) that shape the state. A change to any of them
    # retires the snapshots the projection workers took. Empty: the game's whole folder.
    state_depends_on: tuple[str, ...] = ()
    # The option variants and seat counts the conformance suite plays besides the default.
    variants: Callable[[], Sequence[Variant]] | None = None
    # Events of kinds the game no longer writes: (state, seat, the command or, for the set-up,
    # the options, rng, the batch's first recorded event) -> the events the rules of that
    # time give again, or None when the recorded event is of today's kinds. Log verification
    # judges an old batch by these. It raises log.ReplayOnly for a log that replays but can
    # no longer be re-run against its seed (ImportLog then takes it replay-only).
    recheck: Callable[[S | None, int | None, Message, Rng, Message | None],
                      list[Message] | None] | None = None
    # How the conformance suite plays this game to its end (and played its golden logs): a
    # bot whose games reach the rules. Random play can end every game before most of them
    # (a wrong proclamation, a campaign abandoned at once). None: any legal command.
    playout: Bot | None = None
    # An event in words for one seat (or a spectator), from what redact leaves that seat:
    # "seat 2 stole a card from you". None: the seat is told nothing of it. Views carry the
    # descriptions of what happened since the seat last acted (View.happened).
    describe: Callable[[Message, int | None], str | None] | None = None
    # For the terminal (`arbiter play`, `arbiter replay`): the table a view shows, as text
    # (render(view, colour)), and a command in words (describe_command(command, view)).
    # None: the view as protobuf text, the command as its kind and fields.
    render: Callable[[Message, bool], str] | None = None
    describe_command: Callable[[Message, Message | None], str] | None = None
    # The kind of each command in words, by its oneof field ("play" -> "play a card"), for
    # LegalActions.words; a kind not named here is its field name in words.
    command_groups: dict[str, str] = field(default_factory=dict)
    # The names and rules text of what the views name by id (Arbiter.GetCatalog): every value
    # of an enum it names one of, and every `id` a view holds.
    catalog: Callable[[], list[CatalogEntry]] | None = None
    # What the shared test suite needs to be told about this game (seeds, floors, kinds
    # its playouts never reach).
    suite: SuiteNeeds = field(default_factory=SuiteNeeds)

    def command_label(self, command: Message, view: Message | None) -> str:
        """A command in words, as a button says it (describe_command, else its kind)."""
        if self.describe_command is not None:
            return self.describe_command(command, view)
        return self.command_group(command)

    def command_group(self, command: Message) -> str:
        kind = command.WhichOneof("kind") or "nothing"
        return self.command_groups.get(kind, kind.replace("_", " "))

    @property
    def seat_count(self) -> int:
        return self.standard_seats or self.min_seats

    def check_seat_count(self, count: int) -> None:
        """The platform's refusal of a table of the wrong size, before a game's setup runs
        (a seat count that depends on the options is the game's own rule)."""
        if not self.min_seats <= count <= self.max_seats:
            raise MalformedCommand(
                "SEAT_COUNT", f"{self.title} takes {self.min_seats} to {self.max_seats} seats, "
                f"not {count}", "seats")

    def decide_now(self, state: S, seat: int | None, command: Message, rng: Rng
                   ) -> list[Message]:
        """decide, after the platform's own refusals; every path to a game's decide (the
        host, log verification, simulations) goes through here, so they judge alike and a
        game's decide never sees these cases."""
        self.refuse(state, seat, command)
        return self.decide(state, seat, command, rng)

    def refuse(self, state: S, seat: int | None, command: Message) -> None:
        """The platform's refusals: a command naming no action, a game over, a seat not in
        to_act, and a server command (seat None) to a game that sets no deadlines."""
        if command.WhichOneof("kind") is None:
            raise MalformedCommand("NO_COMMAND", "the command names no action", "command")
        if self.outcome(state) is not None:
            raise RuleError("GAME_OVER", "the game is over")
        if seat is None:
            if self.deadlines is None:
                raise RuleError("NOT_YOUR_TURN", "the server sends no command in this game")
        elif seat not in self.to_act(state):
            raise RuleError("NOT_YOUR_TURN", f"seat {seat} may not act now")

    def view(self, state: S, seat: int | None) -> Message:
        """What `seat` (None: a spectator) may see: the game's fields, and the fields every
        View has (seat, to_act, outcome, hidden). The host adds the version and what happened."""
        view = self.show(state, seat)
        if seat is not None:
            view.seat = seat
        view.to_act.extend(self.to_act(state))
        result = self.outcome(state)
        if result is not None:
            view.outcome.CopyFrom(result.to_pb())
        if self.view_hidden is not None:
            view.hidden.extend(self.view_hidden(view))
        return view

    def fold(self, state: S | None, event: Message) -> S:
        """The state after `event`: the game's start for the first event of a game."""
        return self.start(event) if state is None else self.evolve(state, event)

    def replay(self, events: Sequence[Message]) -> S:
        state = self.start(events[0])
        for event in events[1:]:
            state = self.evolve(state, event)
        return state
