"""HTTP for browsers and curl: the Connect protocol (unary JSON and binary, server streams)
and gRPC-Web, against a real server, with the same auth and the same errors as gRPC."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import struct
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb
from google.rpc import error_details_pb2, status_pb2

from services import games as registry
from services.core.http_gateway import envelope, parse_timeout, unenvelope
from services.core.server import Config, HttpServer, start_http
from services.core.store import MemoryStore
from services.process import build
from tests.platform.test_grpc import ADMIN, free_port

GAME = "/arbiter.bubblee.v1.Game/"
JSON = {"content-type": "application/json"}


class Http:
    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session, self.base = session, base

    async def json(self, path: str, body: dict[str, Any], token: str = "",
                   admin: bool = False) -> tuple[int, dict[str, Any]]:
        headers = dict(JSON)
        if token:
            headers["x-seat-token"] = token
        if admin:
            headers["x-admin-token"] = ADMIN
        async with self.session.post(self.base + path, data=json.dumps(body),
                                     headers=headers) as r:
            return r.status, await r.json()

    async def create(self) -> dict[str, Any]:
        status, body = await self.json(GAME + "CreateGame", {"seats": [
            {"name": "ann"}, {"name": "bot", "kind": "AI", "bot": "greedy"}]})
        assert status == 200, body
        return body


@pytest_asyncio.fixture
async def http() -> AsyncIterator[Http]:
    store = MemoryStore()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", http_addr="127.0.0.1:0",
                    http_explicit=True, admin_token=ADMIN)
    process = build(config, {"bubblee": registry.game("bubblee"),
                             "moody_bear": registry.game("moody_bear")}, store)
    server = process.server
    await server.start()
    web = await start_http(config, process.http)
    assert isinstance(web, HttpServer)
    async with aiohttp.ClientSession() as session:
        yield Http(session, f"http://127.0.0.1:{web.port}")
    await web.stop()
    await server.stop(None)
    await store.close()


def error_details(body: dict[str, Any]) -> dict[str, Any]:
    """The Connect error's details by type, decoded from their bytes (not the debug JSON)."""
    found: dict[str, Any] = {}
    for d in body.get("details", []):
        raw = base64.b64decode(d["value"] + "=" * (-len(d["value"]) % 4))
        kind = {"google.rpc.ErrorInfo": error_details_pb2.ErrorInfo,
                "google.rpc.BadRequest": error_details_pb2.BadRequest}.get(d["type"])
        if kind is not None:
            found[d["type"]] = kind.FromString(raw)
    return found


