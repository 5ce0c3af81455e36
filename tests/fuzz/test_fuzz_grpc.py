"""Property-based fuzzing of every game's service and arbiter.v1, through real gRPC.

A real server (every game, the embedded store) runs on its own event loop in a thread; the
tests call it like any client. What they send: well-formed but hostile commands (any oneof,
any field values, any seat or token, stale and future versions, reused command ids), request
messages with any field values, random bytes as a body, and hostile logs for VerifyLog and
ImportLog. What must hold:

- no call ever answers UNKNOWN or INTERNAL, and the server logs no error;
- a rejected command changes neither the version nor any seat's or a spectator's view;
- the server keeps answering (Ping after every example).

`make test` runs a small fixed budget; ARBITER_FUZZ_EXAMPLES=N runs N examples per test.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from arbiter.v1 import arbiter_pb2 as apb
from google.protobuf.descriptor import FieldDescriptor as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.core import log as gamelog
from services.core.decider import Seat
from services.core.host import Host
from services.core.server import Config, in_process_ai
from services.core.store import MemoryStore
from services.process import build
from tests.conformance import suite

EXAMPLES = int(os.environ.get("ARBITER_FUZZ_EXAMPLES", "30"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
ADMIN = "fuzz-admin"
GAMES = list(suite.NAMES)
NEVER = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}
TIMEOUT = 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Errors(logging.Handler):
    """Every ERROR the server logs (a traceback for a failure inside it)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class Server:
    """A real server on an event loop of its own, for synchronous clients."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0
        self.thread.start()
        assert self.ready.wait(60), "the server did not start"
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        # No projections or deadlines are started: nothing changes a game but the calls here.
        config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN, rate_burst=0)
        games = {name: suite.game(name) for name in GAMES}
        process = build(config, games, MemoryStore())
        self.server, self.host, self.port = process.server, process.host, process.port
        self.loop.run_until_complete(self.server.start())
        self.ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        self.channel.close()
        asyncio.run_coroutine_threadsafe(self.server.stop(None), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)

    def unary(self, method: str, reply: Any = None) -> Any:
        return self.channel.unary_unary(
            method, request_serializer=lambda m: m if isinstance(m, bytes) else
            m.SerializeToString(), response_deserializer=reply.FromString if reply else None)

    def stream(self, method: str) -> Any:
        return self.channel.unary_stream(
            method, request_serializer=lambda m: m if isinstance(m, bytes) else
            m.SerializeToString(), response_deserializer=None)

    def ping(self) -> None:
        self.unary("/arbiter.v1.Arbiter/Ping", apb.PingResponse)(apb.PingRequest(),
                                                                 timeout=TIMEOUT)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    errors = Errors()
    logging.getLogger("arbiter").addHandler(errors)
    s = Server()
    try:
        yield s
    finally:
        s.stop()
        logging.getLogger("arbiter").removeHandler(errors)
    assert [r.getMessage() for r in errors.records] == [], "the server logged errors"


def call(fn: Any, request: Any, md: Any = ()) -> tuple[grpc.StatusCode, Any]:
    """(status, reply or None); never UNKNOWN or INTERNAL."""
    try:
        reply = fn(request, metadata=md, timeout=TIMEOUT)
        code = grpc.StatusCode.OK
    except grpc.RpcError as e:
        reply, code = None, e.code()
        assert code not in NEVER, f"{code}: {e.details()}"
        assert code != grpc.StatusCode.DEADLINE_EXCEEDED, "the server stopped answering"
    return code, reply


# ---- messages with any field values ------------------------------------------------------

INTS = {F.TYPE_INT32: 31, F.TYPE_SINT32: 31, F.TYPE_SFIXED32: 31, F.TYPE_INT64: 63,
        F.TYPE_SINT64: 63, F.TYPE_SFIXED64: 63}
UINTS = {F.TYPE_UINT32: 32, F.TYPE_FIXED32: 32, F.TYPE_UINT64: 64, F.TYPE_FIXED64: 64}
HOSTILE_TEXT = ["", "\n", "{", "}", "*", ":meta:", "ai:x", "bubblee-0", "\x00", "é" * 70]


def value(data: st.DataObject, field: Any, depth: int) -> Any:
    t = field.type
    if t in INTS:
        bits = INTS[t]
        return data.draw(st.one_of(st.integers(-2, 12),
                                   st.integers(-(2 ** bits), 2 ** bits - 1)))
    if t in UINTS:
        return data.draw(st.one_of(st.integers(0, 12), st.integers(0, 2 ** UINTS[t] - 1)))
    if t == F.TYPE_BOOL:
        return data.draw(st.booleans())
    if t in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
        return data.draw(st.floats(width=32 if t == F.TYPE_FLOAT else 64))
    if t == F.TYPE_STRING:
        return data.draw(st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=30)))
    if t == F.TYPE_BYTES:
        return data.draw(st.binary(max_size=30))
    if t == F.TYPE_ENUM:
        top = max(v.number for v in field.enum_type.values)
        return data.draw(st.integers(-1, top + 2))
    raise AssertionError(f"no strategy for field type {t}")


def fill(data: st.DataObject, message: Any, depth: int = 3) -> Any:
    """Set any fields of `message` to any values: one member (or none) of each oneof."""
    d = message.DESCRIPTOR
    chosen = {o.name: data.draw(st.sampled_from([None, *[f.name for f in o.fields]]))
              for o in d.oneofs}
    for field in d.fields:
        o = field.containing_oneof
        if o is not None and chosen[o.name] != field.name:
            continue
        if o is None and not data.draw(st.booleans()):
            continue
        repeated = field.is_repeated
        if field.type == F.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                continue
            if depth <= 0:
                continue
            if repeated:
                for _ in range(data.draw(st.integers(0, 3))):
                    fill(data, getattr(message, field.name).add(), depth - 1)
            else:
                getattr(message, field.name).SetInParent()
                fill(data, getattr(message, field.name), depth - 1)
        elif repeated:
            getattr(message, field.name).extend(
                value(data, field, depth) for _ in range(data.draw(st.integers(0, 3))))
        else:
            setattr(message, field.name, value(data, field, depth))
    return message


# ---- hostile commands --------------------------------------------------------------------


class Table:
    """A new game of a kind, as the fuzz sees it: every view, its tokens."""

    def __init__(self, server: Server, name: str) -> None:
        self.server, self.game = server, suite.game(name)
        pb, svc = self.game.pb, f"/arbiter.{name}.v1.Game/"
        self.act = server.unary(svc + "Act", pb.ActResponse)
        self.get_view = server.unary(svc + "GetView", pb.View)
        self.legal = server.unary(svc + "ListLegalActions", pb.LegalActions)
        seats = [apb.Seat(name=f"p{i}") for i in range(self.game.seat_count)]
        created = server.unary(svc + "CreateGame", apb.CreateGameResponse)(
            pb.CreateGameRequest(seats=seats), timeout=TIMEOUT)
        self.game_id = created.game_id
        self.tokens = {t.seat: t.token for t in created.tokens}
        _game_ids.append(self.game_id)

    def views(self) -> list[bytes]:
        """The spectator's view and every seat's, as the admin reads them."""
        admin = (("x-admin-token", ADMIN),)
        out = [self.get_view(apb.GetViewRequest(game_id=self.game_id), metadata=admin,
                             timeout=TIMEOUT).SerializeToString(deterministic=True)]
        for seat in range(self.game.seat_count):
            out.append(self.get_view(apb.GetViewRequest(game_id=self.game_id, seat=seat),
                                     metadata=admin,
                                     timeout=TIMEOUT).SerializeToString(deterministic=True))
        return out

    def spectator(self) -> Any:
        return self.get_view(apb.GetViewRequest(game_id=self.game_id), timeout=TIMEOUT)

    def legal_commands(self, seat: int) -> list[Any]:
        reply = self.legal(apb.ListLegalActionsRequest(game_id=self.game_id, seat=seat),
                           metadata=(("x-admin-token", ADMIN),), timeout=TIMEOUT)
        return list(reply.commands)

    def advance(self, picks: list[int]) -> list[str]:
        """Legal commands chosen by `picks`, sent by the seats; the command ids used."""
        used = []
        for n, pick in enumerate(picks):
            view = self.spectator()
            if view.HasField("outcome") or not view.to_act:
                break
            seat = view.to_act[pick % len(view.to_act)]
            legal = self.legal_commands(seat)
            self.act(self.game.pb.ActRequest(
                game_id=self.game_id, command=legal[pick % len(legal)], command_id=f"step{n}",
                seat=seat), metadata=(("x-admin-token", ADMIN),), timeout=TIMEOUT)
            used.append(f"step{n}")
        return used


_game_ids: list[str] = []


@pytest.mark.parametrize("name", GAMES)
@FUZZ
@given(data=st.data())
def test_a_rejected_command_changes_nothing_and_nothing_is_unknown_or_internal(
        server: Server, name: str, data: st.DataObject) -> None:
    # Everything is drawn first, the same whatever the game deals, so that an example
    # replays as it ran (the server's seeds are its own).
    game = suite.game(name)
    seats = game.seat_count
    picks = data.draw(st.lists(st.integers(0, 10 ** 6), max_size=6))
    kind = data.draw(st.sampled_from(["hostile", "legal", "legal", "other seat's"]))
    hostile = fill(data, game.pb.Command())
    actor_pick, owner, command_pick = data.draw(st.tuples(
        st.integers(0, 10 ** 6), st.integers(0, seats - 1), st.integers(0, 10 ** 6)))
    command_id = data.draw(st.one_of(
        st.sampled_from(["", "same", "step0", "step1", "ai:x", "deadline:1"]),
        st.text(max_size=140)))
    expected = data.draw(st.sampled_from(["none", "now", "stale", "future", "far"]))
    who = data.draw(st.sampled_from(["actor", "any seat", "spectator", "admin", "bogus"]))
    any_seat, admin_seat = data.draw(st.tuples(
        st.integers(0, seats - 1), st.one_of(st.none(), st.integers(-3, seats + 2))))
    # gRPC itself refuses metadata that is not printable ASCII, before sending it.
    bogus = data.draw(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126),
                              max_size=40))

    table = Table(server, name)
    table.advance(picks)
    views = table.views()
    spectator = table.game.pb.View.FromString(views[0])
    version, to_act = spectator.version, list(spectator.to_act)
    actor = to_act[actor_pick % len(to_act)] if to_act else 0
    command = hostile
    if kind != "hostile":
        holder = actor if kind == "legal" else owner
        legal = table.legal_commands(holder) if holder in to_act else []
        command = legal[command_pick % len(legal)] if legal else hostile
    request = game.pb.ActRequest(game_id=table.game_id, command=command, command_id=command_id)
    if expected != "none":
        request.expected_version = {"now": version, "stale": max(0, version - 1),
                                    "future": version + 1, "far": 2 ** 62}[expected]
    md: Any = ()
    if who == "actor" and actor in table.tokens:
        md = (("x-seat-token", table.tokens[actor]),)
    elif who == "any seat":
        md = (("x-seat-token", table.tokens[any_seat]),)
    elif who == "admin":
        md = (("x-admin-token", ADMIN),)
        request.seat = actor if admin_seat is None else admin_seat
    elif who == "bogus":
        md = (("x-seat-token", bogus),)
    code, reply = call(table.act, request, md)
    if code != grpc.StatusCode.OK:
        assert table.views() == views, f"a command refused with {code} changed a view"
    elif reply.version <= version:
        # A command id this seat used for this command: its first result, nothing applied.
        assert command_id and table.views() == views
    server.ping()


# ---- any request message, and bytes that are no message ----------------------------------


def methods() -> list[tuple[str, Any, bool]]:
    """(method, request class, server streaming) of every game's service and arbiter.v1."""
    out: list[tuple[str, Any, bool]] = []
    for name in GAMES:
        pb, svc = suite.game(name).pb, f"/arbiter.{name}.v1.Game/"
        out += [(svc + "CreateGame", pb.CreateGameRequest, False),
                (svc + "Act", pb.ActRequest, False),
                (svc + "GetView", apb.GetViewRequest, False),
                (svc + "ListLegalActions", apb.ListLegalActionsRequest, False),
                (svc + "Watch", apb.WatchRequest, True)]
    arbiter = "/arbiter.v1.Arbiter/"
    out += [(arbiter + "ListGames", apb.ListGamesRequest, False),
            (arbiter + "ExportLog", apb.ExportLogRequest, False),
            (arbiter + "ImportLog", apb.ImportLogRequest, False),
            (arbiter + "VerifyLog", apb.VerifyLogRequest, False),
            (arbiter + "Replay", apb.ReplayRequest, False),
            (arbiter + "ForkGame", apb.ForkGameRequest, False),
            (arbiter + "Simulate", apb.SimulateRequest, False),
            (arbiter + "Ping", apb.PingRequest, False)]
    return out


