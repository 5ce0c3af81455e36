"""The projections schedule a game's deadlines at its head whoever wrote its read model: a
worker that died after the write, a listener that failed, a rebuild that got there first."""

from __future__ import annotations

import asyncio

from services.core.decider import Seat
from services.core.host import Host
from services.core.store import MemoryStore, Store
from services.workers.deadlines import MemoryDeadlines, Scheduler
from services.workers.projections import (
    InProcessProjections,
    ProjectionWorker,
    Projector,
    Tracked,
    rebuild,
)
from services.workers.readmodel import MemoryReadModel, RedisReadModel
from tests.workers.conftest import TOY
from tests.workers.test_deadlines import Clock
from tests.workers.test_projection_workers import pending, unique

GAMES = {"toy": TOY}


def scheduler_for(store: Store) -> tuple[Scheduler, Clock]:
    clock = Clock()
    return Scheduler(MemoryDeadlines(), Host(store, GAMES), clock=clock, ai_rescue=0), clock


async def timed_game(store: Store) -> tuple[str, int]:
    """A new game whose rules want the server to play for the seat to act after 60 s."""
    made = await Host(store, GAMES).create(
        "toy", [Seat("a"), Seat("b")], TOY.pb.Options(pile=9, timeout_seconds=60))
    game_id, version = made.game_id, made.version
    return game_id, version


async def the_timeout_fires(scheduler: Scheduler, clock: Clock, store: Store, game_id: str,
                            version: int) -> bool:
    clock.now += 60
    return await scheduler.tick() == 1 and await store.version(game_id) > version


async def test_a_worker_that_takes_over_an_entry_already_written_schedules_its_deadlines(
        redis_url: str) -> None:
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    dead = ProjectionWorker(store, rm, GAMES, group=group, consumer="dead")
    await dead.catch_up()  # start from a clean group position
    game_id, version = await timed_game(store)
    assert await dead.read_new()
    # "dead" writes the read model, then dies before its listeners run (nothing acknowledged).
    assert await Projector(store, rm, GAMES).project(game_id) == "ok"
    survivor = ProjectionWorker(store, rm, GAMES, group=group, consumer="alive", min_idle_ms=50)
    scheduler, clock = scheduler_for(store)
    survivor.projector.listeners.append(scheduler.schedule_for)
    await asyncio.sleep(0.1)
    assert await survivor.step(None) > 0
    assert await pending(survivor) == 0
    assert await the_timeout_fires(scheduler, clock, store, game_id, version)
    await store.close()
    await rm.close()


async def test_an_entry_whose_listener_failed_stays_pending_and_is_retried(redis_url: str) -> None:
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    worker = ProjectionWorker(store, rm, GAMES, group=group, min_idle_ms=50)
    await worker.catch_up()
    scheduler, clock = scheduler_for(store)
    failures = [RuntimeError("the deadline queue did not answer")]

    async def flaky(tracked: Tracked) -> None:
        if failures:
            raise failures.pop()
        await scheduler.schedule_for(tracked)

    worker.projector.listeners.append(flaky)
    game_id, version = await timed_game(store)
    await worker.step(None)
    assert not failures and await pending(worker) > 0
    await asyncio.sleep(0.1)
    await worker.step(None)  # reclaims its own entry: the record is current, the listener runs
    assert await pending(worker) == 0
    assert await the_timeout_fires(scheduler, clock, store, game_id, version)
    await store.close()
    await rm.close()


async def test_a_game_a_rebuild_projected_first_still_gets_its_deadlines() -> None:
    store, rm = MemoryStore(), MemoryReadModel()
    projections = InProcessProjections(store, rm, GAMES)
    scheduler, clock = scheduler_for(store)
    projections.projector.listeners.append(scheduler.schedule_for)
    game_id, version = await timed_game(store)
    await rebuild(store, rm, GAMES)  # gets to the new game before the live projections do
    await projections.catch_up()
    assert await the_timeout_fires(scheduler, clock, store, game_id, version)
