"""The host: runs a game's decider against the store.

    load state (cache, or replay the stream) -> decide -> append (expected version,
    idempotent command id) -> evolve the cache -> reply; then hand AI seats their turn.

The host knows nothing of any game's rules or of gRPC; the adapter maps requests onto it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from arbiter.v1 import arbiter_pb2 as apb

from services.core import log as gamelog
from services.core.decider import Game, MalformedCommand, Rng, RuleError, Seat
from services.core.happened import JOURNAL, Journal, Noted, journal_of, tell
from services.core.metrics import METRICS
from services.core.offload import CpuPool
from services.core.store import Conflict, Store


class NotFound(Exception):
    pass


class Unauthenticated(Exception):
    pass


class PermissionDenied(Exception):
    pass


class ForkHidden(PermissionDenied):
    """A fork whose parent (or an earlier ancestor) still runs: admin only."""


class StaleVersion(Exception):
    def __init__(self, current_version: int) -> None:
        super().__init__(f"the game is at version {current_version}")
        self.current_version = current_version


SPECTATOR = None
# Command ids the server issues itself (bots, idle seats, rule deadlines); clients may not.
SERVER_COMMAND_IDS = ("ai:", "idle:", "deadline:", "join:")
LOBBY_SECONDS = 3600.0  # how long a game's open seats wait for players (ARBITER_LOBBY_SECONDS)
MAX_NAME = 64
MAX_FORK_DEPTH = 100
CACHE_SIZE = 10_000
APPEND_RETRIES = 20


def bot_rng(loaded: Loaded, purpose: str, version: int) -> Rng:
    """A bot's randomness, keyed by the game's secret seed: with a public key, anyone could
    re-run the bot on every hand it might hold and keep those that give the move it made."""
    return Rng(hmac.new(loaded.seed, purpose.encode(), hashlib.sha256).digest(), version)


def _same_command(command: Any, recorded: bytes) -> bool:
    """Compared as messages: fields a newer client sends and we do not know do not count."""
    first, again = type(command).FromString(recorded), type(command)()
    again.CopyFrom(command)
    first.DiscardUnknownFields()
    again.DiscardUnknownFields()
    return bool(first == again)


def replay_entries(game: Game, entries: Sequence[apb.LogEntry]) -> Any:
    """The state after these entries (a whole history: run it in `Host.cpu`)."""
    return game.replay([gamelog.game_event(game, e) for e in entries
                        if e.WhichOneof("body") == "event"])


def new_game_id(game_name: str) -> str:
    return f"{game_name}-{secrets.token_hex(8)}"


def is_game_id(game_id: str, game_name: str) -> bool:
    """The form of every id this server gives out."""
    head, _, tail = game_id.rpartition("-")
    return head == game_name and len(tail) == 16 and all(c in "0123456789abcdef" for c in tail)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class Loaded:
    """One game held in memory at its latest known version."""

    game: Game
    game_id: str
    seats: list[Seat]
    seed: bytes
    tokens: dict[str, int]  # sha256 of a seat token -> seat
    state: Any
    version: int
    finished: bool
    forked_from: str = ""  # "<parent id>@<version>" for a fork
    ancestors_over: bool = False  # once every game it was forked from is over (it stays so)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    said: Journal = field(init=False)  # the recent events, for View.happened
    # The lobby (from the store's metadata): seats still open, when they stop waiting (ms
    # since the epoch), the names the joining players gave. Empty for most games.
    open_seats: set[int] = field(default_factory=set)
    lobby_until_ms: int = 0
    joined: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.said = Journal(self.game)

    def expired(self, now_ms: int) -> bool:
        return bool(self.open_seats) and now_ms >= self.lobby_until_ms


@dataclass(frozen=True)
class Caller:
    """Who is calling: a seat token, the admin token, and the seat the admin asks for.

    `trusted` marks the server's own callers (AI seats, deadlines); no request can set it.
    """

    token: str = ""
    admin_token: str = ""
    seat: int | None = None
    trusted: bool = False


@dataclass
class Created:
    game_id: str
    tokens: dict[int, str]  # seat -> token, for HUMAN seats
    commitment: str
    version: int
    invitations: dict[int, str]  # seat -> invitation code, for OPEN seats


@dataclass
class Joined:
    game_id: str
    game: str
    seat: int
    token: str
    open_seats: list[int]
    version: int


class LobbyError(RuleError):
    """A join or a command the lobby refuses (FAILED_PRECONDITION, with a reason)."""


class BadInvitation(MalformedCommand):
    pass


def _lobby_from_meta(loaded: Loaded, meta: dict[str, str]) -> None:
    loaded.open_seats = {int(k[5:]) for k, v in meta.items() if k.startswith("open:")
                         and v == "1"}
    loaded.lobby_until_ms = int(meta.get("lobby_until", "0"))
    loaded.joined = {int(k[5:]): v for k, v in meta.items() if k.startswith("name:")}
    loaded.tokens.update({k[4:]: int(v) for k, v in meta.items() if k.startswith("tok:")})


@dataclass
class ActResult:
    version: int  # the last version the command's batch wrote
    events: list[Any]  # the game's Event messages, versions set, not yet redacted
    state: Any  # the game now, at state_version (later than `version` for a repeated id)
    seat: int | None
    state_version: int


# An AI seat must act: (host, game id, version, seat): in process or on Celery.
AiDispatch = Callable[["Host", str, int, int], None]
# A command's batch was appended: (game id, its entries, the state after them); the live hub.
Appended = Callable[[str, list[apb.LogEntry], Any], None]
# (game id, game) -> (version, state, finished) of a snapshot, or None (the workers').
SnapshotSource = Callable[[str, Game], Awaitable[tuple[int, Any, bool] | None]]


class Host:
    def __init__(self, store: Store, games: dict[str, Game], admin_token: str = "", *,
                 ai_dispatch: AiDispatch | None = None,
                 snapshot_source: SnapshotSource | None = None,
                 on_append: Appended | None = None, cpu: CpuPool | None = None,
                 lobby_seconds: float = LOBBY_SECONDS) -> None:
        self.store = store
        self.games = games
        for game in games.values():
            METRICS.declare(game)  # its series are on /metrics before anything is recorded
        self.admin_token = admin_token
        self.ai_dispatch = ai_dispatch
        self.snapshot_source = snapshot_source
        self.on_append = on_append
        self._cache: OrderedDict[str, Loaded] = OrderedDict()
        self.cpu = cpu or CpuPool()  # re-running whole histories happens off the event loop
        self.lobby_seconds = lobby_seconds
        self.clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)

    # ---- identity -----------------------------------------------------------------------

    def is_admin(self, caller: Caller) -> bool:
        if caller.trusted:
            return True
        return bool(self.admin_token) and hmac.compare_digest(
            caller.admin_token.encode(), self.admin_token.encode())

    def seat_of(self, loaded: Loaded, caller: Caller, acting: bool) -> int | None:
        """The seat a caller speaks for; None for a spectator (never allowed to act)."""
        if self.is_admin(caller):
            if caller.seat is None and acting:
                raise PermissionDenied("the admin must name the seat it acts for")
            if caller.seat is not None and not 0 <= caller.seat < len(loaded.seats):
                raise MalformedCommand("NO_SUCH_SEAT", f"there is no seat {caller.seat}; this "
                                       f"game has seats 0 to {len(loaded.seats) - 1}", "seat")
            return caller.seat
        if not caller.token:
            if acting or caller.seat is not None:
                raise Unauthenticated("acting or seeing as a seat needs the seat's token "
                                      "(metadata x-seat-token)")
            return SPECTATOR
        seat = loaded.tokens.get(token_hash(caller.token))
        if seat is None:
            raise PermissionDenied("this token is not a seat of this game")
        if caller.seat is not None and caller.seat != seat:
            raise PermissionDenied("a seat token acts and sees only as its own seat")
        return seat

    # ---- creating ----------------------------------------------------------------------

    async def create(
        self, game_name: str, seats: Sequence[Seat], options: Any, forked_from: str = ""
    ) -> tuple[str, dict[int, str], str, int]:
        made = await self.create_game(game_name, seats, options, forked_from)
        return made.game_id, made.tokens, made.commitment, made.version

    async def create_game(self, game_name: str, seats: Sequence[Seat], options: Any,
                          forked_from: str = "") -> Created:
        """A new game. Seats of kind "open" get an invitation code instead of a token; the
        game takes no command until JoinGame has filled them."""
        game = self.games[game_name]
        if not game.min_seats <= len(seats) <= game.max_seats:
            raise MalformedCommand(
                "SEAT_COUNT", f"{game.title} takes {game.min_seats} to {game.max_seats} seats, "
                f"not {len(seats)}", "seats")
        for i, s in enumerate(seats):
            if len(s.name) > MAX_NAME or len(s.bot) > MAX_NAME:
                raise MalformedCommand("NAME_TOO_LONG", f"seat {i}: names and bot names are "
                                       f"{MAX_NAME} characters at most", "seats")
            if s.kind == "ai" and (s.bot or game.default_bot) not in game.bots:
                raise MalformedCommand("UNKNOWN_BOT", f"seat {i}: no bot named {s.bot!r}; "
                                       f"choose one of {sorted(game.bots)}", "seats")
        seed = secrets.token_bytes(32)
        game_id = new_game_id(game_name)
        # The rules see an open seat as the human it will be.
        events = game.setup(options, [Seat(s.name, "human") if s.kind == "open" else s
                                      for s in seats], Rng(seed, 0))
        kinds = {"ai": apb.AI, "open": apb.OPEN}
        now_ms = self.clock_ms()
        started = apb.GameStarted(
            game=game_name, game_id=game_id, options=options.SerializeToString(),
            seats=[apb.Seat(name=s.name, kind=kinds.get(s.kind, apb.HUMAN), bot=s.bot)
                   for s in seats],
            seed_commitment=gamelog.commitment(seed), forked_from=forked_from,
            created_unix_ms=now_ms)
        tokens = {i: secrets.token_urlsafe(24) for i, s in enumerate(seats) if s.kind == "human"}
        invitations = {i: f"{game_id}.{secrets.token_urlsafe(12)}"
                       for i, s in enumerate(seats) if s.kind == "open"}
        meta = {"game": game_name, "seed": seed.hex(), "status": "active"}
        meta.update({f"tok:{token_hash(t)}": str(i) for i, t in tokens.items()})
        if invitations:
            meta["lobby_until"] = str(now_ms + int(self.lobby_seconds * 1000))
            meta.update({f"inv:{token_hash(c)}": str(i) for i, c in invitations.items()})
            meta.update({f"open:{i}": "1" for i in invitations})
        state = None
        for e in events:
            state = game.evolve(state, e)
        entries = [apb.LogEntry(version=1, started=started, batch_size=1 + len(events))]
        entries += [apb.LogEntry(version=2 + i, event=e.SerializeToString())
                    for i, e in enumerate(events)]
        appended = await self.store.append(
            game_id, [e.SerializeToString() for e in entries], 0, "", meta)
        loaded = Loaded(game, game_id, gamelog.seats_from_pb(started.seats), seed,
                        {token_hash(t): i for i, t in tokens.items()}, state,
                        appended.last_version, False)
        loaded.said.feed_all(entries)
        _lobby_from_meta(loaded, meta)
        self._remember(loaded)
        self._hand_to_ai(loaded)
        return Created(game_id, tokens, started.seed_commitment, appended.last_version,
                       invitations)

    # ---- the lobby ---------------------------------------------------------------------

    async def join(self, code: str, name: str) -> Joined:
        """Take the open seat an invitation code names; the seat's token is made here.

        The join is an append of no entries under the command id join:<seat>: the store
        keeps one per id, so of two players using one code at once (on any server) one gets
        the seat and the other SEAT_TAKEN."""
        game_id, dot, secret = code.rpartition(".")
        if not dot or not game_id or not secret or len(code) > 256:
            raise BadInvitation("BAD_INVITATION", "this is not an invitation code (they look "
                                "like <game id>.<secret>)", "code")
        if len(name) > MAX_NAME:
            raise MalformedCommand("NAME_TOO_LONG", f"names are {MAX_NAME} characters at most",
                                   "name")
        try:
            loaded = await self.load(game_id, fresh=True)
        except NotFound:
            raise BadInvitation("BAD_INVITATION", "no game of this server has this "
                                "invitation code", "code") from None
        async with loaded.lock:  # (joins on this server one at a time: each reads the last)
            meta = await self.store.meta(game_id)
            seat_text = meta.get(f"inv:{token_hash(code)}")
            if seat_text is None:
                raise BadInvitation("BAD_INVITATION", "no game of this server has this "
                                    "invitation code", "code")
            seat = int(seat_text)
            _lobby_from_meta(loaded, meta)
            if seat not in loaded.open_seats:
                raise LobbyError("SEAT_TAKEN", f"seat {seat} was taken with this code already")
            if loaded.expired(self.clock_ms()):
                raise LobbyError("GAME_EXPIRED", "this game waited for its players longer "
                                 "than the server's lobby time and expired")
            token = secrets.token_urlsafe(24)
            joined_meta = {f"open:{seat}": "0", f"tok:{token_hash(token)}": str(seat),
                           f"name:{seat}": name}
            appended = await self.store.append(game_id, [], loaded.version, f"join:{seat}",
                                               joined_meta)
            if appended.duplicate:
                raise LobbyError("SEAT_TAKEN", f"seat {seat} was taken with this code already")
            _lobby_from_meta(loaded, {**meta, **joined_meta})
            self._hand_to_ai(loaded)  # the last join starts the game
            return Joined(game_id, loaded.game.name, seat, token, sorted(loaded.open_seats),
                          loaded.version)

    async def _refresh_lobby(self, loaded: Loaded) -> None:
        """While seats are open, another server may have filled them: read the metadata."""
        if loaded.open_seats:
            _lobby_from_meta(loaded, await self.store.meta(loaded.game_id))

    def _check_started(self, loaded: Loaded) -> None:
        if not loaded.open_seats:
            return
        if loaded.expired(self.clock_ms()):
            raise LobbyError("GAME_EXPIRED", "this game's open seats were not filled in time; "
                             "it expired and takes no command")
        seats = ", ".join(str(s) for s in sorted(loaded.open_seats))
        raise LobbyError("WAITING_FOR_PLAYERS", f"the game starts when every seat is filled; "
                         f"still open: {seats} (JoinGame with their invitation codes)")

    async def lobby_status(self, game_id: str) -> tuple[list[int], bool, dict[int, str]]:
        """(open seats, expired, names joined) of a game, for listings."""
        loaded = await self.load(game_id)
        return sorted(loaded.open_seats), loaded.expired(self.clock_ms()), dict(loaded.joined)

    # ---- loading -----------------------------------------------------------------------

    def _remember(self, loaded: Loaded) -> None:
        self._cache[loaded.game_id] = loaded
        self._cache.move_to_end(loaded.game_id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    async def load(self, game_id: str, fresh: bool = False) -> Loaded:
        """The game at its latest version (`fresh`: also take entries other servers wrote)."""
        loaded = self._cache.get(game_id)
        if loaded is None:
            meta = await self.store.meta(game_id)
            if not meta or meta.get("game") not in self.games:
                raise NotFound(f"no game {game_id!r}")
            game = self.games[meta["game"]]
            # A snapshot (from the projection workers) plus the tail, else the whole stream.
            snap = await self.snapshot_source(game_id, game) if self.snapshot_source else None
            entries = gamelog.decode(await self.store.read(game_id, snap[0] if snap else 0))
            head = gamelog.decode(await self.store.read(game_id, 0, 1)) if snap else entries
            started = head[0].started
            loaded = Loaded(
                game, game_id, gamelog.seats_from_pb(started.seats), bytes.fromhex(meta["seed"]),
                {k[4:]: int(v) for k, v in meta.items() if k.startswith("tok:")},
                None, 0, False, started.forked_from)
            if snap:
                loaded.version, loaded.state, loaded.finished = snap
                # The events just before the snapshot, for what each seat is told happened.
                start = max(0, snap[0] - JOURNAL)
                loaded.said.feed_all(gamelog.decode(
                    await self.store.read(game_id, start, snap[0] - start)))
            METRICS.loads(game.name).inc()
            self._fold(loaded, entries)
            _lobby_from_meta(loaded, meta)
            self._remember(loaded)
        else:
            await self._refresh_lobby(loaded)
            if fresh:
                await self._catch_up(loaded)
        return loaded

    def _fold(self, loaded: Loaded, entries: Sequence[apb.LogEntry]) -> int:
        """Folds the entries past the cached version into the state; returns how many."""
        folded = 0
        for entry in entries:
            if entry.version <= loaded.version:
                continue  # a concurrent reader or our own append got here first
            folded += 1
            body = entry.WhichOneof("body")
            event = None
            if body == "event":
                event = gamelog.game_event(loaded.game, entry)
                loaded.state = loaded.game.evolve(loaded.state, event)
            elif body == "finished":
                loaded.finished = True
            loaded.said.feed(entry, event)
            loaded.version = entry.version
        return folded

    async def _catch_up(self, loaded: Loaded) -> None:
        folded = self._fold(
            loaded, gamelog.decode(await self.store.read(loaded.game_id, loaded.version)))
        if folded:
            METRICS.caught_up(loaded.game.name).inc(folded)

    async def _reload(self, loaded: Loaded) -> None:
        """The store holds less of the game than this cache: a Redis failover lost batches
        its old master had acknowledged (no ARBITER_REDIS_WAIT_REPLICAS). Replay the game
        from the store (not from a snapshot, which may hold the lost batches too)."""
        loaded.state, loaded.version, loaded.finished = None, 0, False
        loaded.said.clear()
        self._fold(loaded, gamelog.decode(await self.store.read(loaded.game_id)))

    # ---- acting ------------------------------------------------------------------------

    async def act(
        self,
        game_id: str,
        caller: Caller,
        command: Any,
        command_id: str = "",
        expected_version: int | None = None,
    ) -> ActResult:
        loaded = await self.load(game_id)
        seat = self.seat_of(loaded, caller, acting=True)
        game = loaded.game
        name = command.WhichOneof("kind") or "none"
        started = time.perf_counter()
        outcome = "ok"
        try:
            async with loaded.lock:
                return await self._act_locked(loaded, seat, command, command_id,
                                              expected_version)
        except (RuleError, StaleVersion):
            outcome = "rejected"
            raise
        except Exception:
            outcome = "error"  # the store, or a bug: not a command that went through
            raise
        finally:
            METRICS.command_seconds(game.name, name, outcome).observe(
                time.perf_counter() - started)

    async def system_act(self, game_id: str, command: Any, command_id: str = "",
                         expected_version: int | None = None) -> ActResult:
        """A command the server itself issues (a deadline closing a response window):
        decide(state, None, command), recorded with CommandRecord.system. Not an RPC."""
        loaded = await self.load(game_id)
        async with loaded.lock:
            return await self._act_locked(loaded, None, command, command_id, expected_version)

    async def _act_locked(
        self, loaded: Loaded, seat: int | None, command: Any, command_id: str,
        expected_version: int | None,
    ) -> ActResult:
        game = loaded.game
        self._check_started(loaded)
        if command.WhichOneof("kind") is None:
            raise MalformedCommand("NO_COMMAND", "the command names no action", "command")
        for _ in range(APPEND_RETRIES):
            if expected_version is not None and expected_version != loaded.version:
                await self._catch_up(loaded)
                if expected_version != loaded.version:
                    dup = command_id and await self._replayed(loaded, command_id, seat, command)
                    if dup:
                        return dup
                    raise StaleVersion(loaded.version)
            try:
                events = self._decide(loaded, seat, command)
            except RuleError:
                # The cache may be behind other servers: judge the command on the latest state.
                before = loaded.version
                await self._catch_up(loaded)
                if loaded.version != before:
                    continue
                # A retry of a command that was applied (maybe by another server) is not an
                # error: answer with its first result.
                dup = command_id and await self._replayed(loaded, command_id, seat, command)
                if dup:
                    return dup
                raise
            entries, state, finished = self._entries(loaded, seat, command, command_id, events)
            t0 = time.perf_counter()
            try:
                appended = await self.store.append(
                    loaded.game_id, [e.SerializeToString() for e in entries], loaded.version,
                    command_id,
                    {"status": "finished"} if finished else None)
            except Conflict as conflict:
                METRICS.conflicts(game.name).inc()
                if conflict.current_version < loaded.version:
                    await self._reload(loaded)
                else:
                    await self._catch_up(loaded)
                continue
            finally:
                METRICS.append_seconds(game.name).observe(time.perf_counter() - t0)
            if appended.duplicate:
                await self._catch_up(loaded)
                return await self._result_of(loaded, appended.first_version,
                                             appended.last_version, seat, command)
            versioned = []
            for i, e in enumerate(events):
                e.version = loaded.version + 1 + i
                versioned.append(e)
            loaded.state, loaded.version, loaded.finished = state, appended.last_version, finished
            told = iter(versioned)
            for entry in entries:
                loaded.said.feed(entry, next(told) if entry.WhichOneof("body") == "event"
                                 else None)
            METRICS.events_appended(game.name).inc(len(entries))
            if self.on_append is not None:
                # Live streams get it without a read, nor folding it again.
                self.on_append(loaded.game_id, entries, state)
            self._hand_to_ai(loaded)
            return ActResult(loaded.version, versioned, state, seat, loaded.version)
        raise StaleVersion(loaded.version)  # pragma: no cover - only under extreme contention

    def _decide(self, loaded: Loaded, seat: int | None, command: Any) -> list[Any]:
        game = loaded.game
        if loaded.finished:
            raise RuleError("GAME_OVER", "the game is over")
        t0 = time.perf_counter()
        events = game.decide_now(loaded.state, seat, command, Rng(loaded.seed, loaded.version))
        seconds = time.perf_counter() - t0
        METRICS.decide_seconds(game.name).observe(seconds)
        if game.observe is not None:
            for e in events:
                for key, value in game.observe(e).items():
                    METRICS.observe(game, key, value, seconds)
        return events

    def _entries(
        self, loaded: Loaded, seat: int | None, command: Any, command_id: str, events: list[Any]
    ) -> tuple[list[apb.LogEntry], Any, bool]:
        game = loaded.game
        t0 = time.perf_counter()
        state = loaded.state
        for e in events:
            state = game.evolve(state, e)
        METRICS.evolve_seconds(game.name).observe(time.perf_counter() - t0)
        outcome = game.outcome(state)
        v = loaded.version
        entries = [apb.LogEntry(version=v + 1 + i, event=e.SerializeToString())
                   for i, e in enumerate(events)]
        if outcome is not None:
            entries.append(apb.LogEntry(version=v + 1 + len(events), finished=apb.GameFinished(
                outcome=gamelog.outcome_to_pb(outcome), seed=loaded.seed.hex())))
        if not entries:
            raise RuleError("NOTHING_HAPPENS", "the command changes nothing")
        entries[0].batch_size = len(entries)
        entries[0].command.CopyFrom(apb.CommandRecord(
            command_id=command_id, system=seat is None, seat=seat or 0,
            command=command.SerializeToString()))
        return entries, state, outcome is not None

    async def _replayed(self, loaded: Loaded, command_id: str, seat: int | None, command: Any
                        ) -> ActResult | None:
        """The first result of a command id this game has already applied, if any."""
        found = await self.store.applied(loaded.game_id, command_id)
        return await self._result_of(loaded, *found, seat, command) if found else None

    async def _result_of(self, loaded: Loaded, first: int, last: int, seat: int | None,
                         command: Any) -> ActResult:
        """The first result of a command id, for the same seat sending the same command."""
        entries = gamelog.decode(await self.store.read(loaded.game_id, first - 1, last - first + 1))
        record = entries[0].command
        if record.system != (seat is None) or (seat is not None and record.seat != seat):
            # Another seat's command: its result is not this caller's to claim.
            raise MalformedCommand("COMMAND_ID_TAKEN", "this command id was used for another "
                                   "seat's command; send yours with a new id", "command_id")
        if not _same_command(command, record.command):
            # A client bug that reuses ids would otherwise lose this command without a word.
            raise MalformedCommand("COMMAND_ID_REUSED", "this command id was used for another "
                                   "command; a retry must resend the same command", "command_id")
        events = [gamelog.game_event(loaded.game, e) for e in entries
                  if e.WhichOneof("body") == "event"]
        return ActResult(last, events, loaded.state, seat, loaded.version)

    # ---- AI seats ----------------------------------------------------------------------

    def _hand_to_ai(self, loaded: Loaded) -> None:
        if loaded.finished or self.ai_dispatch is None or loaded.open_seats:
            return
        for seat in loaded.game.to_act(loaded.state):
            if loaded.seats[seat].kind == "ai":
                self.ai_dispatch(self, loaded.game_id, loaded.version, seat)

    async def play_ai_turn(self, game_id: str, version: int, seat: int) -> bool:
        """Let the bot of an AI seat act, through the same command path as any client.

        The bot sees only its seat's view and legal commands. The command id
        ai:<game id>:<version>:<seat> makes a redelivered turn harmless.
        """
        loaded = await self.load(game_id, fresh=True)
        if loaded.finished or loaded.version != version or loaded.seats[seat].kind != "ai":
            return False
        game = loaded.game
        if seat not in game.to_act(loaded.state):
            return False
        bot = game.bots[loaded.seats[seat].bot or game.default_bot]
        view = self.view_of(loaded, seat)
        legal = game.legal_actions(loaded.state, seat)
        if not legal:
            return False
        t0 = time.perf_counter()
        command = bot(view, legal, bot_rng(loaded, "bot", version))
        METRICS.ai_turn_seconds(game.name).observe(time.perf_counter() - t0)
        try:
            await self.act(game_id, Caller(seat=seat, trusted=True), command,
                           f"ai:{game_id}:{version}:{seat}", version)
        except (StaleVersion, RuleError):
            return False
        return True

    # ---- reading -----------------------------------------------------------------------

    def view_of(self, loaded: Loaded, seat: int | None, state: Any = None,
                version: int | None = None, noted: Sequence[Noted] | None = None) -> Any:
        """`seat`'s view of the game now (or of `state` at `version`), with what happened
        since the seat last acted (from `noted`, else the game's journal)."""
        view = loaded.game.view(loaded.state if state is None else state, seat)
        view.version = loaded.version if version is None else version
        tell(loaded.game, view, loaded.said.noted if noted is None else noted, seat)
        return view

    async def history(self, game_id: str) -> tuple[Loaded, list[apb.LogEntry]]:
        loaded = await self.load(game_id, fresh=True)
        return loaded, gamelog.decode(await self.store.read(game_id))

    async def replay_to(self, game_id: str, version: int) -> tuple[Loaded, Any, int]:
        loaded, state, version, _ = await self.replay_with_journal(game_id, version)
        return loaded, state, version

    async def replay_with_journal(self, game_id: str, version: int
                                  ) -> tuple[Loaded, Any, int, list[Noted]]:
        """The game at `version`, and the journal a server held then (View.happened)."""
        loaded, entries = await self.history(game_id)
        if not 0 <= version <= len(entries):
            raise MalformedCommand("BAD_VERSION", f"replay to a version from 1 to "
                                   f"{len(entries)}, or 0 for the latest", "version")
        version = version or len(entries)
        version = max(version, entries[0].batch_size or 1)  # the game exists once set up
        state = await self.cpu.run(replay_entries, loaded.game, entries[:version])
        return loaded, state, version, journal_of(loaded.game, entries, version)

    # ---- forks and imports ---------------------------------------------------------------

    async def fork(self, game_id: str, version: int) -> tuple[str, dict[int, str], str, int]:
        """A new game from a game's state at `version`: same history, new seed and tokens.

        The fork's first batch carries the parent's events up to `version` (they were
        verified against the parent's seed); everything after it uses the fork's own seed.
        """
        parent, entries = await self.history(game_id)
        setup_end = entries[0].batch_size or 1
        if version == 0:
            version = len(entries)
        if not setup_end <= version <= len(entries):
            raise MalformedCommand("BAD_VERSION", f"fork at a version from {setup_end} to "
                                   f"{len(entries)}, not {version}", "version")
        if version not in {b.last_version for b in gamelog.batches(entries)}:
            raise MalformedCommand("BAD_VERSION", f"version {version} is inside a command's "
                                   "events: fork at the end of a command", "version")
        events = [parent.game.pb.Event.FromString(e.event) for e in entries[:version]
                  if e.WhichOneof("body") == "event"]
        state = await self.cpu.run(parent.game.replay, events)
        if parent.game.outcome(state) is not None:
            raise RuleError("GAME_OVER", "the game is over at that version: nothing to fork")
        seed = secrets.token_bytes(32)
        new_id = new_game_id(parent.game.name)
        first = entries[0].started
        started = apb.GameStarted(
            game=first.game, game_id=new_id, options=first.options, seats=first.seats,
            seed_commitment=gamelog.commitment(seed), forked_from=f"{game_id}@{version}",
            created_unix_ms=int(time.time() * 1000))
        tokens = {i: secrets.token_urlsafe(24) for i, s in enumerate(parent.seats)
                  if s.kind != "ai"}
        log = [apb.LogEntry(version=1, started=started, batch_size=1 + len(events))]
        for i, e in enumerate(events):
            e.version = 0
            log.append(apb.LogEntry(version=2 + i, event=e.SerializeToString()))
        meta = {"game": first.game, "seed": seed.hex(), "status": "active",
                "forked_from": started.forked_from}
        meta.update({f"tok:{token_hash(t)}": str(i) for i, t in tokens.items()})
        appended = await self.store.append(new_id, [e.SerializeToString() for e in log], 0, "",
                                           meta)
        loaded = Loaded(parent.game, new_id, parent.seats, seed,
                        {token_hash(t): i for i, t in tokens.items()}, state,
                        appended.last_version, False, started.forked_from)
        loaded.said.feed_all(log)
        self._remember(loaded)
        self._hand_to_ai(loaded)
        return new_id, tokens, started.seed_commitment, appended.last_version

    async def log_is_public(self, loaded: Loaded) -> bool:
        """A finished game's log is public, unless it was forked from a game still running."""
        return loaded.finished and not await self.ancestor_running(loaded.forked_from)

    async def ancestor_running(self, forked_from: str) -> bool:
        """Whether a game this one descends from (its parent, the parent's parent...) still
        runs: a fork's first batch holds its parent's hidden information. A missing ancestor,
        or a chain deeper than MAX_FORK_DEPTH, counts as running."""
        for _ in range(MAX_FORK_DEPTH):
            parent_id = forked_from.rpartition("@")[0]
            if not parent_id:
                return False
            try:
                parent = await self.load(parent_id, fresh=True)
            except NotFound:
                return True
            if not parent.finished:
                return True
            forked_from = parent.forked_from
        return True

    async def check_visible(self, loaded: Loaded, caller: Caller) -> None:
        """A fork of a running game is the admin's alone, for every call, until every game it
        descends from is over. Each of its seats and its spectators would otherwise learn what
        the same seat (or a spectator) of the running game may not: its first batch deals the
        running game's hidden cards, and play in the fork (eliminations, the end) reveals them.
        Afterwards it is an ordinary game: what it could reveal is public by then."""
        if not loaded.forked_from or loaded.ancestors_over or self.is_admin(caller):
            return
        if await self.ancestor_running(loaded.forked_from):
            raise ForkHidden("this game was forked from a game that is still running, and "
                             "shows that game's hidden information: until it is over, only the "
                             "admin token may act in or see this fork")
        loaded.ancestors_over = True

    async def parent_events(self, game: Game, started: apb.GameStarted,
                            running_too: bool = False) -> list[Any] | None:
        """The events a fork started from, read from its parent here (None: not here).

        A parent whose log is not public (running, or itself forked from a running game) has
        hidden events: comparing a submitted log with them would let anyone probe its hands,
        so they are used only for logs the server itself stored (`running_too`).
        """
        parent_id, _, at = started.forked_from.rpartition("@")
        if not parent_id or not at.isdigit():
            return None
        try:
            parent, entries = await self.history(parent_id)
        except NotFound:
            return None
        if parent.game is not game or not (running_too or await self.log_is_public(parent)):
            return None
        return [game.pb.Event.FromString(e.event) for e in entries[:int(at)]
                if e.WhichOneof("body") == "event"]

    async def import_entries(self, game: Game, entries: Sequence[apb.LogEntry]) -> tuple[str, int]:
        """Store a verified, finished log. It keeps its id only if the id has the form the
        server gives every game (`<game>-<16 hex digits>`) and is free; else it gets a new one.
        An id is a store key and a log line: nothing else may come in through it."""
        started = entries[0].started
        game_id = started.game_id
        if not is_game_id(game_id, game.name) or await self.store.meta(game_id):
            game_id = new_game_id(game.name)
        meta = {"game": game.name, "seed": entries[-1].finished.seed, "status": "finished",
                "imported": "1"}
        raw = [e.SerializeToString() for e in entries]
        try:
            appended = await self.store.append(game_id, raw, 0, "", meta)
        except Conflict:  # the id was taken meanwhile (another import): take a fresh one
            game_id = new_game_id(game.name)
            appended = await self.store.append(game_id, raw, 0, "", meta)
        return game_id, appended.last_version
