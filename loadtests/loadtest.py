"""`make loadtest`: the whole topology under an open-loop load, stepped up to its knee.

For each store (one Redis, then a Redis Cluster of 3 masters and 3 replicas) and each replica
count (1, then 2 servers behind client-side round robin; then 2 behind the router of
deploy/haproxy.cfg, which sends each game's calls to one replica), it starts from nothing:

    arbiter serve  x N        ARBITER_PROJECTIONS=external, ARBITER_DEADLINES=external
    arbiter workers projections, arbiter workers deadlines
    arbiter workers ai        Celery on RabbitMQ (a vhost of its own), or Redis with --broker

and drives all five games at once. Each game has one human seat played by this process (the
others are AI seats, played by the Celery workers): the human thinks for a while once it is
its turn, then lists its legal commands and sends one. Commands arrive at a fixed rate (open
loop): each arrival takes the game that has waited longest for its human, or creates a new game
when none is waiting, so the offered rate does not bend to the server's speed. A few commands
are sent again with the same command id (the reply must be the first one), a few with a stale
expected version (the reply must be ABORTED), and a share of the games has a spectator
watching. The rate steps up until latency breaks (the knee), then runs at 50% and 80% of it.

Reports, per configuration: the knee (requests/s), Act p50/p99/p99.9 at 50% and 80% of it,
statuses by code, the servers' CPU seconds per request (from /proc), and an audit: every game's
log verifies, its versions are contiguous, and every acknowledged command is in it exactly
once. Writes loadtests/results/loadtest.json and loadtests/results/loadtest.png.

    python -m loadtests.loadtest [--step-seconds 5] [--max-rate 2000] [--broker amqp|redis]
                                 [--stores redis,cluster] [--replicas 1,2]
                                 [--routing round_robin,affinity] [--out loadtest]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import grpc
from arbiter.v1 import arbiter_pb2 as apb
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from services import games as registry
from services.core import log as gamelog
from services.core.decider import Game

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
from redis_servers import RedisServers, free_port, start_cluster, start_standalone  # noqa: E402

RESULTS = os.path.join(HERE, "results")
ADMIN = ("x-admin-token", "loadtest-" + secrets.token_hex(12))
# One human seat per game, the other seats AI (played by the Celery ai workers).
SEATS = {"bubblee": 2, "bubble_shadow": 3, "moody_bear": 3, "shadow_council": 4, "eila": 1}
THINK = (0.2, 1.0)  # seconds a human takes once it is its turn
IDLE_SECONDS = 5.0  # measuring what the servers burn before any load
LOOK_EVERY = 1.0  # seconds between two looks of a human waiting for the others
RESEND_SHARE, STALE_SHARE, WATCH_SHARE = 0.05, 0.03, 0.2
BREAK_P99_MS = 250.0  # a step whose Act p99 passes this (or that drops requests) is past the knee
CLK_TCK = os.sysconf("SC_CLK_TCK")


def status(error: grpc.aio.AioRpcError) -> str:
    """The code and, where the server gave one, its reason: RESOURCE_EXHAUSTED/OVERLOADED."""
    found = rpc_status.from_call(error)  # type: ignore[arg-type]
    for detail in found.details if found else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return f"{error.code().name}/{info.reason}"
    return error.code().name


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0.0


# ---- processes ------------------------------------------------------------------------------


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU of a process and its living descendants, from /proc."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(name)] = fields
        children.setdefault(int(fields[1]), []).append(int(name))
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            # utime, stime, cutime, cstime (fields 14-17 of stat; 11-14 after the name)
            total += sum(int(x) for x in stats[pid][11:15]) / CLK_TCK
        todo.extend(children.get(pid, []))
    return total


def scrape(port: int, names: tuple[str, ...]) -> dict[str, float]:
    """The sums of some counters (over their labels) on one process's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    sums = dict.fromkeys(names, 0.0)
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in sums:
            sums[name] += float(line.rsplit(" ", 1)[1])
    return sums


CACHE_SERIES = ("arbiter_game_loads_total", "arbiter_entries_caught_up_total")


def own_cpu_seconds() -> float:
    """This process's CPU alone (its children, the servers it started, are not in it)."""
    times = os.times()
    return times.user + times.system


