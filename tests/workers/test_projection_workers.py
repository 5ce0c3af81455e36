"""The Redis projection workers: consumer groups, acknowledgement after the write, reclaiming
what a dead consumer left, the lag metric; and a rebuild that equals the incremental build."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid

import pytest
from arbiter.v1 import arbiter_pb2 as apb

from services.core.host import Host
from services.core.store import MemoryStore, Store, partition_of
from services.workers.projections import (
    InProcessProjections,
    ProjectionWorker,
    Projector,
    rebuild,
)
from services.workers.readmodel import MemoryReadModel, RedisReadModel
from tests.workers.conftest import ROOT, TOY, play_random

GAMES = {"toy": TOY}


def unique() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"test-{tag}", f"arbiter:rm-{tag}"


async def pending(worker: ProjectionWorker) -> int:
    total = 0
    for feed in worker.feeds:
        info = await worker.redis.xpending(feed, worker.group)
        total += int(info["pending"])
    return total


async def expected_summaries(host: Host, ids: list[str]) -> dict[str, tuple[int, int]]:
    out = {}
    for game_id in ids:
        loaded = await host.load(game_id, fresh=True)
        out[game_id] = (loaded.version, apb.FINISHED if loaded.finished else apb.ACTIVE)
    return out


async def listed(rm: RedisReadModel | MemoryReadModel, ids: list[str]
                 ) -> dict[str, tuple[int, int]]:
    page, _ = await rm.page("toy", "", "", None, 100_000)
    return {s.game_id: (s.version, s.status) for s in page if s.game_id in ids}


async def started(worker: ProjectionWorker) -> tuple[asyncio.Event, asyncio.Task[None]]:
    """The worker running (its stop event, its task) once it hears the doorbell."""
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop, block_ms=60_000))
    until = asyncio.get_running_loop().time() + 10
    while not (worker._bell and worker._bell.subscribed.is_set()) \
            and asyncio.get_running_loop().time() < until:
        await asyncio.sleep(0.01)
    return stop, running


async def test_a_worker_projects_every_game_then_acknowledges(redis_url: str) -> None:
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    host = Host(store, GAMES)
    ids = [await play_random(host, TOY, seed=s, stop_at=None if s % 2 else 4) for s in range(4)]
    worker = ProjectionWorker(store, rm, GAMES, group=group)
    assert await worker.catch_up() > 0
    assert await listed(rm, ids) == await expected_summaries(host, ids)
    assert await pending(worker) == 0
    lags = await worker.report_lag()
    assert all(v == 0 for v in lags.values())
    await store.close()
    await rm.close()


async def test_the_lag_metric_counts_entries_not_yet_acknowledged(redis_url: str) -> None:
    from services.core.metrics import METRICS
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    worker = ProjectionWorker(store, rm, GAMES, group=group)
    await worker.setup()
    await worker.catch_up()
    host = Host(store, GAMES)
    await play_random(host, TOY, seed=1, stop_at=5)
    lags = await worker.report_lag()
    assert sum(lags.values()) >= 2
    p = next(p for p, v in lags.items() if v)
    assert METRICS.projection_lag.labels(group, str(p))._value.get() == lags[p]
    await worker.catch_up()
    assert sum((await worker.report_lag()).values()) == 0
    await store.close()
    await rm.close()


async def test_an_idle_worker_wakes_on_the_doorbell_and_stops_at_once(redis_url: str) -> None:
    """Idle, a running worker waits for an append's ring, not for a poll: with its fallback
    look at the feeds a minute away, a new game is projected at once, reading its game's feed
    alone; a stop ends the wait."""
    from services.core.redis_store import RedisStore, feed_key

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    worker = ProjectionWorker(store, rm, GAMES, group=group)
    await worker.catch_up()
    reads: list[list[str] | None] = []  # the feeds of each read (None: every feed)
    read_new = worker.read_new

    async def counted(feeds: list[str] | None = None) -> list:
        reads.append(None if feeds is None else list(feeds))
        return await read_new(feeds)

    worker.read_new = counted  # type: ignore[method-assign]
    stop, running = await started(worker)
    loop = asyncio.get_running_loop()
    until = loop.time() + 10
    await asyncio.sleep(0.5)  # the first steps, then an idle wait
    idle_reads = len(reads)
    await asyncio.sleep(1.0)
    assert len(reads) == idle_reads, "an idle worker that hears the doorbell reads no feed"
    game_id = await play_random(Host(store, GAMES), TOY, seed=3, stop_at=None)
    while game_id not in await listed(rm, [game_id]) and loop.time() < until:
        await asyncio.sleep(0.02)
    assert game_id in await listed(rm, [game_id]), "the ring woke the worker"
    own = feed_key(partition_of(game_id))
    targeted = [feeds for feeds in reads[idle_reads:] if feeds is not None]  # not sweeps
    assert targeted and all(feeds == [own] for feeds in targeted), \
        "it read the feed of the game that rang, and no other"
    t0 = loop.time()
    stop.set()
    await asyncio.wait_for(running, 5)
    assert loop.time() - t0 < 1.0
    await store.close()
    await rm.close()


async def test_a_running_worker_projects_a_rounds_appends_together(redis_url: str) -> None:
    """After a ring the worker waits its batch window before reading, so that the appends
    of one round (a command, the AI turns after it) are read, folded and written once."""
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    worker = ProjectionWorker(store, rm, GAMES, group=group, batch_ms=400)
    await worker.catch_up()
    projected: list[str] = []
    project = worker.projector.project

    async def counted(game_id: str) -> str:
        projected.append(game_id)
        return await project(game_id)

    worker.projector.project = counted  # type: ignore[method-assign]
    stop, running = await started(worker)
    loop = asyncio.get_running_loop()
    until = loop.time() + 10
    await asyncio.sleep(0.5)  # its first steps are over: it waits for a ring
    host = Host(store, GAMES)
    game_id = await play_random(host, TOY, seed=5, stop_at=None)  # well within 400 ms
    entries = len(await store.read(game_id, 0))
    while game_id not in await listed(rm, [game_id]) and loop.time() < until:
        await asyncio.sleep(0.02)
    stop.set()
    await asyncio.wait_for(running, 5)
    assert await listed(rm, [game_id]) == await expected_summaries(host, [game_id])
    assert entries > 3, "the game took several commands"
    assert projected.count(game_id) == 1, "one projection for all of them"
    await store.close()
    await rm.close()


async def test_a_worker_killed_mid_batch_loses_nothing(redis_url: str) -> None:
    """Worker A reads a batch and dies before acknowledging; B reclaims it and projects it."""
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    dead = ProjectionWorker(store, rm, GAMES, group=group, consumer="dead", count=1000)
    await dead.setup()
    await dead.catch_up()  # start from a clean group position
    host = Host(store, GAMES)
    ids = [await play_random(host, TOY, seed=s) for s in range(3)]
    read = await dead.read_new()  # delivered to "dead", never acknowledged
    assert sum(len(rows) for _, rows in read) > 0
    assert await pending(dead) > 0
    assert await listed(rm, ids) == {}
    survivor = ProjectionWorker(store, rm, GAMES, group=group, consumer="alive",
                                min_idle_ms=50)
    await asyncio.sleep(0.1)
    await survivor.step(None, reclaim=True)
    assert await pending(survivor) == 0
    assert await listed(rm, ids) == await expected_summaries(host, ids)
    stats = await rm.stats("toy")
    assert stats["finished"] >= 3
    await store.close()
    await rm.close()


KILLED_WORKER = """
import asyncio, os, signal, sys
sys.path.insert(0, {root!r})
from services.core.redis_store import RedisStore
from services.workers.projections import ProjectionWorker
from services.workers.readmodel import RedisReadModel
from services.toy import GAME

