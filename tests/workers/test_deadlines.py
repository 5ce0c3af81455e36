"""Deadlines fire from one scheduler: once each, even with two schedulers running; idle seats
are handed to their bot; response windows close with a system command, at the time the window
opened plus its deadline, however late the answers come."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from services.core import log as gamelog
from services.core.decider import Seat
from services.core.host import Host
from services.core.metrics import METRICS
from services.core.redis_conn import connect
from services.core.store import MemoryStore
from services.moody_bear import GAME as MOODY
from services.workers.deadlines import Deadline, MemoryDeadlines, RedisDeadlines, Scheduler
from services.workers.projections import InProcessProjections
from services.workers.readmodel import MemoryReadModel
from tests.moody_bear.helpers import Table
from tests.workers.conftest import TOY

GAMES = {"toy": TOY}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Counting(Scheduler):
    """A scheduler that records what it fires instead of acting."""

    def __init__(self, queue: RedisDeadlines, fired: list[Deadline]) -> None:
        super().__init__(queue, Host(MemoryStore(), GAMES))
        self.log = fired

    async def fire(self, d: Deadline) -> bool:
        self.log.append(d)
        await asyncio.sleep(0)  # let the other scheduler interleave
        return True


async def test_each_deadline_fires_once_with_two_schedulers_running(redis_url: str) -> None:
    prefix = f"arbiter:dl-{uuid.uuid4().hex[:8]}"
    one, two = connect(redis_url), connect(redis_url)
    queue_a, queue_b = RedisDeadlines(one, prefix), RedisDeadlines(two, prefix)
    fired: list[Deadline] = []
    a, b = Counting(queue_a, fired), Counting(queue_b, fired)
    deadlines = [Deadline("idle", f"g{i}", i, 0) for i in range(300)]
    for d in deadlines:
        await queue_a.schedule(d, 0)
        await queue_b.schedule(d, 0)  # scheduled twice (a redelivery): still one deadline
    while await queue_a.pending():
        await asyncio.gather(a.tick(limit=7), b.tick(limit=7))
    assert sorted(d.member() for d in fired) == sorted(d.member() for d in deadlines)
    assert a.fired > 0 and b.fired > 0  # both took part
    await one.aclose()
    await two.aclose()


async def test_a_deadline_claimed_by_a_dead_scheduler_comes_back_after_its_lease(
        redis_url: str) -> None:
    prefix = f"arbiter:dl-{uuid.uuid4().hex[:8]}"
    r = connect(redis_url)
    queue = RedisDeadlines(r, prefix, lease_seconds=10)
    d = Deadline("system", "g", 3, command="08", key="0")
    await queue.schedule(d, 100)
    assert await queue.claim(99) == []
    assert await queue.claim(100) == [d]  # claimed, then the scheduler dies
    assert await queue.claim(105) == []  # its lease still runs
    assert await queue.claim(111) == [d]  # taken over
    await queue.done(d)
    assert await queue.pending() == 0
    await r.aclose()


async def test_an_idle_human_seat_is_handed_to_its_bot() -> None:
    store, clock = MemoryStore(), Clock()
    host = Host(store, GAMES)
    scheduler = Scheduler(MemoryDeadlines(), host, idle=30, clock=clock)
    projections = InProcessProjections(store, MemoryReadModel(), GAMES)
    projections.projector.listeners.append(scheduler.schedule_for)
    made = await host.create("toy", [Seat("a"), Seat("b")], TOY.pb.Options())
    game_id, version = made.game_id, made.version
    await projections.catch_up()
    clock.now += 29
    assert await scheduler.tick() == 0
    clock.now += 2
    assert await scheduler.tick() == 1
    entries = gamelog.decode(await store.read(game_id))
    command = entries[version].command
    assert entries[version].version == version + 1
    assert command.command_id == f"idle:{game_id}:{version}:{command.seat}"
    assert not command.system
    # Firing the same deadline again (a lost lease) changes nothing.
    again = Deadline("idle", game_id, version, command.seat)
    assert await scheduler.fire(again) is False
    assert await store.version(game_id) == version + 1


async def test_the_games_own_idle_option_wins_over_the_server_setting() -> None:
    store, clock = MemoryStore(), Clock()
    host = Host(store, GAMES)
    scheduler = Scheduler(MemoryDeadlines(), host, idle=0, clock=clock)
    projections = InProcessProjections(store, MemoryReadModel(), GAMES)
    projections.projector.listeners.append(scheduler.schedule_for)
    made = await host.create("toy", [Seat("a"), Seat("b")],
                             TOY.pb.Options(idle_seconds=5))
    game_id, version = made.game_id, made.version
    await projections.catch_up()
    clock.now += 5
    assert await scheduler.tick() == 1
    assert await store.version(game_id) == version + 1


async def test_an_idle_deadline_does_nothing_once_the_seat_has_played() -> None:
    store, clock = MemoryStore(), Clock()
    host = Host(store, GAMES, admin_token="adm")
    scheduler = Scheduler(MemoryDeadlines(), host, idle=10, clock=clock)
    projections = InProcessProjections(store, MemoryReadModel(), GAMES)
    projections.projector.listeners.append(scheduler.schedule_for)
    made = await host.create("toy", [Seat("a"), Seat("b")],
                             TOY.pb.Options())
    game_id, tokens, version = made.game_id, made.tokens, made.version
    await projections.catch_up()
    seat = TOY.to_act((await host.load(game_id)).state)[0]
    from services.core.host import Caller

    await host.act(game_id, Caller(token=tokens[seat]), TOY.pb.Command(take=2), "me", version)
    clock.now += 11
    assert await scheduler.tick() == 0
    assert await store.version(game_id) == version + 1


async def test_a_rule_deadline_is_issued_as_a_system_command() -> None:
    store, clock = MemoryStore(), Clock()
    host = Host(store, GAMES)
    scheduler = Scheduler(MemoryDeadlines(), host, clock=clock)
    projections = InProcessProjections(store, MemoryReadModel(), GAMES)
    projections.projector.listeners.append(scheduler.schedule_for)
    made = await host.create(
        "toy", [Seat("a"), Seat("b")], TOY.pb.Options(pile=5, timeout_seconds=60))
    game_id, version = made.game_id, made.version
    await projections.catch_up()
    clock.now += 60
    assert await scheduler.tick() == 1
    entries = gamelog.decode(await store.read(game_id))
    record = entries[version].command
    timeout = TOY.pb.Command(timeout=5).SerializeToString().hex()
    assert record.system and record.command_id == f"deadline:{game_id}:{timeout}"
    took = TOY.pb.Event.FromString(entries[version].event).took
    assert took.forced and took.count == 1


async def test_each_turn_gets_its_own_rule_deadline_from_when_it_began() -> None:
    store, clock = MemoryStore(), Clock()
    host = Host(store, GAMES)
    scheduler = Scheduler(MemoryDeadlines(), host, clock=clock)
    projections = InProcessProjections(store, MemoryReadModel(), GAMES)
    projections.projector.listeners.append(scheduler.schedule_for)
    game_id = (await host.create(
        "toy", [Seat("a"), Seat("b")], TOY.pb.Options(pile=5, timeout_seconds=60))).game_id
    await projections.catch_up()
    piles = []
    for _ in range(2):
        clock.now += 59
        assert await scheduler.tick() == 0
        clock.now += 1
        assert await scheduler.tick() == 1
        await projections.catch_up()  # the next turn's deadline is set from now
        piles.append((await host.load(game_id)).state.pile)
    assert piles == [4, 3]


async def test_a_system_command_is_recorded_as_the_servers_and_verifies() -> None:
    store = MemoryStore()
    host = Host(store, GAMES)
    made = await host.create("toy", [Seat("a"), Seat("b")],
                             TOY.pb.Options(pile=2))
    game_id, version = made.game_id, made.version
    await host.system_act(game_id, TOY.pb.Command(timeout=2), "sys-1", version)
    result = await host.system_act(game_id, TOY.pb.Command(timeout=1), "sys-2", version + 1)
    loaded = await host.load(game_id)
    assert loaded.finished and result.version == loaded.version
    entries = gamelog.decode(await store.read(game_id))
    assert [e.command.system for e in entries if e.HasField("command")] == [True, True]
    assert gamelog.verify(TOY, entries).finished


async def test_a_lost_ai_dispatch_is_played_by_the_rescue_deadline() -> None:
    store, clock = MemoryStore(), Clock()
    host = Host(store, GAMES)  # no ai_dispatch: the turn is "lost"
    scheduler = Scheduler(MemoryDeadlines(), host, clock=clock, ai_rescue=30)
    projections = InProcessProjections(store, MemoryReadModel(), GAMES)
    projections.projector.listeners.append(scheduler.schedule_for)
    for _ in range(30):  # a deal where the AI seat moves first
        made = await host.create(
            "toy", [Seat("bot", "ai", "perfect"), Seat("me")], TOY.pb.Options())
        game_id, version = made.game_id, made.version
        if TOY.to_act((await host.load(game_id)).state) == [0]:
            break
    await projections.catch_up()
    clock.now += 31
    rescued = METRICS.deadlines("ai", "acted")._value.get()
    assert await scheduler.tick() >= 1
    entries = gamelog.decode(await store.read(game_id))
    assert entries[version].command.command_id == f"ai:{game_id}:{version}:0"
    # A rescue that acts means a dispatch was lost: /metrics shows it (worth an alert).
    assert METRICS.deadlines("ai", "acted")._value.get() == rescued + 1


async def test_no_rescue_fires_when_the_ai_played_in_time() -> None:
    store, clock = MemoryStore(), Clock()
    host = Host(store, GAMES)
    scheduler = Scheduler(MemoryDeadlines(), host, clock=clock, ai_rescue=30)
    projections = InProcessProjections(store, MemoryReadModel(), GAMES)
    projections.projector.listeners.append(scheduler.schedule_for)
    made = await host.create(
        "toy", [Seat("bot", "ai", "perfect"), Seat("bot2", "ai", "random")], TOY.pb.Options())
    game_id, version = made.game_id, made.version
    await projections.catch_up()
    seat = TOY.to_act((await host.load(game_id)).state)[0]
    assert await host.play_ai_turn(game_id, version, seat)  # the ordinary dispatch
    clock.now += 31
    rescued = METRICS.deadlines("ai", "acted")._value.get()
    nothing = METRICS.deadlines("ai", "nothing")._value.get()
    assert await scheduler.tick() == 0
    assert METRICS.deadlines("ai", "acted")._value.get() == rescued
    assert METRICS.deadlines("ai", "nothing")._value.get() == nothing + 1
    assert await store.version(game_id) == version + 1


async def system_commands(table: Table, game_id: str) -> list[str]:
    """The ids of the commands the server issued itself in this game."""
    entries = gamelog.decode(await table.store.read(game_id))
    return [e.command.command_id for e in entries if e.command.system]


async def open_window(table: Table, answers: int = 1) -> tuple[str, int, Any, list[int]]:
    """A game with an open window: its id, the window's id, its closing command and the
    seats it waits for (read now: the host's cached game moves on as the game does)."""
    game_id, loaded = await table.play_until_a_window(answers)
    [(_, close)] = MOODY.deadlines(loaded.state)
    return game_id, loaded.state.window_id, close, list(MOODY.to_act(loaded.state))


async def test_a_window_closes_on_time_however_late_its_answers() -> None:
    table = Table(deadline=10, players=4)
    game_id, window, close, waiting = await open_window(table, answers=2)
    table.clock.now += 9
    await table.decline(game_id, waiting[0])
    assert await table.scheduler.tick() == 0
    table.clock.now += 1
    assert await table.scheduler.tick() == 1, "10 s after it opened, 1 s after the answer"
    after = (await table.host.load(game_id)).state
    assert after.window_id != window or after.phase != MOODY.pb.WINDOW
    assert close.close_window.window_id == window
    assert await system_commands(table, game_id) == [
        f"deadline:{game_id}:{close.SerializeToString().hex()}"]
    table.clock.now += 60
    assert await table.scheduler.tick() == 0, "the answer's later version set no second deadline"


async def test_the_deadline_of_a_window_everyone_answered_does_nothing() -> None:
    table = Table(deadline=10)
    game_id, window, _, _ = await open_window(table)
    table.clock.now += 5
    state = (await table.host.load(game_id)).state
    while state.phase == MOODY.pb.WINDOW and state.window_id == window:
        await table.decline(game_id, MOODY.to_act(state)[0])
        state = (await table.host.load(game_id)).state
    version = await table.store.version(game_id)
    table.clock.now += 5
    assert await table.scheduler.tick() == 0  # refused by the rules: that window is closed
    assert await table.store.version(game_id) == version
    assert await system_commands(table, game_id) == []


async def test_a_system_deadline_queued_per_version_by_an_older_server_still_fires_once() -> None:
    table = Table(deadline=10)
    game_id, loaded = await table.play_until_a_window()
    command = MOODY.deadlines(loaded.state)[0][1].SerializeToString().hex()
    old = (f'{{"command":"{command}","game_id":"{game_id}","key":"0","kind":"system",'
           f'"seat":-1,"version":{loaded.version}}}')
    legacy = Deadline.parse(old)
    assert legacy.member() == old  # `done` removes exactly what was queued
    await table.scheduler.queue.schedule(legacy, table.clock.now + 10)
    table.clock.now += 10
    assert await table.scheduler.tick() == 1  # the old and the new member: one close
    assert len(await system_commands(table, game_id)) == 1


async def test_two_schedulers_close_a_window_once(redis_url: str) -> None:
    prefix = f"arbiter:dl-{uuid.uuid4().hex[:8]}"
    one, two = connect(redis_url), connect(redis_url)
    queue = RedisDeadlines(one, prefix)
    table = Table(deadline=10, players=4, queue=queue)
    other = Scheduler(RedisDeadlines(two, prefix), Host(table.store, table.host.games),
                      clock=table.clock)
    game_id, _, close, waiting = await open_window(table, answers=2)
    table.clock.now += 3
    await table.decline(game_id, waiting[0])
    assert await queue.pending() == 1  # the window seen at two versions: one deadline
    table.clock.now += 7
    fired = await asyncio.gather(table.scheduler.tick(), other.tick())
    assert sum(fired) == 1 and await queue.pending() == 0
    assert len(await system_commands(table, game_id)) == 1
    # A scheduler that lost its lease fires it again: the same command id, nothing happens.
    version = await table.store.version(game_id)
    again = Deadline("system", game_id, 0, command=close.SerializeToString().hex())
    assert await other.fire(again) is False
    assert await table.store.version(game_id) == version
    await one.aclose()
    await two.aclose()


async def test_deadlines_queued_by_an_older_version_in_one_slot_still_fire(
        redis_url: str) -> None:
    tag = uuid.uuid4().hex[:8]
    legacy = f"arbiter:{{dl-old-{tag}}}"
    r = connect(redis_url)
    queue = RedisDeadlines(r, f"arbiter:dl-{tag}", lease_seconds=10, legacy=legacy)
    due, claimed = Deadline("idle", "g1", 3, 0), Deadline("ai", "g2", 5, 1)
    await r.zadd(f"{legacy}:due", {due.member(): 100_000})
    await r.zadd(f"{legacy}:firing", {claimed.member(): 107_000})  # its lease ends at 107 s
    assert await queue.claim(99) == []
    assert await queue.pending() == 2 and not await r.exists(f"{legacy}:due", f"{legacy}:firing")
    assert await queue.claim(100) == [due]
    assert await queue.claim(107) == [claimed]
    await r.aclose()
