"""The tables and their streams: one reader per process, doorbells, catch-up, fan-out,
shutdown."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from typing import Any

import grpc
import pytest
import redis.asyncio as aioredis
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core import live, table
from services.core.decider import Seat
from services.core.host import Caller, Host
from services.core.server import Config
from services.core.store import MemoryStore, Store
from services.process import build, shutdown
from tests.conftest import REDIS_URL, needs_redis
from tests.live.playing import ADMIN, free_port, method, play_stream

BUBBLEE = registry.game("bubblee")


def counting_reads(hub: live.Tables) -> list[int]:
    """Record the `after` of every read the hub asks its store for from now on."""
    reads: list[int] = []
    store = hub.store

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        async def read(self, game_id: str, after: int = 0, limit: int = 0) -> list[bytes]:
            reads.append(after)
            return await store.read(game_id, after, limit)

    hub.store = Counting()  # type: ignore[assignment]
    return reads


async def play_one(host: Host, game_id: str) -> None:
    """The seat to act plays its first legal command (the host reads nothing to choose it:
    its store is the streams' store, whose reads some tests count)."""
    loaded = await host.load(game_id)
    seat = BUBBLEE.to_act(loaded.state)[0]
    command = BUBBLEE.legal_actions(loaded.state, seat)[0]
    await host.act(game_id, Caller(seat=seat, trusted=True), command, "", loaded.version)


async def drain(sub: table.Subscriber) -> list[tuple[bytes, bool]]:
    return await asyncio.wait_for(sub.next(), 5)


def versions(items: list[tuple[bytes, bool]]) -> list[int]:
    return [u.version for m, _ in items for u in bpb.PlayResponse.FromString(m).updates]


async def new_game(host: Host) -> str:
    game_id = (await host.create("bubblee", [Seat("a"), Seat("b")], bpb.Options())).game_id
    return game_id


async def test_a_command_played_here_reaches_every_stream_without_a_read(store: Store) -> None:
    host = Host(store, {"bubblee": BUBBLEE})
    hub = host.tables
    game_id = await new_game(host)
    loaded = await host.load(game_id)
    subs = [await hub.subscribe(loaded, seat, play, loaded.version)
            for seat in (0, 1, None) for play in (True, False)]
    for sub in subs:
        await drain(sub) if sub.play else None
    await asyncio.sleep(0.05)  # the tail read of a newly followed game is done
    reads = counting_reads(hub)
    before = loaded.version
    await play_one(host, game_id)
    await asyncio.sleep(0.2)  # Redis: our own append's doorbell arrives, and is ignored
    for sub in subs:
        items = await drain(sub)
        if sub.play:
            assert versions(items) and versions(items)[-1] == loaded.version > before
    assert reads == [], "the streams of a game played here cost no read"
    await hub.close()


async def test_each_seat_is_seen_once_whatever_the_number_of_streams(store: Store) -> None:
    views: list[int | None] = []

    def counted_view(state: Any, seat: int | None) -> Any:
        views.append(seat)
        return BUBBLEE.show(state, seat)

    game = dataclasses.replace(BUBBLEE, show=counted_view)
    host = Host(store, {"bubblee": game})
    hub = host.tables
    game_id = (await host.create("bubblee", [Seat("a"), Seat("b")], bpb.Options())).game_id
    loaded = await host.load(game_id)
    subs = [await hub.subscribe(loaded, seat, True, loaded.version)
            for seat in (0, 1, None) for _ in range(20)]
    for sub in subs:
        await drain(sub)
    views.clear()
    await play_one(host, game_id)
    assert sorted(views, key=str) == sorted([0, 1, None], key=str)
    pushed = {(s.seat, (await drain(s))[0][0]) for s in subs}
    assert len(pushed) == 3, "the streams of one seat got the same bytes"
    await hub.close()


async def test_another_servers_appends_reach_the_streams_here(store: Store) -> None:
    here, there = Host(store, {"bubblee": BUBBLEE}), Host(store, {"bubblee": BUBBLEE})
    hub, other_hub = here.tables, there.tables
    game_id = await new_game(there)
    loaded = await here.load(game_id)
    sub = await hub.subscribe(loaded, None, True, loaded.version)
    await drain(sub)
    if hub.doorbell is not None:
        await asyncio.wait_for(hub.doorbell.subscribed.wait(), 5)
    for _ in range(3):
        await play_one(there, game_id)
    latest = (await there.load(game_id)).version
    got: list[int] = []
    while not got or got[-1] < latest:
        got += [bpb.PlayResponse.FromString(m).view.version for m, _ in await drain(sub)]
    assert got == sorted(set(got)) and got[-1] == latest
    await hub.close()
    await other_hub.close()


@needs_redis
async def test_a_doorbell_lost_while_reconnecting_loses_no_update(tmp_path: Any) -> None:
    from services.core.redis_store import LIVE_CHANNEL, RedisStore

    store = RedisStore(REDIS_URL)
    here = Host(store, {"bubblee": BUBBLEE})
    hub = here.tables
    there = Host(store, {"bubblee": BUBBLEE})
    game_id = await new_game(there)
    loaded = await here.load(game_id)
    sub = await hub.subscribe(loaded, None, True, loaded.version)
    await drain(sub)
    assert hub.doorbell is not None
    admin = aioredis.Redis.from_url(REDIS_URL)
    for _ in range(20):
        await asyncio.wait_for(hub.doorbell.subscribed.wait(), 5)
        await admin.client_kill_filter(_type="pubsub")
        # Appended while nobody listens: its doorbell is lost for good.
        if (await admin.pubsub_numsub(LIVE_CHANNEL))[0][1] == 0:
            await play_one(there, game_id)
            if (await admin.pubsub_numsub(LIVE_CHANNEL))[0][1] == 0:
                break
    else:
        pytest.fail("could not append while the doorbell was away")
    latest = (await there.load(game_id)).version
    item = (await drain(sub))[-1]
    assert bpb.PlayResponse.FromString(item[0]).view.version == latest
    await hub.close()
    await admin.aclose()
    await store.close()


@pytest.mark.parametrize("keeper_plays", [False, True])
async def test_catching_up_from_a_held_version_reads_nothing(
        store: Store, keeper_plays: bool) -> None:
    """A Watch joining a followed game is caught up from the steps its table holds, with the
    state after every entry (a command's own batch brings them, from its decision), whether
    a Watch or only a Play stream followed it: no read; from version 0, one read; the
    updates are those of a Watch from the start."""
    host = Host(store, {"bubblee": BUBBLEE})
    hub = host.tables
    game_id = await new_game(host)
    loaded = await host.load(game_id)
    keeper = await hub.subscribe(loaded, None, keeper_plays, loaded.version)
    await asyncio.sleep(0.05)  # the tail read of a newly followed game is done
    start = loaded.version
    for _ in range(4):
        await play_one(host, game_id)
    reads = counting_reads(hub)
    late = await hub.subscribe(loaded, 0, False, start + 2)
    items = await drain(late)
    assert reads == []
    everything = await hub.subscribe(loaded, 0, False, 0)  # from 0: the log, read once
    assert reads == [0]
    whole = [bpb.Update.FromString(m) for m, _ in await drain(everything)]
    assert [bpb.Update.FromString(m) for m, _ in items] == \
        [u for u in whole if u.version > start + 2]
    assert keeper.version == loaded.version
    await hub.close()


def test_a_stream_that_does_not_read_is_ended_not_grown() -> None:
    async def run() -> None:
        sub = table.Subscriber(None, True)
        for v in range(table.STREAM_BEHIND * 2):
            sub.push(v, b"catch-up", live=False)  # a long catch-up is no reason
        assert len(await sub.next()) == table.STREAM_BEHIND * 2
        for v in range(table.STREAM_BEHIND + 1):
            sub.push(v, b"x")
        with pytest.raises(table.Ended):
            await sub.next()

    asyncio.run(run())


def test_an_answer_waits_for_the_entries_of_its_batch() -> None:
    async def run() -> None:
        sub = table.Subscriber(0, True)
        sub.push(5, b"five")
        sub.answer(7, b"answer-7")  # its batch (6-7) is not queued yet
        assert await sub.next() == [(b"five", False)]
        sub.push(7, b"six-seven")
        assert await sub.next() == [(b"six-seven", False), (b"answer-7", True)]
        sub.answer(3, b"old")  # a repeated command id: its entries went long ago
        assert await sub.next() == [(b"old", True)]

    asyncio.run(run())


# ---- over gRPC -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "redis"])
async def test_idle_streams_outlive_the_stores_timeouts_and_end_with_ok_on_shutdown(
        kind: str) -> None:
    if kind == "redis" and not REDIS_URL:
        pytest.skip("needs ARBITER_TEST_REDIS_URL")
    from services.core.redis_store import RedisStore

    # A one-second socket timeout: a stream waiting on a Redis connection would drop in 1 s.
    store: Store = MemoryStore() if kind == "memory" else RedisStore(
        REDIS_URL + "?socket_timeout=1")
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN)
    process = build(config, {"bubblee": BUBBLEE}, store)
    server, host, port = process.server, process.host, process.port
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        created = await method(channel, "bubblee", "CreateGame", apb.CreateGameResponse)(
            bpb.CreateGameRequest(seats=[apb.Seat(name="a"), apb.Seat(name="b")]))
        watch = channel.unary_stream("/arbiter.bubblee.v1.Game/Watch",
                                     request_serializer=apb.WatchRequest.SerializeToString,
                                     response_deserializer=bpb.Update.FromString)
        watching = watch(apb.WatchRequest(game_id=created.game_id,
                                          from_version=created.version))
        playing = play_stream(channel, "bubblee")
        await playing.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=created.game_id,
                                                              from_version=created.version)))
        await playing.read()
        await asyncio.sleep(2.5)
        await play_one(host, created.game_id)
        update = await asyncio.wait_for(watching.read(), 5)
        assert update.version == created.version + 1
        pushed = await asyncio.wait_for(playing.read(), 5)
        assert pushed.updates[0].version == created.version + 1
        # Hundreds of idle streams hold no store connection: the calls still go through.
        many = [watch(apb.WatchRequest(game_id=created.game_id, from_version=10**6))
                for _ in range(300)]
        await asyncio.sleep(0.5)
        view = await method(channel, "bubblee", "GetView", bpb.View)(
            apb.GetViewRequest(game_id=created.game_id), timeout=5)
        assert view.version >= created.version + 1
        await shutdown(process, 5)
        while (await watching.read()) is not grpc.aio.EOF:
            pass
        assert await watching.code() == grpc.StatusCode.OK
        while (await playing.read()) is not grpc.aio.EOF:
            pass
        assert await playing.code() == grpc.StatusCode.OK
        assert [await w.code() for w in many] == [grpc.StatusCode.OK] * len(many)
    await store.close()


