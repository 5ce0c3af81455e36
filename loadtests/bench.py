"""`make bench`: the pure Bubblee core, and Act over gRPC beside its baselines, in one run.

    core        random self-play through decide + evolve (services/bubblee/tools/selfplay.py)
    act         Act over gRPC on a server backed by Redis, at 1 and 32 concurrent clients
    noop        Ping on the same server, same client, same concurrency (the RPC floor)
    floor       the bare Redis append script from the same client process (the store floor)
    stack       a gRPC call whose handler runs only that append script (loadtests/stack_server.py):
                the least an Act can cost in grpcio + redis-py, whatever the rules do
    act_poll    Act, then the two calls polling clients need to learn what Play pushes (the
                other seat's GetView, the legal commands of the seat to act), timed as one
    session     commands over Play, at 1 and 32 clients, each playing its own game on two
                streams (one per seat, as two players would): a command's time is from
                writing it to reading its answer; the streams also carry every push (the
                other seat's view and legal commands)
    stack_stream  a bidirectional stream whose handler only runs the append script per
                message: the least a command over Play can cost
    moves       the per-move cost (loadtests/bench_moves.py): "take the last counter", 32
                clients, Act and Play, embedded store and Redis: server CPU and system calls
                per move beside Ping's

The machine is shared and noisy: compare the ratios, measured in the same run, not absolute
figures. Writes loadtests/results/latest.json and prints it.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import secrets
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import redis.asyncio as aioredis
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from loadtests import stack_server
from services import games as registry
from services.bubblee.tools.selfplay import play_random_games
from services.core import log as gamelog
from services.core.decider import Rng
from services.core.redis_store import APPEND

RESULTS = os.path.join(os.path.dirname(__file__), "results", "latest.json")
SECONDS = float(os.environ.get("BENCH_SECONDS", "4"))
SERVER_PROCESSES = int(os.environ.get("BENCH_SERVER_PROCESSES", "1"))
GAME = "/arbiter.bubblee.v1.Game/"
# The client reads a running game's log to follow it; the server refuses a short token.
ADMIN_TOKEN = f"bench-{secrets.token_hex(16)}"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0.0


def bench_core() -> dict[str, Any]:
    result = play_random_games(0)
    games = 0
    started = time.perf_counter()
    while time.perf_counter() - started < SECONDS:
        r = play_random_games(50, seed=games)
        games += r.games
        result.turns += r.turns
        result.turn_micros += r.turn_micros
        result.cascade_depths += r.cascade_depths
        result.commands += r.commands
    depths = Counter(result.cascade_depths)
    return {
        "core_games": games,
        "core_turns": result.turns,
        "core_turns_per_s": round(result.turns_per_second),
        "core_turn_p50_us": round(statistics.median(result.turn_micros), 1),
        "core_turn_p99_us": round(percentile(result.turn_micros, 0.99), 1),
        "core_cascade_depth": {str(k): depths[k] for k in sorted(depths)},
    }


# ---- over the network -----------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used (/proc), so work per operation can be compared on a
    noisy machine."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """n distinct free ports, chosen together (one at a time, a port handed out for a server
    that has not bound it yet could be handed out again)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


async def timed_loop(clients: int, step: Callable[[int], Awaitable[Any]],
                     untimed: Callable[[int], Awaitable[None]] | None = None
                     ) -> dict[str, float]:
    """Run `clients` loops of `step` (then `untimed`) for SECONDS: step latencies, step rate."""
    latencies: list[float] = []
    stop = time.perf_counter() + SECONDS

    async def loop(n: int) -> None:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            await step(n)
            latencies.append(time.perf_counter() - t0)
            if untimed is not None:
                await untimed(n)

    t0 = time.perf_counter()
    await asyncio.gather(*(loop(n) for n in range(clients)))
    elapsed = time.perf_counter() - t0
    return {"per_s": len(latencies) / elapsed,
            "p50_ms": percentile(latencies, 0.50) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000}


