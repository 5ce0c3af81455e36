"""How games come to be: created, forked from another game's state, imported from a verified
log, and started by the lobby once JoinGame has filled their open seats. Each new game's
stream is written by one builder (`Lifecycle._begin`). `Lifecycle` is handed the process's
tables, its CPU pool, the clock, the way to read a game's history and the way to hand AI
seats their turn."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.v1 import arbiter_pb2 as apb

from services.core import log as gamelog
from services.core.decider import Game, MalformedCommand, Rng, RuleError, Seat
from services.core.live import NotFound, Tables
from services.core.offload import CpuPool
from services.core.reads import BadInvitation, token_hash
from services.core.store import Conflict
from services.core.table import LobbyError, Table

MAX_NAME = 64


@dataclass
class Created:
    """A new game: created, forked or imported."""

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


def new_game_id(game_name: str) -> str:
    return f"{game_name}-{secrets.token_hex(8)}"


def is_game_id(game_id: str, game_name: str) -> bool:
    """The form of every id this server gives out."""
    head, _, tail = game_id.rpartition("-")
    return head == game_name and len(tail) == 16 and all(c in "0123456789abcdef" for c in tail)


def first_batch(started: apb.GameStarted, events: Sequence[Any]) -> list[apb.LogEntry]:
    """A new game's first batch: GameStarted, then the events it starts from."""
    entries = [apb.LogEntry(version=1, started=started, batch_size=1 + len(events))]
    return entries + [apb.LogEntry(version=2 + i, event=e.SerializeToString())
                      for i, e in enumerate(events)]


def human_tokens(seats: Sequence[Seat]) -> dict[int, str]:
    return {i: secrets.token_urlsafe(24) for i, s in enumerate(seats) if s.kind == "human"}


def fold_steps(game: Game, events: Sequence[Any]) -> list[tuple[Any, Any]]:
    """(event, state after it) for each of a new game's events."""
    steps = []
    state = None
    for event in events:
        state = game.fold(state, event)
        steps.append((event, state))
    return steps


