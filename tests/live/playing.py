"""Play clients for the live tests, and the check that what a stream pushed is what Watch,
Replay and GetView give for the same seat."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest_asyncio
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core.server import Config
from services.core.store import Store
from services.process import build, shutdown
from tests.conformance import suite

ADMIN = "live-admin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    address: str
    channel: grpc.aio.Channel
    host: Any
    server: grpc.aio.Server
    store: Store


@pytest_asyncio.fixture
async def served(store: Store) -> AsyncIterator[Served]:
    """A server on each store (the `store` fixture: embedded, then Redis)."""
    games = {n: registry.game(n) for n in ("bubblee", "moody_bear")}
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN)
    process = build(config, games, store)
    server, host, port = process.server, process.host, process.port
    await server.start()
    await process.workers.start()  # the deadlines
    address = f"127.0.0.1:{port}"
    async with grpc.aio.insecure_channel(address) as channel:
        yield Served(address, channel, host, server, store)
    await shutdown(process, 1)
    await process.workers.stop()


def method(channel: grpc.aio.Channel, game: str, name: str, reply: Any) -> Any:
    path = f"/arbiter.{game}.v1.Game/{name}"
    return channel.unary_unary(path, request_serializer=lambda m: m.SerializeToString(),
                               response_deserializer=reply.FromString)


def play_stream(channel: grpc.aio.Channel, game: str, token: str = "") -> Any:
    pb = suite.game(game).pb
    open_call = channel.stream_stream(f"/arbiter.{game}.v1.Game/Play",
                                      request_serializer=pb.PlayRequest.SerializeToString,
                                      response_deserializer=pb.PlayResponse.FromString)
    return open_call(metadata=[("x-seat-token", token)] if token else [])


@dataclass
class Seat:
    """One seat's Play stream: every message it got, and the commands it sent."""

    seat: int | None
    token: str
    messages: list[Any] = field(default_factory=list)
    sent: int = 0
    answers: list[Any] = field(default_factory=list)


Choose = Callable[[int | None, list[Any]], Any | None]


def first(seat: int | None, commands: list[Any]) -> Any | None:
    return commands[0]


async def drive(channel: grpc.aio.Channel, game: str, game_id: str, seats: list[Seat],
                max_commands: int = 1000, from_version: int = 0, choose: Choose = first,
                stop: Callable[[Any], bool] = lambda message: False) -> None:
    """Every seat plays what `choose` picks (None: stays silent) of the legal commands pushed
    to it, until the game ends (its streams end), `max_commands` were sent in all, or a
    message satisfies `stop`."""
    pb = suite.game(game).pb
    budget = [max_commands]
    stopping = [False]

    calls: list[Any] = []

    async def one(seat: Seat) -> None:
        call = play_stream(channel, game, seat.token)
        calls.append(call)
        await call.write(pb.PlayRequest(open=apb.PlayOpen(game_id=game_id,
                                                          from_version=from_version)))
        in_flight = False
        version, legal = 0, None
        async for message in call:
            seat.messages.append(message)
            if message.HasField("answer"):
                seat.answers.append(message.answer)
                in_flight = False
            if message.HasField("view"):
                version = message.view.version
                legal = message.legal if message.HasField("legal") else None
            if stop(message):
                stopping[0], budget[0] = True, 0  # every seat gets this batch: each stops on it
                break
            if budget[0] <= 0:
                if not stopping[0]:
                    for other in calls:
                        other.cancel()  # every seat stops here
                    break
                continue
            command = None
            if not in_flight and legal is not None and legal.version == version:
                command = choose(seat.seat, list(legal.commands))
            if command is not None:
                budget[0] -= 1
                seat.sent += 1
                in_flight = True
                await call.write(pb.PlayRequest(act=pb.ActRequest(
                    command=command, expected_version=version,
                    command_id=f"s{seat.seat}-{version}")))
        call.cancel()

    async def quiet(seat: Seat) -> None:
        try:
            await one(seat)
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                raise
        except asyncio.CancelledError:
            if budget[0] > 0 and not stopping[0]:
                raise  # not our own stop

    await asyncio.wait_for(asyncio.gather(*(quiet(s) for s in seats)), 60)


async def check_against_watch_and_views(channel: grpc.aio.Channel, game: str, game_id: str,
                                        seat: Seat, from_version: int = 0) -> int:
    """What the seat's Play stream pushed is what Watch gives (entries) and what Replay and
    GetView give (views); legal commands came exactly while the seat was to act. Returns the
    number of updates checked."""
    pb = suite.game(game).pb
    # A stream stopped before the game did: reopening it from its last version brings the
    # rest (and checks the catch-up too), so its last view is the game now.
    had = max(m.view.version for m in seat.messages if m.HasField("view"))
    get = apb.GetViewRequest(game_id=game_id)
    if seat.seat is not None:
        get.seat = seat.seat
    admin = [("x-admin-token", ADMIN)]
    now = await method(channel, game, "GetView", pb.View)(get, metadata=admin, timeout=10)
    if now.version != had:
        call = play_stream(channel, game, seat.token)
        await call.write(pb.PlayRequest(open=apb.PlayOpen(game_id=game_id, from_version=had)))
        seat.messages.append(await call.read())
        call.cancel()
        assert seat.messages[-1].view.version == now.version
    pushed = [u for m in seat.messages for u in m.updates]
    versions = [u.version for u in pushed]
    assert versions == sorted(set(versions)), "no entry twice, none out of order"
    last = max([m.view.version for m in seat.messages if m.HasField("view")])
    as_seat = admin
    watch = channel.unary_stream(f"/arbiter.{game}.v1.Game/Watch",
                                 request_serializer=apb.WatchRequest.SerializeToString,
                                 response_deserializer=pb.Update.FromString)
    request = apb.WatchRequest(game_id=game_id, from_version=from_version)
    if seat.seat is not None:
        request.seat = seat.seat
    watched = []
    call = watch(request, metadata=as_seat, timeout=30)
    async for update in call:
        update.ClearField("view")
        watched.append(update)
        if update.version >= last:
            break
    call.cancel()
    watched = [u for u in watched if u.version <= last]
    assert [u.SerializeToString() for u in pushed] == [u.SerializeToString() for u in watched]

    replay = channel.unary_unary("/arbiter.v1.Arbiter/Replay",
                                 request_serializer=apb.ReplayRequest.SerializeToString,
                                 response_deserializer=apb.ReplayResponse.FromString)
    for message in seat.messages:
        if not message.HasField("view"):
            continue
        asked = apb.ReplayRequest(game_id=game_id, version=message.view.version)
        if seat.seat is not None:
            asked.seat = seat.seat
        got = await replay(asked, metadata=admin, timeout=10)
        view = pb.View()
        got.view.Unpack(view)
        view.version = message.view.version
        assert view == message.view, f"view at version {message.view.version}"
        to_act = seat.seat is not None and seat.seat in view.to_act and \
            not view.HasField("outcome")
        assert message.HasField("legal") == to_act
    final = [m.view for m in seat.messages if m.HasField("view")][-1]
    assert now == final, "the last view pushed is the game now"
    return len(pushed)
