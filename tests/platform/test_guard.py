"""What every call passes first: a body that parses (else INVALID_ARGUMENT and one log line),
and per-client limits on the calls that create something (RESOURCE_EXHAUSTED with RetryInfo)."""

from __future__ import annotations

import logging
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
from services.core.guard import TokenBuckets, peer_address
from services.core.server import Config
from services.core.store import MemoryStore
from services.process import build

ADMIN = "guard-admin"
NOT_PROTOBUF = b"\x0a\xff\x01"  # field 1, length 255, then the body ends


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest_asyncio.fixture
async def channel(request: pytest.FixtureRequest) -> AsyncIterator[grpc.aio.Channel]:
    burst, rate = getattr(request, "param", (100, 5))
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN, rate_burst=burst,
                    rate_per_second=rate)
    process = build(config, {"bubblee": registry.game("bubblee")}, MemoryStore())
    server, port = process.server, process.port
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        yield ch
    await server.stop(None)


def raw(channel: grpc.aio.Channel, method: str, stream: bool = False) -> Any:
    make = channel.unary_stream if stream else channel.unary_unary
    return make(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)


def status_details(error: grpc.aio.AioRpcError) -> list[Any]:
    blob = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert blob
    out = []
    for d in status_pb2.Status.FromString(blob).details:
        for kind in (error_details_pb2.ErrorInfo, error_details_pb2.RetryInfo):
            if d.Is(kind.DESCRIPTOR):
                msg = kind()
                d.Unpack(msg)
                out.append(msg)
    return out


METHODS = ["/arbiter.bubblee.v1.Game/CreateGame", "/arbiter.bubblee.v1.Game/Act",
           "/arbiter.bubblee.v1.Game/GetView", "/arbiter.v1.Arbiter/ImportLog",
           "/arbiter.v1.Arbiter/VerifyLog", "/arbiter.v1.Arbiter/Simulate",
           "/arbiter.v1.Arbiter/ListGames"]


async def test_a_body_that_is_not_protobuf_is_invalid_argument_with_one_log_line(
        channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture) -> None:
    for method in METHODS:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="arbiter"):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await raw(channel, method)(NOT_PROTOBUF, timeout=10)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, method
        assert [d.reason for d in status_details(info.value)
                if isinstance(d, error_details_pb2.ErrorInfo)] == ["BAD_REQUEST_BODY"]
        lines = [r for r in caplog.records if method in r.getMessage()]
        assert len(lines) == 1 and lines[0].exc_info is None and not lines[0].exc_text, method
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _ in raw(channel, "/arbiter.bubblee.v1.Game/Watch", True)(NOT_PROTOBUF,
                                                                            timeout=10):
            pass
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    # The server goes on answering.
    ping = raw(channel, "/arbiter.v1.Arbiter/Ping")
    assert await ping(apb.PingRequest().SerializeToString(), timeout=10) == b""


