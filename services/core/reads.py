"""What a host answers without changing a game: whose seat a caller speaks for, histories
and replays, and who may see a game's log (forks of running games stay hidden). `Reads` is
handed the process's tables, its CPU pool and the admin check.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arbiter.v1 import arbiter_pb2 as apb

from services.core import log as gamelog
from services.core.decider import Game, MalformedCommand
from services.core.happened import Noted, journal_of
from services.core.live import NotFound, SnapshotSource, Tables
from services.core.offload import CpuPool
from services.core.table import LobbyError, Table

if TYPE_CHECKING:
    from services.core.host import Host

__all__ = ["LobbyError", "NotFound", "SnapshotSource"]


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


class BadInvitation(MalformedCommand):
    pass


SPECTATOR = None
LOBBY_SECONDS = 3600.0  # how long a game's open seats wait for players (ARBITER_LOBBY_SECONDS)
MAX_FORK_DEPTH = 100


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Caller:
    """Who is calling: a seat token, the admin token, and the seat the admin asks for.

    `trusted` marks the server's own callers (AI seats, deadlines); no request can set it.
    """

    token: str = ""
    admin_token: str = ""
    seat: int | None = None
    trusted: bool = False


# An AI seat must act: (host, game id, version, seat): in process or on Celery.
AiDispatch = Callable[["Host", str, int, int], None]
def replay_entries(game: Game, entries: Sequence[apb.LogEntry]) -> Any:
    """The state after these entries (a whole history: run it in `Host.cpu`)."""
    return game.replay([gamelog.game_event(game, e) for e in entries
                        if e.WhichOneof("body") == "event"])


class Reads:
    def __init__(self, tables: Tables, cpu: CpuPool, is_admin: Callable[[Caller], bool],
                 clock_ms: Callable[[], int]) -> None:
        self.tables, self.cpu, self.is_admin, self.clock_ms = tables, cpu, is_admin, clock_ms

    def seat_of(self, loaded: Table, caller: Caller, acting: bool) -> int | None:
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

    async def lobby_status(self, game_id: str) -> tuple[list[int], bool, dict[int, str]]:
        """(open seats, expired, names joined) of a game, for listings."""
        loaded = await self.tables.load(game_id)
        return sorted(loaded.open_seats), loaded.expired(self.clock_ms()), dict(loaded.joined)

    async def history(self, game_id: str) -> tuple[Table, list[apb.LogEntry]]:
        loaded = await self.tables.load(game_id, fresh=True)
        entries = gamelog.decode(await self.tables.store.read(game_id))
        if not entries:  # lost since it was loaded (a failover)
            raise NotFound(f"no game {game_id!r}")
        return loaded, entries

    async def replay_to(self, game_id: str, version: int) -> tuple[Table, Any, int]:
        loaded, state, version, _ = await self.replay_with_journal(game_id, version)
        return loaded, state, version

    async def replay_with_journal(self, game_id: str, version: int
                                  ) -> tuple[Table, Any, int, list[Noted]]:
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

    async def log_is_public(self, loaded: Table) -> bool:
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
                parent = await self.tables.load(parent_id, fresh=True)
            except NotFound:
                return True
            if not parent.finished:
                return True
            forked_from = parent.forked_from
        return True

    async def check_visible(self, loaded: Table, caller: Caller) -> None:
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
