"""Hostile clients against a real server while a well-behaved one plays: `make abuse`.

    python -m loadtests.abuse [--seconds 8] [--stores embedded,redis] [--attacks a,b,...]

For each store (the embedded one, then Redis from ARBITER_TEST_REDIS_URL, which `make abuse`
starts) one server process is started as `make run` starts it (defaults; its open-file limit
set to 4,096 so that descriptor exhaustion is reachable; ARBITER_HTTP_IDLE_SECONDS and
ARBITER_HTTP_READ_SECONDS at 5 so that slow clients are closed within an attack's window).
A well-behaved client plays a Bubblee game and reads its view in a loop: GetView and Act are
timed, every error is counted. It first runs alone (the baseline), then beside each attack in
turn; an attack runs in its own process for a bounded time, from its own loopback address
when it speaks plain TCP (127.0.0.2), while the well-behaved client reaches the server from
127.0.0.3 through a relay, so that per-address limits tell them apart as they would two
machines.

Per attack the results hold the well-behaved client's GetView and Act p50/p99 as ratios to
its baseline of the same run, its errors, the server's largest RSS and number of open
descriptors during the attack (/proc), how many lines its log grew by, and what the attacker
saw. The goal: ratios at most 2, no errors, memory bounded. Writes
loadtests/results/abuse.json and prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import grpc
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from tools.redis_servers import free_port

RESULTS = os.path.join(os.path.dirname(__file__), "results", "abuse.json")
GAME = "/arbiter.bubblee.v1.Game/"
ARBITER = "/arbiter.v1.Arbiter/"
ATTACKER = "127.0.0.2"  # plain TCP attackers connect from here
BEHAVED = "127.0.0.3"  # the well-behaved client, through its relay
SERVER_FILES = 4096  # the server's open-file limit in this run
CALL_TIMEOUT = 5.0
# Shorter than the defaults (15 and 10 s), so that an attack's window sees them act.
SERVER_ENV = {"ARBITER_HTTP_IDLE_SECONDS": "5", "ARBITER_HTTP_READ_SECONDS": "5"}




def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


def raise_open_files() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# ---- the server ----------------------------------------------------------------------------


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    grpc_port: int
    http_port: int
    log_path: str

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def rss_mb(self) -> float:
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def cpu_seconds(self) -> float:
        """The server's CPU time so far (user and system, from /proc): what an attack makes
        it spend, apart from what the attacker's own process takes from a shared machine."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def log_lines(self) -> int:
        with open(self.log_path, "rb") as f:
            return sum(1 for _ in f)


def start_server(store: str, workdir: str, extra_env: dict[str, str] | None = None) -> Server:
    grpc_port, http_port = free_port(), free_port()
    env = dict(os.environ, ARBITER_GRPC_ADDR=f"127.0.0.1:{grpc_port}",
               ARBITER_HTTP_ADDR=f"127.0.0.1:{http_port}",
               ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}", ARBITER_DATA_DIR=workdir,
               ARBITER_GAMES="bubblee")
    env.update({**SERVER_ENV, **(extra_env or {})})
    env.pop("ARBITER_REDIS_URL", None)
    if store == "redis":
        env["ARBITER_REDIS_URL"] = os.environ["ARBITER_TEST_REDIS_URL"]
    log_path = os.path.join(workdir, f"server-{store}.log")

    def limit_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (SERVER_FILES, SERVER_FILES))

    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"],
                                   env=env, stdout=log, stderr=subprocess.STDOUT,
                                   preexec_fn=limit_files)
    return Server(process, grpc_port, http_port, log_path)


async def wait_ready(server: Server) -> None:
    async with grpc.aio.insecure_channel(server.grpc_addr) as channel:
        ping = channel.unary_unary(ARBITER + "ListGames",
                                   request_serializer=apb.ListGamesRequest.SerializeToString,
                                   response_deserializer=apb.ListGamesResponse.FromString)
        for _ in range(600):
            try:
                await ping(apb.ListGamesRequest(), timeout=1)
                break
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.1)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", server.http_port), 0.2).close()
            return
        except OSError:
            await asyncio.sleep(0.1)


