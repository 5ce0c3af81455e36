"""Replay from your own seat: a seat's token replays the game as that seat saw it at each
version, its hand included, and no other seat's view."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest_asyncio
from arbiter.moody_bear.v1 import moody_bear_pb2 as mpb
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core.server import Config
from services.core.store import MemoryStore
from services.process import build
from tests.platform.test_grpc import ADMIN, Client, free_port, rejected

GAME = "/arbiter.moody_bear.v1.Game/"
REPLAY = "/arbiter.v1.Arbiter/Replay"


@pytest_asyncio.fixture
async def client() -> AsyncIterator[Client]:
    store = MemoryStore()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN)
    process = build(config, {"moody_bear": registry.game("moody_bear")}, store)
    await process.server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{process.port}") as channel:
        yield Client(channel)
    await process.server.stop(None)


async def replay(client: Client, game_id: str, version: int, token: str = "",
                 seat: int | None = None, admin: bool = False) -> mpb.View:
    request = apb.ReplayRequest(game_id=game_id, version=version, seat=seat)
    reply = await client.call(REPLAY, request, apb.ReplayResponse, token, admin)
    view = mpb.View()
    assert reply.view.Unpack(view)
    return view


async def test_a_seat_token_replays_that_seats_view_at_each_version(client: Client) -> None:
    seats = [apb.Seat(name=name) for name in ("ann", "bob", "cy")]
    created = await client.call(GAME + "CreateGame", mpb.CreateGameRequest(seats=seats),
                                apb.CreateGameResponse)
    tokens = {t.seat: t.token for t in created.tokens}
    for _ in range(6):  # a few commands, whoever is to act
        view = await client.call(GAME + "GetView", apb.GetViewRequest(game_id=created.game_id),
                                 mpb.View)
        if not view.to_act:  # about 2% of deals end within six of these commands
            break
        mover = tokens[view.to_act[0]]
        legal = await client.call(GAME + "ListLegalActions",
                                  apb.ListLegalActionsRequest(game_id=created.game_id),
                                  mpb.LegalActions, mover)
        await client.call(GAME + "Act", mpb.ActRequest(game_id=created.game_id,
                                                      command=legal.commands[-1]),
                          mpb.ActResponse, mover)
    last = (await replay(client, created.game_id, 0)).version
    ann = tokens[0]
    for version in range(created.version, last + 1):
        mine = await replay(client, created.game_id, version, ann)
        assert mine.seat == 0 and mine.version == version
        assert "hand" not in mine.hidden and mine.hand, "a seat sees its own hand"
        # What the admin sees as seat 0 at that version, and nothing more.
        assert mine == await replay(client, created.game_id, version, seat=0, admin=True)
        spectator = await replay(client, created.game_id, version)
        assert not spectator.HasField("seat") and "hand" in spectator.hidden

    reason, _, _ = await rejected(replay(client, created.game_id, last, ann, seat=1),
                                  grpc.StatusCode.PERMISSION_DENIED)
    assert reason == "SEAT_FORBIDDEN"
    reason, _, _ = await rejected(replay(client, created.game_id, last, "not-a-token"),
                                  grpc.StatusCode.PERMISSION_DENIED)
    assert reason == "SEAT_FORBIDDEN"
