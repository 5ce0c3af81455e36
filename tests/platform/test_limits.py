"""One client's share: commands per client and per seat (Act and Play), Simulate's limits,
the real client behind trusted proxies, buckets shared through Redis, and whole-log work in
other processes. Each hostile client hits its bound while a well-behaved one goes on."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import redis.asyncio as aioredis
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core import guard
from services.core.grpc_api import Admission
from services.core.server import Config
from services.core.store import MemoryStore, Store
from services.process import build
from tests.conftest import CLUSTER_URL, REDIS_URL, needs_redis
from tests.platform.test_grpc import details, rejected

ADMIN = "limits-admin-token-0123"
GAME = "/arbiter.bubblee.v1.Game/"
HOSTILE, POLITE = "203.0.113.66", "198.51.100.7"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """Calls as one client behind the test's trusted proxy (127.0.0.1): its address is the
    x-forwarded-for it sends."""

    def __init__(self, channel: grpc.aio.Channel, address: str) -> None:
        self.channel, self.address = channel, address

    async def call(self, method: str, request: Any, reply: type, token: str = "",
                   admin: bool = False) -> Any:
        md = [("x-forwarded-for", self.address)]
        if token:
            md.append(("x-seat-token", token))
        if admin:
            md.append(("x-admin-token", ADMIN))
        fn = self.channel.unary_unary(method, request_serializer=type(request).SerializeToString,
                                      response_deserializer=reply.FromString)
        return await fn(request, metadata=md, timeout=60)

    async def create(self) -> apb.CreateGameResponse:
        return await self.call(GAME + "CreateGame", bpb.CreateGameRequest(
            seats=[apb.Seat(name="ann"), apb.Seat(name="bob")]), apb.CreateGameResponse)

    async def mover(self, created: apb.CreateGameResponse) -> str:
        first = (await self.call(GAME + "GetView", apb.GetViewRequest(
            game_id=created.game_id), bpb.View)).to_act[0]
        return {t.seat: t.token for t in created.tokens}[first]

    async def play_one(self, game_id: str, token: str) -> int:
        """One legal command of the seat to act (any seat: the token says which)."""
        legal = await self.call(GAME + "ListLegalActions",
                                apb.ListLegalActionsRequest(game_id=game_id), bpb.LegalActions,
                                token)
        reply = await self.call(GAME + "Act", bpb.ActRequest(
            game_id=game_id, command=legal.commands[0], command_id=uuid.uuid4().hex),
            bpb.ActResponse, token)
        return int(reply.version)

    async def simulate(self, games: int, admin: bool = False) -> apb.SimulateResponse:
        return await self.call("/arbiter.v1.Arbiter/Simulate", apb.SimulateRequest(
            game="bubblee", games=games, bots=["random", "random"]), apb.SimulateResponse,
            admin=admin)


async def serve(store: Store | None = None, game: str = "bubblee", **settings: Any
                ) -> tuple[Any, grpc.aio.Channel]:
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN,
                    trusted_proxies="127.0.0.1/32", **settings)
    process = build(config, {game: registry.game(game)}, store or MemoryStore())
    await process.server.start()
    return process, grpc.aio.insecure_channel(f"127.0.0.1:{process.port}")


@pytest.fixture
async def two_clients(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Client, Client]]:
    process, channel = await serve(**request.param)
    yield Client(channel, HOSTILE), Client(channel, POLITE)
    await channel.close()
    await process.server.stop(None)


@pytest.mark.parametrize("two_clients", [dict(command_burst=4, command_rate=0.01)],
                         indirect=True)
async def test_a_client_past_its_command_rate_is_refused_while_another_plays(
        two_clients: tuple[Client, Client]) -> None:
    hostile, polite = two_clients
    game = await hostile.create()
    token = await hostile.mover(game)
    for _ in range(4):  # refused by the rules or not, every command counts
        await rejected(hostile.call(GAME + "Act", bpb.ActRequest(
            game_id=game.game_id, command=bpb.Command(), command_id="x"), bpb.ActResponse,
            token), grpc.StatusCode.INVALID_ARGUMENT)
    reason, meta, _ = await rejected(hostile.play_one(game.game_id, token),
                                     grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert (reason, meta) == ("RATE_LIMITED", {"limit": "commands"})
    theirs = await polite.create()
    polite_token = await polite.mover(theirs)
    assert await polite.play_one(theirs.game_id, polite_token) > theirs.version


@pytest.mark.parametrize("two_clients", [dict(seat_command_burst=3, seat_command_rate=0.01)],
                         indirect=True)
async def test_a_seat_past_its_command_rate_is_refused_while_the_other_seat_plays(
        two_clients: tuple[Client, Client]) -> None:
    player, _ = two_clients
    game = await player.create()
    mover = await player.mover(game)
    waiting = next(t.token for t in game.tokens if t.token != mover)
    for _ in range(3):  # refused by the rules, and counted
        await rejected(player.call(GAME + "Act", bpb.ActRequest(
            game_id=game.game_id, command=bpb.Command(), command_id="x"), bpb.ActResponse,
            waiting), grpc.StatusCode.INVALID_ARGUMENT)
    reason, meta, _ = await rejected(player.call(GAME + "Act", bpb.ActRequest(
        game_id=game.game_id, command=bpb.Command(), command_id="x"), bpb.ActResponse,
        waiting), grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert (reason, meta) == ("RATE_LIMITED", {"limit": "seat_commands"})
    # The same client, the other seat: its budget is its own.
    assert await player.play_one(game.game_id, mover) > game.version


@pytest.mark.parametrize("two_clients", [dict(command_burst=3, command_rate=0.01)],
                         indirect=True)
async def test_a_play_stream_past_the_rate_answers_each_command_refused_and_stays_open(
        two_clients: tuple[Client, Client]) -> None:
    hostile, polite = two_clients
    game = await hostile.create()
    token = await hostile.mover(game)
    play = hostile.channel.stream_stream(GAME + "Play",
                                         request_serializer=bpb.PlayRequest.SerializeToString,
                                         response_deserializer=bpb.PlayResponse.FromString)
    call = play(metadata=(("x-forwarded-for", HOSTILE), ("x-seat-token", token)))
    await call.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=game.game_id)))
    assert (await call.read()).HasField("view")  # the catch-up
    reasons = []
    for i in range(5):  # commands the rules refuse: each answered, each counted
        await call.write(bpb.PlayRequest(act=bpb.ActRequest(command=bpb.Command(),
                                                            command_id=f"c{i}")))
        answer = (await call.read()).answer
        assert answer.command_id == f"c{i}"
        info = guard_reason(answer.error)
        reasons.append(info)
    assert reasons == ["NO_COMMAND"] * 3 + ["RATE_LIMITED"] * 2, reasons
    assert answer.error.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
    # The stream is still open: a view of the other client's move would still come; and the
    # other client plays.
    theirs = await polite.create()
    assert await polite.play_one(theirs.game_id, await polite.mover(theirs)) > theirs.version
    call.cancel()


@pytest.mark.parametrize("two_clients", [dict(command_burst=2, command_rate=10,
                                              command_queue_seconds=1.0)], indirect=True)
async def test_a_client_past_its_rate_waits_its_turn_within_the_queue(
        two_clients: tuple[Client, Client]) -> None:
    """Ten commands at once against a burst of 2 and 10 a second: none refused for the rate,
    and the last answered no sooner than its turn (0.8 s later): the flood is slowed to the
    rate, not served at the server's speed."""
    hostile, polite = two_clients
    game = await hostile.create()
    token = await hostile.mover(game)
    loop = asyncio.get_running_loop()
    started = loop.time()

    async def one() -> str:
        reason, _, _ = await rejected(hostile.call(GAME + "Act", bpb.ActRequest(
            game_id=game.game_id, command=bpb.Command(), command_id="x"), bpb.ActResponse,
            token), grpc.StatusCode.INVALID_ARGUMENT)
        return reason

    reasons = await asyncio.gather(*(one() for _ in range(10)))
    assert reasons == ["NO_COMMAND"] * 10, "each command reached the rules, in its turn"
    assert loop.time() - started >= 0.75
    # Past the queue (another ten at once: a second of queue holds ten), refusals.
    outcomes = await asyncio.gather(*(reason_of(hostile.call(GAME + "Act", bpb.ActRequest(
        game_id=game.game_id, command=bpb.Command(), command_id="x"), bpb.ActResponse,
        token)) for _ in range(25)))
    assert set(outcomes) == {"NO_COMMAND", "RATE_LIMITED"}, outcomes
    theirs = await polite.create()
    assert await polite.play_one(theirs.game_id, await polite.mover(theirs)) > theirs.version