# ---- the well-behaved client ---------------------------------------------------------------


class Relay:
    """A TCP relay that reaches the server from another loopback address."""

    def __init__(self, target: tuple[str, int], source: str) -> None:
        self.target, self.source = target, source
        self.server: asyncio.AbstractServer | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._pair, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _pair(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(
                *self.target, local_addr=(self.source, 0))
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (OSError, asyncio.CancelledError):
            writer.close()

    async def close(self) -> None:
        if self.server:
            self.server.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


@dataclass
class Sample:
    get_view: list[float] = field(default_factory=list)
    act: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


ROUND_SECONDS = 0.1  # a round is two commands, one per seat: 20 a second, 10 per seat


class Player:
    """Plays two-seat Bubblee games (both seats), timing GetView and Act."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        def rpc(name: str, request: Any, response: Any) -> Any:
            return channel.unary_unary(name, request_serializer=request.SerializeToString,
                                       response_deserializer=response.FromString)
        self.create = rpc(GAME + "CreateGame", bpb.CreateGameRequest, apb.CreateGameResponse)
        self.legal = rpc(GAME + "ListLegalActions", apb.ListLegalActionsRequest,
                         bpb.LegalActions)
        self.view = rpc(GAME + "GetView", apb.GetViewRequest, bpb.View)
        self.act_rpc = rpc(GAME + "Act", bpb.ActRequest, bpb.ActResponse)
        self.game_id, self.tokens = "", [""]
        self.step = 0

    async def new_game(self) -> None:
        created = await self.create(bpb.CreateGameRequest(
            seats=[apb.Seat(name="a"), apb.Seat(name="b")]), timeout=CALL_TIMEOUT)
        self.game_id = created.game_id
        self.tokens = [t.token for t in sorted(created.tokens, key=lambda t: t.seat)]

    async def play(self, seconds: float, sample: Sample) -> None:
        end = time.monotonic() + seconds
        due = time.monotonic()
        while time.monotonic() < end:
            # A player, not a flood: within the default command rates (50 a second per
            # client, 20 per seat), which the Act-flood attack is there to meet.
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            due = max(due + ROUND_SECONDS, time.monotonic())
            try:
                await self._one(sample)
            except grpc.aio.AioRpcError as e:
                sample.errors[f"{e.code().name}: {(e.details() or '')[:80]}"] += 1
                await asyncio.sleep(0.05)

    async def _one(self, sample: Sample) -> None:
        if not self.game_id:
            await self.new_game()
        for token in self.tokens:
            md = (("x-seat-token", token),)
            legal = await self.legal(apb.ListLegalActionsRequest(game_id=self.game_id),
                                     metadata=md, timeout=CALL_TIMEOUT)
            if legal.commands:
                break
        else:
            self.game_id = ""  # finished
            return
        t0 = time.perf_counter()
        await self.view(apb.GetViewRequest(game_id=self.game_id), metadata=md,
                        timeout=CALL_TIMEOUT)
        t1 = time.perf_counter()
        self.step += 1
        await self.act_rpc(bpb.ActRequest(game_id=self.game_id, command=legal.commands[0],
                                          expected_version=legal.version,
                                          command_id=f"{self.game_id}:{self.step}"),
                           metadata=md, timeout=CALL_TIMEOUT)
        t2 = time.perf_counter()
        sample.get_view.append(t1 - t0)
        sample.act.append(t2 - t1)


# ---- the attacks (each in its own process) -------------------------------------------------


@dataclass(frozen=True)
class Target:
    grpc_addr: str
    http_port: int
    game_id: str  # a game others play (to watch)
    token: str  # a seat of the attacker's own game
    own_game: str
    log: list[str]  # lines of a finished game's log (VerifyLog)


async def idle_http(t: Target, seconds: float) -> dict[str, Any]:
    """Open up to 20,000 connections to the HTTP port and send nothing."""
    held: list[asyncio.StreamWriter] = []
    readers: list[asyncio.StreamReader] = []
    failed = 0
    end = time.monotonic() + seconds

    async def one() -> None:
        nonlocal failed
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", t.http_port,
                                                           local_addr=(ATTACKER, 0))
            held.append(writer)
            readers.append(reader)
        except OSError:
            failed += 1

    while len(held) + failed < 20_000 and time.monotonic() < end - 1:
        await asyncio.gather(*(one() for _ in range(200)))
    await asyncio.sleep(max(0.0, end - time.monotonic()))
    still_open = 0
    for reader in readers:
        try:
            await asyncio.wait_for(reader.read(65536), 0.001)  # an answer, or b"" once closed
        except TimeoutError:
            still_open += 1
        except ConnectionError:
            pass
    for w in held:
        w.close()
    return {"opened": len(held), "connect_failed": failed, "still_open_at_end": still_open}


async def idle_grpc(t: Target, seconds: float) -> dict[str, Any]:
    """Open up to 5,000 TCP connections to the gRPC port and send nothing; then a new client
    calls once (gRPC has no cap per address: while the silent ones hold the port's cap, a
    new client is refused until the handshake timeout closes them)."""
    host, _, port = t.grpc_addr.rpartition(":")
    held, failed = [], 0
    end = time.monotonic() + seconds

    async def one() -> None:
        nonlocal failed
        try:
            held.append(await asyncio.open_connection(host, int(port),
                                                      local_addr=(ATTACKER, 0)))
        except OSError:
            failed += 1

    while len(held) + failed < 5_000 and time.monotonic() < end - 1:
        await asyncio.gather(*(one() for _ in range(200)))
    outcome = "OK"
    async with grpc.aio.insecure_channel(t.grpc_addr) as channel:
        try:
            await channel.unary_unary(ARBITER + "ListGames", request_serializer=apb
                                      .ListGamesRequest.SerializeToString)(
                apb.ListGamesRequest(), timeout=2)
        except grpc.aio.AioRpcError as e:
            outcome = e.code().name
    await asyncio.sleep(max(0.0, end - time.monotonic()))
    for _, writer in held:
        writer.close()
    return {"opened": len(held), "connect_failed": failed, "new_client_call": outcome}


async def slowloris(t: Target, seconds: float) -> dict[str, Any]:
    """60 connections sending one header line a second, and 60 announcing a 1,000-byte body
    and sending one byte."""
    conns = []
    for i in range(120):
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", t.http_port,
                                                           local_addr=(ATTACKER, 0))
        except OSError:
            continue
        if i % 2:
            writer.write(f"POST {GAME}CreateGame HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                         "content-type: application/json\r\ncontent-length: 1000\r\n\r\n{"
                         .encode())
        else:
            writer.write(f"POST {GAME}CreateGame HTTP/1.1\r\n".encode())
        conns.append((i % 2, reader, writer))
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await asyncio.sleep(1)
        for slow_body, _, writer in conns:
            if not slow_body and not writer.is_closing():
                writer.write(b"x-slow: 1\r\n")
    closed = 0
    for _, reader, writer in conns:
        try:
            await asyncio.wait_for(reader.read(65536), 0.01)  # an answer, or b"" once closed
            closed += 1
        except ConnectionError:
            closed += 1
        except TimeoutError:
            pass
        writer.close()
    return {"connections": len(conns), "answered_or_closed_by_server": closed}


async def watch_streams(t: Target, seconds: float) -> dict[str, Any]:
    """Up to 10,000 token-less Watch streams on the well-behaved client's game."""
    codes: Counter[str] = Counter()
    calls = []
    channels = [grpc.aio.insecure_channel(t.grpc_addr,
                                          options=[("grpc.use_local_subchannel_pool", 1)])
                for _ in range(20)]
    end = time.monotonic() + seconds
    request = apb.WatchRequest(game_id=t.game_id)
    for i in range(10_000):
        if time.monotonic() > end - 1:
            break
        call = channels[i % 20].unary_stream(GAME + "Watch",
                                             request_serializer=apb.WatchRequest
                                             .SerializeToString)(request)
        calls.append(call)
        if i % 100 == 99:
            await asyncio.sleep(0.05)
    await asyncio.sleep(max(0.0, end - time.monotonic()))
    for call in calls:
        if call.done():
            codes[(await call.code()).name] += 1
        else:
            codes["open"] += 1
            call.cancel()
    for channel in channels:
        await channel.close()
    return {"streams": len(calls), "ended": dict(codes)}


async def unread_play(t: Target, seconds: float) -> dict[str, Any]:
    """20 Play streams that send commands as fast as they can and never read."""
    sent = 0
    channel = grpc.aio.insecure_channel(t.grpc_addr)
    end = time.monotonic() + seconds

    async def one() -> None:
        nonlocal sent
        call = channel.stream_stream(GAME + "Play",
                                     request_serializer=bpb.PlayRequest.SerializeToString)(
            metadata=(("x-seat-token", t.token),))
        await call.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=t.own_game)))
        act = bpb.PlayRequest(act=bpb.ActRequest(expected_version=1))
        try:
            while time.monotonic() < end:
                await asyncio.wait_for(call.write(act), 1)
                sent += 1
        except (TimeoutError, grpc.aio.AioRpcError, asyncio.InvalidStateError):
            pass
        call.cancel()

    await asyncio.gather(*(one() for _ in range(20)))
    await channel.close()
    return {"commands_sent": sent}