@dataclass
class Topology:
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    worker_kinds: list[str] = field(default_factory=list)  # beside `workers`, one for one
    redis: list[int] = field(default_factory=list)  # the store's redis-server pids
    ports: list[int] = field(default_factory=list)
    metrics_ports: list[int] = field(default_factory=list)
    idle_cpu_per_s: dict[str, float] = field(default_factory=dict)
    router: subprocess.Popen[bytes] | None = None  # HAProxy, routing by game id
    router_port: int = 0

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far: the servers, the workers (projections, deadlines, Celery ai),
        the store's redis-servers, the router (when there is one), and this load generator;
        with the workers' share of each kind beside (`workers_ai` and so on)."""
        kinds = {f"workers_{kind}": tree_cpu_seconds(p.pid)
                 for kind, p in zip(self.worker_kinds, self.workers, strict=True)}
        return {"server": sum(tree_cpu_seconds(p.pid) for p in self.servers),
                "workers": sum(kinds.values()), **kinds,
                "redis": sum(tree_cpu_seconds(pid) for pid in self.redis),
                "router": tree_cpu_seconds(self.router.pid) if self.router else 0.0,
                "load_generator": own_cpu_seconds()}

    def cache(self) -> dict[str, float]:
        totals = dict.fromkeys(CACHE_SERIES, 0.0)
        for port in self.metrics_ports:
            for name, value in scrape(port, CACHE_SERIES).items():
                totals[name] += value
        return totals

    def stop(self) -> None:
        processes = self.servers + self.workers + ([self.router] if self.router else [])
        for p in processes:
            if p.poll() is None:
                p.terminate()
        for p in processes:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()


def arbiter(args: list[str], env: dict[str, str], log_path: str) -> subprocess.Popen[bytes]:
    log = open(log_path, "ab")
    return subprocess.Popen([sys.executable, "-m", "services.cli.main", *args], env=env,
                            stdout=log, stderr=subprocess.STDOUT)


