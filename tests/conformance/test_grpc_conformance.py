"""Every game over gRPC through the one generic adapter: a whole game of random legal
commands sent by seat tokens, views that carry their version, and a verifiable log."""

from __future__ import annotations

import socket
from typing import Any

import grpc
import pytest
from arbiter.v1 import arbiter_pb2 as apb

from services.core.decider import Game, Rng
from services.core.redis_store import RedisStore
from services.core.server import Config
from services.core.store import MemoryStore, Store
from services.process import build, shutdown
from tests.conformance import suite
from tests.conftest import CLUSTER_URL, NO_CLUSTER
from tests.live.playing import ADMIN, Seat, check_against_watch_and_views, drive

MAX_COMMANDS = 3000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(params=list(suite.NAMES))
def game(request: pytest.FixtureRequest) -> Game:
    return suite.game(request.param)


@pytest.mark.parametrize("store_kind", ["memory", "cluster"])
async def test_a_whole_game_over_grpc(game: Game, store_kind: str) -> None:
    pb = game.pb
    if store_kind == "cluster":
        if not CLUSTER_URL:
            pytest.skip(NO_CLUSTER)
        store: Store = RedisStore(CLUSTER_URL)
    else:
        store = MemoryStore()
    process = build(Config(grpc_addr=f"127.0.0.1:{free_port()}"), {game.name: game},
                    store)
    server, port = process.server, process.port
    await server.start()
    service = f"/arbiter.{game.name}.v1.Game/"
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:

            def rpc(method: str, reply: Any) -> Any:
                return channel.unary_unary(service + method,
                                           request_serializer=lambda m: m.SerializeToString(),
                                           response_deserializer=reply.FromString)

            create, act = rpc("CreateGame", apb.CreateGameResponse), rpc("Act", pb.ActResponse)
            get_view, legal = rpc("GetView", pb.View), rpc("ListLegalActions", pb.LegalActions)
            seats = [apb.Seat(name=f"p{i}") for i in range(game.seat_count)]
            created = await create(pb.CreateGameRequest(seats=seats, options=pb.Options()))
            tokens = {t.seat: t.token for t in created.tokens}
            assert sorted(tokens) == list(range(game.seat_count))
            rng = Rng.for_test(2)
            version = created.version
            for step in range(MAX_COMMANDS):
                view = await get_view(apb.GetViewRequest(game_id=created.game_id))
                assert view.version == version
                if view.HasField("outcome"):
                    break
                seat = rng.choice(list(view.to_act))
                me = (("x-seat-token", tokens[seat]),)
                mine = await get_view(apb.GetViewRequest(game_id=created.game_id), metadata=me)
                assert mine.seat == seat and mine.version == version
                options = await legal(apb.ListLegalActionsRequest(game_id=created.game_id),
                                      metadata=me)
                assert options.commands, f"seat {seat} must act but may do nothing"
                reply = await act(pb.ActRequest(
                    game_id=created.game_id, command=rng.choice(list(options.commands)),
                    command_id=f"s{step}", expected_version=version), metadata=me)
                assert reply.version > version and reply.view.version == reply.version
                assert all(version < e.version <= reply.version for e in reply.events)
                version = reply.version
            else:
                pytest.fail(f"no end after {MAX_COMMANDS} commands")
            arbiter = channel.unary_unary(
                "/arbiter.v1.Arbiter/VerifyLog",
                request_serializer=apb.VerifyLogRequest.SerializeToString,
                response_deserializer=apb.VerifyLogResponse.FromString)
            verified = await arbiter(apb.VerifyLogRequest(game_id=created.game_id))
            assert verified.ok, verified.reason
    finally:
        await server.stop(None)
        await store.close()


