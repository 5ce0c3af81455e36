"""The HTTP port's edge, against a real server: connection caps and timeouts, what a request
must be (content-type, Origin, token headers, body size, time and message count), the client's
address passed on, and the gateway's private socket folder of a killed server."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import grpc
import pytest
import pytest_asyncio
from aiohttp.test_utils import make_mocked_request
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core import edge as edge_module
from services.core.edge import EdgeLimits, Sparse
from services.core.http_gateway import envelope, forwarded_for
from services.core.server import Config, HttpServer, private_socket_folder, start_http
from services.core.store import MemoryStore
from services.process import build
from tests.platform.test_grpc import free_port
from tests.platform.test_http import Http, read_connect_stream

GAME = "/arbiter.bubblee.v1.Game/"


@dataclass
class Served:
    port: int  # HTTP
    grpc_port: int
    web: HttpServer


@pytest_asyncio.fixture
async def serve() -> AsyncIterator[Any]:
    """Start a server with these edge limits; stopped at the end of the test."""
    started: list[tuple[Any, HttpServer, MemoryStore]] = []

    async def start(**limits: Any) -> Served:
        store = MemoryStore()
        config = Config(grpc_addr=f"127.0.0.1:{free_port()}", http_addr="127.0.0.1:0",
                        http_explicit=True, edge=EdgeLimits(**limits))
        process = build(config, {"bubblee": registry.game("bubblee")}, store)
        await process.server.start()
        web = await start_http(config, process.http)
        assert isinstance(web, HttpServer)
        started.append((process.server, web, store))
        return Served(web.port, process.port, web)

    yield start
    for server, web, store in started:
        await web.stop()
        await server.stop(None)
        await store.close()


async def raw(port: int, request: bytes, wait: float = 10) -> tuple[int, dict[str, Any]]:
    """Send these bytes as they are (no client library cleans them up); the answer's status
    and JSON body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        status, body = await asyncio.wait_for(answer(reader), wait)
    finally:
        writer.close()
    try:
        return status, json.loads(body)
    except ValueError:
        return status, {"text": body.decode(errors="replace")}


async def answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One HTTP answer's status and body (by its content-length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return int(head.split()[1]), await reader.readexactly(length)


def post(path: str, body: bytes, *headers: bytes) -> bytes:
    lines = [f"POST {path} HTTP/1.1".encode(), b"host: 127.0.0.1", b"connection: close",
             f"content-length: {len(body)}".encode(), *headers]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def reason(body: dict[str, Any]) -> str:
    return str(body["details"][0]["debug"]["reason"])


async def create(port: int) -> dict[str, Any]:
    status, created = await raw(port, post(GAME + "CreateGame", json.dumps({"seats": [
        {"name": "ann"}, {"name": "bob"}]}).encode(), b"content-type: application/json"))
    assert status == 200, created
    return created


async def test_a_token_header_with_a_tab_or_a_byte_outside_ascii_is_a_401_with_a_reason(
        serve: Any) -> None:
    served = await serve()
    created = await create(served.port)
    body = json.dumps({"gameId": created["gameId"]}).encode()
    for bad in (b"x-seat-token: abc\tdef", "x-seat-token: abcé".encode(),
                b"x-admin-token: \xff\xfe", b"x-seat-token: a b"):
        status, answer = await raw(served.port, post(GAME + "GetView", body, bad,
                                                     b"content-type: application/json"))
        assert status == 401, (bad, answer)
        assert answer["code"] == "unauthenticated" and reason(answer) == "BAD_TOKEN_HEADER"
    # A well-formed token still works.
    token = created["tokens"][0]["token"].encode()
    status, _ = await raw(served.port, post(GAME + "GetView", body, b"x-seat-token: " + token,
                                            b"content-type: application/json"))
    assert status == 200


async def test_a_body_without_a_known_type_or_from_another_origin_is_refused(
        serve: Any) -> None:
    served = await serve(origins=("https://app.example.com",))
    seats = json.dumps({"seats": [{"name": "a"}, {"name": "b"}]}).encode()
    status, answer = await raw(served.port, post(GAME + "CreateGame", seats))
    assert status == 415 and reason(answer) == "CONTENT_TYPE"
    status, answer = await raw(served.port, post(GAME + "CreateGame", seats,
                                                 b"content-type: text/plain"))
    assert status == 415
    status, answer = await raw(served.port, post(GAME + "CreateGame", seats,
                                                 b"content-type: application/json",
                                                 b"origin: http://evil.example"))
    assert status == 403 and answer["code"] == "permission_denied"
    assert reason(answer) == "ORIGIN_NOT_ALLOWED" and "evil.example" in answer["message"]
    # A page whose name an attacker pointed at 127.0.0.1 (DNS rebinding) is "same origin":
    # its Host names no loopback address, which a server on loopback only never serves.
    rebound = post(GAME + "CreateGame", seats, b"content-type: application/json",
                   b"origin: http://evil.example:8080").replace(b"host: 127.0.0.1",
                                                               b"host: evil.example:8080")
    status, answer = await raw(served.port, rebound)
    assert status == 403 and reason(answer) == "HOST_NOT_ALLOWED"
    # The server's own origin (the console's page), a listed one, and none (curl) pass.
    for origin in (b"origin: http://127.0.0.1", b"origin: https://app.example.com", None):
        headers = [b"content-type: application/json"] + ([origin] if origin else [])
        status, answer = await raw(served.port, post(GAME + "CreateGame", seats, *headers))
        assert status == 200, (origin, answer)