METHODS = methods()


def send(server: Server, method: str, streaming: bool, body: Any, md: Any) -> None:
    if not streaming:
        call(server.unary(method), body, md)
        return
    try:  # a Watch of a live game goes on: read a little, then hang up
        for _ in server.stream(method)(body, metadata=md, timeout=0.5):
            pass
    except grpc.RpcError as e:
        assert e.code() not in NEVER, f"{e.code()}: {e.details()}"


@FUZZ
@given(data=st.data())
def test_any_request_message_is_answered_without_unknown_or_internal(
        server: Server, data: st.DataObject) -> None:
    method, request_class, streaming = data.draw(st.sampled_from(METHODS))
    request = fill(data, request_class())
    if hasattr(request, "game_id") and data.draw(st.booleans()):
        if _game_ids:
            request.game_id = _game_ids[data.draw(st.integers(0, 10 ** 6)) % len(_game_ids)]
    if method.endswith("/Simulate"):
        request.games = min(request.games, 3)  # hostile, not long: the point is the checks
    md = data.draw(st.sampled_from([(), (("x-admin-token", ADMIN),),
                                    (("x-seat-token", "nobody"),)]))
    send(server, method, streaming, request, md)
    server.ping()


@FUZZ
@given(data=st.data())
def test_random_bytes_as_a_body_are_invalid_argument_or_read_as_a_message(
        server: Server, data: st.DataObject) -> None:
    method, _, streaming = data.draw(st.sampled_from(METHODS))
    body = data.draw(st.one_of(st.binary(max_size=200),
                               st.sampled_from([b"\xff", b"\x0a\xff\x01", b"\x08" * 20])))
    if method.endswith("/Simulate"):
        return  # a body that happens to parse could ask for a long simulation
    send(server, method, streaming, body, ())
    server.ping()


