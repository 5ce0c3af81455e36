"""A host's games in memory and what it answers without changing them.

A game is held at its latest known version (`Loaded`): loaded from a snapshot and the tail
of its stream, or the whole stream, then caught up with what other servers appended; the
lobby's open seats come from the store's metadata. `Reads` answers whose seat a caller
speaks for, views, the history and replays, and who may see a game's log (forks of running
games stay hidden).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from arbiter.v1 import arbiter_pb2 as apb

from services.core import log as gamelog
from services.core.decider import Game, MalformedCommand, RuleError, Seat
from services.core.happened import JOURNAL, Journal, Noted, journal_of, tell
from services.core.metrics import METRICS
from services.core.offload import CpuPool
from services.core.store import Store

if TYPE_CHECKING:
    from services.core.host import Host


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


class LobbyError(RuleError):
    """A join or a command the lobby refuses (FAILED_PRECONDITION, with a reason)."""


class BadInvitation(MalformedCommand):
    pass


SPECTATOR = None
LOBBY_SECONDS = 3600.0  # how long a game's open seats wait for players (ARBITER_LOBBY_SECONDS)
CACHE_SIZE = 10_000
MAX_FORK_DEPTH = 100


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


@dataclass(frozen=True)
class Caller:
    """Who is calling: a seat token, the admin token, and the seat the admin asks for.

    `trusted` marks the server's own callers (AI seats, deadlines); no request can set it.
    """

    token: str = ""
    admin_token: str = ""
    seat: int | None = None
    trusted: bool = False


def lobby_from_meta(loaded: Loaded, meta: dict[str, str]) -> None:
    loaded.open_seats = {int(k[5:]) for k, v in meta.items() if k.startswith("open:")
                         and v == "1"}
    loaded.lobby_until_ms = int(meta.get("lobby_until", "0"))
    loaded.joined = {int(k[5:]): v for k, v in meta.items() if k.startswith("name:")}
    loaded.tokens.update({k[4:]: int(v) for k, v in meta.items() if k.startswith("tok:")})


# An AI seat must act: (host, game id, version, seat): in process or on Celery.
AiDispatch = Callable[["Host", str, int, int], None]
# A command's batch was appended: (game id, its entries, the state after them); the live hub.
Appended = Callable[[str, list[apb.LogEntry], Any], None]
# (game id, game) -> (version, state, finished) of a snapshot, or None (the workers').
SnapshotSource = Callable[[str, Game], Awaitable[tuple[int, Any, bool] | None]]


class Loader:
    """The games a host holds, and the collaborators the server gives it."""

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

    def is_admin(self, caller: Caller) -> bool:
        if caller.trusted:
            return True
        return bool(self.admin_token) and hmac.compare_digest(
            caller.admin_token.encode(), self.admin_token.encode())

    def _remember(self, loaded: Loaded) -> None:
        self._cache[loaded.game_id] = loaded
        self._cache.move_to_end(loaded.game_id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    def _hand_to_ai(self, loaded: Loaded) -> None:
        if loaded.finished or self.ai_dispatch is None or loaded.open_seats:
            return
        for seat in loaded.game.to_act(loaded.state):
            if loaded.seats[seat].kind == "ai":
                self.ai_dispatch(cast("Host", self), loaded.game_id, loaded.version, seat)

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
                {}, None, 0, False, started.forked_from)
            if snap:
                loaded.version, loaded.state, loaded.finished = snap
                # The events just before the snapshot, for what each seat is told happened.
                start = max(0, snap[0] - JOURNAL)
                loaded.said.feed_all(gamelog.decode(
                    await self.store.read(game_id, start, snap[0] - start)))
            METRICS.loads(game.name).inc()
            self._fold(loaded, entries)
            lobby_from_meta(loaded, meta)
            self._remember(loaded)
        else:
            if loaded.open_seats:  # another server may have filled them: read the metadata
                lobby_from_meta(loaded, await self.store.meta(loaded.game_id))
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
                loaded.state = loaded.game.fold(loaded.state, event)
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


def replay_entries(game: Game, entries: Sequence[apb.LogEntry]) -> Any:
    """The state after these entries (a whole history: run it in `Host.cpu`)."""
    return game.replay([gamelog.game_event(game, e) for e in entries
                        if e.WhichOneof("body") == "event"])


class Reads(Loader):
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

    def view_of(self, loaded: Loaded, seat: int | None, state: Any = None,
                version: int | None = None, noted: Sequence[Noted] | None = None) -> Any:
        """`seat`'s view of the game now (or of `state` at `version`), with what happened
        since the seat last acted (from `noted`, else the game's journal)."""
        view = loaded.game.view(loaded.state if state is None else state, seat)
        view.version = loaded.version if version is None else version
        tell(loaded.game, view, loaded.said.noted if noted is None else noted, seat)
        return view

    async def lobby_status(self, game_id: str) -> tuple[list[int], bool, dict[int, str]]:
        """(open seats, expired, names joined) of a game, for listings."""
        loaded = await self.load(game_id)
        return sorted(loaded.open_seats), loaded.expired(self.clock_ms()), dict(loaded.joined)

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

    # ---- who may see a log ---------------------------------------------------------------

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
