"""No leak through forks, for every game, over gRPC.

A fork's first batch deals the parent's hidden cards, and play in the fork (eliminations, the
end) reveals them. So while any game a fork descends from still runs, the fork is the admin's
alone: every call on it (GetView, ListLegalActions, Watch, Replay, ExportLog, VerifyLog,
ForkGame, Act) is PERMISSION_DENIED to anyone else, whoever they are (a spectator, a seat
token of the fork or of the parent), and ListGames leaves it out for them. Once every
ancestor is over, what the fork could show is public, and it is an ordinary game.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from arbiter.v1 import arbiter_pb2 as apb

from services.core.decider import Game, Rng
from services.core.server import Config
from services.core.store import MemoryStore
from services.process import build
from tests.conformance import suite

ADMIN = "fork-leak-admin"
MAX_COMMANDS = 3000
DENIED = grpc.StatusCode.PERMISSION_DENIED


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, channel: grpc.aio.Channel, game: Game) -> None:
        self.channel, self.game, self.pb = channel, game, game.pb

    async def __call__(self, method: str, request: Any, reply: Any, md: Any = ()) -> Any:
        if "/" not in method:
            method = f"/arbiter.{self.game.name}.v1.Game/{method}"
        call = self.channel.unary_unary(method, request_serializer=type(request).SerializeToString,
                                        response_deserializer=reply.FromString)
        return await call(request, metadata=md, timeout=30)

    async def watch_first(self, game_id: str, md: Any) -> Any:
        call = self.channel.unary_stream(
            f"/arbiter.{self.game.name}.v1.Game/Watch",
            request_serializer=apb.WatchRequest.SerializeToString,
            response_deserializer=self.pb.Update.FromString)
        async for update in call(apb.WatchRequest(game_id=game_id), metadata=md, timeout=30):
            return update
        return None

    async def view(self, game_id: str, md: Any = (), seat: int | None = None) -> Any:
        request = apb.GetViewRequest(game_id=game_id)
        if seat is not None:
            request.seat = seat
        return await self("GetView", request, self.pb.View, md)

    async def legal(self, game_id: str, seat: int) -> Any:
        return await self("ListLegalActions", apb.ListLegalActionsRequest(game_id=game_id,
                                                                          seat=seat),
                          self.pb.LegalActions, (("x-admin-token", ADMIN),))

    async def play(self, game_id: str, rng: Rng, commands: int = MAX_COMMANDS) -> int:
        """Random legal commands, sent by the admin for the seat to act; the last version."""
        admin = (("x-admin-token", ADMIN),)
        view = await self.view(game_id, admin)
        for _ in range(commands):
            if view.HasField("outcome"):
                return int(view.version)
            seat = rng.choice(list(view.to_act))
            legal = await self.legal(game_id, seat)
            reply = await self("Act", self.pb.ActRequest(
                game_id=game_id, command=rng.choice(list(legal.commands)), seat=seat,
                command_id=f"v{legal.version}", expected_version=legal.version),
                self.pb.ActResponse, admin)
            view = reply.view
        if commands == MAX_COMMANDS:
            pytest.fail(f"no end after {MAX_COMMANDS} commands")
        return int(view.version)

    async def listed(self, md: Any) -> set[str]:
        reply = await self("/arbiter.v1.Arbiter/ListGames", apb.ListGamesRequest(page_size=500),
                           apb.ListGamesResponse, md)
        return {g.game_id for g in reply.games}


@pytest_asyncio.fixture(params=list(suite.NAMES))
async def api(request: pytest.FixtureRequest) -> AsyncIterator[Api]:
    game = suite.game(request.param)
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN, rate_burst=0)
    process = build(config, {game.name: game}, MemoryStore())
    server, port = process.server, process.port
    await server.start()
    await process.workers.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield Api(channel, game)
    await process.workers.stop()
    await server.stop(None)


async def refused(api: Api, game_id: str, md: Any) -> list[str]:
    """Every call on the game as this caller; the names of those that were NOT refused."""
    admin = (("x-admin-token", ADMIN),)
    view = await api.view(game_id, admin)
    seat = list(view.to_act)[0] if view.to_act else 0
    command = None
    if view.to_act:
        command = (await api.legal(game_id, seat)).commands[0]
    calls: dict[str, Any] = {
        "GetView": lambda: api.view(game_id, md),
        "GetView as a seat": lambda: api.view(game_id, md, seat),
        "ListLegalActions": lambda: api("ListLegalActions", apb.ListLegalActionsRequest(
            game_id=game_id), api.pb.LegalActions, md),
        "Watch": lambda: api.watch_first(game_id, md),
        "Replay": lambda: api("/arbiter.v1.Arbiter/Replay", apb.ReplayRequest(
            game_id=game_id, version=1), apb.ReplayResponse, md),
        "Replay latest": lambda: api("/arbiter.v1.Arbiter/Replay", apb.ReplayRequest(
            game_id=game_id), apb.ReplayResponse, md),
        "ExportLog": lambda: api("/arbiter.v1.Arbiter/ExportLog", apb.ExportLogRequest(
            game_id=game_id), apb.ExportLogResponse, md),
        "VerifyLog": lambda: api("/arbiter.v1.Arbiter/VerifyLog", apb.VerifyLogRequest(
            game_id=game_id), apb.VerifyLogResponse, md),
        "ForkGame": lambda: api("/arbiter.v1.Arbiter/ForkGame", apb.ForkGameRequest(
            game_id=game_id), apb.CreateGameResponse, md),
    }
    if command is not None:
        calls["Act"] = lambda: api("Act", api.pb.ActRequest(
            game_id=game_id, command=command, command_id="leak"), api.pb.ActResponse, md)
    let_through = []
    for name, call in calls.items():
        try:
            await call()
        except grpc.aio.AioRpcError as e:
            if e.code() == DENIED:
                continue
        let_through.append(name)
    after = await api.view(game_id, admin)
    assert after.version == view.version, "a refused call changed nothing"
    return let_through


async def callers(api: Api, *created: apb.CreateGameResponse) -> list[Any]:
    """A spectator, a wrong admin token, and every seat token of these games."""
    out: list[Any] = [(), (("x-admin-token", "not-the-admin"),)]
    for c in created:
        out += [(("x-seat-token", t.token),) for t in c.tokens]
    return out


async def wait_listed(api: Api, *game_ids: str) -> None:
    admin = (("x-admin-token", ADMIN),)
    for _ in range(500):
        if set(game_ids) <= await api.listed(admin):
            return
        await asyncio.sleep(0.02)
    pytest.fail("the read model never listed the games")


async def test_a_fork_of_a_running_game_is_the_admins_alone_until_its_ancestors_end(
        api: Api) -> None:
    game = api.game
    admin = (("x-admin-token", ADMIN),)
    seats = [apb.Seat(name=f"p{i}") for i in range(game.seat_count)]
    rng = Rng.for_test(11)
    # A parent still running after 4 random commands, and its fork after 2 more (random play
    # ends some games at once, a wrong proclamation in Moody Bear: those are played again).
    for _ in range(20):
        parent = await api("CreateGame", api.pb.CreateGameRequest(seats=seats),
                           apb.CreateGameResponse)
        await api.play(parent.game_id, rng, commands=4)
        if (await api.view(parent.game_id, admin)).HasField("outcome"):
            continue
        fork = await api("/arbiter.v1.Arbiter/ForkGame", apb.ForkGameRequest(
            game_id=parent.game_id), apb.CreateGameResponse, admin)
        await api.play(fork.game_id, rng, commands=2)
        if not (await api.view(fork.game_id, admin)).HasField("outcome"):
            break
    else:
        pytest.fail("every game ended within 6 random commands")
    grandchild = await api("/arbiter.v1.Arbiter/ForkGame", apb.ForkGameRequest(
        game_id=fork.game_id), apb.CreateGameResponse, admin)
    who = await callers(api, parent, fork, grandchild)

    # While the parent runs: nobody but the admin, on any path.
    for game_id in (fork.game_id, grandchild.game_id):
        for md in who:
            assert await refused(api, game_id, md) == [], (game_id, md)
        assert await refused(api, game_id, admin) != [], "the admin may read and act"
    await wait_listed(api, parent.game_id, fork.game_id, grandchild.game_id)
    for md in who:
        shown = await api.listed(md)
        assert parent.game_id in shown
        assert not shown & {fork.game_id, grandchild.game_id}

    # The fork played to its end (its eliminations and final reveal) while the parent runs.
    await api.play(fork.game_id, rng)
    for md in who:
        assert await refused(api, fork.game_id, md) == []
        assert await refused(api, grandchild.game_id, md) == []

    # The parent ends: what the forks could show is public now; they are ordinary games.
    await api.play(parent.game_id, rng)
    assert (await api.view(fork.game_id)).HasField("outcome")
    await api("/arbiter.v1.Arbiter/ExportLog", apb.ExportLogRequest(game_id=fork.game_id),
              apb.ExportLogResponse)
    assert (await api.view(grandchild.game_id)).version > 0
    await api("/arbiter.v1.Arbiter/Replay", apb.ReplayRequest(game_id=grandchild.game_id),
              apb.ReplayResponse)
    assert {fork.game_id, grandchild.game_id} <= await api.listed(())