def start_topology(redis_url: str, broker_url: str, replicas: int, logdir: str) -> Topology:
    env = dict(os.environ, ARBITER_REDIS_URL=redis_url, ARBITER_BROKER_URL=broker_url,
               ARBITER_ADMIN_TOKEN=ADMIN[1], ARBITER_PROJECTIONS="external",
               ARBITER_DEADLINES="external", PYTHONUNBUFFERED="1", ARBITER_HTTP_ADDR="",
               # One process stands in for thousands of clients: the per-client buckets
               # (CreateGame and the like, commands) would measure this process, not the
               # servers.
               ARBITER_RATE_BURST="1000000", ARBITER_RATE_PER_SECOND="1000000",
               ARBITER_COMMAND_RATE="0", ARBITER_SEAT_COMMAND_RATE="0",
               ARBITER_STREAMS_PER_CLIENT="100000")
    top = Topology()
    for i in range(replicas):
        port, metrics_port = free_port(), free_port()
        top.ports.append(port)
        top.metrics_ports.append(metrics_port)
        top.servers.append(arbiter(["serve"], dict(
            env, ARBITER_GRPC_ADDR=f"127.0.0.1:{port}",
            ARBITER_METRICS_ADDR=f"127.0.0.1:{metrics_port}"), f"{logdir}/server-{i}.log"))
    for kind, extra in (("projections", []), ("deadlines", []), ("ai", ["-c", "1"])):
        top.worker_kinds.append(kind)
        top.workers.append(arbiter(["workers", kind, *extra], dict(
            env, ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}"), f"{logdir}/{kind}.log"))
    return top


ROUTER_CONFIG = os.path.join(os.path.dirname(HERE), "deploy", "haproxy.cfg")


def router_config(listen: int, servers: list[int], per_source_limit: bool = True) -> str:
    """deploy/haproxy.cfg with this machine's addresses in place of compose's; without its
    limit of calls per client address when `per_source_limit` is off (a load test's
    thousands of players all come from this machine's one address)."""
    out = []
    for line in open(ROUTER_CONFIG).read().splitlines():
        words = line.split()
        if not per_source_limit and "sc_http_req_rate(0)" in line:
            continue
        if words[:1] == ["bind"]:
            line = line.replace(words[1], f"127.0.0.1:{listen}")
        elif words[:1] == ["server-template"]:
            indent = line[:len(line) - len(line.lstrip())]
            line = "\n".join(f"{indent}server s{i} 127.0.0.1:{port} proto h2"
                             for i, port in enumerate(servers))
        out.append(line)
    return "\n".join(out) + "\n"


def start_router(top: Topology, logdir: str, per_source_limit: bool = True) -> None:
    """HAProxy in front of the servers, as deploy/haproxy.cfg configures it."""
    top.router_port = free_port()
    path = os.path.join(logdir, "haproxy.cfg")
    with open(path, "w") as f:
        f.write(router_config(top.router_port, top.ports, per_source_limit))
    log = open(os.path.join(logdir, "haproxy.log"), "ab")
    top.router = subprocess.Popen(["haproxy", "-db", "-f", path], stdout=log,
                                  stderr=subprocess.STDOUT)


async def wait_serving(ports: list[int], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    for port in ports:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            health = health_pb2_grpc.HealthStub(channel)
            while True:
                try:
                    reply = await health.Check(health_pb2.HealthCheckRequest(), timeout=1)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        break
                except grpc.aio.AioRpcError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the server on port {port} did not start")
                await asyncio.sleep(0.2)


def rabbitmq_vhost() -> tuple[str, str]:
    vhost = f"arbiter-loadtest-{os.getpid()}"
    subprocess.run(["rabbitmqctl", "-q", "add_vhost", vhost], check=True, capture_output=True)
    subprocess.run(["rabbitmqctl", "-q", "set_permissions", "-p", vhost, "guest", ".*", ".*",
                    ".*"], check=True, capture_output=True)
    return vhost, f"amqp://guest:guest@127.0.0.1:5672/{vhost}"


# ---- the players ----------------------------------------------------------------------------


@dataclass
class Table:
    """One game as its human player knows it."""

    game: Game
    game_id: str
    token: str
    version: int
    ready_at: float = 0.0  # when the human may act (after thinking); 0: not its turn
    busy: bool = False
    over: bool = False
    next_look: float = 0.0  # when a human who is not to act looks at the game again


@dataclass
class Step:
    offered: float
    seconds: float
    act_ms: list[float] = field(default_factory=list)
    create_ms: list[float] = field(default_factory=list)
    codes: Counter[str] = field(default_factory=Counter)
    expected: Counter[str] = field(default_factory=Counter)  # stale versions, resent ids
    late: int = 0  # arrivals that started more than a second after their time
    cpu: dict[str, float] = field(default_factory=dict)  # seconds, by component
    # What each component burns doing nothing (timers, health, polling feeds), per second.
    idle_cpu_per_s: dict[str, float] = field(default_factory=dict)
    cache: dict[str, float] = field(default_factory=dict)
    looks: int = 0  # GetViews of humans waiting for their turn, beside the requests
    calls: int = 0  # unary calls made to the servers (lists, views, resends included)

    def above_idle(self, name: str) -> float:
        return max(0.0, self.cpu[name] - self.idle_cpu_per_s.get(name, 0.0) * self.seconds)

    @property
    def done(self) -> int:
        return len(self.act_ms) + len(self.create_ms)

    def summary(self) -> dict[str, Any]:
        unexpected = sum(n for code, n in self.codes.items() if code != "OK")
        return {
            "offered_per_s": round(self.offered, 1),
            "achieved_per_s": round(self.done / self.seconds, 1),
            "acts": len(self.act_ms), "creates": len(self.create_ms),
            "act_p50_ms": round(percentile(self.act_ms, 0.5), 2),
            "act_p99_ms": round(percentile(self.act_ms, 0.99), 2),
            "act_p999_ms": round(percentile(self.act_ms, 0.999), 2),
            "create_p99_ms": round(percentile(self.create_ms, 0.99), 2),
            "statuses": dict(self.codes), "expected_rejections": dict(self.expected),
            "unexpected_errors": unexpected, "late_arrivals": self.late,
            "getviews_while_waiting": self.looks,
            "calls_per_request": round(self.calls / max(1, self.done), 3),
            # Every call the servers handled (lists, views, resends) is in this CPU; "above
            # idle" leaves out what a component burns when idle, which does not grow with load.
            **{f"{name}_cpu_ms_per_request": round(1000 * cpu / max(1, self.done), 3)
               for name, cpu in self.cpu.items()},
            **{f"{name}_cpu_ms_per_request_above_idle": round(1000 * self.above_idle(name)
                                                              / max(1, self.done), 3)
               for name in self.cpu},
            "system_cpu_ms_per_request_above_idle": round(1000 * sum(
                self.above_idle(name) for name in ("server", "workers", "redis", "router"))
                / max(1, self.done), 3),
            # Entries a server folded after another process appended them (the other replica,
            # or the AI workers), and games it read in afresh, per request.
            "caught_up_entries_per_request": round(
                self.cache.get("arbiter_entries_caught_up_total", 0) / max(1, self.done), 3),
            "game_loads_per_request": round(
                self.cache.get("arbiter_game_loads_total", 0) / max(1, self.done), 3),
        }


class Load:
    def __init__(self, channel: grpc.aio.Channel, seed: int, affinity: bool = False) -> None:
        self.channel = channel
        self.affinity = affinity  # send x-game-id, which the router hashes
        self.rng = random.Random(seed)
        self.tables: list[Table] = []
        self.acked: dict[str, list[tuple[str, int]]] = {}  # game id -> (command id, version)
        self.watchers: set[asyncio.Task[None]] = set()
        self.watch_codes: Counter[str] = Counter()
        self.calls: dict[tuple[str, str], Any] = {}
        self.game_names = list(SEATS)
        self.looks = 0
        self.unary_calls = 0

    def counted(self, call: Any) -> Any:
        def counting(*args: Any, **kwargs: Any) -> Any:
            self.unary_calls += 1
            return call(*args, **kwargs)
        return counting

    def rpc(self, service: str, method: str, req: Any, resp: Any, stream: bool = False) -> Any:
        key = (service, method)
        if key not in self.calls:
            make = self.channel.unary_stream if stream else self.channel.unary_unary
            call = make(f"/{service}/{method}", request_serializer=req.SerializeToString,
                        response_deserializer=resp.FromString)
            self.calls[key] = call if stream else self.counted(call)
        return self.calls[key]

    def game_rpc(self, game: Game, method: str, req: Any, resp: Any, stream: bool = False
                 ) -> Any:
        return self.rpc(f"arbiter.{game.name}.v1.Game", method, req, resp, stream)

    def metadata(self, table: Table, token: bool = True) -> tuple[tuple[str, str], ...]:
        """A call's metadata about `table`'s game: the seat token, and the game id for the
        router (routed by game)."""
        md = (("x-seat-token", table.token),) if token else ()
        return md + ((("x-game-id", table.game_id),) if self.affinity else ())

    async def create(self, step: Step, t0: float) -> None:
        game = registry.game(self.game_names[len(self.tables) % len(self.game_names)])
        seats = [apb.Seat(name="human")] + [apb.Seat(name=f"bot{i}", kind=apb.AI)
                                            for i in range(1, SEATS[game.name])]
        try:
            reply = await self.game_rpc(game, "CreateGame", game.pb.CreateGameRequest,
                                        apb.CreateGameResponse)(
                game.pb.CreateGameRequest(seats=seats), timeout=30)
        except grpc.aio.AioRpcError as e:
            step.codes[status(e)] += 1
            return
        step.create_ms.append((time.perf_counter() - t0) * 1000)
        step.codes["OK"] += 1
        table = Table(game, reply.game_id, reply.tokens[0].token, reply.version)
        self.tables.append(table)
        self.acked[table.game_id] = []
        if self.rng.random() < WATCH_SHARE:
            task = asyncio.create_task(self.watch(table))
            self.watchers.add(task)
            task.add_done_callback(self.watchers.discard)
        await self.look(table)

    async def watch(self, table: Table) -> None:
        """A spectator following the game to its end."""
        call = self.game_rpc(table.game, "Watch", apb.WatchRequest, table.game.pb.Update, True)
        try:
            async for update in call(apb.WatchRequest(game_id=table.game_id),
                                     metadata=self.metadata(table, token=False)):
                if update.HasField("finished"):
                    break
            self.watch_codes["OK"] += 1
        except grpc.aio.AioRpcError as e:
            self.watch_codes[status(e)] += 1

    async def look(self, table: Table) -> None:
        """Find out (GetView) whether it is the human's turn; if so, it starts thinking."""
        md = self.metadata(table)
        view = await self.game_rpc(table.game, "GetView", apb.GetViewRequest,
                                   table.game.pb.View)(
            apb.GetViewRequest(game_id=table.game_id), metadata=md, timeout=30)
        self.note(table, view)

    def note(self, table: Table, view: Any) -> None:
        table.version = max(table.version, view.version)
        if view.HasField("outcome"):
            table.over = True
        elif 0 in view.to_act:
            table.ready_at = time.monotonic() + self.rng.uniform(*THINK)
        else:
            table.ready_at = 0.0

    async def act(self, table: Table, step: Step, t0: float) -> None:
        game, md = table.game, self.metadata(table)
        try:
            legal = await self.game_rpc(game, "ListLegalActions", apb.ListLegalActionsRequest,
                                        game.pb.LegalActions)(
                apb.ListLegalActionsRequest(game_id=table.game_id), metadata=md, timeout=30)
            if not legal.commands:
                await self.look(table)
                return
            command = self.rng.choice(list(legal.commands))
            command_id = f"h-{secrets.token_hex(6)}"
            act = self.game_rpc(game, "Act", game.pb.ActRequest, game.pb.ActResponse)
            roll = self.rng.random()
            if roll < STALE_SHARE and legal.version > 1:
                try:
                    await act(game.pb.ActRequest(game_id=table.game_id, command=command,
                                                 command_id=command_id,
                                                 expected_version=legal.version - 1),
                              metadata=md, timeout=30)
                    step.codes["STALE_ACCEPTED"] += 1  # never expected: counted as an error
                except grpc.aio.AioRpcError as e:
                    step.expected["stale:" + status(e)] += 1
            request = game.pb.ActRequest(game_id=table.game_id, command=command,
                                         command_id=command_id, expected_version=legal.version)
            reply = await act(request, metadata=md, timeout=30)
            step.act_ms.append((time.perf_counter() - t0) * 1000)
            step.codes["OK"] += 1
            self.acked[table.game_id].append((command_id, reply.version))
            if roll > 1 - RESEND_SHARE:
                again = await act(request, metadata=md, timeout=30)
                same = again.version == reply.version
                step.expected["resent:" + ("SAME_RESULT" if same else "OTHER_RESULT")] += 1
            self.note(table, reply.view)
        except grpc.aio.AioRpcError as e:
            step.codes[status(e)] += 1
            if e.code() != grpc.StatusCode.ABORTED:
                table.ready_at = time.monotonic() + 1
        finally:
            table.busy = False

    async def poll_waiting(self, stop: float) -> None:
        """Humans who are not to act look at their game once a second (as a polling client
        would), each look a GetView."""
        while time.monotonic() < stop:
            now = time.monotonic()
            for table in self.tables:
                if not (table.over or table.busy or table.ready_at) and table.next_look <= now:
                    table.next_look = now + LOOK_EVERY
                    try:
                        await self.look(table)
                        self.looks += 1
                    except grpc.aio.AioRpcError:
                        pass
            await asyncio.sleep(0.05)

    def next_ready(self) -> Table | None:
        now = time.monotonic()
        best = None
        for table in self.tables:
            if (not table.over and not table.busy and table.ready_at
                    and table.ready_at <= now and (best is None or table.ready_at < best.ready_at)):
                best = table
        return best

    async def run_step(self, rate: float, seconds: float, top: Topology) -> Step:
        step = Step(rate, seconds, idle_cpu_per_s=top.idle_cpu_per_s)
        cpu0, looks0, cache0, calls0 = top.cpu(), self.looks, top.cache(), self.unary_calls
        tasks: set[asyncio.Task[None]] = set()
        start = time.perf_counter()
        stop = time.monotonic() + seconds
        poller = asyncio.create_task(self.poll_waiting(stop))
        n = 0
        while True:
            due = start + n / rate
            if due - start >= seconds:
                break
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -1:
                step.late += 1
            table = self.next_ready()
            if table is None:
                task = asyncio.create_task(self.create(step, due))
            else:
                table.busy = True
                task = asyncio.create_task(self.act(table, step, due))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            n += 1
        await asyncio.gather(*tasks, return_exceptions=True)
        step.seconds = max(seconds, time.perf_counter() - start)
        await asyncio.gather(poller, return_exceptions=True)
        step.cpu = {k: v - cpu0[k] for k, v in top.cpu().items()}
        step.cache = {k: v - cache0[k] for k, v in top.cache().items()}
        step.looks = self.looks - looks0
        step.calls = self.unary_calls - calls0
        return step

    async def floor_step(self, calls_per_s: float, seconds: float, top: Topology
                         ) -> dict[str, float]:
        """The floor of a step's calls: Pings (the least call the servers answer) at the same
        rate of calls, open loop, for as long: what the servers spend per call when calls
        come one by one at this rate and do nothing."""
        ping = self.rpc("arbiter.v1.Arbiter", "Ping", apb.PingRequest, apb.PingResponse)
        cpu0, n, tasks = top.cpu(), int(calls_per_s * seconds), []
        start = time.perf_counter()
        for i in range(n):
            delay = start + i / calls_per_s - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.ensure_future(ping(apb.PingRequest(), timeout=30)))
        await asyncio.gather(*tasks)
        spent = max(seconds, time.perf_counter() - start)
        server = top.cpu()["server"] - cpu0["server"] - top.idle_cpu_per_s.get("server", 0) * spent
        return {"pings_per_s": round(calls_per_s, 1),
                "server_cpu_ms_per_ping_above_idle": round(1000 * max(0.0, server) / max(1, n), 3)}

    async def audit(self) -> dict[str, Any]:
        """Every game's log: versions contiguous, each acknowledged command once, verified."""
        export = self.rpc("arbiter.v1.Arbiter", "ExportLog", apb.ExportLogRequest,
                          apb.ExportLogResponse)
        verify = self.rpc("arbiter.v1.Arbiter", "VerifyLog", apb.VerifyLogRequest,
                          apb.VerifyLogResponse)
        out: Counter[str] = Counter()
        for w in list(self.watchers):
            w.cancel()
        for table in self.tables:
            lines = list((await export(apb.ExportLogRequest(game_id=table.game_id),
                                       metadata=(ADMIN,), timeout=60)).lines)
            entries = gamelog.from_json_lines(table.game, lines)
            out["games"] += 1
            out["entries"] += len(entries)
            if [e.version for e in entries] != list(range(1, len(entries) + 1)):
                out["games_with_gaps"] += 1
            recorded = Counter(e.command.command_id for e in entries if e.HasField("command"))
            for command_id, version in self.acked[table.game_id]:
                out["acknowledged"] += 1
                if recorded[command_id] == 0:
                    out["acknowledged_lost"] += 1
                elif recorded[command_id] > 1:
                    out["acknowledged_duplicated"] += 1
                if version > len(entries):
                    out["acknowledged_beyond_log"] += 1
            checked = await verify(apb.VerifyLogRequest(game_id=table.game_id),
                                   metadata=(ADMIN,), timeout=60)
            out["verified" if checked.ok else "failed_verification"] += 1
            if entries[-1].HasField("finished"):
                out["finished"] += 1
        return dict(out)


def past_knee(step: Step, first: Step | None) -> bool:
    s = step.summary()
    return (s["act_p99_ms"] > BREAK_P99_MS or s["unexpected_errors"] > 0.01 * max(1, step.done)
            or s["achieved_per_s"] < 0.9 * step.offered or step.late > 0.01 * max(1, step.done))


async def run_config(store: str, redis: RedisServers, broker_url: str, replicas: int,
                     routing: str, args: argparse.Namespace, logdir: str) -> dict[str, Any]:
    top = start_topology(redis.url, broker_url, replicas, logdir)
    top.redis = [p.pid for p in redis.procs]
    name = f"{store} x{replicas}" + (" by game" if routing == "affinity" else "")
    try:
        await wait_serving(top.ports)
        if routing == "affinity":
            # The router (deploy/haproxy.cfg) sends each game's calls to one replica.
            start_router(top, logdir, per_source_limit=False)
            await wait_serving([top.router_port])
            target, options = f"127.0.0.1:{top.router_port}", []
        else:
            # Client-side round robin over the replicas: one channel, a connection to each.
            target = "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in top.ports)
            options = [("grpc.lb_policy_name", "round_robin")]
        async with grpc.aio.insecure_channel(target, options=options) as channel:
            load = Load(channel, seed=replicas, affinity=routing == "affinity")
            await load.run_step(args.start_rate, 3, top)  # warm up: imports, caches, pools
            # Idle is measured once every process has started and warmed up (a Celery
            # worker still starting would count as idle burn) and the warm-up has drained.
            await asyncio.sleep(2)
            cpu0 = top.cpu()
            await asyncio.sleep(IDLE_SECONDS)
            top.idle_cpu_per_s = {k: (v - cpu0[k]) / IDLE_SECONDS for k, v in top.cpu().items()}
            # The same rate, from the same point, in every configuration: CPU per request
            # compared where each configuration has the same work and the same games.
            same = await load.run_step(args.compare_rate, args.step_seconds * 2, top)
            print(f"  {name} at {args.compare_rate:.0f}/s: "
                  f"{json.dumps(same.summary())}", flush=True)
            await asyncio.sleep(2)  # the AI turns handed out drain first
            floor = await load.floor_step(same.calls / same.seconds, same.seconds, top)
            summary = same.summary()
            per_call = 1000 * same.above_idle("server") / max(1, same.calls)
            floor["server_cpu_ms_per_call_above_idle"] = round(per_call, 3)
            floor["server_floor_ms_per_request"] = round(
                floor["server_cpu_ms_per_ping_above_idle"] * summary["calls_per_request"], 3)
            floor["server_vs_floor"] = round(
                per_call / max(1e-9, floor["server_cpu_ms_per_ping_above_idle"]), 2)
            print(f"  {name} its calls as Pings: {json.dumps(floor)}", flush=True)
            steps: list[Step] = []
            rate, good_rate, bad_rate, retrying = args.start_rate, 0.0, 0.0, False
            while rate <= args.max_rate:
                step = await load.run_step(rate, args.step_seconds, top)
                steps.append(step)
                print(f"  {name} offered {rate:.0f}/s: "
                      f"{json.dumps(step.summary())}", flush=True)
                if past_knee(step, steps[0]) and not retrying:
                    retrying = True  # a stall of the shared machine breaks one step, not two
                    continue
                retrying = False
                if past_knee(step, steps[0]):
                    bad_rate = rate
                    if not good_rate or bad_rate / good_rate < 1.2:
                        break
                    rate = (good_rate * bad_rate) ** 0.5  # narrow the knee down between them
                    continue
                good_rate = rate
                if bad_rate:
                    break
                rate *= args.step_factor
            good = [s for s in steps if not past_knee(s, steps[0])]
            knee = max((s.done / s.seconds for s in good), default=0.0)
            at = {}
            for share in (0.5, 0.8):
                if knee:
                    step = await load.run_step(knee * share, args.step_seconds * 2, top)
                    at[f"at_{int(share * 100)}pct"] = step.summary()
                    print(f"  {name} at {int(share * 100)}% of the knee: "
                          f"{json.dumps(step.summary())}", flush=True)
            await asyncio.sleep(2)  # let the AI seats finish what was handed to them
            audit = await load.audit()
            print(f"  {name} audit: {json.dumps(audit)}", flush=True)
            return {"store": store, "replicas": replicas, "routing": routing,
                    "knee_per_s": round(knee, 1),
                    "idle_cpu_per_s": {k: round(v, 4) for k, v in top.idle_cpu_per_s.items()},
                    "at_same_rate": same.summary(), "floor_at_same_rate": floor,
                    "steps": [s.summary() for s in steps], **at, "audit": audit,
                    "watch_statuses": dict(load.watch_codes),
                    }
    finally:
        top.stop()


def plot(results: list[dict[str, Any]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for r in results:
        # In the order of the offered rate (the knee's narrowing and retried steps come last).
        steps = sorted(r["steps"], key=lambda s: s["offered_per_s"])
        xs = [s["offered_per_s"] for s in steps]
        label = f"{r['store']}, {r['replicas']} replica{'s' if r['replicas'] > 1 else ''}" + (
            ", by game" if r.get("routing") == "affinity" else "")
        line, = ax.plot(xs, [s["act_p99_ms"] for s in steps], marker="o", label=label + " p99")
        ax.plot(xs, [s["act_p50_ms"] for s in steps], marker=".", linestyle="--",
                color=line.get_color(), label=label + " p50")
        ax.axvline(r["knee_per_s"], color=line.get_color(), linestyle=":", alpha=0.6)
    ax.set_xlabel("requests per second offered (Act + CreateGame); dotted: each knee")
    ax.set_ylabel("Act latency (ms)")
    ax.set_yscale("log")
    ax.set_title("Arbiter under open-loop load, stepped to the knee")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def configurations(args: argparse.Namespace) -> list[tuple[str, int, str]]:
    """(store, replicas, routing) to run: routing by game needs several replicas, and
    HAProxy (which `make loadtest` installs where it can)."""
    out = []
    for store in args.stores.split(","):
        for replicas in (int(r) for r in args.replicas.split(",")):
            for routing in args.routing.split(","):
                if routing == "affinity" and replicas < 2:
                    continue
                if routing == "affinity" and shutil.which("haproxy") is None:
                    print(f"{store} x{replicas} by game: skipped, no haproxy here", flush=True)
                    continue
                out.append((store, replicas, routing))
    return out


async def main_async(args: argparse.Namespace) -> int:
    os.makedirs(RESULTS, exist_ok=True)
    logdir = os.path.join(RESULTS, "loadtest-logs")
    os.makedirs(logdir, exist_ok=True)
    started: list[RedisServers] = []
    vhost = ""
    results = []
    try:
        broker_redis = start_standalone()
        started.append(broker_redis)
        if args.broker == "amqp":
            vhost, broker_url = rabbitmq_vhost()
        else:
            broker_url = broker_redis.url.rsplit("/", 1)[0] + "/1"
        for store, replicas, routing in configurations(args):
            servers = start_cluster() if store == "cluster" else start_standalone()
            started.append(servers)
            print(f"{store} with {replicas} server replica(s), {routing}, broker "
                  f"{args.broker}", flush=True)
            results.append(await run_config(store, servers, broker_url, replicas, routing,
                                            args, logdir))
            servers.stop()
            started.remove(servers)
    finally:
        for s in started:
            s.stop()
        if vhost:
            subprocess.run(["rabbitmqctl", "-q", "delete_vhost", vhost], capture_output=True)
    report = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.machine(),
              "cpus": os.cpu_count(), "load_average": os.getloadavg(),
              "step_seconds": args.step_seconds, "broker": args.broker, "results": results}
    with open(os.path.join(RESULTS, f"{args.out}.json"), "w") as f:
        json.dump(report, f, indent=2)
    plot(results, os.path.join(RESULTS, f"{args.out}.png"))
    bad = [r for r in results if r["audit"].get("acknowledged_lost") or
           r["audit"].get("acknowledged_duplicated") or r["audit"].get("failed_verification")
           or r["audit"].get("games_with_gaps")]
    return 1 if bad else 0


def replot(report_path: str) -> None:
    """Draw the plot again from a report (python -c "from loadtests.loadtest import replot;
    replot('loadtests/results/loadtest.json')")."""
    with open(report_path) as f:
        plot(json.load(f)["results"], report_path.removesuffix(".json") + ".png")


def main() -> int:
    # Stopped from outside, it still stops what it started (servers, Redis, the vhost).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step-seconds", type=float, default=5.0)
    parser.add_argument("--start-rate", type=float, default=20.0)
    parser.add_argument("--step-factor", type=float, default=1.5)
    parser.add_argument("--compare-rate", type=float, default=100.0,
                        help="a rate below every knee, run first in each configuration")
    parser.add_argument("--max-rate", type=float, default=2000.0)
    parser.add_argument("--broker", choices=["amqp", "redis"], default="amqp")
    parser.add_argument("--stores", default="redis,cluster")
    parser.add_argument("--replicas", default="1,2")
    parser.add_argument("--routing", default="round_robin,affinity",
                        help="round_robin: the client spreads calls over the replicas; "
                             "affinity: HAProxy (deploy/haproxy.cfg) routes by game id")
    parser.add_argument("--out", default="loadtest",
                        help="the report's name in loadtests/results (.json and .png)")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
