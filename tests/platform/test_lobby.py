"""The lobby: open seats, invitation codes, JoinGame, the games waiting in ListGames, and
what happens to a game nobody joins."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core.host import Host
from services.core.redis_store import RedisStore
from services.core.server import Config
from services.core.store import MemoryStore
from services.process import build
from tests.conftest import REDIS_URL
from tests.platform.test_grpc import GAME, Client, free_port, rejected

JOIN = "/arbiter.v1.Arbiter/JoinGame"
LIST = "/arbiter.v1.Arbiter/ListGames"


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000_000_000

    def __call__(self) -> int:
        return self.ms


@pytest_asyncio.fixture(params=["memory", "redis"])
async def lobby(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Client, Host, Clock]]:
    if request.param == "redis" and not REDIS_URL:
        pytest.skip("needs ARBITER_TEST_REDIS_URL (make test starts a private redis-server)")
    store = RedisStore(REDIS_URL) if request.param == "redis" else MemoryStore()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", lobby_seconds=60)
    process = build(config, {"bubblee": registry.game("bubblee")}, store)
    server, host, port = process.server, process.host, process.port
    clock = Clock()
    host.clock_ms = clock
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield Client(channel), host, clock
    await server.stop(None)
    await store.close()


async def create(client: Client, *seats: apb.Seat) -> apb.CreateGameResponse:
    return await client.call(GAME + "CreateGame", bpb.CreateGameRequest(seats=seats),
                             apb.CreateGameResponse)


async def join(client: Client, code: str, name: str = "zoe") -> apb.JoinGameResponse:
    return await client.call(JOIN, apb.JoinGameRequest(code=code, name=name),
                             apb.JoinGameResponse)


async def listed(client: Client, status: Any) -> dict[str, apb.GameSummary]:
    reply = await client.call(LIST, apb.ListGamesRequest(status=status), apb.ListGamesResponse)
    return {g.game_id: g for g in reply.games}


async def test_an_open_seat_gets_an_invitation_and_the_game_waits_for_it(lobby: Any) -> None:
    client, _, _ = lobby
    created = await create(client, apb.Seat(name="ann"), apb.Seat(kind=apb.OPEN))
    assert [t.seat for t in created.tokens] == [0]  # no token for the open seat
    assert [i.seat for i in created.invitations] == [1]
    code = created.invitations[0].code
    ann = created.tokens[0].token

    # Nobody may act before the seats are filled, whoever is to act.
    legal = await client.call(GAME + "ListLegalActions",
                              apb.ListLegalActionsRequest(game_id=created.game_id),
                              bpb.LegalActions, ann)
    command = legal.commands[0] if legal.commands else bpb.Command()
    reason, _, _ = await rejected(client.act(created.game_id, ann, command),
                                  grpc.StatusCode.FAILED_PRECONDITION)
    assert reason == "WAITING_FOR_PLAYERS"

    waiting = await listed(client, apb.WAITING)
    assert list(waiting[created.game_id].open_seats) == [1]
    assert created.game_id not in await listed(client, apb.ACTIVE)

    joined = await join(client, code, "zoe")
    assert (joined.game_id, joined.game, joined.seat) == (created.game_id, "bubblee", 1)
    assert list(joined.open_seats) == [] and joined.token

    # Started: listed as active with the joined name, no longer waiting; the mover acts.
    assert created.game_id not in await listed(client, apb.WAITING)
    active = (await listed(client, apb.ACTIVE))[created.game_id]
    assert [s.name for s in active.seats] == ["ann", "zoe"]
    assert [s.kind for s in active.seats] == [apb.HUMAN, apb.HUMAN]
    tokens = {0: ann, 1: joined.token}
    mover = tokens[(await client.view(created.game_id)).to_act[0]]
    first = (await client.legal(created.game_id, mover)).commands[0]
    assert (await client.act(created.game_id, mover, first)).version > created.version


async def test_a_waiting_game_says_so_and_offers_no_command_until_its_seats_are_filled(
        lobby: Any) -> None:
    client, host, _ = lobby
    created = await create(client, apb.Seat(name="ann"), apb.Seat(kind=apb.OPEN))
    ann = created.tokens[0].token
    table = await host.tables.load(created.game_id)
    stream = await host.tables.subscribe(table, 0, True, 0)  # ann's Play stream
    try:
        opened = [bpb.PlayResponse.FromString(m) for m, _ in await stream.next()]
        assert not any(r.HasField("legal") for r in opened)
        assert list(opened[-1].view.open_seats) == [1] and not opened[-1].view.to_act
        for token in (ann, ""):  # the seat, and a spectator
            view = await client.view(created.game_id, token)
            assert list(view.open_seats) == [1] and not view.to_act
            assert list(view.happened) == [
                "waiting for 1 more player: the game begins when every seat is filled"]
        assert not (await client.legal(created.game_id, ann)).commands
        summary = (await listed(client, apb.WAITING))[created.game_id]
        assert list(summary.open_seats) == [1] and not summary.to_act

        joined = await join(client, created.invitations[0].code, "zoe")
        view = await client.view(created.game_id, ann)
        assert not view.open_seats and len(view.to_act) == 1
        mover = view.to_act[0]
        legal = await client.legal(created.game_id, {0: ann, 1: joined.token}[mover])
        assert legal.commands and len(legal.words) == len(legal.commands)
        # The open stream is told, though the join appended no entry.
        pushed = [bpb.PlayResponse.FromString(m)
                  for m, _ in await asyncio.wait_for(stream.next(), 5)]
        assert not pushed[-1].view.open_seats and list(pushed[-1].view.to_act) == [mover]
        assert pushed[-1].HasField("legal") == (mover == 0)
        if mover == 0:  # Play's legal commands come in words too
            legal = pushed[-1].legal
            assert [w.label for w in legal.words] and len(legal.words) == len(legal.commands)
    finally:
        host.tables.unsubscribe(table, stream)


async def test_a_code_takes_its_seat_once_and_a_made_up_code_is_refused(lobby: Any) -> None:
    client, _, _ = lobby
    created = await create(client, apb.Seat(kind=apb.OPEN), apb.Seat(kind=apb.OPEN))
    codes = [i.code for i in created.invitations]
    assert len(set(codes)) == 2
    first = await join(client, codes[0])
    assert list(first.open_seats) == [1]
    reason, _, _ = await rejected(join(client, codes[0], "eve"),
                                  grpc.StatusCode.FAILED_PRECONDITION)
    assert reason == "SEAT_TAKEN"
    for forged in ("nothing", codes[1] + "x", created.game_id + ".abc", "bubblee-0.x"):
        reason, _, fields = await rejected(join(client, forged),
                                           grpc.StatusCode.INVALID_ARGUMENT)
        assert reason == "BAD_INVITATION" and fields == ["code"], forged
    second = await join(client, codes[1])
    assert second.seat == 1 and second.token != first.token
    # Each joined token is its own seat's.
    for j in (first, second):
        view = await client.view(created.game_id, j.token)
        assert view.seat == j.seat


async def test_an_ai_seat_waits_for_the_humans_too(lobby: Any) -> None:
    client, host, _ = lobby
    created = await create(client, apb.Seat(kind=apb.OPEN),
                           apb.Seat(name="bot", kind=apb.AI, bot="greedy"))
    await asyncio.sleep(0.3)
    assert (await client.view(created.game_id)).version == created.version  # the bot waited
    joined = await join(client, created.invitations[0].code)
    view = await client.view(created.game_id)
    for _ in range(50):  # once started, the bot plays when it is its turn
        if view.to_act and view.to_act[0] == joined.seat:
            break
        await asyncio.sleep(0.1)
        view = await client.view(created.game_id)
    assert view.to_act[0] == joined.seat


async def test_a_game_nobody_joins_expires_after_the_lobby_time(lobby: Any) -> None:
    client, _, clock = lobby
    created = await create(client, apb.Seat(name="ann"), apb.Seat(kind=apb.OPEN))
    clock.ms += 59_000
    assert created.game_id in await listed(client, apb.WAITING)
    clock.ms += 1_000  # 60 s: the lobby time of this server
    assert created.game_id not in await listed(client, apb.WAITING)
    expired = (await listed(client, apb.EXPIRED))[created.game_id]
    assert list(expired.open_seats) == [1]
    reason, _, _ = await rejected(join(client, created.invitations[0].code),
                                  grpc.StatusCode.FAILED_PRECONDITION)
    assert reason == "GAME_EXPIRED"
    ann = created.tokens[0].token
    reason, _, _ = await rejected(client.act(created.game_id, ann, bpb.Command(
        place=bpb.Place())), grpc.StatusCode.FAILED_PRECONDITION)
    assert reason == "GAME_EXPIRED"


async def test_two_servers_joining_with_one_code_give_the_seat_once(tmp_path: Any) -> None:
    """The join's command id makes the store keep one of two simultaneous joins."""
    store = MemoryStore(str(tmp_path / "store.aof"))
    game = registry.game("bubblee")
    a, b = Host(store, {"bubblee": game}), Host(store, {"bubblee": game})
    from services.core.decider import Seat

    made = await a.create("bubblee", [Seat("ann"), Seat("", "open")], game.pb.Options())
    code = made.invitations[1]
    await b.load(made.game_id)  # b holds the game in its cache, open seat and all
    results = await asyncio.gather(a.join(code, "x"), b.join(code, "y"),
                                   return_exceptions=True)
    won = [r for r in results if not isinstance(r, Exception)]
    lost = [r for r in results if isinstance(r, Exception)]
    assert len(won) == 1 and len(lost) == 1 and getattr(lost[0], "code", "") == "SEAT_TAKEN"
    # The other server sees the game started, and the winner's token, from the store.
    from services.core.host import Caller

    loaded = await b.load(made.game_id)
    assert not loaded.open_seats
    assert b.seat_of(loaded, Caller(token=won[0].token), acting=True) == 1
    await store.close()

    # After a restart the file holds the join: the seat is taken, the token still works.
    again = MemoryStore(str(tmp_path / "store.aof"))
    c = Host(again, {"bubblee": game})
    loaded = await c.load(made.game_id)
    assert not loaded.open_seats
    assert loaded.joined == {1: "x" if won[0] is results[0] else "y"}
    assert c.seat_of(loaded, Caller(token=won[0].token), acting=True) == 1
    await again.close()


async def test_open_seats_are_refused_where_they_cannot_be(lobby: Any) -> None:
    client, _, _ = lobby
    reason, _, fields = await rejected(
        create(client, apb.Seat(name="ann"), apb.Seat(kind=7)),
        grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "UNKNOWN_SEAT_KIND" and fields == ["seats"]
    created = await create(client, apb.Seat(name="ann"), apb.Seat(kind=apb.OPEN))
    reason, _, fields = await rejected(join(client, created.invitations[0].code, "n" * 65),
                                       grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "NAME_TOO_LONG" and fields == ["name"]