async def test_a_play_body_of_too_many_messages_is_refused_before_any_is_run(
        serve: Any) -> None:
    served = await serve(stream_messages=4)
    created = await create(served.port)
    game_id, version = created["gameId"], created["version"]
    async with aiohttp.ClientSession() as session:
        http = Http(session, f"http://127.0.0.1:{served.port}")
        for seat in created["tokens"]:  # the seat to act
            status, legal = await http.json(GAME + "ListLegalActions", {"gameId": game_id},
                                            seat["token"])
            if legal["commands"]:
                break
        assert status == 200 and legal["commands"], legal
        act = {"act": {"command": legal["commands"][0], "expectedVersion": version}}
        body = envelope(0, json.dumps({"open": {"gameId": game_id}}).encode()) + \
            envelope(0, json.dumps(act).encode()) * 10
        async with session.post(http.base + GAME + "Play", data=body, headers={
                "content-type": "application/connect+json",
                "x-seat-token": seat["token"]}) as r:
            messages, end = await read_connect_stream(r, 100)
        assert messages == [] and end is not None
        assert end["error"]["code"] == "resource_exhausted"
        assert reason(end["error"]) == "TOO_MANY_MESSAGES"
        status, view = await http.json(GAME + "GetView", {"gameId": game_id}, seat["token"])
    assert status == 200 and view["version"] == version  # nothing was played


async def test_a_play_body_longer_than_its_messages_can_be_is_refused_unread(
        serve: Any) -> None:
    """A stream's body holds ARBITER_HTTP_STREAM_MESSAGES small messages at most: a 4 MB
    Play body (580,000 commands) is answered 413 from its Content-Length, and a unary call
    may still send a body of that size."""
    served = await serve(stream_messages=4)
    created = await create(served.port)
    act = envelope(0, b'{"act": {}}')
    body = envelope(0, json.dumps({"open": {"gameId": created["gameId"]}}).encode()) + \
        act * 580_000
    async with aiohttp.ClientSession() as session:
        async with session.post(f"http://127.0.0.1:{served.port}{GAME}Play", data=body,
                                headers={"content-type": "application/connect+json",
                                         "x-seat-token": created["tokens"][0]["token"]}) as r:
            assert r.status == 413
            assert "BODY_TOO_LARGE" in await r.text()
        big = json.dumps({"gameId": created["gameId"], "padding": "x" * 200_000}).encode()
        async with session.post(f"http://127.0.0.1:{served.port}{GAME}GetView", data=big,
                                headers={"content-type": "application/json"}) as r:
            assert r.status != 413, await r.text()


async def test_a_slow_body_is_a_408_and_slow_headers_or_silence_are_closed(
        serve: Any) -> None:
    served = await serve(idle_seconds=0.5, read_seconds=0.5)
    # A body announced at 1,000 bytes, one sent.
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(post(GAME + "CreateGame", b"", b"content-type: application/json")
                 .replace(b"content-length: 0", b"content-length: 1000") + b"{")
    status, body = await asyncio.wait_for(answer(reader), 10)
    writer.close()
    assert status == 408 and b"BODY_TOO_SLOW" in body

    async def closed_while_dribbling(first: bytes) -> bool:
        reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
        try:
            writer.write(first)
            for _ in range(100):  # one header line each 0.1 s: 10 s at most
                await asyncio.sleep(0.1)
                if reader.at_eof() or writer.is_closing():
                    return True
                writer.write(b"x-slow: 1\r\n")
                try:
                    await asyncio.wait_for(reader.read(1), 0.01)
                    return True  # the server ended the connection
                except TimeoutError:
                    pass
            return False
        except ConnectionError:
            return True
        finally:
            writer.close()

    assert await closed_while_dribbling(b"POST /x HTTP/1.1\r\n")  # slowloris
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    assert await asyncio.wait_for(reader.read(), 10) == b""  # silent: closed
    writer.close()


