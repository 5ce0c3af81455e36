"""The per-move cost (`make bench`'s `moves`): "take the last counter" (services/toy) played by
32 clients, moves only, for Act and for Play, on the embedded store and on Redis, beside Ping
(the least call the stack answers) on the same server in the same run.

Each client has its own connection and its own game, created before anything is measured,
with a pile large enough that no game ends during the run: the windows hold moves only. A
client always takes one counter, for the seat whose turn it is; with Act it sends the seat's
token per call, with Play it holds one stream per seat (as two players would) and sends each
command on the stream of the seat to act, then waits for its answer (the pushes of the move
to both streams come with it).

Per window, from /proc: the server process's CPU (utime + stime, every thread) and the
redis-server's, per move; the server's system calls per move, counted by `perf stat` (the
raw_syscalls tracepoint, in the kernel, so the count costs the server next to nothing)
in the same window; then, in a window of its own, `strace -c -f` for which calls they are
(strace slows the server down: its window gives the mix, not the CPU).

    python -m loadtests.bench_moves                 # both stores (Redis: ARBITER_TEST_REDIS_URL)
    python -m loadtests.bench_moves --ab NAME=VAR=VALUE[,VAR=VALUE] ...
        # one server per variant of the environment, all up at once, measured in turn:
        # each variant against the first, round by round
    python -m loadtests.bench_moves --profile play --store redis
        # where the server's event-loop thread spends its time (cProfile), by part

BENCH_MOVES_SECONDS (default 3) is the length of a window, BENCH_MOVES_ROUNDS (default 3) how
many rounds of (Ping, Act, Play) each server runs; the figures are the medians of the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import redis as redis_sync
from arbiter.v1 import arbiter_pb2 as apb

from loadtests import stack_server
from services.toy.schema import pb as toy

CLIENTS = int(os.environ.get("BENCH_MOVES_CLIENTS", "32"))
SECONDS = float(os.environ.get("BENCH_MOVES_SECONDS", "3"))
ROUNDS = int(os.environ.get("BENCH_MOVES_ROUNDS", "3"))
WARM_UP_SECONDS = float(os.environ.get("BENCH_MOVES_WARM_UP", "1"))
# Calls one at a time: the rate of the calls of `make loadtest`'s mix at 40 requests/s.
ALONE_RATE = float(os.environ.get("BENCH_MOVES_ALONE_RATE", "100"))
STRACE_SECONDS = 2.0
STRACE = os.environ.get("BENCH_MOVES_STRACE", "1") != "0"  # 0: no strace window (A/B runs)
PILE = 2_000_000_000  # no game ends within a run
SERVICE = "/arbiter.toy.v1.Game/"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, all its threads (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_ports(n: int) -> list[int]:
    import socket

    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


# ---- counting system calls ------------------------------------------------------------------


class SyscallCounter:
    """`perf stat` on the raw_syscalls:sys_enter tracepoint of every thread of a process; None
    where perf cannot attach (then the strace window is the only count)."""

    def __init__(self, pid: int) -> None:
        self.process: subprocess.Popen[str] | None = None
        if shutil.which("perf"):
            self.process = subprocess.Popen(
                ["perf", "stat", "-x", ",", "-e", "raw_syscalls:sys_enter", "-p", str(pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def stop(self) -> int | None:
        if self.process is None:
            return None
        self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=10)
        for line in err.splitlines():
            fields = line.split(",")
            if len(fields) > 2 and fields[2].startswith("raw_syscalls:sys_enter"):
                return int(fields[0]) if fields[0].isdigit() else None
        return None


def strace_summary(text: str) -> dict[str, int]:
    """{syscall: calls} from `strace -c`'s table, with its total under "total"."""
    calls: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[3].isdigit() and fields[0].replace(".", "").isdigit():
            calls[fields[-1]] = int(fields[3])
    return calls