class Player:
    """One client playing its own game; it follows the game locally from the events it gets
    back, so choosing a legal command costs no extra RPC (and is not timed)."""

    game = registry.game("bubblee")

    def __init__(self, channel: grpc.aio.Channel, n: int) -> None:
        self.channel, self.rng = channel, Rng(b"bench-player", n)
        self.create = channel.unary_unary(
            GAME + "CreateGame", request_serializer=bpb.CreateGameRequest.SerializeToString,
            response_deserializer=apb.CreateGameResponse.FromString)
        self.export = channel.unary_unary(
            "/arbiter.v1.Arbiter/ExportLog",
            request_serializer=apb.ExportLogRequest.SerializeToString,
            response_deserializer=apb.ExportLogResponse.FromString)
        self.act_rpc = channel.unary_unary(
            GAME + "Act", request_serializer=bpb.ActRequest.SerializeToString,
            response_deserializer=bpb.ActResponse.FromString)
        self.next_command: bpb.ActRequest | None = None
        self.tokens: dict[int, str] = {}

    async def new_game(self) -> None:
        seats = [apb.Seat(name="a"), apb.Seat(name="b")]
        created = await self.create(bpb.CreateGameRequest(seats=seats))
        self.game_id, self.tokens = created.game_id, {t.seat: t.token for t in created.tokens}
        lines = (await self.export(apb.ExportLogRequest(game_id=created.game_id),
                                   metadata=(("x-admin-token", ADMIN_TOKEN),))).lines
        entries = gamelog.from_json_lines(self.game, list(lines))
        self.state = self.game.replay([gamelog.game_event(self.game, e) for e in entries
                                       if e.WhichOneof("body") == "event"])
        self.version = created.version

    async def prepare(self) -> None:
        if not self.tokens or self.game.outcome(self.state) is not None:
            await self.new_game()
        self.seat = self.game.to_act(self.state)[0]
        command = self.rng.choice(self.game.legal_actions(self.state, self.seat))
        self.request = bpb.ActRequest(game_id=self.game_id, command=command,
                                      expected_version=self.version,
                                      command_id=f"{self.game_id}:{self.version}")

    async def act(self) -> None:
        reply = await self.act_rpc(self.request,
                                   metadata=(("x-seat-token", self.tokens[self.seat]),))
        for event in reply.events:
            self.state = self.game.evolve(self.state, event)
        self.version = reply.version


class PollingPlayer(Player):
    """A Player whose Act is followed by what polling clients need to learn what Play pushes:
    the other seat's view (GetView) and the legal commands of the seat to act next
    (ListLegalActions), both players asking at once. The three calls are timed as one."""

    def __init__(self, channel: grpc.aio.Channel, n: int) -> None:
        super().__init__(channel, n)
        self.get_view = channel.unary_unary(
            GAME + "GetView", request_serializer=apb.GetViewRequest.SerializeToString,
            response_deserializer=bpb.View.FromString)
        self.list_legal = channel.unary_unary(
            GAME + "ListLegalActions",
            request_serializer=apb.ListLegalActionsRequest.SerializeToString,
            response_deserializer=bpb.LegalActions.FromString)

    async def act(self) -> None:
        await super().act()
        other = 1 - self.seat
        to_act = self.game.to_act(self.state) if self.game.outcome(self.state) is None else []
        asks = [self.get_view(apb.GetViewRequest(game_id=self.game_id),
                              metadata=(("x-seat-token", self.tokens[other]),))]
        if to_act:
            asks.append(self.list_legal(apb.ListLegalActionsRequest(game_id=self.game_id),
                                        metadata=(("x-seat-token", self.tokens[to_act[0]]),)))
        await asyncio.gather(*asks)


class SessionPlayer:
    """One client playing its own game over Play, a stream per seat. It picks its next command
    from the legal commands the server pushed (not timed), as a Play client does."""

    def __init__(self, channel: grpc.aio.Channel, n: int) -> None:
        self.channel, self.rng = channel, Rng(b"bench-session", n)
        self.create = channel.unary_unary(
            GAME + "CreateGame", request_serializer=bpb.CreateGameRequest.SerializeToString,
            response_deserializer=apb.CreateGameResponse.FromString)
        self.play = channel.stream_stream(
            GAME + "Play", request_serializer=bpb.PlayRequest.SerializeToString,
            response_deserializer=bpb.PlayResponse.FromString)
        self.calls: dict[int, Any] = {}
        self.readers: list[asyncio.Task[None]] = []
        self.errors = 0

    async def new_game(self) -> None:
        await self.close()
        created = await self.create(bpb.CreateGameRequest(
            seats=[apb.Seat(name="a"), apb.Seat(name="b")]))
        self.game_id, self.version, self.over = created.game_id, created.version, False
        self.legal: dict[int, tuple[int, Any]] = {}
        self.changed, self.answered = asyncio.Event(), asyncio.Event()
        for t in created.tokens:
            call = self.play(metadata=(("x-seat-token", t.token),))
            await call.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=created.game_id,
                                                               from_version=created.version)))
            self.calls[t.seat] = call
            self.readers.append(asyncio.create_task(self.read(t.seat, call)))

    async def read(self, seat: int, call: Any) -> None:
        async for message in call:
            if message.HasField("answer"):
                self.errors += message.answer.HasField("error")
                self.answered.set()
            self.version = max(self.version, message.view.version)
            self.legal[seat] = (message.view.version, message.legal.commands
                                if message.HasField("legal") else None)
            self.over = self.over or message.view.HasField("outcome")
            self.changed.set()

    async def prepare(self) -> None:
        if not self.calls or self.over:
            await self.new_game()
        while True:
            ready = [(s, c) for s, (v, c) in self.legal.items() if c and v == self.version]
            if ready:
                break
            self.changed.clear()
            await self.changed.wait()
        self.seat, commands = ready[0]
        self.request = bpb.PlayRequest(act=bpb.ActRequest(
            command=self.rng.choice(commands), expected_version=self.version,
            command_id=f"{self.game_id}:{self.version}"))

    async def act(self) -> None:
        self.answered.clear()
        await self.calls[self.seat].write(self.request)
        await self.answered.wait()

    async def close(self) -> None:
        for call in self.calls.values():
            call.cancel()
        await asyncio.gather(*self.readers, return_exceptions=True)
        self.calls, self.readers = {}, []


