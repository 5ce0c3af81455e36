"""What one client can hold of a server's streams: seats' streams counted apart from
spectators', a share per client, per game and per seat, and a bounded queue per stream (a
client that sends and never reads is ended, not fed)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb
from google.rpc import error_details_pb2, status_pb2

from services import games as registry
from services.core.host import Caller
from services.core.metrics import METRICS
from services.core.server import Config
from services.core.store import MemoryStore
from services.process import Process, build, shutdown
from tests.live.playing import free_port, method, play_stream

BUBBLEE = registry.game("bubblee")
PLAY = ("bidi_stream", "arbiter.bubblee.v1.Game", "Play")


async def serve(**limits: Any) -> Process:
    process = build(Config(grpc_addr=f"127.0.0.1:{free_port()}", **limits),
                    {"bubblee": BUBBLEE}, MemoryStore())
    await process.server.start()
    return process


@pytest_asyncio.fixture
async def channel_to() -> AsyncIterator[Any]:
    made: list[tuple[Process, grpc.aio.Channel]] = []

    async def open_channel(**limits: Any) -> tuple[Process, grpc.aio.Channel]:
        process = await serve(**limits)
        made.append((process, grpc.aio.insecure_channel(f"127.0.0.1:{process.port}")))
        return made[-1]

    yield open_channel
    for process, channel in made:
        await channel.close()
        await shutdown(process, 1)


async def new_game(channel: grpc.aio.Channel) -> apb.CreateGameResponse:
    return await method(channel, "bubblee", "CreateGame", apb.CreateGameResponse)(
        bpb.CreateGameRequest(seats=[apb.Seat(name="a"), apb.Seat(name="b")]))


def watch(channel: grpc.aio.Channel, game_id: str, from_version: int = 10**6,
          client: str = "") -> Any:
    """A Watch stream (by default from a version to come: it sends nothing yet); `client`:
    the address a trusted proxy forwards."""
    call = channel.unary_stream("/arbiter.bubblee.v1.Game/Watch",
                                request_serializer=apb.WatchRequest.SerializeToString,
                                response_deserializer=bpb.Update.FromString)
    return call(apb.WatchRequest(game_id=game_id, from_version=from_version),
                metadata=(("x-forwarded-for", client),) if client else None)


async def opened(call: Any, game_id: str) -> Any:
    """Open a Play stream; its first message."""
    await call.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=game_id)))
    return await asyncio.wait_for(call.read(), 5)


async def refusal(read: Any) -> str:
    """The reason a stream was refused with (RESOURCE_EXHAUSTED), read from its details."""
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await asyncio.wait_for(read, 5)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused.value
    details = dict(refused.value.trailing_metadata())["grpc-status-details-bin"]
    info = error_details_pb2.ErrorInfo()
    status_pb2.Status.FromString(details).details[0].Unpack(info)
    return info.reason


async def following(call: Any) -> None:
    """A Watch stream is open once its headers came."""
    await asyncio.wait_for(call.initial_metadata(), 5)


async def test_spectators_never_take_a_players_place(channel_to: Any) -> None:
    _, channel = await channel_to(max_watches=3, max_plays=2)
    made = await new_game(channel)
    spectators = [watch(channel, made.game_id) for _ in range(3)]
    for call in spectators:
        await following(call)
    assert await refusal(watch(channel, made.game_id).read()) == "OVERLOADED"
    anonymous = play_stream(channel, "bubblee")  # a Play without a seat is a spectator's
    await anonymous.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=made.game_id)))
    assert await refusal(anonymous.read()) == "OVERLOADED"
    for token in made.tokens:  # every seat still gets its stream
        first = await opened(play_stream(channel, "bubblee", token.token), made.game_id)
        assert first.view.version == made.version
    third = play_stream(channel, "bubblee", made.tokens[0].token)
    await third.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=made.game_id)))
    assert await refusal(third.read()) == "OVERLOADED"


async def test_a_client_a_game_and_a_seat_each_have_a_share(channel_to: Any) -> None:
    process, channel = await channel_to(streams_per_client=3)
    made = await new_game(channel)
    calls = [watch(channel, made.game_id) for _ in range(3)]
    for call in calls:
        await following(call)
    assert await refusal(watch(channel, made.game_id).read()) == "TOO_MANY_STREAMS"
    calls[0].cancel()
    for _ in range(100):  # the slot comes back once the server saw the stream end
        if process.host.tables.held(made.game_id).subscribers.__len__() == 2:
            break
        await asyncio.sleep(0.02)
    await following(watch(channel, made.game_id))

    _, channel = await channel_to(watches_per_game=2, streams_per_seat=1)
    made, other = await new_game(channel), await new_game(channel)
    for call in [watch(channel, made.game_id) for _ in range(2)]:
        await following(call)
    assert await refusal(watch(channel, made.game_id).read()) == "TOO_MANY_SPECTATORS"
    await following(watch(channel, other.game_id))  # another game has its own share
    token = made.tokens[0].token
    await opened(play_stream(channel, "bubblee", token), made.game_id)
    again = play_stream(channel, "bubblee", token)
    await again.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=made.game_id)))
    assert await refusal(again.read()) == "TOO_MANY_STREAMS"
    await opened(play_stream(channel, "bubblee", made.tokens[1].token), made.game_id)


async def test_one_clients_spectators_of_a_game_have_a_share(channel_to: Any) -> None:
    """Each spectator is one more write per move: a client's share of one game's spectators
    bounds what that client makes the game's moves cost, while others still watch."""
    _, channel = await channel_to(client_watches_per_game=2, trusted_proxies="127.0.0.1/32")
    made, other = await new_game(channel), await new_game(channel)
    hostile, polite = "203.0.113.66", "198.51.100.7"
    for call in [watch(channel, made.game_id, client=hostile) for _ in range(2)]:
        await following(call)
    assert await refusal(watch(channel, made.game_id, client=hostile).read()) == \
        "TOO_MANY_STREAMS"
    await following(watch(channel, other.game_id, client=hostile))  # its share of another
    await following(watch(channel, made.game_id, client=polite))  # another client's