async def test_curl_creates_a_game_with_json() -> None:
    """The README's curl line, as a user would type it."""
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    store = MemoryStore()
    port = free_port()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", http_addr=f"127.0.0.1:{port}",
                    http_explicit=True)
    process = build(config, {"bubblee": registry.game("bubblee")}, store)
    server = process.server
    await server.start()
    web = await start_http(config, process.http)
    assert web is not None
    try:
        proc = await asyncio.create_subprocess_exec(
            curl, "-s", "-H", "content-type: application/json", "-d",
            '{"seats": [{"name": "ann"}, {"name": "bot", "kind": "AI"}]}',
            f"http://127.0.0.1:{port}/arbiter.bubblee.v1.Game/CreateGame",
            stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        body = json.loads(out)
        assert body["gameId"].startswith("bubblee-")
        # The gateway writes zeros too: seat 0 is there, not an absent key.
        assert [t["seat"] for t in body["tokens"]] == [0]
        assert int(body["version"]) >= 2 and len(body["seedCommitment"]) == 64
    finally:
        await web.stop()
        await server.stop(None)
        await store.close()


async def test_a_game_over_connect_json_view_legal_act(http: Http) -> None:
    created = await http.create()
    token = created["tokens"][0]["token"]
    game_id = created["gameId"]
    for _ in range(50):  # the bot may move first
        status, legal = await http.json(GAME + "ListLegalActions", {"gameId": game_id}, token)
        assert status == 200
        if legal.get("commands"):
            break
        await asyncio.sleep(0.1)
    status, acted = await http.json(GAME + "Act", {"game_id": game_id,
                                                   "command": legal["commands"][0]}, token)
    assert status == 200, acted
    # seat 0 is there: View.seat has presence, and JSON keeps a present zero
    assert int(acted["version"]) > int(created["version"]) and acted["view"]["seat"] == 0
    status, view = await http.json(GAME + "GetView", {"gameId": game_id}, token)
    assert status == 200 and int(view["version"]) >= int(acted["version"])


async def test_connect_binary_is_the_same_message(http: Http) -> None:
    request = bpb.CreateGameRequest(seats=[apb.Seat(name="ann"), apb.Seat(name="bob")])
    async with http.session.post(http.base + GAME + "CreateGame",
                                 data=request.SerializeToString(),
                                 headers={"content-type": "application/proto"}) as r:
        assert r.status == 200 and r.headers["content-type"] == "application/proto"
        created = apb.CreateGameResponse.FromString(await r.read())
    assert sorted(t.seat for t in created.tokens) == [0, 1]
    async with http.session.post(http.base + GAME + "GetView",
                                 data=apb.GetViewRequest(game_id=created.game_id)
                                 .SerializeToString(),
                                 headers={"content-type": "application/proto",
                                          "x-seat-token": created.tokens[1].token}) as r:
        view = bpb.View.FromString(await r.read())
    assert view.seat == 1 and view.version == created.version


async def test_errors_carry_the_grpc_code_reason_and_field(http: Http) -> None:
    status, body = await http.json(GAME + "GetView", {"gameId": "bubblee-0000000000000000"})
    assert status == 404 and body["code"] == "not_found" and body["message"]
    details = error_details(body)
    assert details["google.rpc.ErrorInfo"].reason == "GAME_NOT_FOUND"
    assert [v.field for v in details["google.rpc.BadRequest"].field_violations] == ["game_id"]
    assert body["details"][0]["debug"]["reason"] == "GAME_NOT_FOUND"  # readable in curl

    created = await http.create()
    status, body = await http.json(GAME + "ListLegalActions", {"gameId": created["gameId"]})
    assert status == 401 and body["code"] == "unauthenticated"
    assert error_details(body)["google.rpc.ErrorInfo"].reason == "SEAT_TOKEN_MISSING"
    status, body = await http.json(GAME + "GetView", {"gameId": created["gameId"]},
                                   token="not-a-seat")
    assert status == 403 and body["code"] == "permission_denied"
    status, body = await http.json(GAME + "CreateGame", {"seats": [{"name": "solo"}] * 7})
    assert status == 400 and body["code"] == "invalid_argument"
    assert error_details(body)["google.rpc.ErrorInfo"].reason == "SEAT_COUNT"
    # The admin token works over HTTP as over gRPC.
    status, body = await http.json(GAME + "GetView", {"gameId": created["gameId"], "seat": 1},
                                   admin=True)
    assert status == 200 and body["seat"] == 1


async def test_what_is_not_a_call_is_refused_with_a_reason(http: Http) -> None:
    async with http.session.post(http.base + GAME + "CreateGame", data="{not json",
                                 headers=JSON) as r:
        body = await r.json()
        assert r.status == 400 and body["code"] == "invalid_argument"
        assert "CreateGameRequest" in body["message"]
    async with http.session.post(http.base + GAME + "Teleport", data="{}",
                                 headers=JSON) as r:
        assert r.status == 501 and (await r.json())["code"] == "unimplemented"
    async with http.session.post(http.base + GAME + "Watch", data="{}", headers=JSON) as r:
        body = await r.json()
        assert r.status == 501 and "application/connect+json" in body["message"]
    async with http.session.post(http.base + GAME + "GetView", data="x",
                                 headers={"content-type": "text/plain"}) as r:
        assert r.status == 415


async def read_connect_stream(response: aiohttp.ClientResponse, count: int
                              ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Up to `count` messages of a Connect JSON stream, and its end message if it came."""
    buffer, messages = b"", []
    while len(messages) < count:
        chunk = await asyncio.wait_for(response.content.readany(), 10)
        if not chunk:
            break
        buffer += chunk
        while len(buffer) >= 5:
            flags, size = struct.unpack(">BI", buffer[:5])
            if len(buffer) < 5 + size:
                break
            payload, buffer = buffer[5:5 + size], buffer[5 + size:]
            if flags & 2:
                return messages, json.loads(payload)
            messages.append(json.loads(payload))
    return messages, None


async def test_watch_streams_to_a_browser_over_connect(http: Http) -> None:
    created = await http.create()
    async with http.session.post(
            http.base + GAME + "Watch",
            data=envelope(0, json.dumps({"gameId": created["gameId"]}).encode()),
            headers={"content-type": "application/connect+json"}) as r:
        assert r.status == 200 and r.headers["content-type"] == "application/connect+json"
        updates, end = await read_connect_stream(r, 2)
    assert end is None, end  # the game goes on: the stream stays open
    assert "started" in updates[0] and updates[0]["version"] == "1"
    assert int(updates[1]["version"]) == 2

    # A stream's error comes in its end message, with the details.
    async with http.session.post(
            http.base + GAME + "Watch",
            data=envelope(0, json.dumps({"gameId": "bubblee-0000000000000000"}).encode()),
            headers={"content-type": "application/connect+json"}) as r:
        updates, end = await read_connect_stream(r, 1)
    assert updates == [] and end is not None and end["error"]["code"] == "not_found"
    assert error_details(end["error"])["google.rpc.ErrorInfo"].reason == "GAME_NOT_FOUND"


async def test_play_runs_half_duplex_over_http(http: Http) -> None:
    """A browser opens Play with `open` alone: it gets the view and its legal commands, live;
    its commands go by unary Act."""
    created = await http.create()
    token = created["tokens"][0]["token"]
    async with http.session.post(
            http.base + GAME + "Play",
            data=envelope(0, json.dumps({"open": {"gameId": created["gameId"]}}).encode()),
            headers={"content-type": "application/connect+json", "x-seat-token": token}) as r:
        first, end = await read_connect_stream(r, 1)
        assert end is None and first[0]["view"]["seat"] == 0
        pushed = first[0]
        while "legal" not in pushed:  # the bot moved first: wait for our turn
            more, end = await read_connect_stream(r, 1)
            assert end is None
            pushed = more[0]
        command = pushed["legal"]["commands"][0]
        status, acted = await http.json(GAME + "Act", {"gameId": created["gameId"],
                                                       "command": command}, token)
        assert status == 200, acted
        after, _ = await read_connect_stream(r, 1)
    assert int(after[0]["updates"][0]["version"]) > int(pushed["view"]["version"])


def grpc_web_frames(raw: bytes) -> tuple[list[bytes], dict[str, str]]:
    messages, trailers = [], {}
    for flags, payload in unenvelope(raw):
        if flags & 0x80:
            for line in payload.decode().split("\r\n"):
                if line:
                    k, _, v = line.partition(":")
                    trailers[k.strip()] = v.strip()
        else:
            messages.append(payload)
    return messages, trailers


async def test_grpc_web_unary_stream_and_errors(http: Http) -> None:
    request = bpb.CreateGameRequest(seats=[apb.Seat(name="ann"), apb.Seat(name="bob")])
    async with http.session.post(http.base + GAME + "CreateGame",
                                 data=envelope(0, request.SerializeToString()),
                                 headers={"content-type": "application/grpc-web+proto"}) as r:
        messages, trailers = grpc_web_frames(await r.read())
    assert trailers["grpc-status"] == "0"
    created = apb.CreateGameResponse.FromString(messages[0])
    assert created.game_id.startswith("bubblee-")

    # The text form (base64), as grpc-web's JavaScript client sends it.
    body = base64.b64encode(envelope(0, apb.WatchRequest(game_id=created.game_id)
                                     .SerializeToString()))
    async with http.session.post(http.base + GAME + "Watch", data=body,
                                 headers={"content-type": "application/grpc-web-text"}) as r:
        chunk = b""
        while len(chunk) < 8:
            chunk += await asyncio.wait_for(r.content.readany(), 10)
        first = unenvelope(base64.b64decode(chunk[:len(chunk) // 4 * 4]))[0]
    assert bpb.Update.FromString(first[1]).HasField("started")

    missing = apb.GetViewRequest(game_id="bubblee-0000000000000000")
    async with http.session.post(http.base + GAME + "GetView",
                                 data=envelope(0, missing.SerializeToString()),
                                 headers={"content-type": "application/grpc-web"}) as r:
        assert r.status == 200
        messages, trailers = grpc_web_frames(await r.read())
    assert messages == [] and trailers["grpc-status"] == "5"  # NOT_FOUND
    raw = trailers["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(base64.b64decode(raw + "=" * (-len(raw) % 4)))
    info = error_details_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    assert status.code == 5 and info.reason == "GAME_NOT_FOUND"


async def test_the_lobby_over_http(http: Http) -> None:
    status, created = await http.json("/arbiter.moody_bear.v1.Game/CreateGame", {"seats": [
        {"name": "ann"}, {"kind": "OPEN"}, {"name": "bot", "kind": "AI"}]})
    assert status == 200, created
    code = created["invitations"][0]["code"]
    status, waiting = await http.json("/arbiter.v1.Arbiter/ListGames", {"status": "WAITING"})
    assert [g["gameId"] for g in waiting["games"]] == [created["gameId"]]
    status, joined = await http.json("/arbiter.v1.Arbiter/JoinGame", {"code": code,
                                                                      "name": "zoe"})
    assert status == 200 and joined["seat"] == 1 and joined["game"] == "moody_bear"
    status, again = await http.json("/arbiter.v1.Arbiter/JoinGame", {"code": code})
    assert status == 400 and again["code"] == "failed_precondition"
    assert error_details(again)["google.rpc.ErrorInfo"].reason == "SEAT_TAKEN"


def test_framing_helpers_refuse_what_is_cut_short() -> None:
    assert unenvelope(envelope(0, b"ab") + envelope(2, b"")) == [(0, b"ab"), (2, b"")]
    for bad in (b"\x00\x00\x00", b"\x00\x00\x00\x00\x05ab"):
        with pytest.raises(ValueError):
            unenvelope(bad)
    assert parse_timeout("250m") == 0.25 and parse_timeout("3S") == 3.0
    assert parse_timeout("") is None and parse_timeout("5x") is None


def test_only_the_private_socket_may_name_the_http_client() -> None:
    """The rate limit's client is the HTTP client's address when the gateway says so on the
    server's private socket (the last address of its x-forwarded-for chain: what lies left of
    it is whatever the browser wrote); a TCP caller sending the same header is not believed."""
    from services.core.grpc_api import Admission

    class Context:
        def __init__(self, peer: str) -> None:
            self._peer = peer

        def peer(self) -> str:
            return self._peer

        def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
            return (("x-forwarded-for", "198.51.100.1, 203.0.113.9"),)

    admission = Admission(None, gateway="unix:/tmp/arbiter-http-x/grpc.sock")
    assert admission.client_of(Context("unix:/tmp/arbiter-http-x/grpc.sock")) == \
        "ipv4:203.0.113.9"
    assert admission.client_of(Context("ipv4:127.0.0.1:5555")) == "ipv4:127.0.0.1"


async def test_an_http_port_in_use_stops_the_server_only_when_it_was_asked_for() -> None:
    import socket

    from services.core.server import ConfigError

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        addr = f"127.0.0.1:{busy.getsockname()[1]}"
        for explicit in (True, False):
            config = Config(grpc_addr=f"127.0.0.1:{free_port()}", http_addr=addr,
                            http_explicit=explicit)
            process = build(config, {"bubblee": registry.game("bubblee")},
                            MemoryStore())
            server = process.server
            await server.start()
            try:
                if explicit:
                    with pytest.raises(ConfigError, match="port is already in use"):
                        await start_http(config, process.http)
                else:  # the default address: the server goes on without HTTP
                    assert await start_http(config, process.http) is None
            finally:
                await server.stop(None)


async def test_binary_streams_deadlines_and_the_rate_limit_over_http() -> None:
    store = MemoryStore()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", http_addr="127.0.0.1:0",
                    http_explicit=True, rate_burst=2, rate_per_second=0.001)
    process = build(config, {"bubblee": registry.game("bubblee")}, store)
    server = process.server
    await server.start()
    web = await start_http(config, process.http)
    assert web is not None
    base = f"http://127.0.0.1:{web.port}"
    try:
        async with aiohttp.ClientSession() as session:
            http = Http(session, base)
            created = await http.create()
            # Connect streaming in binary: the same Update messages.
            request = apb.WatchRequest(game_id=created["gameId"]).SerializeToString()
            async with session.post(base + GAME + "Watch", data=envelope(0, request),
                                    headers={"content-type": "application/connect+proto"}
                                    ) as r:
                chunk = b""
                while len(chunk) < 5 or len(chunk) < 5 + struct.unpack(">I", chunk[1:5])[0]:
                    chunk += await asyncio.wait_for(r.content.readany(), 10)
            assert bpb.Update.FromString(unenvelope(chunk[:5 + struct.unpack(
                ">I", chunk[1:5])[0]])[0][1]).HasField("started")

            # connect-timeout-ms is the call's deadline: an idle Watch ends with it.
            async with session.post(
                    base + GAME + "Watch",
                    data=envelope(0, json.dumps({"gameId": created["gameId"],
                                                 "fromVersion": 1000}).encode()),
                    headers={"content-type": "application/connect+json",
                             "connect-timeout-ms": "300"}) as r:
                _, end = await read_connect_stream(r, 100)
            assert end is not None and end["error"]["code"] == "deadline_exceeded"

            # The third CreateGame of this HTTP client is over its share: 429, RetryInfo.
            await http.create()
            status, body = await http.json(GAME + "CreateGame", {"seats": [
                {"name": "a"}, {"name": "b"}]})
            assert status == 429 and body["code"] == "resource_exhausted"
            assert error_details(body)["google.rpc.ErrorInfo"].reason == "RATE_LIMITED"
            assert "google.rpc.RetryInfo" in [d["type"] for d in body["details"]]
    finally:
        await web.stop()
        await server.stop(None)
        await store.close()


async def test_processes_that_share_ports_share_the_http_port_too() -> None:
    port = free_port()
    started = []
    try:
        for _ in range(2):
            config = Config(grpc_addr=f"127.0.0.1:{free_port()}", http_addr=f"127.0.0.1:{port}",
                            http_explicit=True, reuse_port=True)
            process = build(config, {"bubblee": registry.game("bubblee")},
                            MemoryStore())
            server = process.server
            await server.start()
            web = await start_http(config, process.http)
            started.append((server, web))
            assert web is not None and web.port == port
    finally:
        for server, web in started:
            if web:
                await web.stop()
            await server.stop(None)


async def test_a_browser_that_leaves_frees_its_stream() -> None:
    """With room for one stream, a second Watch opens once the first browser has gone: the
    gateway cancels the gRPC call of a client that disconnects."""
    store = MemoryStore()
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", http_addr="127.0.0.1:0",
                    http_explicit=True, max_watches=1)
    process = build(config, {"bubblee": registry.game("bubblee")}, store)
    server = process.server
    await server.start()
    web = await start_http(config, process.http)
    assert web is not None
    base = f"http://127.0.0.1:{web.port}"
    watch = {"content-type": "application/connect+json"}
    try:
        async with aiohttp.ClientSession() as session:
            created = await Http(session, base).create()
            body = envelope(0, json.dumps({"gameId": created["gameId"]}).encode())
            async with session.post(base + GAME + "Watch", data=body, headers=watch) as r:
                first, _ = await read_connect_stream(r, 1)
                assert first
                async with session.post(base + GAME + "Watch", data=body,
                                        headers=watch) as busy:
                    _, end = await read_connect_stream(busy, 1)
                assert end is not None and end["error"]["code"] == "resource_exhausted"
        # The first browser has gone (its session closed): a new one gets the stream.
        for _ in range(50):
            async with aiohttp.ClientSession() as session, session.post(
                    base + GAME + "Watch", data=body, headers=watch) as r:
                updates, end = await read_connect_stream(r, 1)
            if updates:
                break
            await asyncio.sleep(0.1)
        assert updates and end is None
    finally:
        await web.stop()
        await server.stop(None)
        await store.close()


async def test_a_games_catalog_is_served_once_over_connect(http: Http) -> None:
    status, body = await http.json("/arbiter.v1.Arbiter/GetCatalog", {"game": "moody_bear"})
    assert status == 200, body
    assert body["game"] == "moody_bear" and body["contentVersion"]
    entries = {e["id"]: e for e in body["entries"]}
    assassin = entries["THUNDER_ASSASSIN"]
    assert (assassin["kind"], assassin["name"]) == ("card", "Thunder Assassin")
    assert "cannot do anything" in assassin["text"]
    assert entries["SOLO"]["kind"] == "team"
    _, again = await http.json("/arbiter.v1.Arbiter/GetCatalog", {"game": "moody_bear"})
    assert again == body  # the same content version, the same entries
    status, refused = await http.json("/arbiter.v1.Arbiter/GetCatalog", {"game": "chess"})
    assert status == 400 and refused["code"] == "invalid_argument"
    assert error_details(refused)["google.rpc.ErrorInfo"].reason == "UNKNOWN_GAME"