def server_means(metrics_url: str) -> dict[str, tuple[float, float]]:
    """(sum, count) of the server's own Act timings: the whole handler, and the append."""
    text = urllib.request.urlopen(metrics_url, timeout=5).read().decode()
    wanted = {"handler": ("grpc_server_handling_seconds", 'grpc_method="Act"'),
              "append": ("arbiter_append_seconds", 'game="bubblee"')}
    out = {}
    for key, (name, label) in wanted.items():
        total = count = 0.0
        for line in text.splitlines():
            if label in line and line.startswith(name + "_sum"):
                total += float(line.split()[-1])
            elif label in line and line.startswith(name + "_count"):
                count += float(line.split()[-1])
        out[key] = (total, count)
    return out


async def bench_server(redis_url: str) -> dict[str, Any]:
    port, metrics_port, stack_port = free_ports(3)
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    env = dict(os.environ, ARBITER_REDIS_URL=redis_url, ARBITER_GRPC_ADDR=f"127.0.0.1:{port}",
               ARBITER_METRICS_ADDR=f"127.0.0.1:{metrics_port}", ARBITER_GAMES="bubblee",
               ARBITER_ADMIN_TOKEN=ADMIN_TOKEN, ARBITER_GRPC_REUSE_PORT="1", ARBITER_HTTP_ADDR="",
               # As deployed: projection workers run in their own processes.
               ARBITER_PROJECTIONS="external", ARBITER_DEADLINES="external",
               # One client process creates every game and plays every seat: the per-client
               # and per-seat buckets are not measured.
               ARBITER_RATE_BURST="1000000", ARBITER_RATE_PER_SECOND="1000000",
               ARBITER_COMMAND_RATE="0", ARBITER_SEAT_COMMAND_RATE="0")
    # Several server processes may share the port (asked for above); the store keeps them
    # honest.
    servers = [subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for _ in range(SERVER_PROCESSES)]
    stack_process = subprocess.Popen(
        [sys.executable, "-m", "loadtests.stack_server", str(stack_port), redis_url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers.append(stack_process)
    out: dict[str, Any] = {"server_processes": SERVER_PROCESSES}
    redis = aioredis.Redis.from_url(redis_url)
    append = redis.register_script(APPEND)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel, \
                grpc.aio.insecure_channel(f"127.0.0.1:{stack_port}") as stack_channel:
            ping = channel.unary_unary("/arbiter.v1.Arbiter/Ping",
                                       request_serializer=apb.PingRequest.SerializeToString,
                                       response_deserializer=apb.PingResponse.FromString)
            stack = stack_channel.unary_unary(f"/{stack_server.SERVICE}/{stack_server.METHOD}")
            stack_stream = stack_channel.stream_stream(
                f"/{stack_server.SERVICE}/{stack_server.STREAM_METHOD}")
            await ready(ping, apb.PingRequest())
            await ready(stack, b"0")
            for clients in (1, 32):
                before = server_means(metrics_url)
                out.update(await measure(channel, ping, append, stack, stack_stream, clients,
                                         servers[0].pid, stack_process.pid))
                after = server_means(metrics_url)
                # Where an Act's time goes, as the server itself measured it.
                for key, (total, count) in after.items():
                    spent, n = total - before[key][0], count - before[key][1]
                    out[f"act_{clients}"][f"server_{key}_mean_ms"] = round(spent / n * 1000, 3)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)
        for pattern in (f"{{bench-floor-{os.getpid()}-*", f"{{bench-stack-{stack_process.pid}-*"):
            async for key in redis.scan_iter(match=pattern):
                await redis.delete(key)
        await redis.aclose()
    return out


async def ready(rpc: Any, request: Any) -> None:
    """Wait for a server that was just started to answer."""
    for _ in range(300):
        try:
            await rpc(request, timeout=1)
            return
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.05)