# ---- hostile logs ------------------------------------------------------------------------

_logs: dict[str, list[str]] = {}


def finished_log(name: str) -> list[str]:
    if name not in _logs:
        game = suite.game(name)

        async def play() -> list[str]:
            host = Host(MemoryStore(), {name: game}, ai_dispatch=in_process_ai)
            seats = [Seat(f"p{i}", "ai", "random") for i in range(game.seat_count)]
            game_id = (await host.create(name, seats, game.pb.Options())).game_id
            while not (await host.load(game_id)).finished:
                await asyncio.sleep(0)
            _, entries = await host.history(game_id)
            return gamelog.to_json_lines(game, entries)

        _logs[name] = asyncio.run(play())
    return _logs[name]


HOSTILE_VALUES: list[Any] = [None, -1, 0, 2 ** 64, 10 ** 40, 1e308, "", "\n", "{}", [], {},
                             [[[[[]]]]], {"a": {"b": {"c": {}}}}, True, "bubblee-*:meta:"]
HOSTILE_NUMBERS = ["Infinity", "-Infinity", "NaN", "1e400", "9" * 30]


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths(v, (*prefix, i))
    return out


def replaced(node: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = replaced(node[path[0]], path[1:], new)
    return copy


def parsed(line: str) -> Any:
    """The line as JSON, or None once an earlier mutation made it unreadable."""
    try:
        return json.loads(line)
    except ValueError:
        return None


@st.composite
def hostile_logs(draw: Any) -> list[str]:
    lines = list(finished_log(draw(st.sampled_from(GAMES))))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["value", "number", "drop", "repeat", "swap", "cut",
                                    "text", "game"]))
        if how in ("value", "number"):
            row = parsed(lines[at])
            if row is None:
                continue
            path = draw(st.sampled_from(paths(row)[1:]))
            if how == "value":
                lines[at] = json.dumps(replaced(row, path, draw(st.sampled_from(HOSTILE_VALUES))))
            else:
                marker = "__number__"
                lines[at] = json.dumps(replaced(row, path, marker)).replace(
                    f'"{marker}"', draw(st.sampled_from(HOSTILE_NUMBERS)))
        elif how == "drop" and len(lines) > 1:
            del lines[at]
        elif how == "repeat":
            lines.insert(at, lines[at])
        elif how == "swap":
            other = draw(st.integers(0, len(lines) - 1))
            lines[at], lines[other] = lines[other], lines[at]
        elif how == "cut":
            lines[at] = lines[at][:draw(st.integers(0, len(lines[at])))]
        elif how == "text":
            lines[at] = draw(st.text(max_size=80))
        elif how == "game":
            row = parsed(lines[0])
            if isinstance(row, dict) and isinstance(row.get("started"), dict):
                row["started"]["game"] = draw(st.sampled_from(GAMES))
                lines[0] = json.dumps(row)
    return lines


@FUZZ
@given(lines=hostile_logs())
def test_a_hostile_log_is_refused_cleanly_by_verify_and_import(server: Server, lines: list[str]
                                                               ) -> None:
    verify = server.unary("/arbiter.v1.Arbiter/VerifyLog", apb.VerifyLogResponse)
    code, reply = call(verify, apb.VerifyLogRequest(log=apb.ExportLogResponse(lines=lines)))
    assert code == grpc.StatusCode.OK
    if not reply.ok:
        assert reply.reason and 1 <= reply.first_bad_line <= max(len(lines), 1) + 1
    imported = server.unary("/arbiter.v1.Arbiter/ImportLog", apb.ImportLogResponse)
    code, _ = call(imported, apb.ImportLogRequest(lines=lines))
    assert code in (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT)
    if code == grpc.StatusCode.OK:
        assert reply.ok, "an import re-runs the log as VerifyLog does"
    server.ping()
