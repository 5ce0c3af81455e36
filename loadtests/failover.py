"""A Redis Cluster master killed under load: what clients see, what acknowledged commands are
lost, without and with ARBITER_REDIS_WAIT_REPLICAS=1, and what WAIT costs an append.

    python -m loadtests.failover [--rounds 3] [--appends 2000]

Each round makes a cluster of its own (3 masters with 1 replica each, node timeout 2 s) and a
server on it (in this process, the store's cluster client), then:

1. PLAYERS players play Bubblee Pop games over gRPC (view, legal commands, Act with a command
   id and the expected version; a new game when one ends);
2. after LOAD_SECONDS, the master holding the first game is SIGKILLed; its replica takes over
   once the others have marked it failed (node timeout), then the killed node is started
   again and rejoins as the new master's replica (with WAIT=1 that shard can acknowledge
   nothing until it has a replica again);
3. a player that gets UNAVAILABLE resends the same request (same command id, same expected
   version) until it is answered; the load goes on AFTER_SECONDS past the recovery;
4. the audit: every acknowledged Act is looked up in the store's command index (it must be
   there, at the versions the reply gave), every acknowledged CreateGame must exist.

The append latency figures come from one cluster too: one-entry appends through a store with
WAIT and one without, interleaved so that both see the same noise. `hung_redis`: how long a
store call takes to answer unavailable with Redis hung (SIGSTOP), standalone and on a cluster.

Writes loadtests/results/failover.json and prints it. tests/platform/test_failover.py runs
one round of each mode and asserts that nothing acknowledged is lost with WAIT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import grpc
import redis.asyncio as aioredis
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core.partitions import partition_of, partition_tag
from services.core.redis_conn import redis_timeout
from services.core.redis_store import RedisStore, log_key
from services.core.server import Config
from services.core.store import StoreUnavailable
from services.process import build
from tools.redis_servers import RedisServers, redis_cli_binary, start_cluster, start_standalone

RESULTS = os.path.join(os.path.dirname(__file__), "results", "failover.json")
GAME = "/arbiter.bubblee.v1.Game/"
PLAYERS = 24
LOAD_SECONDS = 2.0
AFTER_SECONDS = 2.0
GIVE_UP_SECONDS = 30.0  # a player still refused after this long counts as stuck
NODE_TIMEOUT_MS = 2000
LAG_SECONDS = 0.3  # how long the master acknowledges batches its replica cannot have yet
BACKLOG_BYTES = 64 << 20  # more than the socket buffers hold (32 MB + 4 MB at most here)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else 0.0


@dataclass
class Acked:
    game_id: str
    command_id: str
    first: int
    last: int
    at: float  # time.monotonic() of the reply


@dataclass
class Round:
    wait_replicas: int
    lagging: bool
    acked_commands: int = 0
    acked_games: int = 0
    unavailable: int = 0  # UNAVAILABLE answers seen by players (each then resent)
    resent_then_ok: int = 0  # requests answered after at least one UNAVAILABLE
    stuck: int = 0  # requests still refused after GIVE_UP_SECONDS
    other_errors: dict[str, int] = field(default_factory=dict)
    failover_seconds: float = 0.0  # kill -> the replica is master
    # Acts acknowledged on the killed master's games in its last moments: while its replica
    # lagged (lagging), or in the last LAG_SECONDS (plain kill). What a loss could take.
    acked_just_before_kill: int = 0
    lost_commands: int = 0
    lost_events: int = 0
    lost_games: int = 0


class Player:
    def __init__(self, channel: grpc.aio.Channel, n: int, result: Round,
                 acked: list[Acked], games: list[str]) -> None:
        self.channel, self.n, self.result = channel, n, result
        self.acked, self.games = acked, games
        self.rng = random.Random(n)
        self.k = 0

    async def call(self, method: str, request: Any, reply: type, token: str = "") -> Any:
        """The call, resent while the store is unavailable; None when it failed otherwise."""
        fn = self.channel.unary_unary(method, request_serializer=type(request).SerializeToString,
                                      response_deserializer=reply.FromString)
        md = (("x-seat-token", token),) if token else ()
        refused_since = 0.0
        while True:
            try:
                answer = await fn(request, metadata=md, timeout=10)
                if refused_since:
                    self.result.resent_then_ok += 1
                return answer
            except grpc.aio.AioRpcError as e:
                if e.code() not in (grpc.StatusCode.UNAVAILABLE,
                                    grpc.StatusCode.DEADLINE_EXCEEDED):
                    name = e.code().name
                    self.result.other_errors[name] = self.result.other_errors.get(name, 0) + 1
                    return None
                self.result.unavailable += 1
                refused_since = refused_since or time.monotonic()
                if time.monotonic() - refused_since > GIVE_UP_SECONDS:
                    self.result.stuck += 1
                    return None
                await asyncio.sleep(0.1)

    async def play(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            seats = [apb.Seat(name=f"a{self.n}"), apb.Seat(name=f"b{self.n}")]
            created = await self.call(GAME + "CreateGame", bpb.CreateGameRequest(seats=seats),
                                      apb.CreateGameResponse)
            if created is None:
                continue
            self.games.append(created.game_id)
            self.result.acked_games += 1
            tokens = {t.seat: t.token for t in created.tokens}
            await self.play_game(created.game_id, tokens, stop)

    async def play_game(self, game_id: str, tokens: dict[int, str], stop: asyncio.Event
                        ) -> None:
        while not stop.is_set():
            view = await self.call(GAME + "GetView", apb.GetViewRequest(game_id=game_id),
                                   bpb.View)
            if view is None or view.HasField("outcome") or not view.to_act:
                return
            token = tokens[view.to_act[0]]
            legal = await self.call(GAME + "ListLegalActions",
                                    apb.ListLegalActionsRequest(game_id=game_id),
                                    bpb.LegalActions, token)
            if legal is None or not legal.commands:
                return
            self.k += 1
            command_id = f"p{self.n}-{self.k}"
            reply = await self.call(GAME + "Act", bpb.ActRequest(
                game_id=game_id, command=self.rng.choice(list(legal.commands)),
                command_id=command_id, expected_version=view.version), bpb.ActResponse, token)
            if reply is None:
                return  # another error (the game moved on without us): start a new one
            self.acked.append(Acked(game_id, command_id, view.version + 1, reply.version,
                                    time.monotonic()))
            self.result.acked_commands += 1


def cluster_nodes(port: int) -> str:
    cli = redis_cli_binary()
    assert cli
    return subprocess.run([cli, "-p", str(port), "cluster", "nodes"], capture_output=True,
                          text=True, timeout=5).stdout


async def make_replica_lag(servers: RedisServers, host: str, port: int, game_id: str) -> int:
    """Stall the master's replica (SIGSTOP) and queue a large write ahead of the games'
    batches, so that what the master acknowledges next stays in its own output buffer;
    LAG_SECONDS later the caller kills the master and wakes the replica (its pid, returned),
    which is then promoted without those batches. On loopback a replica otherwise keeps up
    within a millisecond, and even a stalled one finds the last batches in its socket buffer
    when it wakes: this is the lag a busy network or a paused replica makes for real."""
    node = aioredis.Redis(host=host, port=port)
    try:
        info = await node.info("replication")
        replica_port = int(info["slave0"]["port"])
        pid = servers.procs[servers.ports.index(replica_port)].pid
        os.kill(pid, signal.SIGSTOP)
        # Same slot as the game: the write goes to this master (kept under the node timeout).
        await node.set(f"arbiter:{{{partition_tag(partition_of(game_id))}}}:lag",
                       b"x" * BACKLOG_BYTES)
        await asyncio.sleep(LAG_SECONDS)
    finally:
        await node.aclose()
    return pid


async def wait_failed_over(servers: RedisServers, killed: int, seconds: float = 30) -> float:
    """Until a surviving node sees the killed node failed and three masters serving slots."""
    alive = next(p for i, p in enumerate(servers.ports) if i != killed)
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        dead_failed, serving = False, 0
        for line in cluster_nodes(alive).splitlines():
            parts = line.split()
            flags = parts[2].split(",")
            if f":{servers.ports[killed]}@" in parts[1]:
                dead_failed = "fail" in flags
            elif "master" in flags and "fail" not in flags and len(parts) > 8:
                serving += 1
        if dead_failed and serving == 3:
            return time.monotonic() - t0
        await asyncio.sleep(0.1)
    raise RuntimeError(f"no failover within {seconds} s")


async def wait_rejoined(servers: RedisServers, index: int, seconds: float = 30) -> None:
    """Until the restarted node is a synced replica (WAIT can count it again)."""
    cli = redis_cli_binary()
    assert cli
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        info = subprocess.run([cli, "-p", str(servers.ports[index]), "info", "replication"],
                              capture_output=True, text=True, timeout=5).stdout
        if "role:slave" in info and "master_link_status:up" in info:
            return
        await asyncio.sleep(0.1)
    raise RuntimeError("the killed node did not rejoin as a replica")


async def failover_round(wait_replicas: int, lagging: bool = False, players: int = PLAYERS,
                         load_seconds: float = LOAD_SECONDS,
                         after_seconds: float = AFTER_SECONDS) -> Round:
    """One round; `lagging`: the master dies while its replica lags behind (see
    `make_replica_lag`), so that it has acknowledged batches that exist on it alone."""
    result = Round(wait_replicas, lagging)
    servers = start_cluster(3, 1, node_timeout_ms=NODE_TIMEOUT_MS)
    store = RedisStore(servers.url, wait_replicas=wait_replicas)
    process = build(Config(grpc_addr=f"127.0.0.1:{free_port()}"),
                    {"bubblee": registry.game("bubblee")}, store)
    server, port = process.server, process.port
    await server.start()
    acked: list[Acked] = []
    games: list[str] = []
    stop = asyncio.Event()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            tasks = [asyncio.create_task(Player(channel, n, result, acked, games).play(stop))
                     for n in range(players)]
            await asyncio.sleep(load_seconds)
            await store.redis.initialize()
            victim = store.redis.get_node_from_key(log_key(games[0]))
            killed = servers.ports.index(victim.port)
            since = time.monotonic()
            if lagging:
                replica = await make_replica_lag(servers, victim.host, victim.port, games[0])
            servers.kill(killed)
            until = time.monotonic()
            on_victim = {g for g in games
                         if store.redis.get_node_from_key(log_key(g)).name == victim.name}
            result.acked_just_before_kill = sum(
                1 for a in acked if a.game_id in on_victim
                and (since if lagging else until - LAG_SECONDS) <= a.at <= until)
            if lagging:
                os.kill(replica, signal.SIGCONT)
            result.failover_seconds = await wait_failed_over(servers, killed)
            servers.restart(killed)
            await wait_rejoined(servers, killed)
            await asyncio.sleep(after_seconds)
            stop.set()
            await asyncio.gather(*tasks)
        await audit(servers.url, acked, games, result)
    finally:
        await server.stop(None)
        await store.close()
        servers.stop()
    return result


async def audit(url: str, acked: list[Acked], games: list[str], result: Round) -> None:
    store = RedisStore(url)
    try:
        for a in acked:
            found = await store.applied(a.game_id, a.command_id)
            if found != (a.first, a.last):
                result.lost_commands += 1
                result.lost_events += a.last - a.first + 1
        for g in games:
            if not await store.meta(g):
                result.lost_games += 1
    finally:
        await store.close()


async def append_latency(appends: int) -> dict[str, Any]:
    """p50/p99 of one-entry appends with and without WAIT 1, interleaved on one cluster."""
    servers = start_cluster(3, 1, node_timeout_ms=NODE_TIMEOUT_MS)
    stores = {0: RedisStore(servers.url, wait_replicas=0),
              1: RedisStore(servers.url, wait_replicas=1)}
    seconds: dict[int, list[float]] = {0: [], 1: []}
    entry = os.urandom(200)  # about one LogEntry of a move
    try:
        games = {w: [f"lat{w}-{i}" for i in range(64)] for w in stores}
        versions = {g: 0 for w in games for g in games[w]}
        for i in range(appends):
            order = (0, 1) if i % 2 else (1, 0)
            for w in order:
                g = games[w][i % 64]
                t0 = time.perf_counter()
                await stores[w].append(g, [entry], versions[g], f"c{i}")
                seconds[w].append(time.perf_counter() - t0)
                versions[g] += 1
    finally:
        for s in stores.values():
            await s.close()
        servers.stop()
    p = {w: (percentile(seconds[w], 0.5) * 1e3, percentile(seconds[w], 0.99) * 1e3)
         for w in seconds}
    return {"appends_each": appends,
            "without_wait_ms": {"p50": round(p[0][0], 3), "p99": round(p[0][1], 3)},
            "wait_1_ms": {"p50": round(p[1][0], 3), "p99": round(p[1][1], 3)},
            "ratio_p50": round(p[1][0] / p[0][0], 2), "ratio_p99": round(p[1][1] / p[0][1], 2)}


async def hung_seconds(tries: int = 5) -> dict[str, Any]:
    """How long a store call takes to answer unavailable with Redis hung (SIGSTOP), at the
    default ARBITER_REDIS_TIMEOUT: a standalone server, and one master of a cluster."""
    out: dict[str, Any] = {"timeout_s": redis_timeout()}
    for kind in ("standalone", "cluster"):
        servers = start_standalone() if kind == "standalone" else start_cluster(3, 1)
        store = RedisStore(servers.url)
        game = "hung-game"
        await store.append(game, [b"a"], 0)
        port = servers.ports[0]
        if store.cluster:
            await store.redis.initialize()
            port = store.redis.get_node_from_key(log_key(game)).port
        pid = servers.procs[servers.ports.index(port)].pid
        os.kill(pid, signal.SIGSTOP)
        seconds = []
        try:
            for _ in range(tries):
                t0 = time.monotonic()
                try:
                    await store.read(game)
                except StoreUnavailable:
                    seconds.append(time.monotonic() - t0)
        finally:
            os.kill(pid, signal.SIGCONT)
            await store.close()
            servers.stop()
        out[kind] = {"calls": tries, "unavailable": len(seconds),
                     "max_s": round(max(seconds, default=0), 2),
                     "min_s": round(min(seconds, default=0), 2)}
    return out


async def main(rounds: int, appends: int) -> dict[str, Any]:
    report: dict[str, Any] = {"rounds_per_mode": rounds, "players": PLAYERS,
                              "node_timeout_ms": NODE_TIMEOUT_MS}
    report["hung_redis"] = await hung_seconds()
    report["append_latency"] = await append_latency(appends)
    for wait, lagging in ((0, False), (1, False), (0, True), (1, True)):
        done = [await failover_round(wait, lagging) for _ in range(rounds)]
        report[f"wait_{wait}" + ("_lagging_replica" if lagging else "")] = {
            "rounds": [asdict(r) for r in done],
            "acked_commands": sum(r.acked_commands for r in done),
            "lost_commands": sum(r.lost_commands for r in done),
            "lost_events": sum(r.lost_events for r in done),
            "lost_games": sum(r.lost_games for r in done),
            "stuck": sum(r.stuck for r in done),
        }
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="failover rounds per mode")
    parser.add_argument("--appends", type=int, default=2000,
                        help="appends per mode for the latency figures")
    args = parser.parse_args()
    report = asyncio.run(main(args.rounds, args.appends))
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(report, f, indent=2)
    print(json.dumps(report, indent=2))