async def test_a_play_message_that_is_not_protobuf_is_answered_and_the_stream_goes_on(
        channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture) -> None:
    """Play reads its messages itself: the first one refused ends the stream with
    INVALID_ARGUMENT; a later one is answered on the stream, which goes on. One log line each."""
    play = channel.stream_stream("/arbiter.bubblee.v1.Game/Play",
                                 request_serializer=lambda b: b,
                                 response_deserializer=bpb.PlayResponse.FromString)
    with caplog.at_level(logging.INFO, logger="arbiter"):
        call = play()
        await call.write(NOT_PROTOBUF)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await call.read()
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert [d.reason for d in status_details(info.value)] == ["BAD_REQUEST_BODY"]

    created = await _create(channel)
    opened = bpb.PlayRequest(open=apb.PlayOpen(game_id=created.game_id))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="arbiter"):
        call = play(metadata=(("x-seat-token", created.tokens[0].token),))
        await call.write(opened.SerializeToString())
        first = await call.read()  # the catch-up
        await call.write(NOT_PROTOBUF)
        answer = await call.read()
        await call.write(opened.SerializeToString())  # a second open: refused, stream goes on
        again = await call.read()
        call.cancel()
    assert first.HasField("view") and not first.HasField("answer")
    reasons = []
    for reply in (answer, again):
        info_pb = error_details_pb2.ErrorInfo()
        assert reply.answer.error.details[0].Unpack(info_pb)
        reasons.append(info_pb.reason)
    assert reasons == ["BAD_REQUEST_BODY", "ALREADY_OPEN"]
    lines = [r for r in caplog.records if "Play" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None


def _create(channel: grpc.aio.Channel, admin: bool = False) -> Any:
    call = channel.unary_unary("/arbiter.bubblee.v1.Game/CreateGame",
                               request_serializer=bpb.CreateGameRequest.SerializeToString,
                               response_deserializer=apb.CreateGameResponse.FromString)
    seats = [apb.Seat(name="a"), apb.Seat(name="b")]
    md = (("x-admin-token", ADMIN),) if admin else ()
    return call(bpb.CreateGameRequest(seats=seats), metadata=md, timeout=10)


@pytest.mark.parametrize("channel", [(2, 0.2)], indirect=True)
async def test_creating_past_a_clients_share_is_resource_exhausted_with_a_retry_delay(
        channel: grpc.aio.Channel) -> None:
    await _create(channel)
    await _create(channel)
    refused = []
    for method, request in [
            ("CreateGame", None),
            ("/arbiter.v1.Arbiter/ImportLog", apb.ImportLogRequest(lines=["{}"])),
            ("/arbiter.v1.Arbiter/ForkGame", apb.ForkGameRequest(game_id="bubblee-x")),
            ("/arbiter.v1.Arbiter/Simulate", apb.SimulateRequest(game="bubblee", games=1))]:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            if request is None:
                await _create(channel)
            else:
                await raw(channel, method)(request.SerializeToString(), timeout=10)
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, method
        refused.append(status_details(info.value))
    for details in refused:
        reasons = [d.reason for d in details if isinstance(d, error_details_pb2.ErrorInfo)]
        delays = [d.retry_delay.ToNanoseconds() / 1e9 for d in details
                  if isinstance(d, error_details_pb2.RetryInfo)]
        assert reasons == ["RATE_LIMITED"] and len(delays) == 1 and 0 < delays[0] <= 5
    # Reading is not limited, and the admin identity has a bucket of its own.
    get_view = raw(channel, "/arbiter.v1.Arbiter/ListGames")
    assert await get_view(apb.ListGamesRequest().SerializeToString(), timeout=10) is not None
    assert (await _create(channel, admin=True)).game_id


def test_a_bucket_refills_at_its_rate_and_says_how_long_to_wait() -> None:
    now = [0.0]
    buckets = TokenBuckets(burst=2, per_second=0.5, clock=lambda: now[0])
    assert buckets.take("a") == (True, 0) and buckets.take("a") == (True, 0)
    granted, wait = buckets.take("a")
    assert not granted and wait == pytest.approx(2.0)
    assert buckets.take("b") == (True, 0), "each client has its own bucket"
    now[0] = 1.0
    granted, wait = buckets.take("a")
    assert not granted and wait == pytest.approx(1.0), "half a token back after one second"
    now[0] = 3.1
    assert buckets.take("a") == (True, 0)


def test_a_bucket_with_a_queue_gives_later_tokens_then_refuses() -> None:
    now = [0.0]
    buckets = TokenBuckets(burst=2, per_second=1, queue=2, clock=lambda: now[0])
    takes = [buckets.take("a") for _ in range(5)]
    assert [t.granted for t in takes] == [True, True, True, True, False]
    assert [t.wait for t in takes] == pytest.approx([0, 0, 1, 2, 1]), \
        "each queued token a second after the one before; the refused may retry in a second"
    now[0] = 1.0  # a token came back: one more place in the queue
    assert buckets.take("a") == pytest.approx((True, 2.0))
    assert buckets.take("b") == (True, 0), "another client's bucket is full"


def test_limits_come_from_the_environment_and_clients_are_addresses_without_ports() -> None:
    config = Config.from_env({"ARBITER_RATE_BURST": "7", "ARBITER_RATE_PER_SECOND": "0.25"})
    assert (config.rate_burst, config.rate_per_second) == (7, 0.25)
    assert peer_address("ipv4:10.1.2.3:5555") == "ipv4:10.1.2.3"
    assert peer_address("ipv6:[::1]:5555") == "ipv6:[::1]"
