"""The host: runs a game's decider against the store.

    the game's table (held, or loaded) -> decide -> append (expected version, idempotent
    command id) -> advance the table with the events and states decide made -> reply; then
    hand AI seats their turn.

The host knows nothing of any game's rules or of gRPC; the adapter maps requests onto it.
It is handed its collaborators and holds its parts: the process's tables (live.py: loading,
keeping, streams), `Reads` (reads.py: whose seat a caller is, histories, replays, who may see
a log) and `Lifecycle` (lifecycle.py: creating, forking, importing, the lobby).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from dataclasses import dataclass
from typing import Any

from arbiter.v1 import arbiter_pb2 as apb

from services.core import bots
from services.core import log as gamelog
from services.core.decider import Game, MalformedCommand, Rng, RuleError
from services.core.lifecycle import Lifecycle
from services.core.live import Dropped, SnapshotSource, Tables
from services.core.metrics import METRICS
from services.core.offload import Busy, CpuPool
from services.core.reads import LOBBY_SECONDS, AiDispatch, Caller, Reads, StaleVersion
from services.core.store import Conflict, Store
from services.core.table import Table

__all__ = ["Caller", "StaleVersion", "Table"]

# Command ids the server issues itself (bots, idle seats, rule deadlines); clients may not.
SERVER_COMMAND_IDS = ("ai:", "idle:", "deadline:", "join:")
APPEND_RETRIES = 20


def bot_rng(loaded: Table, purpose: str, version: int) -> Rng:
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


@dataclass
class ActResult:
    version: int  # the last version the command's batch wrote
    events: list[Any]  # the game's Event messages, versions set, not yet redacted
    state: Any  # the game now, at state_version (later than `version` for a repeated id)
    seat: int | None
    state_version: int
    table: Table  # the game's table (another than the one asked for after a reset)


@dataclass
class Batch:
    """A command's batch, ready to append: its entries (and their bytes), and the (event,
    state after) of each entry, for the table."""

    entries: list[apb.LogEntry]
    raw: list[bytes]
    steps: list[tuple[Any, Any]]
    finished: bool


class Host:
    def __init__(self, store: Store, games: dict[str, Game], admin_token: str = "", *,
                 ai_dispatch: AiDispatch | None = None,
                 snapshot_source: SnapshotSource | None = None, tables: Tables | None = None,
                 cpu: CpuPool | None = None, lobby_seconds: float = LOBBY_SECONDS) -> None:
        self.games = games
        for game in games.values():
            METRICS.declare(game)  # its series are on /metrics before anything is recorded
        self.tables = tables or Tables(store, games, snapshot_source)
        self.admin_token = admin_token
        self.ai_dispatch = ai_dispatch
        self.cpu = cpu or CpuPool()  # re-running whole histories happens off the event loop
        self.clock_ms = lambda: int(time.time() * 1000)
        self.reads = Reads(self.tables, self.cpu, self.is_admin, lambda: self.clock_ms())
        self.lifecycle = Lifecycle(self.tables, self.cpu, lambda: self.clock_ms(),
                                   lobby_seconds, self.reads.history, self.hand_to_ai)
        # What callers ask of the host's parts, by name.
        self.load = self.tables.load
        self.seat_of, self.history = self.reads.seat_of, self.reads.history
        self.replay_to, self.replay_with_journal = self.reads.replay_to, \
            self.reads.replay_with_journal
        self.lobby_status, self.parent_events = self.reads.lobby_status, \
            self.reads.parent_events
        self.log_is_public, self.ancestor_running = self.reads.log_is_public, \
            self.reads.ancestor_running
        self.check_visible = self.reads.check_visible
        self.create, self.fork = self.lifecycle.create, self.lifecycle.fork
        self.import_entries, self.join = self.lifecycle.import_entries, self.lifecycle.join

    @property
    def store(self) -> Store:
        return self.tables.store

    @store.setter
    def store(self, store: Store) -> None:
        self.tables.store = store

    @property
    def snapshot_source(self) -> SnapshotSource | None:
        return self.tables.snapshot_source

    def is_admin(self, caller: Caller) -> bool:
        if caller.trusted:
            return True
        return bool(self.admin_token) and hmac.compare_digest(
            caller.admin_token.encode(), self.admin_token.encode())

    def view_of(self, table: Table, seat: int | None, state: Any = None,
                version: int | None = None, noted: Any = None) -> Any:
        return table.view(seat, state, version, noted)

    def hand_to_ai(self, table: Table) -> None:
        if table.finished or self.ai_dispatch is None or table.open_seats:
            return
        for seat in table.game.to_act(table.state):
            if table.seats[seat].kind == "ai":
                self.ai_dispatch(self, table.game_id, table.version, seat)

    # ---- commands ----------------------------------------------------------------------

    async def act(self, game_id: str, caller: Caller, command: Any, command_id: str = "",
                  expected_version: int | None = None) -> ActResult:
        return await self.act_at(await self.tables.load(game_id), caller, command, command_id,
                                 expected_version)

    async def act_at(self, table: Table, caller: Caller, command: Any, command_id: str = "",
                     expected_version: int | None = None) -> ActResult:
        """A caller's command on a game whose table the caller holds already."""
        seat = self.seat_of(table, caller, acting=True)
        name = command.WhichOneof("kind") or "none"
        started = time.perf_counter()
        outcome = "ok"
        try:
            return await self._locked(table, seat, command, command_id, expected_version)
        except (RuleError, StaleVersion):
            outcome = "rejected"
            raise
        except Exception:
            outcome = "error"  # the store, or a bug: not a command that went through
            raise
        finally:
            METRICS.command_seconds(table.game.name, name, outcome).observe(
                time.perf_counter() - started)

    async def system_act(self, game_id: str, command: Any, command_id: str = "",
                         expected_version: int | None = None) -> ActResult:
        """A command the server itself issues (a deadline closing a response window):
        decide(state, None, command), recorded with CommandRecord.system. Not an RPC."""
        return await self._locked(await self.tables.load(game_id), None, command, command_id,
                                  expected_version)

    async def _locked(self, table: Table, seat: int | None, command: Any, command_id: str,
                      expected_version: int | None) -> ActResult:
        """The command under the game's lock; on a table the store contradicts (a lossy
        failover), again on the game as the store has it."""
        while True:
            if table.gone:
                table = await self.tables.load(table.game_id)
            try:
                async with table.lock:
                    return await self._act_locked(table, seat, command, command_id,
                                                  expected_version)
            except Dropped:
                continue

    async def _act_locked(self, table: Table, seat: int | None, command: Any,
                          command_id: str, expected_version: int | None) -> ActResult:
        table.check_started(self.clock_ms())
        for _ in range(APPEND_RETRIES):
            refusal: Exception | None = None
            if expected_version is not None and expected_version != table.version:
                await self.tables.catch_up(table)
                if expected_version != table.version:
                    refusal = StaleVersion(table.version)
            if refusal is None:
                try:
                    events = self._decide(table, seat, command)
                except MalformedCommand as e:
                    refusal = e  # never valid, whatever the version
                except RuleError as e:
                    # The table may be behind other servers: judge the command on the latest.
                    if await self.tables.catch_up(table):
                        continue
                    refusal = e
            if refusal is not None:
                # A retry of a command that was applied (maybe by another server) is not an
                # error: it is answered below with its first result.
                found = await self.store.applied(table.game_id, command_id) if command_id \
                    else None
                if found is None:
                    raise refusal
                return await self._repeated(table, *found, seat, command)
            batch = self._batch(table, seat, command, command_id, events)
            last = table.version + len(batch.entries)
            table.appending = last  # its doorbell is not a reason to read
            t0 = time.perf_counter()
            try:
                appended = await self.store.append(
                    table.game_id, batch.raw, table.version, command_id,
                    {"status": "finished"} if batch.finished else None)
            except Conflict as conflict:
                METRICS.conflicts(table.game.name).inc()
                if conflict.current_version < table.version:
                    self.tables.reset(table, "the store is behind this server's copy (a "
                                      "failover lost acknowledged batches)")
                    raise Dropped from None
                await self.tables.catch_up(table)
                continue
            finally:
                table.appending = 0
                METRICS.append_seconds(table.game.name).observe(time.perf_counter() - t0)
            if not appended.duplicate:
                return self._applied(table, seat, events, batch, appended.last_version)
            await self.tables.catch_up(table)
            return await self._repeated(table, appended.first_version, appended.last_version,
                                        seat, command)
        raise StaleVersion(table.version)  # pragma: no cover - only under extreme contention

    def _applied(self, table: Table, seat: int | None, events: list[Any], batch: Batch,
                 last: int) -> ActResult:
        """Move the table past a batch this server appended, with the events and states the
        decision made: its streams get it without a read, a decode or a fold."""
        first = batch.entries[0].version
        for i, e in enumerate(events):
            e.version = first + i
        # A read catching the game up (it takes no lock) may have folded this batch, and
        # later ones, while the append was on its way: advance skips what it holds.
        table.advance(batch.entries, batch.steps)
        if table.version == last:
            table.tip = batch.raw[-1]
        METRICS.events_appended(table.game.name).inc(len(batch.entries))
        self.hand_to_ai(table)
        return ActResult(last, events, batch.steps[-1][1], seat, last, table)

    def _decide(self, table: Table, seat: int | None, command: Any) -> list[Any]:
        game = table.game
        t0 = time.perf_counter()
        events = game.decide_now(table.state, seat, command, Rng(table.seed, table.version))
        seconds = time.perf_counter() - t0
        METRICS.decide_seconds(game.name).observe(seconds)
        if game.observe is not None:
            for e in events:
                for key, value in game.observe(e).items():
                    METRICS.observe(game, key, value, seconds)
        return events

    def _batch(self, table: Table, seat: int | None, command: Any, command_id: str,
               events: list[Any]) -> Batch:
        game = table.game
        t0 = time.perf_counter()
        state = table.state
        steps = []
        for e in events:
            state = game.evolve(state, e)
            steps.append((e, state))
        METRICS.evolve_seconds(game.name).observe(time.perf_counter() - t0)
        outcome = game.outcome(state)
        v = table.version
        entries = [apb.LogEntry(version=v + 1 + i, event=e.SerializeToString())
                   for i, e in enumerate(events)]
        if outcome is not None:
            entries.append(apb.LogEntry(version=v + 1 + len(events), finished=apb.GameFinished(
                outcome=outcome.to_pb(), seed=table.seed.hex())))
            steps.append((None, state))
        if not entries:
            raise RuleError("NOTHING_HAPPENS", "the command changes nothing")
        entries[0].batch_size = len(entries)
        entries[0].command.CopyFrom(apb.CommandRecord(
            command_id=command_id, system=seat is None, seat=seat or 0,
            command=command.SerializeToString()))
        return Batch(entries, [e.SerializeToString() for e in entries], steps,
                     outcome is not None)

    async def _repeated(self, table: Table, first: int, last: int, seat: int | None,
                        command: Any) -> ActResult:
        """The first result of a command id, for the same seat sending the same command."""
        entries = gamelog.decode(await self.store.read(table.game_id, first - 1,
                                                       last - first + 1))
        record = entries[0].command
        if record.system != (seat is None) or (seat is not None and record.seat != seat):
            # Another seat's command: its result is not this caller's to claim.
            raise MalformedCommand("COMMAND_ID_TAKEN", "this command id was used for another "
                                   "seat's command; send yours with a new id", "command_id")
        if not _same_command(command, record.command):
            # A client bug that reuses ids would otherwise lose this command without a word.
            raise MalformedCommand("COMMAND_ID_REUSED", "this command id was used for another "
                                   "command; a retry must resend the same command", "command_id")
        events = [gamelog.game_event(table.game, e) for e in entries
                  if e.WhichOneof("body") == "event"]
        return ActResult(last, events, table.state, seat, table.version, table)

    # ---- AI seats ----------------------------------------------------------------------

    async def bot_command(self, table: Table, seat: int, bot_name: str, rng: Rng) -> Any:
        """The command the bot `bot_name` chooses for `seat`. A search bot thinks for up to
        its level's CPU budget: in the process pool (or its thread) with the whole-log work,
        never on the event loop; a heuristic bot answers at once, here."""
        args = (table.game, table.state, seat, bot_name, rng)
        if bots.level(bot_name) is None:
            return bots.choose_command(*args)
        try:
            return await self.cpu.run(bots.choose_command, *args)
        except Busy:  # the pool is full of long work: a thread, rather than a lost turn
            return await asyncio.to_thread(bots.choose_command, *args)

    async def play_ai_turn(self, game_id: str, version: int, seat: int) -> bool:
        """Let the bot of an AI seat act, through the same command path as any client.

        The bot sees only its seat's view and legal commands. The command id
        ai:<game id>:<version>:<seat> makes a redelivered turn harmless.
        """
        table = await self.tables.load(game_id, fresh=True)
        if table.version != version or table.seats[seat].kind != "ai":
            return False
        legal = table.legal(seat)
        if not legal:
            return False
        game = table.game
        t0 = time.perf_counter()
        command = await self.bot_command(table, seat, table.seats[seat].bot,
                                         bot_rng(table, "bot", version))
        METRICS.ai_turn_seconds(game.name).observe(time.perf_counter() - t0)
        try:
            await self.act_at(table, Caller(seat=seat, trusted=True), command,
                              f"ai:{game_id}:{version}:{seat}", version)
        except (StaleVersion, RuleError):
            return False
        return True