CLUSTER_URL = os.environ.get("ARBITER_TEST_REDIS_CLUSTER_URL", "")


@pytest.mark.skipif(not CLUSTER_URL, reason=os.environ.get(
    "ARBITER_TEST_REDIS_CLUSTER_SKIP", "needs ARBITER_TEST_REDIS_CLUSTER_URL"))
async def test_on_a_cluster_one_subscriber_hears_appends_on_every_node() -> None:
    """The append script's PUBLISH is broadcast across a Redis Cluster: one plain connection to
    one node (the doorbell) hears appends whose keys live on every master."""
    from redis.asyncio.cluster import RedisCluster

    from services.core.redis_store import APPEND, RedisDoorbell

    rang: list[tuple[str, int | None]] = []
    doorbell = RedisDoorbell(CLUSTER_URL, lambda g, v: rang.append((g, v)), lambda: None)
    doorbell.start()
    cluster = RedisCluster.from_url(CLUSTER_URL)
    games: dict[str, int] = {}
    try:
        await asyncio.wait_for(doorbell.subscribed.wait(), 10)
        append = cluster.register_script(APPEND)
        for n in range(60):  # enough tags to land on every master's slots
            game = f"cluster-doorbell-{n}-{os.getpid()}"
            tag = f"{{{game}}}"
            await append(keys=[f"{tag}:log", f"{tag}:cmd", f"{tag}:meta", f"{tag}:feed"],
                         args=[0, "", game, 1, b"entry"])
            games[game] = cluster.keyslot(f"{tag}:log")
        nodes = {cluster.get_node_from_key(f"{{{g}}}:log").name for g in games}
        assert len(nodes) >= 3, "the appends went to every master"
        for _ in range(100):
            if {g for g, _ in rang} >= set(games):
                break
            await asyncio.sleep(0.05)
        assert {g: v for g, v in rang if g in games} == {g: 1 for g in games}
    finally:
        await doorbell.stop()
        for game in games:
            tag = f"{{{game}}}"
            await cluster.delete(f"{tag}:log", f"{tag}:cmd", f"{tag}:meta", f"{tag}:feed")
        await cluster.aclose()


