"""The gRPC surface against a real server: every status code, details, auth, health, reflection.

The server runs on the private redis-server that `make test` starts (and on the embedded
store), with Bubblee Pop as the game.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from prometheus_client import REGISTRY, generate_latest

from services import games as registry
from services.core.decider import Rng
from services.core.redis_store import RedisStore
from services.core.server import Config
from services.core.store import MemoryStore
from services.process import build
from tests.conftest import REDIS_URL

ADMIN = "test-admin-token"
GAME = "/arbiter.bubblee.v1.Game/"


class Client:
    """A thin client over a channel: calls by method name, tokens as metadata."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel

    async def call(self, method: str, request: Any, reply: type, token: str = "",
                   admin: bool = False, timeout: float = 10) -> Any:
        md = []
        if token:
            md.append(("x-seat-token", token))
        if admin:
            md.append(("x-admin-token", ADMIN))
        fn = self.channel.unary_unary(method, request_serializer=type(request).SerializeToString,
                                      response_deserializer=reply.FromString)
        return await fn(request, metadata=md, timeout=timeout)

    async def create(self, *, ai_second: bool = False, options: Any = None
                     ) -> apb.CreateGameResponse:
        seats = [apb.Seat(name="ann"), apb.Seat(name="bob", kind=apb.AI if ai_second
                                                else apb.HUMAN)]
        return await self.call(GAME + "CreateGame",
                               bpb.CreateGameRequest(seats=seats, options=options),
                               apb.CreateGameResponse)

    async def legal(self, game_id: str, token: str) -> bpb.LegalActions:
        return await self.call(GAME + "ListLegalActions",
                               apb.ListLegalActionsRequest(game_id=game_id), bpb.LegalActions,
                               token)

    async def act(self, game_id: str, token: str, command: Any, command_id: str = "",
                  expected: int | None = None) -> bpb.ActResponse:
        req = bpb.ActRequest(game_id=game_id, command=command, command_id=command_id)
        if expected is not None:
            req.expected_version = expected
        return await self.call(GAME + "Act", req, bpb.ActResponse, token)

    async def view(self, game_id: str, token: str = "") -> bpb.View:
        return await self.call(GAME + "GetView", apb.GetViewRequest(game_id=game_id), bpb.View,
                               token)

    async def mover(self, created: apb.CreateGameResponse) -> tuple[str, str]:
        """The token of the seat to act (the first player is drawn at random), and the other."""
        first = (await self.view(created.game_id)).to_act[0]
        token = {t.seat: t.token for t in created.tokens}
        return token.get(first, ""), token.get(1 - first, "")


def details(error: grpc.aio.AioRpcError) -> tuple[str, dict[str, str], list[str]]:
    """(ErrorInfo reason, its metadata, BadRequest fields) of a rejection."""
    raw = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert raw, "every rejection carries google.rpc.Status details"
    status = status_pb2.Status.FromString(raw)
    assert status.code == error.code().value[0] and status.message == error.details()
    reason, meta, fields = "", {}, []
    for d in status.details:
        if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            d.Unpack(info)
            reason, meta = info.reason, dict(info.metadata)
        elif d.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            d.Unpack(bad)
            fields = [v.field for v in bad.field_violations]
    return reason, meta, fields