class Strace:
    def __init__(self, pid: int) -> None:
        self.out = tempfile.NamedTemporaryFile(prefix="bench-strace-", suffix=".txt",
                                               delete=False)
        self.out.close()
        self.process = subprocess.Popen(["strace", "-c", "-f", "-p", str(pid), "-o",
                                         self.out.name],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> dict[str, int]:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=30)
        with open(self.out.name) as f:
            text = f.read()
        os.unlink(self.out.name)
        return strace_summary(text)


# ---- clients --------------------------------------------------------------------------------


class Client:
    """One client with its own connection and its own game; `moves` counts completed moves."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.aio.insecure_channel(address)
        self.moves = 0
        self.calls: list[Any] = []
        self.readers: list[asyncio.Task[None]] = []
        self.answers: dict[int, asyncio.Queue[Any]] = {}

    def rpc(self, method: str, request_type: Any, response_type: Any) -> Any:
        return self.channel.unary_unary(
            method, request_serializer=request_type.SerializeToString,
            response_deserializer=response_type.FromString)

    async def new_game(self) -> None:
        create = self.rpc(SERVICE + "CreateGame", toy.CreateGameRequest, apb.CreateGameResponse)
        created = await create(toy.CreateGameRequest(
            seats=[apb.Seat(name="a"), apb.Seat(name="b")], options=toy.Options(pile=PILE)))
        self.game_id, self.version = created.game_id, created.version
        self.tokens = {t.seat: t.token for t in created.tokens}
        view = await self.rpc(SERVICE + "GetView", apb.GetViewRequest, toy.View)(
            apb.GetViewRequest(game_id=self.game_id),
            metadata=(("x-seat-token", self.tokens[0]),))
        self.turn = view.to_act[0]
        self.act_rpc = self.rpc(SERVICE + "Act", toy.ActRequest, toy.ActResponse)
        self.ping_rpc = self.rpc("/arbiter.v1.Arbiter/Ping", apb.PingRequest, apb.PingResponse)

    def command(self) -> toy.ActRequest:
        return toy.ActRequest(game_id=self.game_id, command=toy.Command(take=1),
                              expected_version=self.version,
                              command_id=f"{self.game_id}:{self.version}")

    async def act(self) -> None:
        reply = await self.act_rpc(self.command(),
                                   metadata=(("x-seat-token", self.tokens[self.turn]),))
        self.version, self.turn = reply.version, 1 - self.turn
        self.moves += 1

    async def ping(self) -> None:
        await self.ping_rpc(apb.PingRequest())
        self.moves += 1

    async def open_streams(self) -> None:
        play = self.channel.stream_stream(
            SERVICE + "Play", request_serializer=toy.PlayRequest.SerializeToString,
            response_deserializer=toy.PlayResponse.FromString)
        for seat, token in sorted(self.tokens.items()):
            call = play(metadata=(("x-seat-token", token),))
            await call.write(toy.PlayRequest(open=apb.PlayOpen(game_id=self.game_id,
                                                               from_version=self.version)))
            self.answers[seat] = asyncio.Queue()
            self.calls.append(call)
            self.readers.append(asyncio.create_task(self.read(seat, call)))

    async def read(self, seat: int, call: Any) -> None:
        async for message in call:
            if message.HasField("answer"):
                self.answers[seat].put_nowait(message.answer)

    async def play(self) -> None:
        seat = self.turn
        await self.calls[seat].write(toy.PlayRequest(act=self.command()))
        answer = await self.answers[seat].get()
        if answer.HasField("error"):
            raise RuntimeError(f"a move was refused: {answer.error.message}")
        self.version, self.turn = answer.version, 1 - self.turn
        self.moves += 1

    async def close_streams(self) -> None:
        for call in self.calls:
            call.cancel()
        await asyncio.gather(*self.readers, return_exceptions=True)
        self.calls, self.readers = [], []

    async def close(self) -> None:
        await self.close_streams()
        await self.channel.close()


class StackClient(Client):
    """A client of loadtests/stack_server.py's `Play`: the same moves, with Play's traffic
    (a stream per seat, a push to both seats per move) and nothing of Arbiter behind it."""

    async def new_game(self) -> None:
        self.game_id, self.version, self.turn = f"g{id(self)}", 0, 0

    async def open_streams(self) -> None:
        play = self.channel.stream_stream(f"/{stack_server.SERVICE}/{stack_server.PLAY_METHOD}")
        for seat in (0, 1):
            call = play()
            await call.write(f"{self.game_id} {seat}".encode())
            self.answers[seat] = asyncio.Queue()
            self.calls.append(call)
            self.readers.append(asyncio.create_task(self.read(seat, call)))

    async def read(self, seat: int, call: Any) -> None:
        async for message in call:
            if message == b"%d" % seat:  # the push of this seat's own move: its answer
                self.answers[seat].put_nowait(message)

    async def play(self) -> None:
        seat = self.turn
        await self.calls[seat].write(b"%d" % seat)
        await self.answers[seat].get()
        self.turn = 1 - seat
        self.moves += 1


@contextlib.asynccontextmanager
async def stack_serving(redis_url: str) -> AsyncIterator[tuple[str, int, int | None]]:
    """loadtests/stack_server.py (its Play appends to Redis, or nothing without a url)."""
    port = free_ports(1)[0]
    redis_pid = redis_pid_of(redis_url)
    server = subprocess.Popen([sys.executable, "-m", "loadtests.stack_server", str(port),
                               redis_url], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            if server.poll() is not None:
                raise RuntimeError(f"the stack server exited with {server.returncode}")
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            await asyncio.sleep(0.05)
        yield f"127.0.0.1:{port}", server.pid, redis_pid
    finally:
        stop(server)


async def bench_stack_play(redis_url: str, rounds: int) -> list[dict[str, Any]]:
    """The floor of a Play move: `rounds` windows of moves on the stack server's Play."""
    async with stack_serving(redis_url) as (address, server_pid, redis_pid):
        clients = [StackClient(address) for _ in range(CLIENTS)]
        try:
            for c in clients:
                await c.new_game()
                await c.open_streams()
            noop = f"/{stack_server.SERVICE}/{stack_server.NOOP_METHOD}"
            return [{"stack_play": await measure("play", clients, server_pid, redis_pid),
                     "stack_noop_alone": await alone(address, noop, server_pid)}
                    for _ in range(rounds)]
        finally:
            for c in clients:
                await c.close()