async def big_play_body(t: Target, seconds: float) -> dict[str, Any]:
    """A Connect Play body of `open` and 580,000 commands (4 MB), sent again and again."""
    from services.core.http_gateway import envelope

    act = envelope(0, bpb.PlayRequest(act=bpb.ActRequest()).SerializeToString())
    body = envelope(0, bpb.PlayRequest(open=apb.PlayOpen(game_id=t.own_game))
                    .SerializeToString()) + act * 580_000
    answers: Counter[str] = Counter()
    end = time.monotonic() + seconds
    connector = aiohttp.TCPConnector(local_addr=(ATTACKER, 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        while time.monotonic() < end:
            try:
                async with session.post(
                        f"http://127.0.0.1:{t.http_port}{GAME}Play", data=body,
                        headers={"content-type": "application/connect+proto",
                                 "x-seat-token": t.token},
                        timeout=aiohttp.ClientTimeout(total=max(3.0, end - time.monotonic()))
                        ) as r:
                    tail = (await r.read())[-300:]
                    answers[f"{r.status} {_end_code(tail)}"] += 1
            except (TimeoutError, aiohttp.ClientError) as e:
                answers[type(e).__name__] += 1
    return {"body_bytes": len(body), "answers": dict(answers)}


def _end_code(tail: bytes) -> str:
    for code in (b"resource_exhausted", b"invalid_argument", b"unauthenticated"):
        if code in tail:
            return code.decode()
    return "ok" if b"{}" in tail else "other"


async def big_simulate(t: Target, seconds: float) -> dict[str, Any]:
    """Anonymous 100,000-game Simulate calls, one after another."""
    codes: Counter[str] = Counter()
    async with grpc.aio.insecure_channel(t.grpc_addr) as channel:
        simulate = channel.unary_unary(ARBITER + "Simulate",
                                       request_serializer=apb.SimulateRequest.SerializeToString)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                await simulate(apb.SimulateRequest(game="bubblee", games=100_000,
                                                   bots=["greedy", "greedy"]),
                               timeout=max(0.5, end - time.monotonic()))
                codes["OK"] += 1
            except grpc.aio.AioRpcError as e:
                codes[e.code().name] += 1
                if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                    await asyncio.sleep(0.1)
    return {"answers": dict(codes)}


async def verify_log(t: Target, seconds: float) -> dict[str, Any]:
    """4 callers verifying a finished game's log in a loop."""
    codes: Counter[str] = Counter()
    async with grpc.aio.insecure_channel(t.grpc_addr) as channel:
        verify = channel.unary_unary(ARBITER + "VerifyLog",
                                     request_serializer=apb.VerifyLogRequest.SerializeToString)
        request = apb.VerifyLogRequest(log=apb.ExportLogResponse(lines=t.log))
        end = time.monotonic() + seconds

        async def caller() -> None:
            while time.monotonic() < end:
                try:
                    await verify(request, timeout=CALL_TIMEOUT)
                    codes["OK"] += 1
                except grpc.aio.AioRpcError as e:
                    codes[e.code().name] += 1
                    await asyncio.sleep(0.05)

        await asyncio.gather(*(caller() for _ in range(4)))
    return {"answers": dict(codes)}


async def cross_origin(t: Target, seconds: float) -> dict[str, Any]:
    """A web page elsewhere POSTs CreateGame with no content-type and with a JSON one."""
    statuses: Counter[str] = Counter()
    end = time.monotonic() + seconds
    connector = aiohttp.TCPConnector(local_addr=(ATTACKER, 0), limit=4)
    seats = json.dumps({"seats": [{"name": "a"}, {"name": "b"}]}).encode()
    async with aiohttp.ClientSession(connector=connector,
                                     skip_auto_headers=("Content-Type",)) as session:
        while time.monotonic() < end:
            for ctype in (None, "application/json"):
                headers = {"origin": "http://evil.example"}
                if ctype:
                    headers["content-type"] = ctype
                async with session.post(f"http://127.0.0.1:{t.http_port}{GAME}CreateGame",
                                        data=seats, headers=headers) as r:
                    statuses[f"{ctype or 'none'}: {r.status}"] += 1
            await asyncio.sleep(0.01)
    return {"statuses": dict(statuses)}


async def bad_tokens(t: Target, seconds: float) -> dict[str, Any]:
    """Token headers with a tab or a byte outside ASCII."""
    statuses: Counter[int] = Counter()
    end = time.monotonic() + seconds
    body = json.dumps({"gameId": t.own_game}).encode()
    while time.monotonic() < end:
        for bad in (b"x-seat-token: a\tb", b"x-admin-token: \xc3\xa9t\xc3\xa9",
                    b"x-seat-token: \xff"):
            reader, writer = await asyncio.open_connection("127.0.0.1", t.http_port,
                                                           local_addr=(ATTACKER, 0))
            writer.write(b"\r\n".join([
                f"POST {GAME}GetView HTTP/1.1".encode(), b"host: 127.0.0.1", b"connection: close",
                b"content-type: application/json", f"content-length: {len(body)}".encode(),
                bad]) + b"\r\n\r\n" + body)
            head = await reader.readline()
            statuses[int(head.split()[1]) if head else 0] += 1
            writer.close()
        await asyncio.sleep(0.01)
    return {"statuses": dict(statuses)}


async def act_flood(t: Target, seconds: float) -> dict[str, Any]:
    """One client sends Acts as fast as 50 concurrent callers can."""
    codes: Counter[str] = Counter()
    async with grpc.aio.insecure_channel(t.grpc_addr) as channel:
        act = channel.unary_unary(GAME + "Act",
                                  request_serializer=bpb.ActRequest.SerializeToString)
        end = time.monotonic() + seconds
        request = bpb.ActRequest(game_id=t.own_game, expected_version=1)

        async def caller() -> None:
            while time.monotonic() < end:
                try:
                    await act(request, metadata=(("x-seat-token", t.token),),
                              timeout=CALL_TIMEOUT)
                    codes["OK"] += 1
                except grpc.aio.AioRpcError as e:
                    codes[e.code().name] += 1

        await asyncio.gather(*(caller() for _ in range(50)))
    return {"answers": dict(codes), "calls": sum(codes.values())}


ATTACKS: dict[str, Callable[[Target, float], Coroutine[Any, Any, dict[str, Any]]]] = {
    "idle_http": idle_http,
    "idle_grpc": idle_grpc,
    "slowloris": slowloris,
    "watch_streams": watch_streams,
    "unread_play": unread_play,
    "big_play_body": big_play_body,
    "big_simulate": big_simulate,
    "verify_log": verify_log,
    "cross_origin": cross_origin,
    "bad_tokens": bad_tokens,
    "act_flood": act_flood,
}


def _attack_process(name: str, target: Target, seconds: float, out: Any) -> None:
    raise_open_files()
    try:
        out.send(asyncio.run(ATTACKS[name](target, seconds)))
    except Exception as e:  # the attacker's own failure is a result too
        out.send({"attacker_failed": f"{type(e).__name__}: {e}"})


# ---- one run ---------------------------------------------------------------------------------


def summary(sample: Sample) -> dict[str, float]:
    return {"get_view_p50_ms": percentile(sample.get_view, 0.5) * 1e3,
            "get_view_p99_ms": percentile(sample.get_view, 0.99) * 1e3,
            "act_p50_ms": percentile(sample.act, 0.5) * 1e3,
            "act_p99_ms": percentile(sample.act, 0.99) * 1e3,
            "rounds": len(sample.act)}


async def prepare_target(server: Server, player: Player) -> Target:
    """The attackers' own game, and a finished game's log for VerifyLog."""
    async with grpc.aio.insecure_channel(server.grpc_addr) as channel:
        own = Player(channel)
        await own.new_game()
        create = channel.unary_unary(GAME + "CreateGame",
                                     request_serializer=bpb.CreateGameRequest.SerializeToString,
                                     response_deserializer=apb.CreateGameResponse.FromString)
        bots = await create(bpb.CreateGameRequest(seats=[
            apb.Seat(name="x", kind=apb.AI, bot="greedy"),
            apb.Seat(name="y", kind=apb.AI, bot="greedy")]))
        export = channel.unary_unary(ARBITER + "ExportLog",
                                     request_serializer=apb.ExportLogRequest.SerializeToString,
                                     response_deserializer=apb.ExportLogResponse.FromString)
        lines: list[str] = []
        for _ in range(300):  # until the bots finish
            try:
                lines = list((await export(apb.ExportLogRequest(game_id=bots.game_id))).lines)
                break
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.1)
    return Target(server.grpc_addr, server.http_port, player.game_id, own.tokens[0],
                  own.game_id, lines)


async def measured(server: Server, player: Player, seconds: float,
                   attack: str | None, target: Target | None) -> dict[str, Any]:
    """The well-behaved client beside one attack (or none), with the server sampled."""
    process, pipe = None, None
    lines_before = server.log_lines()
    if attack and target:
        parent, child = multiprocessing.get_context("spawn").Pipe()
        process = multiprocessing.get_context("spawn").Process(
            target=_attack_process, args=(attack, target, seconds + 2, child))
        process.start()
        pipe = parent
        await asyncio.sleep(2)  # the attack in place
    sample = Sample()
    rss, fds = [server.rss_mb()], [server.fds()]

    async def watch_server() -> None:
        while True:
            await asyncio.sleep(0.5)
            try:
                rss.append(server.rss_mb())
                fds.append(server.fds())
            except OSError:
                return

    sampler = asyncio.create_task(watch_server())
    cpu, started = server.cpu_seconds(), time.monotonic()
    await player.play(seconds, sample)
    cpu_share = (server.cpu_seconds() - cpu) / (time.monotonic() - started)
    sampler.cancel()
    observed: dict[str, Any] = {}
    if process and pipe:
        loop = asyncio.get_running_loop()
        if await loop.run_in_executor(None, pipe.poll, 60):
            observed = pipe.recv()
        process.join(10)
        if process.is_alive():
            process.kill()
            observed.setdefault("attacker_failed", "did not end in time: killed")
    await asyncio.sleep(1)
    return {**summary(sample), "errors": dict(sample.errors),
            "server_rss_mb_max": round(max(rss), 1), "server_rss_mb_after": server.rss_mb(),
            "server_fds_max": max(fds), "server_log_lines": server.log_lines() - lines_before,
            "server_cpu_share": round(cpu_share, 3),
            "alive": server.process.poll() is None, "observed": observed}


def ratios(result: dict[str, Any], baseline: dict[str, Any]) -> dict[str, float]:
    """Latencies as ratios to the baseline's, and the rounds played (a GetView and an Act
    each) as a share of the baseline's: latencies alone hide a client that got few answers."""
    found = {f"{k[:-3]}_ratio": round(result[k] / baseline[k], 2)
             for k in ("get_view_p50_ms", "get_view_p99_ms", "act_p50_ms", "act_p99_ms")
             if baseline[k] and result[k] == result[k]}
    found["rounds_ratio"] = round(result["rounds"] / max(1, baseline["rounds"]), 2)
    return found


async def run_store(store: str, attacks: list[str], seconds: float,
                    extra_env: dict[str, str] | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="arbiter-abuse-") as workdir:
        server = start_server(store, workdir, extra_env)
        relay = Relay(("127.0.0.1", server.grpc_port), BEHAVED)
        try:
            await wait_ready(server)
            relayed = await relay.start()
            async with grpc.aio.insecure_channel(f"127.0.0.1:{relayed}") as channel:
                player = Player(channel)
                await player.new_game()
                target = await prepare_target(server, player)
                await player.play(1, Sample())  # warm up
                baseline = await measured(server, player, seconds, None, None)
                results: dict[str, Any] = {"baseline": baseline, "attacks": {}}
                for name in attacks:
                    if server.process.poll() is not None:
                        results["attacks"][name] = {"skipped": "the server had exited"}
                        continue
                    print(f"  {store}: {name}...", file=sys.stderr, flush=True)
                    result = await measured(server, player, seconds, name, target)
                    results["attacks"][name] = {**ratios(result, baseline), **result}
                results["baseline_again"] = await measured(server, player, seconds, None,
                                                           None)
            return results
        finally:
            await relay.close()
            server.process.terminate()
            try:
                server.process.wait(10)
            except subprocess.TimeoutExpired:
                server.process.kill()


def table(report: dict[str, Any]) -> str:
    rows = ["| store | attack | GetView p50 / p99 | Act p50 / p99 | rounds | errors | server CPU "
            "| RSS max MB | fds max | log lines |", "|---|---|---|---|---|---|---|---|---|---|"]
    for store, result in report["stores"].items():
        for name, r in result["attacks"].items():
            if "skipped" in r:
                rows.append(f"| {store} | {name} | {r['skipped']} | | | | | | | |")
                continue
            rows.append(
                f"| {store} | {name} | x{r.get('get_view_p50_ratio', '?')} / "
                f"x{r.get('get_view_p99_ratio', '?')} | x{r.get('act_p50_ratio', '?')} / "
                f"x{r.get('act_p99_ratio', '?')} | x{r['rounds_ratio']} | "
                f"{sum(r['errors'].values())} | {r.get('server_cpu_share', 0):.0%} | "
                f"{r['server_rss_mb_max']} | {r['server_fds_max']} | {r['server_log_lines']} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--stores", default="embedded,redis")
    parser.add_argument("--attacks", default=",".join(ATTACKS))
    args = parser.parse_args()
    raise_open_files()
    stores = [s for s in args.stores.split(",") if s]
    if "redis" in stores and not os.environ.get("ARBITER_TEST_REDIS_URL"):
        print("no ARBITER_TEST_REDIS_URL: the Redis run is left out", file=sys.stderr)
        stores.remove("redis")
    attacks = [a for a in args.attacks.split(",") if a]
    report: dict[str, Any] = {"seconds_per_attack": args.seconds,
                              "server_open_file_limit": SERVER_FILES,
                              "server_env": SERVER_ENV, "stores": {}}
    for store in stores:
        report["stores"][store] = asyncio.run(run_store(store, attacks, args.seconds))
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(report, f, indent=1)
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