async def main():
    store = RedisStore({url!r})
    worker = ProjectionWorker(store, RedisReadModel({url!r}, {prefix!r}), {{"toy": GAME}},
                              group={group!r}, consumer="doomed", count=1000)
    read = await worker.read_new()
    print(sum(len(rows) for _, rows in read), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # die mid-batch: read, nothing written or acked

asyncio.run(main())
"""


async def test_a_worker_process_killed_mid_batch_is_taken_over(redis_url: str) -> None:
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    survivor = ProjectionWorker(store, rm, GAMES, group=group, consumer="alive", min_idle_ms=200)
    await survivor.setup()
    await survivor.catch_up()
    host = Host(store, GAMES)
    ids = [await play_random(host, TOY, seed=s) for s in range(3)]
    script = KILLED_WORKER.format(root=ROOT, url=redis_url, prefix=prefix, group=group)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=subprocess.PIPE, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT})
    out, _ = await proc.communicate()
    assert proc.returncode == -9 and int(out.split()[0]) > 0
    assert await pending(survivor) > 0 and await listed(rm, ids) == {}
    await asyncio.sleep(0.25)
    await survivor.step(None, reclaim=True)
    assert await pending(survivor) == 0
    assert await listed(rm, ids) == await expected_summaries(host, ids)
    await store.close()
    await rm.close()


async def test_two_workers_racing_on_one_feed_count_every_event_once(redis_url: str) -> None:
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    a = ProjectionWorker(store, rm, GAMES, group=group, consumer="a", count=2)
    b = ProjectionWorker(store, rm, GAMES, group=group, consumer="b", count=2)
    await a.setup()
    await a.catch_up()
    before = await rm.stats("toy")
    host = Host(store, GAMES)
    for s in range(4):
        await play_random(host, TOY, seed=s)
    await asyncio.gather(a.catch_up(), b.catch_up())
    after = await rm.stats("toy")
    added = {k: after[k] - before.get(k, 0) for k in after}
    assert added["finished"] == 4 and added["started"] == 4
    assert added["event:took"] == added["length_sum"]
    await store.close()
    await rm.close()


async def rebuild_equals_incremental(store: Store, rm: RedisReadModel | MemoryReadModel,
                                     build_incrementally: object) -> None:
    host = Host(store, GAMES)
    for s in range(5):
        await play_random(host, TOY, seed=s, stop_at=None if s != 2 else 6,
                          options=TOY.pb.Options(pile=30 + s), names=[f"a{s % 2}", "b"])
        await build_incrementally()  # type: ignore[operator]
    incremental = await rm.dump()
    assert incremental
    await rebuild(store, rm, GAMES, snapshot_every=7)
    assert await rm.dump() == incremental


async def test_rebuild_equals_the_incremental_build_embedded() -> None:
    store, rm = MemoryStore(), MemoryReadModel()
    projections = InProcessProjections(store, rm, GAMES, snapshot_every=7)
    await rebuild_equals_incremental(store, rm, projections.catch_up)


async def test_rebuild_equals_the_incremental_build_redis(redis_url: str) -> None:
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    worker = ProjectionWorker(store, rm, GAMES, group=group, snapshot_every=7)
    await rebuild_equals_incremental(store, rm, worker.catch_up)
    await store.close()
    await rm.close()


async def test_a_rebuild_while_a_worker_runs_still_counts_each_event_once() -> None:
    store, rm = MemoryStore(), MemoryReadModel()
    host = Host(store, GAMES)
    projections = InProcessProjections(store, rm, GAMES)
    for s in range(3):
        await play_random(host, TOY, seed=s)
    await projections.catch_up()
    # The live projector's cache is ahead of the dropped read model: it must notice the gap.
    await rebuild(store, rm, GAMES)
    await play_random(host, TOY, seed=9)
    await projections.catch_up()
    assert (await rm.stats("toy"))["finished"] == 4
    assert await Projector(store, rm, GAMES).project(
        (await store.game_ids())[0]) in {"current", "ok"}


@pytest.mark.parametrize("n", [1])
def test_unknown_streams_in_the_feed_are_skipped(n: int) -> None:
    async def go() -> None:
        store, rm = MemoryStore(), MemoryReadModel()
        await store.append("not-a-game", [b"junk"], 0)
        projections = InProcessProjections(store, rm, GAMES)
        assert await projections.catch_up() == n
        assert await rm.dump() == {}

    asyncio.run(go())


async def test_a_game_projected_live_while_a_rebuild_drops_keeps_its_list_entries_and_counts(
        redis_url: str) -> None:
    from services.core.redis_conn import connect
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    live_rm = RedisReadModel(redis_url, prefix)
    live = ProjectionWorker(store, live_rm, GAMES, group=group, snapshot_every=7)
    await live.catch_up()
    host = Host(store, GAMES)
    for s in range(3):
        await play_random(host, TOY, seed=s)
    await live.catch_up()
    new = await play_random(host, TOY, seed=7, names=["carol", "b"])

    # The rebuild's connection: the live worker projects the new game right after the
    # first command of the drop (the list shards and one partition's slot are gone then).
    client = connect(redis_url)
    execute, armed = client.execute_command, [True]

    async def live_write_during_drop(*args: object, **options: object) -> object:
        result = await execute(*args, **options)
        if armed:
            armed.clear()
            assert await live.catch_up() > 0
        return result

    client.execute_command = live_write_during_drop
    rm = RedisReadModel(client, prefix)
    await rebuild(store, rm, GAMES, snapshot_every=7)
    racy = await rm.dump()
    assert new in [s.game_id for s in (await rm.page("toy", "", "carol", None, 10))[0]]
    await rebuild(store, rm, GAMES, snapshot_every=7)  # nothing running beside it
    assert await rm.dump() == racy
    await store.close()
    await rm.close()
    await live_rm.close()


async def test_a_catch_up_waits_for_the_entries_the_running_loop_has_taken(redis_url: str) -> None:
    """ListGames reads its own writes on one server even when the loop took the entry first."""
    from services.core.redis_store import RedisStore

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    worker = ProjectionWorker(store, rm, GAMES, group=group)
    await worker.catch_up()
    game_id = await play_random(Host(store, GAMES), TOY, seed=3)
    project, taken = worker.projector.project, asyncio.Event()

    async def slow_project(game_id: str) -> str:
        taken.set()
        await asyncio.sleep(0.2)  # the loop has read the entry but not written it yet
        return await project(game_id)

    worker.projector.project = slow_project  # type: ignore[method-assign]
    loop_step = asyncio.create_task(worker.step(None))
    await taken.wait()
    worker.projector.project = project  # type: ignore[method-assign]
    await worker.catch_up()
    assert await listed(rm, [game_id]) == await expected_summaries(Host(store, GAMES), [game_id])
    await loop_step
    await store.close()
    await rm.close()


async def test_a_rebuild_lists_a_game_whose_record_outlived_the_drop_of_its_list_entries(
        redis_url: str) -> None:
    """A live worker wrote a game's list entries before the drop reached their shard, and its
    record after the drop had passed the record's slot: the rebuild finds the record current
    and must write the list entries again."""
    store = MemoryStore()  # (the rebuild then projects this test's game only)
    game_id = await play_random(Host(store, GAMES), TOY, seed=1, names=["dora", "b"])
    _, prefix = unique()

    class WithoutListEntries(RedisReadModel):
        async def relist(self, u: object) -> None:
            return None

    class LateRecord(RedisReadModel):
        async def drop(self) -> None:
            await super().drop()
            late = WithoutListEntries(self.redis, self.prefix)
            assert await Projector(store, late, GAMES).project(game_id) == "ok"

    rm = LateRecord(redis_url, prefix)
    await rebuild(store, rm, GAMES)
    assert await rm.version(game_id) == await store.version(game_id)
    assert [s.game_id for s in (await rm.page("toy", "", "dora", None, 10))[0]] == [game_id]
    await RedisReadModel.drop(rm)
    await rm.close()


async def test_a_worker_recreates_its_group_where_a_feed_lost_it(redis_url: str) -> None:
    """A failover to a replica that had not received the group (or a deleted feed) leaves a
    feed without it: the worker's next step creates it again instead of failing forever."""
    from services.core.redis_store import RedisStore, feed_key

    group, prefix = unique()
    store = RedisStore(redis_url)
    rm = RedisReadModel(redis_url, prefix)
    worker = ProjectionWorker(store, rm, GAMES, group=group)
    await worker.catch_up()
    game_id = await play_random(Host(store, GAMES), TOY, seed=4)
    await store.redis.xgroup_destroy(feed_key(partition_of(game_id)), group)
    with pytest.raises(Exception, match="NOGROUP"):
        await worker.step(None)
    await worker.step(None)  # the group is back (from the feed's start: nothing is lost)
    await worker.catch_up()
    assert await listed(rm, [game_id]) == await expected_summaries(Host(store, GAMES), [game_id])
    await store.close()
    await rm.close()