async def test_play_streams_count_against_the_stream_limit_not_the_call_limit() -> None:
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", max_concurrent_rpcs=1, max_watches=1)
    process = build(config, {"bubblee": BUBBLEE}, MemoryStore())
    server, port = process.server, process.port
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        created = await method(channel, "bubblee", "CreateGame", apb.CreateGameResponse)(
            bpb.CreateGameRequest(seats=[apb.Seat(name="a"), apb.Seat(name="b")]))
        first = play_stream(channel, "bubblee")
        await first.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=created.game_id)))
        await first.read()  # it holds the only stream slot...
        second = play_stream(channel, "bubblee")
        await second.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=created.game_id)))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await second.read()
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # ...and calls still go through.
        view = await method(channel, "bubblee", "GetView", bpb.View)(
            apb.GetViewRequest(game_id=created.game_id), timeout=5)
        assert view.version == created.version
        first.cancel()
    await shutdown(process, 1)


def test_messages_put_together_from_parts_are_the_messages_protobuf_builds() -> None:
    """The hub concatenates serialized parts; parsed back, they equal the messages built field
    by field, for every seat (and a spectator) of a game's opening and first moves."""
    from services.core import log as gamelog
    from services.core.decider import Rng

    seats = [Seat("a"), Seat("b")]
    started = apb.LogEntry(version=1, started=apb.GameStarted(game="bubblee", game_id="g"))
    events = BUBBLEE.setup(bpb.Options(), seats, Rng(b"parts", 0))
    state = None
    steps = [table.Step(started, None, None)]
    for i, event in enumerate(events):
        entry = apb.LogEntry(version=2 + i, event=event.SerializeToString())
        state = BUBBLEE.fold(state, gamelog.game_event(BUBBLEE, entry))
        steps.append(table.Step(entry, gamelog.game_event(BUBBLEE, entry), state))
    version = steps[-1].entry.version
    for seat in (0, 1, None):
        expected = []
        for step in steps:
            update = bpb.Update(version=step.entry.version)
            if step.event is not None:
                redacted = BUBBLEE.redact(step.event, seat)
                redacted.version = step.entry.version
                update.event.CopyFrom(redacted)
            else:
                update.started.CopyFrom(step.entry.started)
            expected.append(update)
        watched = [bpb.Update.FromString(m) for m in table.watch_messages(BUBBLEE, steps, seat)]
        assert [w.version for w in watched] == [e.version for e in expected]
        for k, (w, e, step) in enumerate(zip(watched, expected, steps, strict=True)):
            view = BUBBLEE.view(step.state, seat) if step.state is not None else bpb.View()
            view.version = step.entry.version
            if step.state is not None:  # nobody has acted yet: every event so far, in words
                said = [BUBBLEE.describe(s.event, seat) for s in steps[:k + 1] if s.event]
                view.happened.extend(text for text in said if text)
            e.view.CopyFrom(view)
            assert w == e
        played = bpb.PlayResponse.FromString(table.play_message(BUBBLEE, steps, seat, state,
                                                               version, False))
        for e in expected:
            e.ClearField("view")
        assert list(played.updates) == expected
        view = BUBBLEE.view(state, seat)
        view.version = version
        assert played.view == view
        to_act = seat is not None and seat in BUBBLEE.to_act(state)
        assert played.HasField("legal") == to_act
        if to_act:
            assert list(played.legal.commands) == BUBBLEE.legal_actions(state, seat)
            # Each command in words, as the view it is pushed with says things.
            assert [w.label for w in played.legal.words] == [
                BUBBLEE.command_label(c, view) for c in played.legal.commands]
