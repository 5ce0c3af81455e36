"""The host: runs a game's decider against the store.

    load state (cache, or replay the stream) -> decide -> append (expected version,
    idempotent command id) -> evolve the cache -> reply; then hand AI seats their turn.

The host knows nothing of any game's rules or of gRPC; the adapter maps requests onto it.
Its parts, each built on the one before: reads.py (the games held, loading them, views,
replays, who may see a log), lifecycle.py (creating, forking, importing, the lobby) and here
the command handler and the AI seats' turns.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass
from typing import Any

from arbiter.v1 import arbiter_pb2 as apb

from services.core import log as gamelog
from services.core.decider import MalformedCommand, Rng, RuleError
from services.core.lifecycle import Lifecycle
from services.core.metrics import METRICS
from services.core.reads import Caller, Loaded, StaleVersion
from services.core.store import Conflict

# Command ids the server issues itself (bots, idle seats, rule deadlines); clients may not.
SERVER_COMMAND_IDS = ("ai:", "idle:", "deadline:", "join:")
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


@dataclass
class ActResult:
    version: int  # the last version the command's batch wrote
    events: list[Any]  # the game's Event messages, versions set, not yet redacted
    state: Any  # the game now, at state_version (later than `version` for a repeated id)
    seat: int | None
    state_version: int


class Host(Lifecycle):
    async def act(self, game_id: str, caller: Caller, command: Any, command_id: str = "",
                  expected_version: int | None = None) -> ActResult:
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

    async def _act_locked(self, loaded: Loaded, seat: int | None, command: Any,
                          command_id: str, expected_version: int | None) -> ActResult:
        game = loaded.game
        loaded.check_started(self.clock_ms())
        if command.WhichOneof("kind") is None:
            raise MalformedCommand("NO_COMMAND", "the command names no action", "command")
        for _ in range(APPEND_RETRIES):
            refusal: Exception | None = None
            if expected_version is not None and expected_version != loaded.version:
                await self._catch_up(loaded)
                if expected_version != loaded.version:
                    refusal = StaleVersion(loaded.version)
            if refusal is None:
                try:
                    events = self._decide(loaded, seat, command)
                except RuleError as e:
                    # The cache may be behind other servers: judge the command on the latest.
                    before = loaded.version
                    await self._catch_up(loaded)
                    if loaded.version != before:
                        continue
                    refusal = e
            if refusal is not None:
                # A retry of a command that was applied (maybe by another server) is not an
                # error: it is answered below with its first result.
                found = await self.store.applied(loaded.game_id, command_id) if command_id \
                    else None
                if found is None:
                    raise refusal
            else:
                entries, state, finished = self._entries(loaded, seat, command, command_id,
                                                         events)
                t0 = time.perf_counter()
                try:
                    appended = await self.store.append(
                        loaded.game_id, [e.SerializeToString() for e in entries],
                        loaded.version, command_id, {"status": "finished"} if finished else None)
                except Conflict as conflict:
                    METRICS.conflicts(game.name).inc()
                    if conflict.current_version < loaded.version:
                        await self._reload(loaded)
                    else:
                        await self._catch_up(loaded)
                    continue
                finally:
                    METRICS.append_seconds(game.name).observe(time.perf_counter() - t0)
                if not appended.duplicate:
                    return self._applied(loaded, seat, events, entries, state, finished,
                                         appended.last_version)
                await self._catch_up(loaded)
                found = appended.first_version, appended.last_version
            return await self._repeated(loaded, *found, seat, command)
        raise StaleVersion(loaded.version)  # pragma: no cover - only under extreme contention

    def _applied(self, loaded: Loaded, seat: int | None, events: list[Any],
                 entries: list[apb.LogEntry], state: Any, finished: bool, last: int
                 ) -> ActResult:
        """Move the held game past a batch this server appended."""
        first = entries[0].version
        for i, e in enumerate(events):
            e.version = first + i
        # A read catching the game up (it takes no lock) may have folded this batch, and
        # later ones, while the append was on its way: the held game must not go back.
        if loaded.version < last:
            loaded.state, loaded.version, loaded.finished = state, last, finished
            told = iter(events)
            for entry in entries:
                loaded.said.feed(entry, next(told) if entry.WhichOneof("body") == "event"
                                 else None)
        METRICS.events_appended(loaded.game.name).inc(len(entries))
        if self.on_append is not None:
            # Live streams get it without a read, nor folding it again.
            self.on_append(loaded.game_id, entries, state)
        self._hand_to_ai(loaded)
        return ActResult(last, events, state, seat, last)

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
                outcome=outcome.to_pb(), seed=loaded.seed.hex())))
        if not entries:
            raise RuleError("NOTHING_HAPPENS", "the command changes nothing")
        entries[0].batch_size = len(entries)
        entries[0].command.CopyFrom(apb.CommandRecord(
            command_id=command_id, system=seat is None, seat=seat or 0,
            command=command.SerializeToString()))
        return entries, state, outcome is not None

    async def _repeated(self, loaded: Loaded, first: int, last: int, seat: int | None,
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