async def alone(address: str, method: str, server_pid: int) -> dict[str, Any]:
    """Server CPU per call of `method` (empty request and answer) when the calls come one at a
    time, ALONE_RATE a second, open loop: each wakes the server on its own, as the calls of a
    realistic mix do, where a crowd of clients shares every wakeup."""
    async with grpc.aio.insecure_channel(address) as channel:
        call = channel.unary_unary(method)
        for _ in range(20):
            await call(b"")
        n = max(1, int(ALONE_RATE * SECONDS))
        cpu0, t0 = cpu_seconds(server_pid), time.perf_counter()
        pending = []
        for i in range(n):
            delay = t0 + i / ALONE_RATE - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            pending.append(asyncio.ensure_future(call(b"")))
        await asyncio.gather(*pending)
        return {"calls_per_s": round(n / (time.perf_counter() - t0), 1),
                "server_cpu_ms_per_move": round((cpu_seconds(server_pid) - cpu0) * 1000 / n, 4)}


async def run_loops(clients: list[Client], step: Callable[[Client], Awaitable[None]],
                    stop: asyncio.Event) -> None:
    async def loop(c: Client) -> None:
        while not stop.is_set():
            await step(c)

    await asyncio.gather(*(loop(c) for c in clients))


async def measure(kind: str, clients: list[Client], server_pid: int, redis_pid: int | None
                  ) -> dict[str, Any]:
    """Per move of `kind` (ping, act or play): server CPU, redis-server CPU, system calls."""
    step: Callable[[Client], Awaitable[None]] = {
        "ping": lambda c: c.ping(), "act": lambda c: c.act(), "play": lambda c: c.play()}[kind]
    stop = asyncio.Event()
    running = asyncio.create_task(run_loops(clients, step, stop))
    try:
        await asyncio.sleep(WARM_UP_SECONDS)
        moves0 = sum(c.moves for c in clients)
        cpu0, rcpu0, t0 = cpu_seconds(server_pid), redis_cpu(redis_pid), time.perf_counter()
        counter = SyscallCounter(server_pid)
        await asyncio.sleep(SECONDS)
        syscalls = counter.stop()
        moves = sum(c.moves for c in clients) - moves0
        cpu, rcpu = cpu_seconds(server_pid) - cpu0, redis_cpu(redis_pid) - rcpu0
        elapsed = time.perf_counter() - t0
        strace = Strace(server_pid) if STRACE and shutil.which("strace") else None
        moves1 = sum(c.moves for c in clients)
        await asyncio.sleep(STRACE_SECONDS if strace else 0)
        traced = strace.stop() if strace else {}
        traced_moves = sum(c.moves for c in clients) - moves1
    finally:
        stop.set()
        await running
    out: dict[str, Any] = {
        "moves_per_s": round(moves / elapsed),
        "server_cpu_ms_per_move": round(cpu * 1000 / moves, 4),
        "syscalls_per_move": round(syscalls / moves, 2) if syscalls is not None else None,
    }
    if redis_pid is not None:
        out["redis_cpu_ms_per_move"] = round(rcpu * 1000 / moves, 4)
    if traced and traced_moves:
        out["strace_syscalls_per_move"] = round(traced.get("total", 0) / traced_moves, 2)
        out["strace_top_per_move"] = {
            name: round(n / traced_moves, 2) for name, n in
            sorted(((k, v) for k, v in traced.items() if k != "total"),
                   key=lambda kv: -kv[1])[:8]}
    return out