async def flood(call: Any, game_id: str, commands: int) -> int:
    """Send commands (each refused: another game's id) and never read; how many went."""
    bad = bpb.PlayRequest(act=bpb.ActRequest(game_id=game_id + "-other"))
    sent = 0
    try:
        for _ in range(commands):
            await asyncio.wait_for(call.write(bad), 2)
            sent += 1
    except (TimeoutError, grpc.aio.AioRpcError, asyncio.InvalidStateError):
        pass  # the server reads no more of a stream it ended
    return sent


async def test_a_play_client_that_sends_and_never_reads_is_ended(channel_to: Any) -> None:
    behind = 20
    process, channel = await channel_to(stream_behind=behind)
    made = await new_game(channel)
    call = play_stream(channel, "bubblee", made.tokens[0].token)
    await opened(call, made.game_id)
    received = METRICS.msg_received(*PLAY)._value.get()
    sent = await flood(call, made.game_id, 20_000)
    table = process.host.tables.held(made.game_id)
    for _ in range(250):
        if not table.subscribers:
            break
        await asyncio.sleep(0.02)
    assert not table.subscribers, "the stream was ended"
    read_by_server = METRICS.msg_received(*PLAY)._value.get() - received
    # It stopped reading commands: what it read is what it could answer into the client's
    # flow-control window, plus the queue's bound; not the client's whole flood.
    assert read_by_server < sent, (read_by_server, sent)
    codes = []
    try:
        while (await asyncio.wait_for(call.read(), 5)) is not grpc.aio.EOF:
            pass
    except grpc.aio.AioRpcError as ended:
        codes.append((ended.code(), ended.details()))
    assert codes and codes[0][0] == grpc.StatusCode.UNAVAILABLE, codes
    assert "behind" in codes[0][1]


async def test_a_play_client_that_stops_reading_and_hangs_up_is_cancelled(
        channel_to: Any) -> None:
    # A bound it does not reach: its writes wait on the client's flow-control window.
    _, channel = await channel_to(stream_behind=1_000_000)
    made = await new_game(channel)
    handled = {code: METRICS.rpc_handled(*PLAY, code)._value.get()
               for code in ("CANCELLED", "INTERNAL", "UNKNOWN")}
    call = play_stream(channel, "bubblee", made.tokens[0].token)
    await opened(call, made.game_id)
    await flood(call, made.game_id, 20_000)
    call.cancel()
    for _ in range(250):
        if METRICS.rpc_handled(*PLAY, "CANCELLED")._value.get() > handled["CANCELLED"]:
            break
        await asyncio.sleep(0.02)
    now = {code: METRICS.rpc_handled(*PLAY, code)._value.get() - before
           for code, before in handled.items()}
    assert now == {"CANCELLED": 1, "INTERNAL": 0, "UNKNOWN": 0}


async def test_a_watch_client_that_never_reads_is_ended(channel_to: Any) -> None:
    behind = 5
    process, channel = await channel_to(stream_behind=behind, admin_token="bounds-admin-token")
    host = process.host
    made = await method(channel, "bubblee", "CreateGame", apb.CreateGameResponse)(
        bpb.CreateGameRequest(seats=[apb.Seat(name="a"), apb.Seat(name="b")]))
    call = watch(channel, made.game_id, made.version)
    await following(call)
    table = process.host.tables.held(made.game_id)
    moves = 0
    while table.subscribers and not table.finished and moves < 2000:
        seat = BUBBLEE.to_act(table.state)[0]
        command = BUBBLEE.legal_actions(table.state, seat)[0]
        await host.act(made.game_id, Caller(seat=seat, trusted=True), command)
        moves += 1
        await asyncio.sleep(0)  # the stream's writer runs
    assert not table.subscribers and not table.finished, f"{moves} moves"
    codes = []
    try:
        while (await asyncio.wait_for(call.read(), 5)) is not grpc.aio.EOF:
            pass
    except grpc.aio.AioRpcError as ended:
        codes.append(ended.code())
    assert codes == [grpc.StatusCode.UNAVAILABLE]


async def test_a_watch_from_a_later_version_ends_with_the_game(channel_to: Any) -> None:
    """It is sent nothing (the game never reaches that version), and ends with OK when the
    game does, its slot freed."""
    process, channel = await channel_to()
    made = await new_game(channel)
    call = watch(channel, made.game_id)
    await following(call)
    table = process.host.tables.held(made.game_id)
    while not table.finished:
        seat = BUBBLEE.to_act(table.state)[0]
        command = BUBBLEE.legal_actions(table.state, seat)[0]
        await process.host.act(made.game_id, Caller(seat=seat, trusted=True), command)
    assert await asyncio.wait_for(call.read(), 5) is grpc.aio.EOF
    assert await call.code() == grpc.StatusCode.OK