async def test_connections_past_the_caps_are_refused_at_once(serve: Any) -> None:
    served = await serve(http_per_client=3)
    held = [await asyncio.open_connection("127.0.0.1", served.port) for _ in range(3)]
    await asyncio.sleep(0.1)
    assert served.web.connections.open == 3
    status, answer = await raw(served.port, b"", wait=5)  # sends nothing, answered at once
    assert status == 429 and "3 connections" in answer["text"]
    held.pop()[1].close()
    await asyncio.sleep(0.2)
    created = await create(served.port)  # a slot is free again
    assert created["gameId"]
    for _, writer in held:
        writer.close()

    served = await serve(http_per_client=0, http_total=2)
    held = [await asyncio.open_connection("127.0.0.1", served.port) for _ in range(2)]
    await asyncio.sleep(0.1)
    status, answer = await raw(served.port, b"", wait=5)
    assert status == 503
    for _, writer in held:
        writer.close()


async def test_grpc_closes_connections_past_its_cap_and_silent_ones(serve: Any) -> None:
    served = await serve(grpc_total=2, grpc_handshake_seconds=0.5)
    target = f"127.0.0.1:{served.grpc_port}"
    # A TCP connection that never speaks HTTP/2 is closed after the handshake timeout.
    reader, writer = await asyncio.open_connection("127.0.0.1", served.grpc_port)
    goodbye = await asyncio.wait_for(reader.read(), 10)  # returns once closed
    assert reader.at_eof() and b"handshake timeout" in goodbye
    writer.close()
    request = apb.ListGamesRequest().SerializeToString()
    channels = []
    answered = 0
    for _ in range(4):
        channel = grpc.aio.insecure_channel(target, options=[("grpc.use_local_subchannel_pool",
                                                              1)])
        channels.append(channel)
        try:
            await channel.unary_unary("/arbiter.v1.Arbiter/ListGames")(request, timeout=2)
            answered += 1
        except grpc.aio.AioRpcError as e:
            assert e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    assert answered == 2  # two connections held, the others closed by gRPC
    for channel in channels:
        await channel.close()


def test_the_caps_stay_below_the_descriptor_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edge_module, "raise_descriptor_limit", lambda: 1024)
    limits = EdgeLimits(fd_reserve=256)
    assert limits.per_port(0) == 384 and limits.per_port(100) == 100
    assert limits.per_port(5000) == 384  # asked for more than the descriptors allow
    assert dict(limits.grpc_options())["grpc.max_allowed_incoming_connections"] == 384
    monkeypatch.setattr(edge_module, "raise_descriptor_limit", lambda: 256)
    assert limits.per_port(0) == 64  # a limit below the reserve: a quarter each


def test_a_flood_of_refusals_writes_one_line_a_minute(caplog: pytest.LogCaptureFixture
                                                      ) -> None:
    logger = logging.getLogger("arbiter.test-sparse")
    logger.addFilter(Sparse(60))
    with caplog.at_level(logging.WARNING):
        for i in range(1000):
            logger.warning("accept failed: %s", "Too many open files")
            # asyncio's lines name the callback's handle, its address and time, each different
            logger.error(f"Exception in callback Loop._start_serving(<fd={i} at 0x{i:x}>)")
        logger.error("another kind of line")
    lines = [r.getMessage() for r in caplog.records if r.name == logger.name]
    assert len(lines) == 3 and lines[-1] == "another kind of line"


def test_the_gateway_passes_the_chain_and_the_peer_in_x_forwarded_for() -> None:
    request = make_mocked_request("POST", "/x", headers={
        "x-forwarded-for": "198.51.100.7, not-an-address, 203.0.113.5"})
    request._transport_peername = ("192.0.2.1", 5555)  # type: ignore[attr-defined]
    chain = forwarded_for(request)
    assert chain.split(", ")[:2] == ["198.51.100.7", "203.0.113.5"]
    assert len(chain.split(", ")) == 3


def test_a_killed_servers_socket_folder_is_removed_at_the_next_start() -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    base = tempfile.gettempdir()
    left = os.path.join(base, f"arbiter-http-{dead.stdout.strip()}-left")
    alive = os.path.join(base, f"arbiter-http-{os.getpid()}-alive")
    os.makedirs(left, exist_ok=True)
    os.makedirs(alive, exist_ok=True)
    try:
        new = private_socket_folder()
        assert not os.path.exists(left) and os.path.isdir(alive)
        assert os.path.basename(new).startswith(f"arbiter-http-{os.getpid()}-")
        assert os.stat(new).st_mode & 0o077 == 0  # only this user
        os.rmdir(new)
    finally:
        for path in (left, alive):
            if os.path.isdir(path):
                os.rmdir(path)