class Lifecycle:
    def __init__(self, tables: Tables, cpu: CpuPool, clock_ms: Callable[[], int],
                 lobby_seconds: float,
                 history: Callable[[str], Awaitable[tuple[Table, list[apb.LogEntry]]]],
                 hand_to_ai: Callable[[Table], None]) -> None:
        self.tables, self.cpu, self.clock_ms = tables, cpu, clock_ms
        self.lobby_seconds, self.history, self.hand_to_ai = lobby_seconds, history, hand_to_ai

    async def _begin(self, game: Game, game_id: str, entries: list[apb.LogEntry],
                     meta: dict[str, str], tokens: dict[int, str] | None = None,
                     invitations: dict[int, str] | None = None,
                     steps: Sequence[tuple[Any, Any]] = ()) -> Created:
        """Write a new game's stream: the first batch of a created or forked game (`steps`:
        its events and the state after each), held here; or an imported log, finished and
        not held."""
        tokens, invitations = tokens or {}, invitations or {}
        meta.update({f"tok:{token_hash(t)}": str(i) for i, t in tokens.items()})
        if invitations:
            meta["lobby_until"] = str(self.clock_ms() + int(self.lobby_seconds * 1000))
            meta.update({f"inv:{token_hash(c)}": str(i) for i, c in invitations.items()})
            meta.update({f"open:{i}": "1" for i in invitations})
        raw = [e.SerializeToString() for e in entries]
        appended = await self.tables.store.append(game_id, raw, 0, "", meta)
        started = entries[0].started
        if meta["status"] == "active":
            table = Table(game, game_id, gamelog.seats_from_pb(started.seats),
                          bytes.fromhex(meta["seed"]), started.forked_from)
            for (event, _), entry in zip(steps, entries[1:], strict=True):
                event.version = entry.version  # (serialized without it)
            table.advance(entries, [(None, None), *steps])
            table.tip = raw[-1]
            table.lobby_from_meta(meta)
            self.tables.add(table)
            self.hand_to_ai(table)
        return Created(game_id, tokens, started.seed_commitment, appended.last_version,
                       invitations)

    async def create(self, game_name: str, seats: Sequence[Seat], options: Any) -> Created:
        """A new game. Seats of kind "open" get an invitation code instead of a token; the
        game takes no command until JoinGame has filled them."""
        game = self.tables.games[game_name]
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
        started = apb.GameStarted(
            game=game_name, game_id=game_id, options=options.SerializeToString(),
            seats=[apb.Seat(name=s.name, kind=kinds.get(s.kind, apb.HUMAN), bot=s.bot)
                   for s in seats],
            seed_commitment=gamelog.commitment(seed), created_unix_ms=self.clock_ms())
        invitations = {i: f"{game_id}.{secrets.token_urlsafe(12)}"
                       for i, s in enumerate(seats) if s.kind == "open"}
        return await self._begin(
            game, game_id, first_batch(started, events),
            {"game": game_name, "seed": seed.hex(), "status": "active"},
            human_tokens(seats), invitations, fold_steps(game, events))

    async def fork(self, game_id: str, version: int) -> Created:
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
        game = parent.game
        events = [game.pb.Event.FromString(e.event) for e in entries[:version]
                  if e.WhichOneof("body") == "event"]
        steps = await self.cpu.run(fold_steps, game, events)
        if game.outcome(steps[-1][1]) is not None:
            raise RuleError("GAME_OVER", "the game is over at that version: nothing to fork")
        for e in events:
            e.version = 0
        seed = secrets.token_bytes(32)
        new_id = new_game_id(game.name)
        first = entries[0].started
        started = apb.GameStarted(
            game=first.game, game_id=new_id, options=first.options, seats=first.seats,
            seed_commitment=gamelog.commitment(seed), forked_from=f"{game_id}@{version}",
            created_unix_ms=self.clock_ms())
        return await self._begin(
            game, new_id, first_batch(started, events),
            {"game": first.game, "seed": seed.hex(), "status": "active",
             "forked_from": started.forked_from},
            human_tokens(parent.seats), steps=steps)

    async def import_entries(self, game: Game, entries: Sequence[apb.LogEntry],
                             replay_only: bool = False) -> Created:
        """Store a verified (or, `replay_only`, a replayed) finished log. It keeps its id only
        if the id has the form the server gives every game (`<game>-<16 hex digits>`) and is
        free; else it gets a new one. An id is a store key and a log line: nothing else may
        come in through it. A replay-only game is marked so in its meta (`imported`)."""
        game_id = entries[0].started.game_id
        if not is_game_id(game_id, game.name) or await self.tables.store.meta(game_id):
            game_id = new_game_id(game.name)
        meta = {"game": game.name, "seed": entries[-1].finished.seed, "status": "finished",
                "imported": "replay-only" if replay_only else "1"}
        try:
            return await self._begin(game, game_id, list(entries), meta)
        except Conflict:  # the id was taken meanwhile (another import): take a fresh one
            return await self._begin(game, new_game_id(game.name), list(entries), meta)

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
            loaded = await self.tables.load(game_id, fresh=True)
        except NotFound:
            raise BadInvitation("BAD_INVITATION", "no game of this server has this "
                                "invitation code", "code") from None
        async with loaded.lock:  # (joins on this server one at a time: each reads the last)
            meta = await self.tables.store.meta(game_id)
            seat_text = meta.get(f"inv:{token_hash(code)}")
            if seat_text is None:
                raise BadInvitation("BAD_INVITATION", "no game of this server has this "
                                    "invitation code", "code")
            seat = int(seat_text)
            loaded.lobby_from_meta(meta)
            if seat not in loaded.open_seats:
                raise LobbyError("SEAT_TAKEN", f"seat {seat} was taken with this code already")
            if loaded.expired(self.clock_ms()):
                raise LobbyError("GAME_EXPIRED", "this game waited for its players longer "
                                 "than the server's lobby time and expired")
            token = secrets.token_urlsafe(24)
            joined_meta = {f"open:{seat}": "0", f"tok:{token_hash(token)}": str(seat),
                           f"name:{seat}": name}
            appended = await self.tables.store.append(game_id, [], loaded.version,
                                                      f"join:{seat}", joined_meta)
            if appended.duplicate:
                raise LobbyError("SEAT_TAKEN", f"seat {seat} was taken with this code already")
            loaded.lobby_from_meta({**meta, **joined_meta})
            loaded.seats_filled()  # Play streams here see the seat taken (no entry says so)
            self.hand_to_ai(loaded)  # the last join starts the game
            return Joined(game_id, loaded.game.name, seat, token, sorted(loaded.open_seats),
                          loaded.version)