async def rejected(awaitable: Any, code: grpc.StatusCode) -> tuple[str, dict[str, str], list[str]]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await awaitable
    assert info.value.code() == code, info.value.details()
    assert info.value.details(), "every rejection says why in a sentence"
    return details(info.value)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest_asyncio.fixture(params=["redis", "memory"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    if request.param == "redis" and not REDIS_URL:
        pytest.skip("needs ARBITER_TEST_REDIS_URL (make test starts a private redis-server)")
    store = RedisStore(REDIS_URL) if request.param == "redis" else MemoryStore()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN)
    process = build(config, {"bubblee": registry.game("bubblee")}, store)
    server, port = process.server, process.port
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield Client(channel)
    await server.stop(None)
    await store.close()


async def test_a_game_over_grpc_create_act_view(client: Client) -> None:
    created = await client.create()
    assert created.game_id.startswith("bubblee-") and len(created.seed_commitment) == 64
    assert [t.seat for t in created.tokens] == [0, 1]
    token, _ = await client.mover(created)
    view = await client.view(created.game_id, token)
    assert view.version == created.version and len(view.to_act) == 1
    legal = await client.legal(created.game_id, token)
    assert legal.commands and legal.version == created.version
    reply = await client.act(created.game_id, token, legal.commands[0], "c1", view.version)
    assert reply.version > view.version and reply.events
    assert [e.version for e in reply.events] == list(
        range(reply.version - len(reply.events) + 1, reply.version + 1))
    assert reply.view.version == reply.version
    spectator = await client.view(created.game_id)
    assert not spectator.HasField("seat") and spectator.version == reply.version


async def test_same_command_id_again_is_ok_with_the_first_result(client: Client) -> None:
    created = await client.create()
    token, _ = await client.mover(created)
    command = (await client.legal(created.game_id, token)).commands[0]
    first = await client.act(created.game_id, token, command, "once", created.version)
    again = await client.act(created.game_id, token, command, "once", created.version)
    assert again.version == first.version
    assert [e.SerializeToString() for e in again.events] == [
        e.SerializeToString() for e in first.events]
    assert (await client.view(created.game_id)).version == first.version
    # Once the game has moved on, the same id still answers with the first result; the view
    # beside it shows the game as it is now, with its own version.
    nxt = (await client.legal(created.game_id, token)).commands[0]
    moved = await client.act(created.game_id, token, nxt, "then")
    late = await client.act(created.game_id, token, command, "once")
    assert late.version == first.version and late.view.version == moved.version


async def test_stale_expected_version_is_aborted_with_the_current_version(client: Client) -> None:
    created = await client.create()
    token, _ = await client.mover(created)
    command = (await client.legal(created.game_id, token)).commands[0]
    done = await client.act(created.game_id, token, command, "a", created.version)
    nxt = (await client.legal(created.game_id, token)).commands[0]
    reason, meta, fields = await rejected(
        client.act(created.game_id, token, nxt, "b", created.version), grpc.StatusCode.ABORTED)
    assert reason == "STALE_VERSION" and meta["current_version"] == str(done.version)
    assert fields == ["expected_version"]
    assert (await client.view(created.game_id)).version == done.version


async def test_malformed_command_is_invalid_argument(client: Client) -> None:
    created = await client.create()
    token, _ = await client.mover(created)
    reason, _, fields = await rejected(
        client.act(created.game_id, token, bpb.Command(), "x"), grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "NO_COMMAND" and fields == ["command"]
    reason, _, fields = await rejected(
        client.act("", token, bpb.Command()), grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "MISSING_FIELD" and fields == ["game_id"]
    reason, _, _ = await rejected(client.create(options=bpb.Options(extra_blacks=3)),
                                  grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "BAD_OPTION"
    assert (await client.view(created.game_id)).version == created.version


async def test_illegal_command_is_failed_precondition_and_changes_nothing(client: Client
                                                                         ) -> None:
    created = await client.create()
    token, idle = await client.mover(created)
    command = (await client.legal(created.game_id, token)).commands[0]
    reason, _, _ = await rejected(client.act(created.game_id, idle, command, "x"),
                                  grpc.StatusCode.FAILED_PRECONDITION)
    assert reason == "NOT_YOUR_TURN"
    # Seat 0 on the first turn has nothing to place: a Place is illegal now.
    place = bpb.Command(place=bpb.Place(cell=bpb.SkyCell(column=0, row=0)))
    reason, _, _ = await rejected(client.act(created.game_id, token, place, "y"),
                                  grpc.StatusCode.FAILED_PRECONDITION)
    assert reason and reason.upper() == reason
    assert (await client.view(created.game_id)).version == created.version


async def test_tokens_act_and_see_only_as_their_seat(client: Client) -> None:
    created = await client.create()
    other = await client.create()
    token, _ = await client.mover(created)
    seat = next(t.seat for t in created.tokens if t.token == token)
    command = (await client.legal(created.game_id, token)).commands[0]
    reason, _, _ = await rejected(client.act(created.game_id, "", command),
                                  grpc.StatusCode.UNAUTHENTICATED)
    assert reason == "SEAT_TOKEN_MISSING"
    await rejected(client.act(created.game_id, "made-up", command),
                   grpc.StatusCode.PERMISSION_DENIED)
    await rejected(client.act(created.game_id, (await client.mover(other))[0], command),
                   grpc.StatusCode.PERMISSION_DENIED)
    as_other_seat = bpb.ActRequest(game_id=created.game_id, command=command, seat=1 - seat)
    await rejected(client.call(GAME + "Act", as_other_seat, bpb.ActResponse, token),
                   grpc.StatusCode.PERMISSION_DENIED)
    # The admin may act for a named seat.
    as_admin = bpb.ActRequest(game_id=created.game_id, command=command, seat=seat)
    reply = await client.call(GAME + "Act", as_admin, bpb.ActResponse, admin=True)
    assert reply.version > created.version


async def test_an_unknown_seat_kind_or_a_seat_the_game_lacks_is_invalid_argument(
        client: Client) -> None:
    odd = bpb.CreateGameRequest(seats=[apb.Seat(name="ann"), apb.Seat(name="bob", kind=7)])
    reason, _, fields = await rejected(
        client.call(GAME + "CreateGame", odd, apb.CreateGameResponse),
        grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "UNKNOWN_SEAT_KIND" and fields == ["seats"]
    created = await client.create()
    for seat in (-1, 2):
        as_admin = apb.GetViewRequest(game_id=created.game_id, seat=seat)
        reason, _, fields = await rejected(client.call(GAME + "GetView", as_admin, bpb.View,
                                                       admin=True),
                                           grpc.StatusCode.INVALID_ARGUMENT)
        assert reason == "NO_SUCH_SEAT" and fields == ["seat"]


async def test_a_page_token_listgames_never_gave_is_invalid_argument(client: Client) -> None:
    list_games = "/arbiter.v1.Arbiter/ListGames"
    # -1, 0, garbage, 2**63 (Redis takes 32-bit offsets)
    for forged in ("LTE=", "MA==", "not base64!", "OTIyMzM3MjAzNjg1NDc3NTgwOA=="):
        reason, _, fields = await rejected(
            client.call(list_games, apb.ListGamesRequest(page_token=forged),
                        apb.ListGamesResponse), grpc.StatusCode.INVALID_ARGUMENT)
        assert reason == "BAD_PAGE_TOKEN" and fields == ["page_token"]


async def test_a_command_id_again_with_another_command_is_refused(client: Client) -> None:
    created = await client.create()
    token, _ = await client.mover(created)
    first, second = (await client.legal(created.game_id, token)).commands[:2]
    reply = await client.act(created.game_id, token, first, "mine")
    assert (await client.act(created.game_id, token, first, "mine")) == reply
    reason, _, fields = await rejected(client.act(created.game_id, token, second, "mine"),
                                       grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "COMMAND_ID_REUSED" and fields == ["command_id"]
    assert (await client.view(created.game_id)).version == reply.version


async def test_a_bad_simulation_names_the_field_at_fault(client: Client) -> None:
    simulate = ("/arbiter.v1.Arbiter/Simulate", apb.SimulateResponse)
    for request, field in (
            (apb.SimulateRequest(game="bubblee", games=2, bots=["random"]), "bots"),
            (apb.SimulateRequest(game="bubblee", games=2, bots=["random", "random"],
                                 options=b"\xff\xff"), "options"),
            (apb.SimulateRequest(game="bubblee", games=0, bots=["random", "random"]), "games")):
        reason, _, fields = await rejected(client.call(simulate[0], request, simulate[1]),
                                           grpc.StatusCode.INVALID_ARGUMENT)
        assert reason == "BAD_SIMULATION" and fields == [field], request


async def test_a_client_may_not_take_the_servers_own_command_ids(client: Client) -> None:
    # A human who took the id its AI opponent will use would stall that bot for good.
    created = await client.create(ai_second=True)
    token = created.tokens[0].token
    view = await client.view(created.game_id, token)
    for _ in range(100):  # when the bot moves first, wait for its move (the version moves)
        if list(view.to_act) == [0]:
            break
        await asyncio.sleep(0.05)
        view = await client.view(created.game_id, token)
    command = (await client.legal(created.game_id, token)).commands[0]
    for prefix in ("ai", "idle", "deadline", "join"):
        taken = f"{prefix}:{created.game_id}:{view.version + 1}:1"
        reason, _, fields = await rejected(client.act(created.game_id, token, command, taken),
                                           grpc.StatusCode.INVALID_ARGUMENT)
        assert reason == "COMMAND_ID_RESERVED" and fields == ["command_id"]
    assert (await client.view(created.game_id)).version == view.version


async def test_huge_fields_are_invalid_argument_with_a_short_message(client: Client) -> None:
    huge = "x" * 20_000
    reason, _, _ = await rejected(client.view(huge), grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "GAME_ID_TOO_LONG"
    seats = [apb.Seat(name=huge), apb.Seat(name="bob")]
    reason, _, _ = await rejected(client.call(GAME + "CreateGame", bpb.CreateGameRequest(
        seats=seats), apb.CreateGameResponse), grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "NAME_TOO_LONG"
    with pytest.raises(grpc.aio.AioRpcError) as info:  # the message quotes the request
        await client.call("/arbiter.v1.Arbiter/ListGames", apb.ListGamesRequest(game=huge),
                          apb.ListGamesResponse)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert details(info.value)[0] == "UNKNOWN_GAME" and len(info.value.details()) < 1100


async def test_list_games_refuses_an_unknown_status(client: Client) -> None:
    reason, _, fields = await rejected(
        client.call("/arbiter.v1.Arbiter/ListGames", apb.ListGamesRequest(status=7),
                    apb.ListGamesResponse), grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "UNKNOWN_STATUS" and fields == ["status"]


async def test_verify_and_replay_name_what_is_wrong_with_their_arguments(client: Client
                                                                         ) -> None:
    verify = ("/arbiter.v1.Arbiter/VerifyLog", apb.VerifyLogRequest(game_id=""),
              apb.VerifyLogResponse)
    reason, _, _ = await rejected(client.call(*verify), grpc.StatusCode.INVALID_ARGUMENT)
    assert reason == "MISSING_FIELD"
    created = await client.create()
    for version in (-5, created.version + 1, 10**12):
        reason, _, fields = await rejected(
            client.call("/arbiter.v1.Arbiter/Replay",
                        apb.ReplayRequest(game_id=created.game_id, version=version),
                        apb.ReplayResponse), grpc.StatusCode.INVALID_ARGUMENT)
        assert reason == "BAD_VERSION" and fields == ["version"]
    latest = await client.call("/arbiter.v1.Arbiter/Replay",
                               apb.ReplayRequest(game_id=created.game_id),
                               apb.ReplayResponse)
    assert latest.version == created.version


async def test_a_simulation_runs_one_at_a_time_and_stops_when_its_call_ends(client: Client
                                                                             ) -> None:
    simulate = client.channel.unary_unary(
        "/arbiter.v1.Arbiter/Simulate", request_serializer=apb.SimulateRequest.SerializeToString,
        response_deserializer=apb.SimulateResponse.FromString)
    long = simulate(apb.SimulateRequest(game="bubblee", games=1000,  # the most without admin
                                        bots=["random", "random"]), timeout=30)
    await asyncio.sleep(0.3)
    busy = simulate(apb.SimulateRequest(game="bubblee", games=2, bots=["random", "random"]))
    reason, _, _ = await rejected(busy, grpc.StatusCode.RESOURCE_EXHAUSTED)
    assert reason == "SIMULATION_BUSY"
    long.cancel()
    # Ten games at most are left to play once the call is gone; then the server is free.
    for _ in range(100):
        await asyncio.sleep(0.1)
        try:
            reply = await simulate(apb.SimulateRequest(game="bubblee", games=2,
                                                       bots=["random", "random"]))
        except grpc.aio.AioRpcError as e:
            assert details(e)[0] == "SIMULATION_BUSY"
        else:
            assert reply.games == 2
            break
    else:
        pytest.fail("the cancelled simulation kept the server's simulation thread")
    cancelled = REGISTRY.get_sample_value("grpc_server_handled_total", {
        "grpc_type": "unary", "grpc_service": "arbiter.v1.Arbiter", "grpc_method": "Simulate",
        "grpc_code": "CANCELLED"})
    assert cancelled and cancelled >= 1


async def test_a_failure_inside_the_server_is_internal_and_tells_nothing_of_it() -> None:
    import dataclasses

    bubblee = registry.game("bubblee")

    def broken(state: Any, seat: Any, command: Any, rng: Any) -> Any:
        raise ValueError(f"a bug that quotes hidden state: {state!r}"[:80])

    game = dataclasses.replace(bubblee, decide=broken)
    process = build(Config(grpc_addr=f"127.0.0.1:{free_port()}"), {"bubblee": game},
                    MemoryStore())
    server, port = process.server, process.port
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            client = Client(channel)
            created = await client.create()
            token, _ = await client.mover(created)
            command = (await client.legal(created.game_id, token)).commands[0]
            reason, _, _ = await rejected(client.act(created.game_id, token, command),
                                          grpc.StatusCode.INTERNAL)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await client.act(created.game_id, token, command)
            assert reason == "INTERNAL" and "hidden" not in info.value.details()
            assert (await client.view(created.game_id)).version == created.version
    finally:
        await server.stop(None)


async def test_unknown_game_is_not_found(client: Client) -> None:
    reason, _, fields = await rejected(client.view("bubblee-0000000000000000"),
                                       grpc.StatusCode.NOT_FOUND)
    assert reason == "GAME_NOT_FOUND" and fields == ["game_id"]


async def test_ai_seat_plays_through_the_command_path(client: Client) -> None:
    created = await client.create(ai_second=True)
    assert [t.seat for t in created.tokens] == [0]
    token = created.tokens[0].token
    for _ in range(40):
        view = await client.view(created.game_id, token)
        if view.HasField("outcome") and view.outcome.reason:
            break
        if 0 in view.to_act:
            command = (await client.legal(created.game_id, token)).commands[0]
            await client.act(created.game_id, token, command, f"v{view.version}", view.version)
        else:
            await asyncio.sleep(0.01)
    export = await client.call("/arbiter.v1.Arbiter/ExportLog",
                               apb.ExportLogRequest(game_id=created.game_id),
                               apb.ExportLogResponse, admin=True)
    assert any('"command_id":"ai:' in line for line in export.lines)


async def test_a_running_games_log_and_forks_are_for_the_admin_only(client: Client) -> None:
    created = await client.create()
    token, _ = await client.mover(created)
    export = ("/arbiter.v1.Arbiter/ExportLog", apb.ExportLogRequest(game_id=created.game_id),
              apb.ExportLogResponse)
    reason, _, _ = await rejected(client.call(*export, token=token),
                                  grpc.StatusCode.PERMISSION_DENIED)
    assert reason == "SEAT_FORBIDDEN"
    fork = ("/arbiter.v1.Arbiter/ForkGame", apb.ForkGameRequest(game_id=created.game_id),
            apb.CreateGameResponse)
    await rejected(client.call(*fork, token=token), grpc.StatusCode.PERMISSION_DENIED)
    assert (await client.call(*export, admin=True)).lines
    forked = await client.call(*fork, admin=True)
    assert forked.game_id != created.game_id and len(forked.tokens) == 2


async def test_watch_streams_redacted_events_and_views_then_live(client: Client) -> None:
    created = await client.create()
    token, _ = await client.mover(created)
    stream = client.channel.unary_stream(
        GAME + "Watch", request_serializer=apb.WatchRequest.SerializeToString,
        response_deserializer=bpb.Update.FromString)
    call = stream(apb.WatchRequest(game_id=created.game_id, from_version=0), timeout=10)
    seen = []
    while not seen or seen[-1].version < created.version:
        seen.append(await call.read())
    assert seen[0].HasField("started") and seen[0].version == 1
    assert all(u.view.version == u.version for u in seen)
    command = (await client.legal(created.game_id, token)).commands[0]
    reply = await client.act(created.game_id, token, command, "live")
    live = [await call.read() for _ in range(reply.version - created.version)]
    assert [u.version for u in live] == list(range(created.version + 1, reply.version + 1))
    call.cancel()


async def test_watch_of_a_finished_game_from_its_end_or_beyond_ends_at_once(client: Client
                                                                           ) -> None:
    created = await client.create()
    tokens = {t.seat: t.token for t in created.tokens}
    view = await client.view(created.game_id)
    choose = Rng.for_test(5).choice
    for step in range(500):
        if view.HasField("outcome"):
            break
        token = tokens[view.to_act[0]]
        command = choose(list((await client.legal(created.game_id, token)).commands))
        await client.act(created.game_id, token, command, f"c{step}")
        view = await client.view(created.game_id)
    last = (await client.call("/arbiter.v1.Arbiter/ExportLog",
                              apb.ExportLogRequest(game_id=created.game_id),
                              apb.ExportLogResponse)).lines
    end = len(last)
    stream = client.channel.unary_stream(
        GAME + "Watch", request_serializer=apb.WatchRequest.SerializeToString,
        response_deserializer=bpb.Update.FromString)
    for start, expected in ((end - 1, [end]), (end, []), (end + 100, [])):
        updates = [u async for u in stream(apb.WatchRequest(game_id=created.game_id,
                                                            from_version=start), timeout=5)]
        assert [u.version for u in updates] == expected
        assert all(u.HasField("finished") for u in updates)


async def test_health_reflection_and_metrics(client: Client) -> None:
    health = health_pb2_grpc.HealthStub(client.channel)
    for service in ("", "arbiter.bubblee.v1.Game", "arbiter.v1.Arbiter"):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(client.channel)

    async def ask() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
        yield reflection_pb2.ServerReflectionRequest(list_services="")

    async for reply in stub.ServerReflectionInfo(ask()):
        names = {s.name for s in reply.list_services_response.service}
        assert {"arbiter.bubblee.v1.Game", "arbiter.v1.Arbiter",
                "grpc.health.v1.Health"} <= names
        break
    await client.call("/arbiter.v1.Arbiter/Ping", apb.PingRequest(), apb.PingResponse)
    created = await client.create()
    token, _ = await client.mover(created)
    command = (await client.legal(created.game_id, token)).commands[0]
    await client.act(created.game_id, token, command)
    text = generate_latest().decode()
    for series in ("grpc_server_handled_total", "grpc_server_handling_seconds_bucket",
                   "arbiter_command_seconds_bucket", "arbiter_append_seconds_bucket",
                   "arbiter_decide_seconds_bucket", 'le="5e-05"'):
        assert series in text
    assert 'grpc_code="NOT_FOUND"' in text or 'grpc_method="Act"' in text
    # The Act just made is counted, with its status code.
    assert 'grpc_method="Act"' in text and 'grpc_code="OK"' in text


async def test_reflection_v1_answers_beside_v1alpha(client: Client) -> None:
    """grpc.reflection.v1 (what current tools ask first) lists the services and describes a
    game's, as v1alpha does; its messages are v1alpha's under another package."""
    info = client.channel.stream_stream(
        "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
        response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)

    async def ask() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
        yield reflection_pb2.ServerReflectionRequest(list_services="")
        yield reflection_pb2.ServerReflectionRequest(
            file_containing_symbol="arbiter.bubblee.v1.Game")

    replies = [reply async for reply in info(ask(), timeout=10)]
    names = {s.name for s in replies[0].list_services_response.service}
    assert {"arbiter.bubblee.v1.Game", "arbiter.v1.Arbiter", "grpc.health.v1.Health"} <= names
    files = replies[1].file_descriptor_response.file_descriptor_proto
    assert files and b"arbiter.bubblee.v1" in files[0]


async def test_overload_is_resource_exhausted_and_watchers_do_not_lock_players_out() -> None:
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", max_concurrent_rpcs=1, max_watches=1)
    process = build(config, {"bubblee": registry.game("bubblee")}, MemoryStore())
    server, port = process.server, process.port
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        client = Client(channel)
        created = await client.create()
        stream = channel.unary_stream(
            GAME + "Watch", request_serializer=apb.WatchRequest.SerializeToString,
            response_deserializer=bpb.Update.FromString)
        watching = stream(apb.WatchRequest(game_id=created.game_id, from_version=0))
        await watching.read()  # the stream holds the only Watch slot...
        second = stream(apb.WatchRequest(game_id=created.game_id, from_version=0))
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await second.read()
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert details(info.value)[0] == "OVERLOADED"
        assert (await client.view(created.game_id)).version == created.version  # ...not a call's
        simulate = channel.unary_unary(
            "/arbiter.v1.Arbiter/Simulate",
            request_serializer=apb.SimulateRequest.SerializeToString,
            response_deserializer=apb.SimulateResponse.FromString)
        busy = simulate(apb.SimulateRequest(game="bubblee", games=1000,
                                            bots=["random", "random"]))
        await asyncio.sleep(0.3)  # the simulation holds the only call slot
        reason, _, _ = await rejected(client.view(created.game_id),
                                      grpc.StatusCode.RESOURCE_EXHAUSTED)
        assert reason == "OVERLOADED"
        busy.cancel()
        watching.cancel()
    await server.stop(None)


@pytest.mark.skipif(not shutil.which("redis-server") and not REDIS_URL, reason="no redis")
async def test_store_down_is_unavailable_and_a_retry_with_the_same_id_is_safe() -> None:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("needs a redis-server binary")
    port, workdir = free_port(), tempfile.mkdtemp()

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1",
                                 "--dir", workdir, "--appendonly", "yes", "--save", ""],
                                stdout=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.1).close()
                return proc
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    redis_proc = start()
    store = RedisStore(f"redis://127.0.0.1:{port}/0")
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}")
    process = build(config, {"bubblee": registry.game("bubblee")}, store)
    server, gport = process.server, process.port
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gport}") as channel:
            client = Client(channel)
            created = await client.create()
            token, _ = await client.mover(created)
            command = (await client.legal(created.game_id, token)).commands[0]
            redis_proc.terminate()
            redis_proc.wait()
            reason, _, _ = await rejected(
                client.act(created.game_id, token, command, "retry-me", created.version),
                grpc.StatusCode.UNAVAILABLE)
            assert reason == "STORE_UNAVAILABLE"
            # The read models live in Redis too: no internal address in what the client gets.
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await client.call("/arbiter.v1.Arbiter/ListGames", apb.ListGamesRequest(),
                                  apb.ListGamesResponse)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "127.0.0.1" not in info.value.details()
            redis_proc = start()
            reply = await client.act(created.game_id, token, command, "retry-me",
                                     created.version)
            again = await client.act(created.game_id, token, command, "retry-me",
                                     created.version)
            assert reply.version == again.version > created.version
    finally:
        await server.stop(None)
        await store.close()
        redis_proc.terminate()
        redis_proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)


async def test_asking_for_a_seat_without_its_token_is_unauthenticated(client: Client) -> None:
    created = await client.create()
    as_seat = apb.GetViewRequest(game_id=created.game_id, seat=0)
    reason, _, _ = await rejected(client.call(GAME + "GetView", as_seat, bpb.View),
                                  grpc.StatusCode.UNAUTHENTICATED)
    assert reason == "SEAT_TOKEN_MISSING"
    spectator = await client.view(created.game_id)
    assert not spectator.HasField("seat")