async def measure(channel: grpc.aio.Channel, ping: Any, append: Any, stack: Any,
                  stack_stream: Any, clients: int, server_pid: int, stack_pid: int
                  ) -> dict[str, Any]:
    """Act, the no-op RPC, the bare append, the stack's least Act, commands over Play and the
    stack's least streamed command, at `clients` clients."""
    out: dict[str, Any] = {}
    players = [Player(channel, n) for n in range(clients)]
    for p in players:
        await p.prepare()

    async def act(n: int) -> None:
        await players[n].act()

    # Choosing the next command is client work: keep it out of the Act timing.
    async def after_act(n: int) -> None:
        await players[n].prepare()

    cpu, mine = cpu_seconds(server_pid), cpu_seconds(os.getpid())
    act_figures = await timed_loop(clients, act, after_act)
    act_cpu, act_client_cpu = cpu_seconds(server_pid) - cpu, cpu_seconds(os.getpid()) - mine
    out[f"act_{clients}"] = {"act_per_s": round(act_figures["per_s"]),
                             "act_p50_ms": round(act_figures["p50_ms"], 3),
                             "act_p99_ms": round(act_figures["p99_ms"], 3),
                             # The server's CPU per Act (the other server work of a game, such
                             # as creating new ones, is in it too: the same for both).
                             "server_cpu_ms_per_act": round(
                                 act_cpu * 1000 / (act_figures["per_s"] * SECONDS), 3),
                             "client_cpu_ms_per_act": round(
                                 act_client_cpu * 1000 / (act_figures["per_s"] * SECONDS), 3)}
    pollers = [PollingPlayer(channel, n) for n in range(clients)]
    for poller in pollers:
        await poller.prepare()

    async def poll_step(n: int) -> None:
        await pollers[n].act()

    async def after_poll_step(n: int) -> None:
        await pollers[n].prepare()

    cpu = cpu_seconds(server_pid)
    polled = await timed_loop(clients, poll_step, after_poll_step)
    out[f"act_poll_{clients}"] = {
        "commands_per_s": round(polled["per_s"]), "p50_ms": round(polled["p50_ms"], 3),
        "p99_ms": round(polled["p99_ms"], 3), "server_cpu_ms_per_command": round(
            (cpu_seconds(server_pid) - cpu) * 1000 / (polled["per_s"] * SECONDS), 3)}
    noop = await timed_loop(clients, lambda n: ping(apb.PingRequest()))
    out[f"noop_{clients}"] = {"noop_per_s": round(noop["per_s"]),
                              "noop_p99_ms": round(noop["p99_ms"], 3)}
    versions = [0] * clients
    payload = [b"x" * 60] * 4  # a typical Act batch: four small entries

    async def floor_step(n: int) -> None:
        key = f"bench-floor-{os.getpid()}-{clients}-{n}"
        keys = [f"{{{key}}}:log", f"{{{key}}}:cmd", f"{{{key}}}:meta", f"{{{key}}}:feed"]
        await append(keys=keys, args=[versions[n], f"c{versions[n]}", key, len(payload),
                                      *payload])
        versions[n] += len(payload)

    floor = await timed_loop(clients, floor_step)
    out[f"floor_{clients}"] = {"floor_append_per_s": round(floor["per_s"]),
                               "floor_append_p99_ms": round(floor["p99_ms"], 3)}
    cpu = cpu_seconds(stack_pid)
    least = await timed_loop(clients, lambda n: stack(b"%d" % n))
    stack_cpu = cpu_seconds(stack_pid) - cpu
    out[f"stack_{clients}"] = {"rpc_append_per_s": round(least["per_s"]),
                               "rpc_append_p99_ms": round(least["p99_ms"], 3),
                               "server_cpu_ms_per_call": round(
                                   stack_cpu * 1000 / (least["per_s"] * SECONDS), 3)}
    sessions = [SessionPlayer(channel, n) for n in range(clients)]
    for p in sessions:
        await p.prepare()

    async def session_step(n: int) -> None:
        await sessions[n].act()

    async def after_session_step(n: int) -> None:
        await sessions[n].prepare()

    cpu, mine = cpu_seconds(server_pid), cpu_seconds(os.getpid())
    played = await timed_loop(clients, session_step, after_session_step)
    session_cpu, client_cpu = cpu_seconds(server_pid) - cpu, cpu_seconds(os.getpid()) - mine
    errors = sum(p.errors for p in sessions)
    for p in sessions:
        await p.close()
    out[f"session_{clients}"] = {"session_per_s": round(played["per_s"]),
                                 "session_p50_ms": round(played["p50_ms"], 3),
                                 "session_p99_ms": round(played["p99_ms"], 3),
                                 "session_errors": errors,
                                 "server_cpu_ms_per_command": round(
                                     session_cpu * 1000 / (played["per_s"] * SECONDS), 3),
                                 "client_cpu_ms_per_command": round(
                                     client_cpu * 1000 / (played["per_s"] * SECONDS), 3)}
    streams = [stack_stream() for _ in range(clients)]

    async def stream_step(n: int) -> None:
        await streams[n].write(b"%d" % n)
        await streams[n].read()

    cpu = cpu_seconds(stack_pid)
    streamed = await timed_loop(clients, stream_step)
    stream_cpu = cpu_seconds(stack_pid) - cpu
    for call in streams:
        call.cancel()
    out[f"stack_stream_{clients}"] = {"stream_append_per_s": round(streamed["per_s"]),
                                      "stream_append_p99_ms": round(streamed["p99_ms"], 3),
                                      "server_cpu_ms_per_message": round(
                                          stream_cpu * 1000 / (streamed["per_s"] * SECONDS), 3)}
    a, f = out[f"act_{clients}"], out[f"floor_{clients}"]
    se, ss = out[f"session_{clients}"], out[f"stack_stream_{clients}"]
    noop, st = out[f"noop_{clients}"], out[f"stack_{clients}"]
    out[f"ratios_{clients}"] = {
        "act_vs_floor_throughput": round(a["act_per_s"] / f["floor_append_per_s"], 3),
        "act_vs_floor_p99": round(a["act_p99_ms"] / f["floor_append_p99_ms"], 3),
        "act_vs_noop_throughput": round(a["act_per_s"] / noop["noop_per_s"], 3),
        # What the stack allows: no Act can beat a call that only appends, nor a no-op.
        "act_vs_stack_throughput": round(a["act_per_s"] / st["rpc_append_per_s"], 3),
        "act_vs_stack_p99": round(a["act_p99_ms"] / st["rpc_append_p99_ms"], 3),
        "stack_vs_floor_throughput": round(st["rpc_append_per_s"] / f["floor_append_per_s"], 3),
        "noop_vs_floor_throughput": round(noop["noop_per_s"] / f["floor_append_per_s"], 3),
        # Play against Act, and against what a streamed command can cost at least.
        "session_vs_act_throughput": round(se["session_per_s"] / a["act_per_s"], 3),
        "session_vs_act_p99": round(se["session_p99_ms"] / a["act_p99_ms"], 3),
        # Against Act plus the calls that tell both players what Play pushes to them.
        "session_vs_act_poll_throughput": round(
            se["session_per_s"] / out[f"act_poll_{clients}"]["commands_per_s"], 3),
        "session_vs_act_poll_p99": round(
            se["session_p99_ms"] / out[f"act_poll_{clients}"]["p99_ms"], 3),
        "session_vs_stack_stream_throughput": round(
            se["session_per_s"] / ss["stream_append_per_s"], 3),
        "stack_stream_vs_stack_throughput": round(
            ss["stream_append_per_s"] / st["rpc_append_per_s"], 3)}
    return out


def main() -> int:
    redis_url = os.environ.get("ARBITER_BENCH_REDIS_URL") or os.environ.get(
        "ARBITER_TEST_REDIS_URL", "")
    if os.path.exists(RESULTS):
        os.remove(RESULTS)  # a failed run must not leave the last run's figures looking new
    results: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "seconds_per_measure": SECONDS,
    }
    results["core"] = bench_core()
    if redis_url:
        results["grpc_redis"] = asyncio.run(bench_server(redis_url))
    from loadtests import bench_moves

    results["moves"] = bench_moves.run()
    try:
        from loadtests import bench_workers
    except ImportError:
        pass
    else:
        results["workers"] = bench_workers.run()
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(results, f, indent=2)
    print(json.dumps(results, indent=2))
    print(bench_moves.table(results["moves"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
