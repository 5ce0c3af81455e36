"""The server's hooks into the workers: ListGames from the read model, loads from snapshots,
and the existing replay-to-a-version and fork RPCs."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from arbiter.v1 import arbiter_pb2 as apb
from arbiter.v1 import arbiter_pb2_grpc as apb_grpc

from services.core.host import Host
from services.core.server import Config
from services.core.store import MemoryStore, Store
from services.process import Process, build
from tests.workers.conftest import TOY, play_random, url_of

ADMIN = "admin-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest_asyncio.fixture(params=["memory", "redis", "cluster"])
async def served(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Any, Process, Store]]:
    if request.param != "memory":
        from services.core.redis_store import RedisStore

        store: Store = RedisStore(url_of(request.param))
    else:
        store = MemoryStore()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN)
    process = build(config, {"toy": TOY}, store)
    server, port = process.server, process.port
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield apb_grpc.ArbiterStub(channel), process, store
    await server.stop(None)
    await store.close()


async def test_list_games_reads_the_read_model_filters_and_pages(served: Any) -> None:
    stub, process, _ = served
    host = process.host
    seat = f"ann-{id(host)}"
    done = [await play_random(host, TOY, seed=s, names=[seat, "x"]) for s in range(3)]
    running = await play_random(host, TOY, seed=7, stop_at=3, names=["y", seat])
    reply = await stub.ListGames(apb.ListGamesRequest(seat_name=seat, page_size=2))
    assert len(reply.games) == 2 and reply.next_page_token
    more = await stub.ListGames(apb.ListGamesRequest(seat_name=seat, page_size=2,
                                                     page_token=reply.next_page_token))
    assert len(more.games) == 2 and not more.next_page_token
    everything = {g.game_id: g for g in [*reply.games, *more.games]}
    assert set(everything) == {*done, running}
    version = (await host.load(running)).version
    assert everything[running].status == apb.ACTIVE and everything[running].version == version
    finished = await stub.ListGames(apb.ListGamesRequest(
        game="toy", status=apb.FINISHED, seat_name=seat))
    assert {g.game_id for g in finished.games} == set(done)
    assert all(g.outcome.winners for g in finished.games)
    # The newest game comes first.
    created = [g.created_unix_ms for g in [*reply.games, *more.games]]
    assert created == sorted(created, reverse=True)


async def test_a_page_token_is_a_cursor_and_a_forged_one_is_invalid_argument(served: Any
                                                                            ) -> None:
    import base64
    import json

    stub, process, _ = served
    host = process.host
    seat = f"tok-{id(host)}"
    ids = [await play_random(host, TOY, seed=s, stop_at=2, names=[seat, "x"]) for s in range(3)]
    first = await stub.ListGames(apb.ListGamesRequest(seat_name=seat, page_size=1))
    created, last_id = json.loads(base64.urlsafe_b64decode(first.next_page_token))
    assert (created, last_id) == (first.games[0].created_unix_ms, first.games[0].game_id)
    rest = await stub.ListGames(apb.ListGamesRequest(seat_name=seat, page_size=5,
                                                     page_token=first.next_page_token))
    assert sorted(g.game_id for g in [*first.games, *rest.games]) == sorted(ids)

    def token(value: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode()

    for forged in (token([1]), token(["1", "g"]), token([-1, "g"]), token([1, ""]),
                   token([1.5, "g"]), token({"a": 1}), token([1, "g" * 2000]), "%%%"):
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await stub.ListGames(apb.ListGamesRequest(page_token=forged))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, forged


async def test_a_server_loads_a_long_game_from_its_snapshot(served: Any) -> None:
    stub, process, store = served
    host, workers = process.host, process.workers
    game_id = await play_random(host, TOY, stop_at=30, options=TOY.pb.Options(pile=200))
    workers.projections.projector.snapshot_every = 10  # type: ignore[union-attr]
    await stub.ListGames(apb.ListGamesRequest())  # the projections catch up
    snap = await workers.rm.snapshot(game_id)
    assert snap is not None and snap.version >= 20
    fresh = Host(store, {"toy": TOY}, snapshot_source=host.snapshot_source)
    loaded = await fresh.load(game_id)
    full = await Host(store, {"toy": TOY}).load(game_id)
    assert (loaded.state, loaded.version) == (full.state, full.version)


async def test_replay_shows_the_game_at_any_version(served: Any) -> None:
    stub, process, _ = served
    host = process.host
    game_id = await play_random(host, TOY, seed=3)
    loaded = await host.load(game_id)
    for version in (2, 5, loaded.version):
        reply = await stub.Replay(apb.ReplayRequest(game_id=game_id, version=version))
        view = TOY.pb.View()
        assert reply.view.Unpack(view)
        # A version inside a batch (the template's opening deals each seat its stake in the
        # same batch) is answered at the batch's end, as the host's own replay reaches it.
        _, state, reached = await host.replay_to(game_id, version)
        assert reached >= version and reply.version == reached and view.pile == state.pile


async def test_a_fork_continues_from_the_parent_at_that_version(served: Any) -> None:
    stub, process, _ = served
    host = process.host
    game_id = await play_random(host, TOY, seed=4)
    created = await stub.ForkGame(apb.ForkGameRequest(game_id=game_id, version=4))
    fork = await host.load(created.game_id)
    _, state, _ = await host.replay_to(game_id, 4)
    assert fork.state == state and not fork.finished and len(created.tokens) == 2
    listed = await stub.ListGames(apb.ListGamesRequest(game="toy", status=apb.ACTIVE))
    assert [g.forked_from for g in listed.games if g.game_id == created.game_id] == [
        f"{game_id}@4"]


async def test_a_running_server_projects_and_hands_idle_seats_to_their_bots(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARBITER_IDLE_SECONDS", "0.3")
    store = MemoryStore()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}")
    process = build(config, {"toy": TOY}, store)
    server, host = process.server, process.host
    await server.start()
    workers = process.workers
    await workers.start()
    try:
        from services.core.decider import Seat

        game_id = (await host.create("toy", [Seat("a"), Seat("b")],
                                     TOY.pb.Options(pile=3))).game_id
        import asyncio

        for _ in range(100):  # the idle seats play themselves to the end
            await asyncio.sleep(0.05)
            if (await host.load(game_id, fresh=True)).finished:
                break
        assert (await host.load(game_id)).finished
        for _ in range(40):  # the background projection catches up by itself
            if await workers.rm.version(game_id) == await store.version(game_id):
                break
            await asyncio.sleep(0.05)
        [summary], _ = await workers.rm.page("toy", "finished", "", None, 10)
        assert summary.game_id == game_id
    finally:
        await workers.stop()
        await server.stop(None)


async def test_with_external_projections_list_games_reads_what_the_workers_wrote(
        monkeypatch: pytest.MonkeyPatch, redis_url: str) -> None:
    import uuid

    from services.core.redis_store import RedisStore
    from services.workers.projections import ProjectionWorker

    monkeypatch.setenv("ARBITER_PROJECTIONS", "external")
    store = RedisStore(redis_url)
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}")
    process = build(config, {"toy": TOY}, store)
    server, host, port = process.server, process.host, process.port
    assert process.workers.projections is None
    await server.start()
    seat = f"ext-{uuid.uuid4().hex[:6]}"
    game_id = await play_random(host, TOY, seed=2, names=[seat, "x"])
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = apb_grpc.ArbiterStub(channel)
        before = await stub.ListGames(apb.ListGamesRequest(seat_name=seat))
        assert list(before.games) == []  # nobody has projected it yet
        worker = ProjectionWorker(store, process.workers.rm, {"toy": TOY},
                                  group=f"ext-{uuid.uuid4().hex[:6]}")
        await worker.catch_up()  # a separate projection worker
        after = await stub.ListGames(apb.ListGamesRequest(seat_name=seat))
        assert [g.game_id for g in after.games] == [game_id]
    await server.stop(None)
    await store.close()


def test_a_mistyped_worker_mode_stops_the_server_at_start() -> None:
    from services.workers.runtime import Workers

    host = Host(MemoryStore(), {"toy": TOY})
    for name in ("ARBITER_PROJECTIONS", "ARBITER_DEADLINES"):
        with pytest.raises(ValueError, match=name):
            Workers(host, env={name: "extrenal"})
