"""Moody Bear Kingdom over the generic gRPC adapter: private views by seat token, a trade
offer only its target sees, and the response window shown to every seat."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest_asyncio
from arbiter.moody_bear.v1 import moody_bear_pb2 as pb
from arbiter.v1 import arbiter_pb2 as apb

from services.core.server import Config
from services.core.store import MemoryStore
from services.moody_bear import GAME as MOODY_BEAR
from services.process import build

GAME = "/arbiter.moody_bear.v1.Game/"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest_asyncio.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    store = MemoryStore()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token="admin")
    process = build(config, {"moody_bear": MOODY_BEAR}, store)
    server, port = process.server, process.port
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        yield ch
    await server.stop(None)
    await store.close()


async def call(ch: grpc.aio.Channel, method: str, request: Any, reply: type, token: str = ""
               ) -> Any:
    fn = ch.unary_unary(GAME + method, request_serializer=type(request).SerializeToString,
                        response_deserializer=reply.FromString)
    metadata = [("x-seat-token", token)] if token else []
    return await fn(request, metadata=metadata, timeout=10)


async def test_a_game_over_grpc_keeps_each_seats_secrets(channel: grpc.aio.Channel) -> None:
    seats = [apb.Seat(name=f"p{i}") for i in range(4)]
    created = await call(channel, "CreateGame", pb.CreateGameRequest(seats=seats),
                         apb.CreateGameResponse)
    tokens = {t.seat: t.token for t in created.tokens}
    get = apb.GetViewRequest(game_id=created.game_id)
    views = {s: await call(channel, "GetView", get, pb.View, tokens[s]) for s in range(4)}
    spectator = await call(channel, "GetView", get, pb.View)
    assert all(len(v.hand) == 5 and v.team != pb.TEAM_UNSPECIFIED for v in views.values())
    assert list(spectator.hand) == [] and spectator.team == pb.TEAM_UNSPECIFIED
    mover = spectator.turn
    target = (mover + 1) % 4
    card = views[mover].hand[0]
    act = pb.ActRequest(game_id=created.game_id, command_id="offer-1",
                        command=pb.Command(offer=pb.Offer(target=target, card=card)))
    await call(channel, "Act", act, pb.ActResponse, tokens[mover])
    seen = {s: await call(channel, "GetView", get, pb.View, tokens[s]) for s in range(4)}
    assert seen[target].trade.card == card
    assert all(seen[s].trade.card == pb.CARD_UNSPECIFIED for s in range(4)
               if s not in (mover, target))
    legal = await call(channel, "ListLegalActions",
                       apb.ListLegalActionsRequest(game_id=created.game_id), pb.LegalActions,
                       tokens[target])
    assert pb.Command(reject=pb.Reject()) in legal.commands