@pytest.mark.parametrize("two_clients", [dict(calls_per_client=3, command_burst=1,
                                              command_rate=0.5, command_queue_seconds=30)],
                         indirect=True)
async def test_a_client_holding_its_share_of_calls_is_refused_more_while_another_is_served(
        two_clients: tuple[Client, Client]) -> None:
    """Commands waiting for their turn are calls in flight: past its share a client's next
    call is refused at once (TOO_MANY_CALLS), and the server's calls stay free for others."""
    hostile, polite = two_clients
    game = await hostile.create()
    token = await hostile.mover(game)
    act = bpb.ActRequest(game_id=game.game_id, command=bpb.Command(), command_id="x")
    await rejected(hostile.call(GAME + "Act", act, bpb.ActResponse, token),
                   grpc.StatusCode.INVALID_ARGUMENT)  # the burst: at once
    waiting = [asyncio.ensure_future(hostile.call(GAME + "Act", act, bpb.ActResponse, token))
               for _ in range(3)]  # each waits 2 s more than the one before
    await asyncio.sleep(0.5)
    reason, _, _ = await rejected(hostile.call(GAME + "GetView", apb.GetViewRequest(
        game_id=game.game_id), bpb.View), grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert reason == "TOO_MANY_CALLS"
    assert (await polite.call(GAME + "GetView", apb.GetViewRequest(game_id=game.game_id),
                              bpb.View)).version == game.version
    for call in waiting:
        call.cancel()


async def reason_of(call: Any) -> str:
    """The reason a call was refused with."""
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return details(info.value)[0]


def guard_reason(status: Any) -> str:
    from google.rpc import error_details_pb2

    info = error_details_pb2.ErrorInfo()
    assert status.details and status.details[0].Unpack(info)
    return str(info.reason)


class Context:
    def __init__(self, peer: str, *metadata: tuple[str, str]) -> None:
        self._peer, self._metadata = peer, metadata

    def peer(self) -> str:
        return self._peer

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata


def test_the_forwarded_client_is_believed_only_from_trusted_proxies() -> None:
    proxies = guard.networks("10.0.0.0/8, 192.0.2.1")
    admission = Admission(None, trusted_proxies=proxies, gateway="unix:/run/x/grpc.sock")
    xff = ("x-forwarded-for", "203.0.113.9")
    # A client that is not a trusted proxy writes what it likes: not believed.
    assert admission.client_of(Context("ipv4:198.51.100.20:4000", xff)) == \
        "ipv4:198.51.100.20"
    # The router (trusted) forwards the client's address.
    assert admission.client_of(Context("ipv4:10.1.2.3:4000", xff)) == "ipv4:203.0.113.9"
    # Proxies in a row: the last address no trusted proxy is, never what the client wrote.
    chain = ("x-forwarded-for", "1.1.1.1, 203.0.113.9, 192.0.2.1")
    assert admission.client_of(Context("ipv4:10.1.2.3:4000", chain)) == "ipv4:203.0.113.9"
    two = (("x-forwarded-for", "1.1.1.1"), ("x-forwarded-for", "203.0.113.10:5555"))
    assert admission.client_of(Context("ipv4:10.1.2.3:4000", *two)) == "ipv4:203.0.113.10"
    forwarded = ("forwarded", 'for="[2001:db8::7]:4711";proto=https')
    assert admission.client_of(Context("ipv4:10.1.2.3:4000", forwarded)) == \
        "ipv6:[2001:db8::7]"
    # Nothing usable: the proxy's own address.
    assert admission.client_of(Context("ipv4:10.1.2.3:4000", ("x-forwarded-for", "junk"))) \
        == "ipv4:10.1.2.3"
    # The HTTP gateway's socket is trusted; a socket without a gateway is not.
    assert admission.client_of(Context("unix:", xff)) == "ipv4:203.0.113.9"
    assert Admission(None).client_of(Context("unix:", xff)) == "unix:"
    with pytest.raises(ValueError, match="not an address or a CIDR"):
        guard.networks("10.0.0.0/8,nonsense")


async def test_simulate_is_capped_and_one_clients_simulation_refuses_only_its_own() -> None:
    process, channel = await serve(simulate_max_games=50, simulate_per_client=1,
                                   simulate_at_once=2)
    hostile, polite = Client(channel, HOSTILE), Client(channel, POLITE)
    try:
        reason, _, _ = await rejected(hostile.simulate(51), grpc.StatusCode.RESOURCE_EXHAUSTED)
        assert reason == "SIMULATION_TOO_BIG"
        started = simulations_started()
        long = asyncio.ensure_future(hostile.simulate(50))
        for _ in range(200):  # until the server has it (a loaded machine may take a while)
            if simulations_started() > started:
                break
            await asyncio.sleep(0.02)
        reason, _, _ = await rejected(hostile.simulate(1), grpc.StatusCode.RESOURCE_EXHAUSTED)
        assert reason == "SIMULATION_BUSY"
        assert not long.done()
        assert (await polite.simulate(2)).games == 2  # while the hostile one runs
        assert (await long).games == 50
    finally:
        await channel.close()
        await process.server.stop(None)


def simulations_started() -> float:
    """Simulate calls the server has begun (counted before any await of the call: once it
    moves, the simulation is registered)."""
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("grpc_server_started_total", {
        "grpc_type": "unary", "grpc_service": "arbiter.v1.Arbiter",
        "grpc_method": "Simulate"}) or 0.0


@needs_redis
async def test_replicas_on_one_redis_give_a_client_one_budget() -> None:
    """Two servers on one Redis: a client's creations draw from one bucket, whichever it
    calls; another client's bucket is its own."""
    from services.core.redis_store import RedisStore

    stores = [RedisStore(REDIS_URL), RedisStore(REDIS_URL)]
    hostile_address = f"203.0.113.{uuid.uuid4().int % 200 + 1}"  # fresh between runs
    servers = [await serve(store, rate_burst=4, rate_per_second=0.01, shared_limits=True)
               for store in stores]
    try:
        hostile = [Client(channel, hostile_address) for _, channel in servers]
        for i in range(4):
            await hostile[i % 2].create()
        for replica in hostile:
            reason, _, _ = await rejected(replica.create(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            assert reason == "RATE_LIMITED"
        polite = Client(servers[1][1], f"198.51.100.{uuid.uuid4().int % 200 + 1}")
        assert (await polite.create()).game_id
    finally:
        for process, channel in servers:
            await channel.close()
            await process.server.stop(None)
        for store in stores:
            await store.close()


async def test_a_redis_that_fails_leaves_each_process_its_own_buckets(
        caplog: pytest.LogCaptureFixture) -> None:
    down = aioredis.Redis(port=free_port(), socket_connect_timeout=0.5, socket_timeout=0.5)
    limit = guard.Limit(f"test-{uuid.uuid4().hex}", burst=2, per_second=0.01, redis=down)
    with caplog.at_level(logging.WARNING, logger="arbiter"):
        assert [await limit.take("a") for _ in range(2)] == [(True, 0), (True, 0)]
        granted, wait = await limit.take("a")
        assert not granted and wait > 0, "the gates stay shut"
        assert await limit.take("b") == (True, 0), "and other clients still pass"
    assert len([r for r in caplog.records if "Redis failed" in r.getMessage()]) == 1
    await down.aclose()


@pytest.mark.parametrize("kind", ["redis", "cluster"])
async def test_a_bucket_in_redis_refills_and_expires(kind: str) -> None:
    from services.core.redis_conn import connect

    url = REDIS_URL if kind == "redis" else CLUSTER_URL
    if not url:
        pytest.skip(f"needs a {kind} (make test starts a private redis-server and cluster)")
    client = connect(url)
    kind = f"test-{uuid.uuid4().hex}"
    limit = guard.Limit(kind, burst=2, per_second=5, redis=client)
    assert [await limit.take("a") for _ in range(2)] == [(True, 0), (True, 0)]
    granted, wait = await limit.take("a")
    assert not granted and 0 < wait <= 0.2
    ttl = await client.pttl(f"arbiter:rate:{kind}:a")
    assert 0 < ttl <= 2000, "kept only until it is full again, and a second"
    await asyncio.sleep(wait + 0.05)
    assert await limit.take("a") == (True, 0)
    # With a queue, a take past the burst is given a later token (as in this process).
    queued = guard.Limit(f"test-{uuid.uuid4().hex}", burst=1, per_second=5, redis=client,
                         queue=0.7)
    takes = [await queued.take("a") for _ in range(5)]
    assert [t.granted for t in takes] == [True, True, True, True, False]
    assert [t.wait for t in takes[:4]] == pytest.approx([0, 0.2, 0.4, 0.6], abs=0.05)
    await client.aclose()


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


async def test_verifying_logs_spends_its_cpu_in_other_processes() -> None:
    """The CPU of VerifyLog is spent in the pool's processes, not in the server's (where it
    would hold the event loop's interpreter lock): read from /proc, no timing."""
    from tests.platform.test_event_loop import long_log

    lines = await long_log(1)
    process, channel = await serve(game="shadow_council")
    verify = channel.unary_unary("/arbiter.v1.Arbiter/VerifyLog",
                                 request_serializer=apb.VerifyLogRequest.SerializeToString,
                                 response_deserializer=apb.VerifyLogResponse.FromString)
    request = apb.VerifyLogRequest(log=apb.ExportLogResponse(lines=lines))
    try:
        assert (await verify(request, timeout=120)).ok  # the pool started and warmed
        me = os.getpid()
        before = {pid: _cpu_seconds(pid) for pid in _children(me)}
        own = _cpu_seconds(me)
        for _ in range(5):
            assert (await verify(request, timeout=120)).ok
        own = _cpu_seconds(me) - own
        pool = sum(_cpu_seconds(pid) - before.get(pid, 0.0) for pid in _children(me))
        print(f"5 VerifyLog: {pool:.2f} s of CPU in the pool, {own:.2f} s in this process")
        assert pool > own
    finally:
        await channel.close()
        await process.server.stop(None)


async def test_commands_over_http_draw_from_the_same_rate_and_are_answered_429() -> None:
    """The HTTP port calls Act like any client: past the HTTP client's rate, 429 with
    RATE_LIMITED; a gRPC client (another client) plays on."""
    import aiohttp

    from services.core.server import start_http
    from tests.platform.test_http import Http, error_details

    process, channel = await serve(http_addr="127.0.0.1:0", http_explicit=True,
                                   command_burst=3, command_rate=0.01)
    web = await start_http(Config(http_addr="127.0.0.1:0", http_explicit=True), process.http)
    assert web is not None
    try:
        async with aiohttp.ClientSession() as session:
            http = Http(session, f"http://127.0.0.1:{web.port}")
            game = await http.create()
            token = game["tokens"][0]["token"]
            statuses = []
            for _ in range(4):
                status, body = await http.json(GAME + "Act", {
                    "gameId": game["gameId"], "command": {}, "commandId": "x"}, token)
                statuses.append(status)
            assert statuses == [400, 400, 400, 429], statuses
            assert error_details(body)["google.rpc.ErrorInfo"].reason == "RATE_LIMITED"
        grpc_client = Client(channel, POLITE)
        theirs = await grpc_client.create()
        assert await grpc_client.play_one(theirs.game_id, await grpc_client.mover(theirs)) \
            > theirs.version
    finally:
        await web.stop()
        await channel.close()
        await process.server.stop(None)
