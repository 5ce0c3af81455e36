"""A store that went back under a running server (a lossy Redis failover: batches, or a whole
game, its old master acknowledged and its replica never got): the server's table of the game
is reset, every stream following it is ended so that its client reopens from the store's
truth, and a game the store lost is NOT_FOUND on every call, never INTERNAL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest_asyncio
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core.host import Caller, Host
from services.core.server import Config
from services.process import Process, build, shutdown
from tests.conftest import REDIS_URL, needs_redis
from tests.live.playing import ADMIN, free_port, method, play_stream

pytestmark = needs_redis
BUBBLEE = registry.game("bubblee")
AS_ADMIN = [("x-admin-token", ADMIN)]


@dataclass
class Live:
    process: Process
    channel: grpc.aio.Channel
    store: Any
    other: Host  # another replica on the same store, with no stream


@pytest_asyncio.fixture
async def live() -> AsyncIterator[Live]:
    from services.core.redis_store import RedisStore

    url = REDIS_URL.rsplit("/", 1)[0] + "/5"
    store, other_store = RedisStore(url), RedisStore(url)
    process = build(Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN),
                    {"bubblee": BUBBLEE}, store)
    await process.server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{process.port}") as channel:
        yield Live(process, channel, store, Host(other_store, {"bubblee": BUBBLEE}))
    await shutdown(process, 1)
    await store.close()
    await other_store.close()


async def play(host: Host, game_id: str, moves: int, tag: str) -> int:
    """The seats to act play their first legal commands; the version reached."""
    for n in range(moves):
        table = await host.load(game_id, fresh=True)
        seat = BUBBLEE.to_act(table.state)[0]
        command = BUBBLEE.legal_actions(table.state, seat)[-1]
        await host.act(game_id, Caller(seat=seat, trusted=True), command, f"{tag}{n}",
                       table.version)
    return (await host.load(game_id, fresh=True)).version


async def rewind(store: Any, game_id: str, keep: int) -> None:
    """The game as a replica holds it that got its first `keep` entries only."""
    from services.core.redis_store import log_key, meta_key

    kept = await store.read(game_id, 0, keep)
    meta = {k: v for k, v in (await store.meta(game_id)).items() if k != "version"}
    await store.redis.delete(log_key(game_id), meta_key(game_id),
                             log_key(game_id).replace(":log:", ":cmd:"))
    if keep:
        await store.append(game_id, kept, 0, "", meta)


def watch(channel: grpc.aio.Channel, game_id: str, from_version: int = 0) -> Any:
    call = channel.unary_stream("/arbiter.bubblee.v1.Game/Watch",
                                request_serializer=apb.WatchRequest.SerializeToString,
                                response_deserializer=bpb.Update.FromString)
    return call(apb.WatchRequest(game_id=game_id, from_version=from_version), timeout=20)


async def read_to(call: Any, version: int) -> list[Any]:
    got = []
    while not got or got[-1].version < version:
        message = await asyncio.wait_for(call.read(), 5)
        got.append(message if isinstance(message, bpb.Update) else message.view)
    return got


async def ended_with(call: Any) -> tuple[grpc.StatusCode, str]:
    try:
        while (await asyncio.wait_for(call.read(), 10)) is not grpc.aio.EOF:
            pass
    except grpc.aio.AioRpcError as e:
        return e.code(), e.details() or ""
    return grpc.StatusCode.OK, ""


async def test_a_stream_across_lost_batches_is_reset_to_the_stores_truth(live: Live) -> None:
    host = live.process.host
    made = await method(live.channel, "bubblee", "CreateGame", apb.CreateGameResponse)(
        bpb.CreateGameRequest(seats=[apb.Seat(name="a"), apb.Seat(name="b")]))
    kept = await play(host, made.game_id, 2, "kept-")
    lost = await play(host, made.game_id, 3, "lost-")
    watching = watch(live.channel, made.game_id)
    await read_to(watching, lost)
    playing = play_stream(live.channel, "bubblee", made.tokens[0].token)
    await playing.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=made.game_id)))
    await read_to(playing, lost)

    await rewind(live.store, made.game_id, kept)
    truth = await play(live.other, made.game_id, 1, "other-")  # rings the server
    assert truth <= lost

    for call in (watching, playing):
        code, details = await ended_with(call)
        assert code == grpc.StatusCode.UNAVAILABLE and "reopen" in details, (code, details)
    view = await method(live.channel, "bubblee", "GetView", bpb.View)(
        apb.GetViewRequest(game_id=made.game_id), metadata=AS_ADMIN)
    assert view.version == truth
    again = await read_to(watch(live.channel, made.game_id), truth)
    assert [u.version for u in again] == list(range(1, truth + 1))
    other_view = (await live.other.load(made.game_id, fresh=True)).view(None)
    assert again[-1].view == other_view == view
    # The game goes on from the store's version.
    assert await play(host, made.game_id, 1, "after-") > truth


async def test_a_game_the_store_lost_is_not_found_everywhere(live: Live) -> None:
    host = live.process.host
    made = await method(live.channel, "bubblee", "CreateGame", apb.CreateGameResponse)(
        bpb.CreateGameRequest(seats=[apb.Seat(name="a"), apb.Seat(name="b")]))
    version = await play(host, made.game_id, 2, "m")
    watching = watch(live.channel, made.game_id)
    await read_to(watching, version)
    table = await host.load(made.game_id)
    seat = BUBBLEE.to_act(table.state)[0]
    command = BUBBLEE.legal_actions(table.state, seat)[0]

    await rewind(live.store, made.game_id, 0)
    game_id = made.game_id
    calls: list[tuple[str, Any]] = [
        ("Act", method(live.channel, "bubblee", "Act", bpb.ActResponse)(
            bpb.ActRequest(game_id=game_id, command=command, seat=seat),
            metadata=AS_ADMIN)),
        ("GetView", method(live.channel, "bubblee", "GetView", bpb.View)(
            apb.GetViewRequest(game_id=game_id))),
        ("ListLegalActions", method(live.channel, "bubblee", "ListLegalActions",
                                    bpb.LegalActions)(
            apb.ListLegalActionsRequest(game_id=game_id, seat=seat), metadata=AS_ADMIN)),
    ]
    arbiter = "/arbiter.v1.Arbiter/"
    for name, request, reply in [
            ("ExportLog", apb.ExportLogRequest(game_id=game_id), apb.ExportLogResponse),
            ("VerifyLog", apb.VerifyLogRequest(game_id=game_id), apb.VerifyLogResponse),
            ("Replay", apb.ReplayRequest(game_id=game_id), apb.ReplayResponse),
            ("ForkGame", apb.ForkGameRequest(game_id=game_id), apb.CreateGameResponse)]:
        calls.append((name, live.channel.unary_unary(
            arbiter + name, request_serializer=type(request).SerializeToString,
            response_deserializer=reply.FromString)(request, metadata=AS_ADMIN)))
    codes = {}
    for name, call in calls:
        try:
            await call
            codes[name] = grpc.StatusCode.OK
        except grpc.aio.AioRpcError as e:
            codes[name] = e.code()
    assert codes == {name: grpc.StatusCode.NOT_FOUND for name, _ in calls}
    code, _ = await ended_with(watching)
    assert code == grpc.StatusCode.UNAVAILABLE
    assert (await ended_with(watch(live.channel, game_id)))[0] == grpc.StatusCode.NOT_FOUND
