"""Hostile input to VerifyLog, ImportLog and CreateGame: numbers no log may hold, sizes checked
before any work, and imported game ids that follow the rules of every other id."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
import pytest_asyncio
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb
from google.rpc import error_details_pb2, status_pb2

from services import games as registry
from services.core import grpc_api
from services.core import log as gamelog
from services.core.decider import Seat
from services.core.host import Host
from services.core.lifecycle import is_game_id
from services.core.server import Config, in_process_ai
from services.core.store import MemoryStore
from services.process import build

GAME = registry.game("bubblee")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def finished_lines() -> list[str]:
    host = Host(MemoryStore(), {GAME.name: GAME}, ai_dispatch=in_process_ai)
    seats = [Seat("a", "ai", "random"), Seat("b", "ai", "random")]
    game_id = (await host.create(GAME.name, seats, GAME.pb.Options())).game_id
    while not (await host.load(game_id)).finished:
        await asyncio.sleep(0)
    _, entries = await host.history(game_id)
    return gamelog.to_json_lines(GAME, entries)


class Api:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.channel = channel

    def __call__(self, method: str, request: Any, reply: Any) -> Any:
        return self.channel.unary_unary(
            method, request_serializer=type(request).SerializeToString,
            response_deserializer=reply.FromString)(request, timeout=30)

    def verify(self, lines: list[str]) -> Any:
        return self("/arbiter.v1.Arbiter/VerifyLog",
                    apb.VerifyLogRequest(log=apb.ExportLogResponse(lines=lines)),
                    apb.VerifyLogResponse)

    def import_log(self, lines: list[str]) -> Any:
        return self("/arbiter.v1.Arbiter/ImportLog", apb.ImportLogRequest(lines=lines),
                    apb.ImportLogResponse)


@pytest_asyncio.fixture
async def api() -> AsyncIterator[Api]:
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", rate_burst=0)
    process = build(config, {GAME.name: GAME}, MemoryStore())
    server, port = process.server, process.port
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        yield Api(channel)
    await server.stop(None)


def bad_log_line(error: grpc.aio.AioRpcError) -> int:
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error.details()
    blob = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    for d in status_pb2.Status.FromString(blob).details:
        if d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            d.Unpack(info)
            assert info.reason == "BAD_LOG"
            return int(info.metadata["line"])
    raise AssertionError("no ErrorInfo")


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "1e400", "-1e999",
                                    "9" * 40, "1" + "0" * 5000])
async def test_a_number_no_log_may_hold_is_refused_naming_its_line(api: Api, number: str
                                                                   ) -> None:
    lines = await finished_lines()
    for at, key in [(0, "version"), (3, "version"), (3, "batch_size")]:
        row = lines[at].replace('"version":', f'"{key}":{number},"was":', 1) \
            if key != "version" else lines[at].replace(
                f'"version":{at + 1}', f'"version":{number}', 1)
        hostile = lines[:at] + [row] + lines[at + 1:]
        verified = await api.verify(hostile)
        assert not verified.ok and verified.first_bad_line == at + 1, (number, key)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await api.import_log(hostile)
        assert bad_log_line(info.value) == at + 1, (number, key)


async def test_a_log_with_more_seats_than_the_game_takes_is_refused_before_setup(
        api: Api) -> None:
    lines = await finished_lines()
    row = json.loads(lines[0])
    row["started"]["seats"] = [{"name": f"s{i}"} for i in range(5_000)]
    setups: list[int] = []
    real_setup = GAME.setup
    object.__setattr__(GAME, "setup", lambda *a: setups.append(1) or real_setup(*a))
    try:
        verified = await api.verify([json.dumps(row)] + lines[1:])
        assert not verified.ok and verified.first_bad_line == 1
        assert "takes 1 to 2 seats" in verified.reason and "5000" in verified.reason
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await api.import_log([json.dumps(row)] + lines[1:])
        assert bad_log_line(info.value) == 1
        assert setups == [], "the seat count is checked before the game is set up"
    finally:
        object.__setattr__(GAME, "setup", real_setup)


async def test_create_game_counts_the_seats_before_reading_them(
        api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    real = grpc_api.gamelog.seats_from_pb
    monkeypatch.setattr(grpc_api.gamelog, "seats_from_pb",
                        lambda seats: read.append(len(seats)) or real(seats))
    seats = [apb.Seat(name="x")] * 200_000
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await api("/arbiter.bubblee.v1.Game/CreateGame", bpb.CreateGameRequest(seats=seats),
                  apb.CreateGameResponse)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not 200000" in info.value.details() and read == []


async def test_too_many_lines_or_too_long_a_line_is_refused_naming_the_line(api: Api) -> None:
    lines = await finished_lines()
    long_line = lines[:2] + ['{"version":3,"event":{},"pad":"' + "x" * 200_000 + '"}'] + lines[3:]
    verified = await api.verify(long_line)
    assert not verified.ok and verified.first_bad_line == 3
    assert "longer than" in verified.reason
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.check_sizes(["{}"] * (gamelog.MAX_LOG_LINES + 1))
    assert bad.value.line == gamelog.MAX_LOG_LINES + 1


HOSTILE_IDS = ["bubblee-0123456789abcdef\nbubblee-x", "bubblee-{tag}", "bubblee-*",
               "bubblee-a:meta:b", "bubblee-" + "a" * 5000, "bubblee-0123456789ABCDEF",
               "moody_bear-0123456789abcdef", "", "bubblee-0123456789abcde"]


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
async def test_an_imported_id_not_of_the_servers_form_gets_a_new_id(api: Api, hostile: str
                                                                   ) -> None:
    lines = await finished_lines()
    row = json.loads(lines[0])
    row["started"]["game_id"] = hostile
    imported = await api.import_log([json.dumps(row)] + lines[1:])
    assert imported.game_id != hostile and is_game_id(imported.game_id, "bubblee")
    view = await api("/arbiter.bubblee.v1.Game/GetView",
                     apb.GetViewRequest(game_id=imported.game_id), bpb.View)
    assert view.HasField("outcome") and view.version == imported.version


async def test_an_imported_id_of_the_servers_form_is_kept_while_free(api: Api) -> None:
    lines = await finished_lines()
    row = json.loads(lines[0])
    row["started"]["game_id"] = "bubblee-00112233aabbccdd"
    log = [json.dumps(row)] + lines[1:]
    assert (await api.import_log(log)).game_id == "bubblee-00112233aabbccdd"
    again = await api.import_log(log)
    assert again.game_id != "bubblee-00112233aabbccdd" and is_game_id(again.game_id, "bubblee")


async def test_a_simulation_counts_its_bots_before_setting_a_game_up(api: Api) -> None:
    setups: list[int] = []
    real_setup = GAME.setup
    object.__setattr__(GAME, "setup", lambda *a: setups.append(1) or real_setup(*a))
    try:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await api("/arbiter.v1.Arbiter/Simulate", apb.SimulateRequest(
                game="bubblee", games=1, bots=["random"] * 200_000), apb.SimulateResponse)
    finally:
        object.__setattr__(GAME, "setup", real_setup)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not 200000" in info.value.details() and setups == []