async def test_another_games_id_is_not_found_and_changes_nothing(game: Game) -> None:
    other = suite.game(next(n for n in suite.NAMES if n != game.name))
    process = build(Config(grpc_addr=f"127.0.0.1:{free_port()}"),
                    {game.name: game, other.name: other}, MemoryStore())
    server, port = process.server, process.port
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:

            def rpc(name: Any, method: str, reply: Any) -> Any:
                return channel.unary_unary(f"/arbiter.{name}.v1.Game/{method}",
                                           request_serializer=lambda m: m.SerializeToString(),
                                           response_deserializer=reply.FromString)

            def seats(g: Game) -> list[apb.Seat]:
                return [apb.Seat(name=f"p{i}") for i in range(g.seat_count)]

            mine = await rpc(game.name, "CreateGame", apb.CreateGameResponse)(
                game.pb.CreateGameRequest(seats=seats(game)))
            theirs = await rpc(other.name, "CreateGame", apb.CreateGameResponse)(
                other.pb.CreateGameRequest(seats=seats(other)))
            their_view = rpc(other.name, "GetView", other.pb.View)
            before = await their_view(apb.GetViewRequest(game_id=theirs.game_id))
            # A command of this game, legal in this game, sent with the other game's id.
            view = await rpc(game.name, "GetView", game.pb.View)(
                apb.GetViewRequest(game_id=mine.game_id))
            token = {t.seat: t.token for t in mine.tokens}[view.to_act[0]]
            legal = await rpc(game.name, "ListLegalActions", game.pb.LegalActions)(
                apb.ListLegalActionsRequest(game_id=mine.game_id),
                metadata=(("x-seat-token", token),))
            their_token = (("x-seat-token", theirs.tokens[0].token),)
            calls = {
                "Act": rpc(game.name, "Act", game.pb.ActResponse)(game.pb.ActRequest(
                    game_id=theirs.game_id, command=legal.commands[0], command_id="wrong"),
                    metadata=their_token),
                "GetView": rpc(game.name, "GetView", game.pb.View)(
                    apb.GetViewRequest(game_id=theirs.game_id)),
                "ListLegalActions": rpc(game.name, "ListLegalActions", game.pb.LegalActions)(
                    apb.ListLegalActionsRequest(game_id=theirs.game_id),
                    metadata=their_token),
            }
            watch = channel.unary_stream(f"/arbiter.{game.name}.v1.Game/Watch",
                                         request_serializer=apb.WatchRequest.SerializeToString,
                                         response_deserializer=game.pb.Update.FromString)
            for method, call in calls.items():
                with pytest.raises(grpc.aio.AioRpcError) as info:
                    await call
                assert info.value.code() == grpc.StatusCode.NOT_FOUND, method
                assert other.name in info.value.details(), "the error names the right service"
            with pytest.raises(grpc.aio.AioRpcError) as info:
                async for _ in watch(apb.WatchRequest(game_id=theirs.game_id), timeout=5):
                    pass
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
            after = await their_view(apb.GetViewRequest(game_id=theirs.game_id))
            assert after == before
    finally:
        await server.stop(None)


async def test_every_seats_play_stream_matches_watch_replay_and_get_view(game: Game) -> None:
    """Every seat plays over its own Play stream (random legal commands from what is pushed);
    what each stream got is what Watch, Replay and GetView give that seat."""
    process = build(Config(grpc_addr=f"127.0.0.1:{free_port()}",
                           admin_token=ADMIN), {game.name: game}, MemoryStore())
    server, port = process.server, process.port
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            created = await channel.unary_unary(
                f"/arbiter.{game.name}.v1.Game/CreateGame",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=apb.CreateGameResponse.FromString)(
                    game.pb.CreateGameRequest(
                        seats=[apb.Seat(name=f"p{i}") for i in range(game.seat_count)]))
            seats = [Seat(t.seat, t.token) for t in created.tokens]
            rng = Rng.for_test(3)
            await drive(channel, game.name, created.game_id, seats, max_commands=40,
                        choose=lambda seat, commands: rng.choice(commands))
            assert sum(len(s.answers) for s in seats) > 0
            for seat in seats:
                await check_against_watch_and_views(channel, game.name, created.game_id, seat)
    finally:
        await shutdown(process, 1)