def redis_cpu(pid: int | None) -> float:
    return cpu_seconds(pid) if pid is not None else 0.0


# ---- one server -----------------------------------------------------------------------------


async def wait_serving(address: str, server: subprocess.Popen[bytes]) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        ping = channel.unary_unary("/arbiter.v1.Arbiter/Ping",
                                   request_serializer=apb.PingRequest.SerializeToString,
                                   response_deserializer=apb.PingResponse.FromString)
        for _ in range(600):
            if server.poll() is not None:
                raise RuntimeError(f"the bench server exited with {server.returncode}")
            try:
                await ping(apb.PingRequest(), timeout=1)
                return
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.05)
    raise RuntimeError("the bench server did not answer in 30 s")


def redis_pid_of(redis_url: str) -> int | None:
    """The redis-server's pid (for its CPU), None without Redis."""
    if not redis_url:
        return None
    r = redis_sync.Redis.from_url(redis_url)
    pid = int(r.info("server")["process_id"])
    r.close()
    return pid


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()


@contextlib.asynccontextmanager
async def serving(redis_url: str, extra_env: dict[str, str]
                  ) -> AsyncIterator[tuple[str, int, int | None]]:
    """A toy server on the embedded store ("" redis_url) or Redis, answering: its address,
    its pid and the redis-server's (None on the embedded store)."""
    port, metrics_port = free_ports(2)
    address = f"127.0.0.1:{port}"
    data_dir = tempfile.mkdtemp(prefix="bench-moves-")
    env = dict(os.environ, ARBITER_GRPC_ADDR=address, ARBITER_HTTP_ADDR="",
               ARBITER_METRICS_ADDR=f"127.0.0.1:{metrics_port}", ARBITER_DATA_DIR=data_dir,
               ARBITER_REDIS_URL=redis_url, ARBITER_BROKER_URL="", PYTHONPATH=ROOT,
               ARBITER_RATE_BURST="1000000", ARBITER_RATE_PER_SECOND="1000000",
               # 32 clients on one address: the command rates are not what is measured; nor
               # is fsync, whose cost loadtests/fsync_cost.py measures on its own.
               ARBITER_COMMAND_RATE="0", ARBITER_SEAT_COMMAND_RATE="0", ARBITER_FSYNC="0")
    if redis_url:  # as deployed: projections and deadlines in their own processes
        env.update(ARBITER_PROJECTIONS="external", ARBITER_DEADLINES="external")
    env.update(extra_env)
    redis_pid = redis_pid_of(redis_url)
    server = subprocess.Popen([sys.executable, "-m", "loadtests.toy_server"], env=env,
                              cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await wait_serving(address, server)
        yield address, server.pid, redis_pid
    finally:
        stop(server)
        shutil.rmtree(data_dir, ignore_errors=True)


async def bench_server(redis_url: str, extra_env: dict[str, str], rounds: int
                       ) -> list[dict[str, Any]]:
    """Run `rounds` rounds of (Ping, Act, Play) on a fresh server; one dict per round."""
    async with serving(redis_url, extra_env) as (address, server_pid, redis_pid):
        clients = [Client(address) for _ in range(CLIENTS)]
        try:
            for c in clients:
                await c.new_game()
            results = []
            for _ in range(rounds):
                figures = {"ping": await measure("ping", clients, server_pid, redis_pid),
                           "act": await measure("act", clients, server_pid, redis_pid),
                           "ping_alone": await alone(address, "/arbiter.v1.Arbiter/Ping",
                                                     server_pid)}
                for c in clients:
                    await c.open_streams()
                figures["play"] = await measure("play", clients, server_pid, redis_pid)
                for c in clients:  # reopened next round: Act is measured without them
                    await c.close_streams()
                results.append(figures)
            return results
        finally:
            for c in clients:
                await c.close()


def medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind and figure, the median over the rounds (the strace mix: the last round's)."""
    out: dict[str, Any] = {}
    for kind in rounds[0]:
        out[kind] = {}
        for key, value in rounds[-1][kind].items():
            values = [r[kind][key] for r in rounds if r[kind].get(key) is not None]
            if isinstance(value, (int, float)) and values:
                out[kind][key] = round(statistics.median(values), 4)
            else:
                out[kind][key] = value
    for kind in out:
        for key in ("server_cpu_ms_per_move", "syscalls_per_move"):
            for floor in ("ping", "stack_play"):
                if out[kind].get(key) is not None and out.get(floor, {}).get(key):
                    out[kind][key.replace("_per_move", f"_vs_{floor}")] = round(
                        out[kind][key] / out[floor][key], 2)
    return out


def stores() -> list[tuple[str, str]]:
    redis_url = os.environ.get("ARBITER_BENCH_REDIS_URL") or os.environ.get(
        "ARBITER_TEST_REDIS_URL", "")
    return [("embedded", ""), *([("redis", redis_url)] if redis_url else [])]


def run() -> dict[str, Any]:
    """The per-move table, merged into `make bench`'s results."""
    out: dict[str, Any] = {"clients": CLIENTS, "seconds_per_window": SECONDS, "rounds": ROUNDS}
    for name, url in stores():
        rounds = asyncio.run(bench_server(url, {}, ROUNDS))
        # The floor beside it: Play's traffic with nothing of Arbiter (with the bare append
        # on Redis, no store at all for the embedded store's row).
        floors = asyncio.run(bench_stack_play(url, ROUNDS))
        out[name] = medians([{**r, **f} for r, f in zip(rounds, floors, strict=True)])
    if "redis" not in out:
        out["note"] = "no ARBITER_TEST_REDIS_URL: the Redis figures were not measured"
    return out


async def ab_pairs(url: str, variants: dict[str, dict[str, str]], rounds: int
                   ) -> dict[str, Any]:
    """Every variant's server up at once, measured in turn, window after window: each
    variant's ratio to the first (the base) is taken round by round, against the base's
    window just before, so that a stall of the shared machine falls on both sides of one
    ratio; the medians of those ratios."""
    kinds = ("ping", "act", "play")
    async with contextlib.AsyncExitStack() as stack:
        servers = {name: await stack.enter_async_context(serving(url, env))
                   for name, env in variants.items()}
        clients = {name: [Client(address) for _ in range(CLIENTS)]
                   for name, (address, _, _) in servers.items()}
        try:
            for group in clients.values():
                for c in group:
                    await c.new_game()
            figures: dict[str, dict[str, list[dict[str, Any]]]] = {
                name: {k: [] for k in kinds} for name in variants}
            for kind in kinds:
                if kind == "play":
                    for group in clients.values():
                        for c in group:
                            await c.open_streams()
                for _ in range(rounds):
                    for name, (_, pid, redis_pid) in servers.items():
                        figures[name][kind].append(
                            await measure(kind, clients[name], pid, redis_pid))
        finally:
            for group in clients.values():
                for c in group:
                    await c.close()
    base = next(iter(variants))
    out: dict[str, Any] = {}
    for name in variants:
        out[name] = {}
        for kind in kinds:
            mine, theirs = figures[name][kind], figures[base][kind]
            out[name][kind] = {
                key: round(statistics.median(f[key] for f in mine), 4)
                for key in ("moves_per_s", "server_cpu_ms_per_move", "syscalls_per_move")
                if all(f.get(key) is not None for f in mine)}
            for key in ("server_cpu_ms_per_move", "syscalls_per_move"):
                if all(f.get(key) for f in mine + theirs):
                    ratios = [m[key] / t[key] for m, t in zip(mine, theirs, strict=True)]
                    out[name][kind][key.replace("_per_move", "_vs_" + base)] = round(
                        statistics.median(ratios), 3)
    return out


def run_ab(variants: dict[str, dict[str, str]], rounds: int) -> dict[str, Any]:
    return {store: asyncio.run(ab_pairs(url, variants, rounds)) for store, url in stores()}


def table(out: dict[str, Any]) -> str:
    """The per-move table in markdown: server CPU (+ redis-server's) and system calls per
    move, Ping beside."""
    lines = ["| 32 clients, moves only | server CPU per move | syscalls per move |",
             "|---|---|---|"]
    for store in ("embedded", "redis"):
        for kind in ("ping", "act", "play", "stack_play") if store in out else ():
            f = out[store][kind]
            redis = (f" (+{f['redis_cpu_ms_per_move']:.3f} redis)"
                     if "redis_cpu_ms_per_move" in f else "")
            calls = f.get("syscalls_per_move") or f.get("strace_syscalls_per_move")
            name = "Play's floor (stack server)" if kind == "stack_play" else kind.capitalize()
            lines.append(f"| {name}, {store} | {f['server_cpu_ms_per_move']:.3f} ms"
                         f"{redis}, {f['server_cpu_ms_vs_ping']}x Ping, "
                         f"{f.get('server_cpu_ms_vs_stack_play')}x floor | {calls} |")
    lines += ["", f"| calls one at a time ({ALONE_RATE:.0f}/s) | server CPU per call | |",
              "|---|---|---|"]
    for store in ("embedded", "redis"):
        for kind, name in (("ping_alone", "Ping"), ("stack_noop_alone", "bare grpc.aio no-op")):
            f = out.get(store, {}).get(kind)
            if f:
                lines.append(f"| {name}, {store} | {f['server_cpu_ms_per_move']:.3f} ms, "
                             f"{f['server_cpu_ms_vs_ping']}x Ping in a crowd | |")
    return "\n".join(lines)


# Where the profiled thread's own time is counted, by the file its functions are in.
PROFILE_BUCKETS = {  # the first that matches
    "the API layer (its awaits on gRPC included)": "services/core/grpc_api.py",
    # grpc.aio's Cython runs as the loop's callbacks: cProfile sees it as Context.run.
    "gRPC (grpc.aio, cygrpc)": "grpc", "gRPC's Cython (the loop's Context.run)": "Context",
    "the store": "services/core/store.py",
    "Redis client": "/redis/", "the live hub": "services/core/live.py",
    "the host": "services/core/host.py", "reads": "services/core/reads.py",
    "metrics": "prometheus_client",
    "projections and read models": "services/workers/", "the event loop": "asyncio",
    "protobuf": "protobuf", "the rules": "services/toy/", "the game log": "services/core/log.py",
    "what happened (words)": "services/core/happened.py"}


async def profile(kind: str, store_url: str, seconds: float) -> dict[str, Any]:
    """cProfile on the server's event-loop thread (where all its Python runs; gRPC's C-core
    threads are not seen), in that thread's CPU time, while `kind` runs: the share of its own
    time per part of the stack,
    and the 15 functions with the most time of their own (cProfile's overhead inflates
    Python-heavy parts: read the shares as an order, not as figures)."""
    import pstats

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "server.prof")
        async with serving(store_url, {"BENCH_CPROFILE": path}) as (address, server_pid, _):
            clients = [Client(address) for _ in range(CLIENTS)]
            for c in clients:
                await c.new_game()
                if kind == "play":
                    await c.open_streams()
            stop = asyncio.Event()
            running = asyncio.create_task(run_loops(clients, getattr(Client, kind), stop))
            await asyncio.sleep(WARM_UP_SECONDS)
            os.kill(server_pid, signal.SIGUSR1)
            await asyncio.sleep(seconds)
            os.kill(server_pid, signal.SIGUSR2)
            stop.set()
            await running
            for c in clients:
                await c.close()
            for _ in range(100):
                if os.path.exists(path):
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)  # the file is written whole
        if os.environ.get("BENCH_MOVES_PROFILE_OUT"):  # kept for pstats
            shutil.copy(path, os.environ["BENCH_MOVES_PROFILE_OUT"])
        stats = pstats.Stats(path).stats  # type: ignore[attr-defined]
    own: dict[str, float] = {}
    buckets = dict.fromkeys([*PROFILE_BUCKETS, "other"], 0.0)
    for (filename, line, name), (_, _, tottime, _, _) in stats.items():
        key = f"{os.path.basename(filename)}:{line}({name})" if line else name
        own[key] = own.get(key, 0.0) + tottime
        bucket = next((b for b, where in PROFILE_BUCKETS.items()
                       if where in filename or where in name), "other")
        buckets[bucket] += tottime
    total = sum(own.values())
    return {"profiled_seconds": round(total, 2),
            "own_time_percent": {k: round(100 * v / total, 1) for k, v in
                                 sorted(buckets.items(), key=lambda kv: -kv[1])},
            "top_functions_percent": {k: round(100 * v / total, 1) for k, v in
                                      sorted(own.items(), key=lambda kv: -kv[1])[:15]}}


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, assignments = text.partition("=")
    # Variables are split at a comma before NAME=, so that a value may hold commas.
    env = dict(a.split("=", 1) for a in re.split(r",(?=[A-Z_]+=)", assignments) if "=" in a)
    return name, env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ab", nargs="+", metavar="NAME=VAR=VALUE[,VAR=VALUE]",
                        help="compare variants of the server's environment (the first is the "
                             "base; NAME= alone: the environment as it is)")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--profile", choices=["ping", "act", "play"],
                        help="instead: profile the server (cProfile) while this runs")
    parser.add_argument("--store", choices=["embedded", "redis"], default="embedded")
    args = parser.parse_args()
    if args.profile:
        result = asyncio.run(profile(args.profile, dict(stores()).get(args.store, ""),
                                     SECONDS))
    elif args.ab:
        result = run_ab(dict(parse_variant(v) for v in args.ab), args.rounds)
    else:
        result = run()
    print(json.dumps(result, indent=2))
    if not args.ab and not args.profile:
        print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
