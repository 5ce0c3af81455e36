"""Deadlines: one scheduler fires every timeout (idle seats, response windows), never a sleep
inside a request handler.

A deadline is a member of a sorted set scored by when it is due, in the shard (tag s, see
shards.py) of its game:

    arbiter:dl:{s}:due      zset  member = the deadline (JSON), score = due time (unix ms)
    arbiter:dl:{s}:firing   zset  member = a claimed deadline, score = end of its lease

Claiming is one script per shard: take the due members (and those whose lease ran out: a scheduler
died while firing them), move them to `firing` with a lease, return them. Two schedulers
never claim the same deadline; each deadline fires once. Firing is also idempotent (a re-fire
after a lost lease changes nothing): an idle or AI deadline acts with the version it was set
at as the expected version and a command id derived from the deadline; a system deadline
acts with a command id derived from its command.

Kinds:
- "idle": a human seat has had its turn for ARBITER_IDLE_SECONDS (or the game's option
  `idle_seconds`, for a game whose Options has that field): its bot (the game's default
  bot) plays the turn for it, through the ordinary command path (command id
  idle:<game>:<version>:<seat>).
- "ai": a safety net. An AI seat's turn is queued by the server right after the command that
  led to it; if that dispatch was lost (the server died between the append and the enqueue),
  the turn is played here after ARBITER_AI_RESCUE_SECONDS (default 30; 0: off). In the normal
  case the game has moved on by then and the deadline does nothing.
- "system": a command the rules want the server to issue after a delay, e.g. closing a
  response window: `Host.system_act` runs decide(state, None, command), recorded with
  CommandRecord.system. A game asks for these through its `Game.deadlines(state) ->
  [(seconds, Command)]` hook. Unlike the others, a system deadline is keyed by its command,
  which names what it closes (Moody Bear Kingdom's window id), not by the version: the same
  window seen at later versions is one deadline, due when it was first scheduled. It fires
  at the game's version at that time, and the rules refuse it (a RuleError: nothing to do)
  once what it names is closed.

Deadlines are scheduled by the projection workers after each batch (`schedule_for`), so they
come from one place whichever server handled the command.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from arbiter.v1 import arbiter_pb2 as apb

from services.core import bots
from services.core.decider import Game, RuleError
from services.core.host import Host, bot_rng
from services.core.metrics import METRICS
from services.core.reads import Caller, NotFound, StaleVersion
from services.workers.shards import SHARDS, ManySlots, pipelined, shard_of, shard_tag

log = logging.getLogger("arbiter.deadlines")

LEASE_SECONDS = 30.0
LEGACY = "arbiter:{dl}"  # where versions before the shards queued every deadline

# KEYS: due, firing. ARGV: now ms, limit, lease end ms.
CLAIM = """
local out = {}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, m in ipairs(due) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZADD', KEYS[2], ARGV[3], m)
  out[#out + 1] = m
end
local lost = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, m in ipairs(lost) do
  redis.call('ZADD', KEYS[2], ARGV[3], m)
  out[#out + 1] = m
end
return out
"""


@dataclass(frozen=True)
class Deadline:
    kind: str  # "idle" | "ai" | "system"
    game_id: str
    version: int  # the version it was set at; 0 for "system" (keyed by its command)
    seat: int = -1
    command: str = ""  # hex of the game's Command, for "system"
    # Only in "system" members queued by older servers, which set one per version with its
    # index there: kept so they still parse and round-trip to the same member (`done`).
    key: str = ""

    def member(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def parse(cls, member: str | bytes) -> Deadline:
        return cls(**json.loads(member))


class DeadlineQueue(Protocol):
    async def schedule(self, deadline: Deadline, due: float) -> None: ...

    async def claim(self, now: float, limit: int = 100) -> list[Deadline]: ...

    async def done(self, deadline: Deadline) -> None: ...


class RedisDeadlines:
    """The queue in SHARDS shards (see shards.py), a game's deadlines in the shard of its
    game. A claim runs the claim script on every shard (each script touches one slot), in
    one pipeline per node; `limit` applies per shard."""

    def __init__(self, redis: Any, prefix: str = "arbiter:dl",
                 lease_seconds: float = LEASE_SECONDS, legacy: str = LEGACY) -> None:
        if "{" in prefix or "}" in prefix:
            raise ValueError(f"a deadline queue prefix holds no hash tag: {prefix!r}")
        self.redis = redis
        self.prefix = prefix
        self.lease_ms = int(lease_seconds * 1000)
        self._claim = ManySlots(redis, CLAIM)
        self.legacy = legacy  # the single-slot queue of older versions ("": none)
        self._adopted = False

    async def adopt_legacy(self) -> int:
        """Move what older versions queued in their single-slot queue into the shards (once
        per process, at its first claim): due ones keep their due time, claimed ones are due
        when their lease ends. A member moved twice (two schedulers starting together) is
        still one deadline (ZADD NX), and firing is idempotent anyway."""
        moved = 0
        for kind in ("due", "firing"):
            key = f"{self.legacy}:{kind}"
            for member, score in await self.redis.zrange(key, 0, -1, withscores=True):
                game_id = Deadline.parse(member).game_id
                await self.redis.zadd(self._keys(shard_of(game_id))[0], {member: int(score)},
                                      nx=True)
                await self.redis.zrem(key, member)
                moved += 1
        return moved

    def _keys(self, shard: int) -> list[str]:
        tag = shard_tag(shard)
        return [f"{self.prefix}:{{{tag}}}:due", f"{self.prefix}:{{{tag}}}:firing"]

    async def schedule(self, deadline: Deadline, due: float) -> None:
        # NX: scheduling the same deadline again (a redelivered projection, a window seen at
        # a later version) keeps its first due time.
        due_key = self._keys(shard_of(deadline.game_id))[0]
        await self.redis.zadd(due_key, {deadline.member(): int(due * 1000)}, nx=True)

    async def claim(self, now: float, limit: int = 100) -> list[Deadline]:
        if not self._adopted and self.legacy:
            if await self.adopt_legacy():
                log.info("deadlines queued by an older version moved into the shards")
            self._adopted = True
        now_ms = int(now * 1000)
        replies = await self._claim([(self._keys(s), [now_ms, limit, now_ms + self.lease_ms])
                                     for s in range(SHARDS)])
        return [Deadline.parse(m) for members in replies for m in members]

    async def done(self, deadline: Deadline) -> None:
        await self.redis.zrem(self._keys(shard_of(deadline.game_id))[1], deadline.member())

    async def pending(self) -> int:
        counts = await pipelined(self.redis, "zcard",
                                 [(key,) for s in range(SHARDS) for key in self._keys(s)])
        return sum(int(n) for n in counts)


class MemoryDeadlines:
    """The same queue in process (embedded store): one scheduler, so claiming is a pop."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, str]] = []
        self._members: set[str] = set()

    async def schedule(self, deadline: Deadline, due: float) -> None:
        member = deadline.member()
        if member not in self._members:  # as ZADD NX: the first due time stays
            self._members.add(member)
            heapq.heappush(self._heap, (due, member))

    async def claim(self, now: float, limit: int = 100) -> list[Deadline]:
        out: list[Deadline] = []
        while self._heap and self._heap[0][0] <= now and len(out) < limit:
            _, member = heapq.heappop(self._heap)
            self._members.discard(member)
            out.append(Deadline.parse(member))
        return out

    async def done(self, deadline: Deadline) -> None:
        return None

    async def pending(self) -> int:
        return len(self._heap)


def idle_seconds(game: Game, options_bytes: bytes, default: float) -> float:
    """The game's own `idle_seconds` option when its Options has one and it is set."""
    options = game.pb.Options.FromString(options_bytes)
    if "idle_seconds" in options.DESCRIPTOR.fields_by_name and options.idle_seconds:
        return float(options.idle_seconds)
    return default


class Scheduler:
    """Claims due deadlines and fires them through the host."""

    def __init__(self, queue: DeadlineQueue, host: Host, idle: float = 0.0,
                 clock: Callable[[], float] = time.time, ai_rescue: float | None = None
                 ) -> None:
        self.queue, self.host, self.idle, self.clock = queue, host, idle, clock
        self.ai_rescue = float(os.environ.get("ARBITER_AI_RESCUE_SECONDS", "30") or 0) if (
            ai_rescue is None) else ai_rescue
        self.fired = 0

    # ---- scheduling (a projection listener) -----------------------------------------------

    async def schedule_for(self, tracked: Any) -> None:
        """After a batch: the idle-seat deadlines of the game at its new version, and the
        rule deadlines it has open (each due from when it was first scheduled)."""
        if tracked.finished or tracked.state is None or tracked.started is None:
            return
        game: Game = tracked.game
        now = self.clock()
        idle = idle_seconds(game, tracked.started.options, self.idle)
        for seat in game.to_act(tracked.state):
            if tracked.started.seats[seat].kind != apb.AI:
                if idle > 0:
                    await self.queue.schedule(
                        Deadline("idle", tracked.game_id, tracked.version, seat), now + idle)
            elif self.ai_rescue > 0:
                await self.queue.schedule(
                    Deadline("ai", tracked.game_id, tracked.version, seat), now + self.ai_rescue)
        if game.deadlines is not None:
            for seconds, command in game.deadlines(tracked.state):
                # No version in the member: answers in a window must not restart its clock.
                hexed = command.SerializeToString(deterministic=True).hex()
                await self.queue.schedule(Deadline("system", tracked.game_id, 0, command=hexed),
                                          now + seconds)

    # ---- firing ------------------------------------------------------------------------------

    async def fire(self, d: Deadline) -> bool:
        """Act for the deadline if it still applies; whether the game moved because of it."""
        loaded = await self.host.load(d.game_id, fresh=True)
        if loaded.finished:
            return False
        game = loaded.game
        if d.kind == "system":
            # At whatever version the game is at now (no expected version): the rules judge
            # whether what the command names is still open. The id, the same for every member
            # naming it, turns a re-fire into a replay of the first result.
            command = game.pb.Command.FromString(bytes.fromhex(d.command))
            before = loaded.version  # `loaded` is the host's cached game: acting moves it
            result = await self.host.system_act(d.game_id, command,
                                                f"deadline:{d.game_id}:{d.command}")
            return result.version > before
        if loaded.version != d.version:
            return False
        if d.kind == "idle":
            if d.seat not in game.to_act(loaded.state):
                return False
            if not game.legal_actions(loaded.state, d.seat):
                return False
            # A human seat (no bot name) idles as the game's default bot.
            name = loaded.seats[d.seat].bot
            command = await self.host.bot_command(
                loaded, d.seat, name if bots.known(game, name) else "",
                bot_rng(loaded, "idle", d.version))
            await self.host.act(d.game_id, Caller(seat=d.seat, trusted=True), command,
                                f"idle:{d.game_id}:{d.version}:{d.seat}", d.version)
            return True
        if d.kind == "ai":
            played = await self.host.play_ai_turn(d.game_id, d.version, d.seat)
            if played:
                log.warning("the AI turn of %s v%s seat %s was lost and played late",
                            d.game_id, d.version, d.seat)
            return played
        log.warning("unknown deadline kind %r", d.kind)
        return False

    async def tick(self, limit: int = 100) -> int:
        fired = 0
        for d in await self.queue.claim(self.clock(), limit):
            acted = False
            try:
                acted = await self.fire(d)
            except (StaleVersion, RuleError, NotFound) as e:
                log.info("deadline %s no longer applies: %s", d, e)
            except Exception:  # noqa: BLE001 - leave it claimed: the lease brings it back
                log.exception("deadline %s failed; it will be retried", d)
                METRICS.deadlines(d.kind, "failed").inc()
                continue
            METRICS.deadlines(d.kind, "acted" if acted else "nothing").inc()
            fired += acted
            await self.queue.done(d)
        self.fired += fired
        return fired

    async def run(self, stop: asyncio.Event, interval: float = 0.2) -> None:
        while not stop.is_set():
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001
                log.exception("deadline tick failed")
            try:
                await asyncio.wait_for(stop.wait(), interval)
            except TimeoutError:
                pass
