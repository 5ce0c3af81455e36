"""The chaos run: every node of a Redis Cluster killed, then hung, in turn, under play and
Watch streams, without and with ARBITER_REDIS_WAIT_REPLICAS=1.

    python -m loadtests.chaos [--modes 0,1] [--players 6] [--hang-seconds 5]

Per mode it starts a cluster of 3 masters and 3 replicas (node timeout 2 s) from the
redis-server binary on free ports, and two `arbiter serve` processes whose
ARBITER_REDIS_URL names three seeds, the cluster's first node first ("the URL's node").
Then:

1. PLAYERS players each play Bubblee Pop games, sending each move through the two servers
   in turn (Act with a command id and the expected version, resent while UNAVAILABLE);
   every game is watched by a spectator Watch on each server, reopened from its last
   version whenever it ends early (from the start when it ends with STREAM_RESET: the
   store lost history it showed, which the client then forgets);
2. each node in turn, the URL's node first, is SIGKILLed (then started again once the
   cluster has failed over, and rejoins as a replica) and hung (SIGSTOP for --hang-seconds,
   longer than the node timeout, so a hung master fails over too; then SIGCONT), the two in
   turns of order so that each hits masters and replicas. While the URL's node is dead a
   third `arbiter serve` on the same URL must start and answer. The next fault waits until
   every node is back, synced and the cluster ok. Last, the master of a game in play is
   killed while its replica lags (`kill-lagging`, as in loadtests/failover.py): the lossy
   failover, where without WAIT acknowledged moves are lost and streams showed them;
3. the audit, once the load stops: every acknowledged Act is looked up in the store's
   command index (lost: missing, or at other versions); every Watch's view at each version
   it received is compared with the store's truth at that version (a Watch opened from the
   start on a fresh server once the cluster is whole; a version the store no longer holds
   counts as divergent too); INTERNAL answers are counted on every call and stream.

Seconds without service, per fault and game: the longest gap between two acknowledged
moves of the game that overlaps the fault's window (from the fault to the cluster whole
again), and apart for the games on the fault's shard (its master and replica) and the
others; a player's own pace is PACE_SECONDS plus the calls of a move, and the gaps between
moves outside every fault are given too (`gaps_outside_faults`): a loaded machine stretches
them all. Writes loadtests/results/chaos.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import grpc
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from redis.crc import key_slot

from loadtests.failover import (
    GAME,
    NODE_TIMEOUT_MS,
    cluster_nodes,
    make_replica_lag,
    percentile,
    wait_failed_over,
)
from services.core.redis_store import RedisStore, log_key
from tools.redis_servers import (
    RedisServers,
    free_port,
    redis_cli_binary,
    start_cluster,
    wait_cluster_ok,
)

RESULTS = os.path.join(os.path.dirname(__file__), "results", "chaos.json")
PLAYERS = 6
PACE_SECONDS = 0.1  # a player's pause between two moves
HANG_SECONDS = 5.0  # longer than the node timeout: a hung master is failed over
SETTLE_SECONDS = 1.0  # play on a whole cluster between two faults
RESEND_SECONDS = 0.1
GIVE_UP_SECONDS = 60.0
RETRIED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)




@dataclass
class Acked:
    game_id: str
    command_id: str
    first: int
    last: int


@dataclass
class Tally:
    """What the clients saw, all faults together."""

    answers: Counter[str] = field(default_factory=Counter)  # status name -> count
    stream_ends: Counter[str] = field(default_factory=Counter)  # Watch ends, by status
    acked: list[Acked] = field(default_factory=list)
    created: dict[str, int] = field(default_factory=dict)  # game -> version once set up
    moves_at: dict[str, list[float]] = field(default_factory=dict)  # player -> ack times


class Client:
    def __init__(self, channels: list[grpc.aio.Channel], tally: Tally) -> None:
        self.channels, self.tally = channels, tally

    async def call(self, server: int, method: str, request: Any, reply: type,
                   token: str = "") -> Any:
        """The call, resent while unavailable; None when refused otherwise."""
        md = (("x-seat-token", token),) if token else ()
        since = time.monotonic()
        while True:
            fn = self.channels[server].unary_unary(
                GAME + method, request_serializer=type(request).SerializeToString,
                response_deserializer=reply.FromString)
            try:
                answer = await fn(request, metadata=md, timeout=10)
                self.tally.answers["OK"] += 1
                return answer
            except grpc.aio.AioRpcError as e:
                self.tally.answers[e.code().name] += 1
                if e.code() not in RETRIED or time.monotonic() - since > GIVE_UP_SECONDS:
                    return None
                await asyncio.sleep(RESEND_SECONDS)


class Player:
    def __init__(self, n: int, client: Client, tally: Tally) -> None:
        self.n, self.client, self.tally = n, client, tally
        self.moves = 0
        self.game_id = ""  # the game being played
        self.watches: list[Watcher] = []
        tally.moves_at[f"p{n}"] = []

    async def play(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            created = await self.client.call(self.n % 2, "CreateGame", bpb.CreateGameRequest(
                seats=[apb.Seat(name=f"a{self.n}"), apb.Seat(name=f"b{self.n}")]),
                apb.CreateGameResponse)
            if created is None:
                await asyncio.sleep(RESEND_SECONDS)
                continue
            self.tally.created[created.game_id] = created.version
            self.game_id = created.game_id
            self.watches += [Watcher(self.client, s, created.game_id) for s in (0, 1)]
            for w in self.watches[-2:]:
                w.start()
            tokens = {t.seat: t.token for t in created.tokens}
            await self.play_game(created.game_id, tokens, stop)

    async def play_game(self, game_id: str, tokens: dict[int, str], stop: asyncio.Event
                        ) -> None:
        while not stop.is_set():
            server = self.moves % 2  # every other move through the other server
            view = await self.client.call(server, "GetView", apb.GetViewRequest(game_id=game_id),
                                          bpb.View)
            if view is None:
                continue
            if view.HasField("outcome"):
                return
            token = tokens[view.to_act[0]]
            legal = await self.client.call(server, "ListLegalActions",
                                           apb.ListLegalActionsRequest(game_id=game_id),
                                           bpb.LegalActions, token)
            if legal is None or not legal.commands:
                continue
            self.moves += 1
            command_id = f"p{self.n}-{self.moves}"
            reply = await self.client.call(server, "Act", bpb.ActRequest(
                game_id=game_id, command=legal.commands[self.moves % len(legal.commands)],
                command_id=command_id, expected_version=view.version), bpb.ActResponse, token)
            if reply is not None:
                now = time.monotonic()
                self.tally.acked.append(Acked(game_id, command_id, view.version + 1,
                                              reply.version))
                self.tally.moves_at[f"p{self.n}"].append(now)
            await asyncio.sleep(PACE_SECONDS)


def reason(error: grpc.aio.AioRpcError) -> str:
    """The ErrorInfo reason of a refusal ("" when it carries none)."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    for detail in status.details if status else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info.reason
    return ""


class Watcher:
    """A spectator's Watch on one server: version -> the view last received for it."""

    def __init__(self, client: Client, server: int, game_id: str) -> None:
        self.client, self.server, self.game_id = client, server, game_id
        self.views: dict[int, bytes] = {}
        self.last = 0
        self.finished = False
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self.run())

    async def run(self) -> None:
        tally = self.client.tally
        while not self.finished:
            stream = self.client.channels[self.server].unary_stream(
                GAME + "Watch", request_serializer=apb.WatchRequest.SerializeToString,
                response_deserializer=bpb.Update.FromString)(
                apb.WatchRequest(game_id=self.game_id, from_version=self.last))
            try:
                async for update in stream:
                    if update.HasField("view") and not update.HasField("started"):
                        self.views[update.version] = update.view.SerializeToString(
                            deterministic=True)
                    self.last = update.version
                    self.finished = update.HasField("finished")
                tally.stream_ends["OK"] += 1
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.CANCELLED:
                    return
                why = reason(e)
                tally.stream_ends[e.code().name + (f" {why}" if why else "")] += 1
                if why == "STREAM_RESET":
                    # The store lost history this stream showed: what it showed is void,
                    # and the stream is read again from the start.
                    self.views.clear()
                    self.last = 0
            await asyncio.sleep(RESEND_SECONDS)

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)


# ---- processes -----------------------------------------------------------------------------


def serve(url: str, wait_replicas: int, logdir: str, name: str) -> tuple[subprocess.Popen[bytes],
                                                                          int]:
    port = free_port()
    env = dict(os.environ, ARBITER_REDIS_URL=url, ARBITER_REDIS_WAIT_REPLICAS=str(wait_replicas),
               ARBITER_GRPC_ADDR=f"127.0.0.1:{port}", ARBITER_HTTP_ADDR="",
               ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}",
               ARBITER_ADMIN_TOKEN="chaos-" + secrets.token_hex(16), PYTHONUNBUFFERED="1",
               # One process plays every client: per-client buckets would measure it alone.
               ARBITER_RATE_BURST="1000000", ARBITER_RATE_PER_SECOND="1000000")
    log = open(os.path.join(logdir, f"{name}.log"), "ab")
    proc = subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"], env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    return proc, port


async def answering(port: int, proc: subprocess.Popen[bytes], seconds: float) -> float | None:
    """Seconds until the server answers a call (ListGames), None if it exits or never does."""
    t0 = time.monotonic()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        fn = channel.unary_unary("/arbiter.v1.Arbiter/ListGames",
                                 request_serializer=apb.ListGamesRequest.SerializeToString,
                                 response_deserializer=apb.ListGamesResponse.FromString)
        while time.monotonic() - t0 < seconds and proc.poll() is None:
            try:
                await fn(apb.ListGamesRequest(), timeout=2)
                return time.monotonic() - t0
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.2)
    return None


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


def role(servers: RedisServers, index: int) -> str:
    for line in cluster_nodes(servers.ports[index]).splitlines():
        if "myself" in line:
            return "master" if "master" in line.split()[2] else "replica"
    return "unknown"


async def whole_again(servers: RedisServers) -> None:
    cli = redis_cli_binary()
    assert cli
    await asyncio.to_thread(wait_cluster_ok, cli, servers.ports, 3, 60)


# ---- one mode ------------------------------------------------------------------------------


@dataclass
class Fault:
    kind: str  # "kill" or "hang"
    node: int  # index in the cluster's ports; 0 is the URL's node
    role: str  # the node's role when the fault began
    seconds: float = 0.0  # from the fault until the cluster was whole again
    without_service_max_s: float = 0.0  # the longest gap of any game
    without_service_p50_s: float = 0.0  # the median of the games' longest gaps
    per_game_s: dict[str, float] = field(default_factory=dict)
    # The same, apart: games whose shard (master and replica) holds the node, and the others.
    on_its_shard_max_s: float = 0.0
    elsewhere_max_s: float = 0.0
    on_its_shard: list[str] = field(default_factory=list)  # players whose game was there
    new_server_answered_s: float | None = None  # kill of the URL's node only
    internal: int = 0
    unavailable: int = 0
    window: tuple[float, float] = (0.0, 0.0)


def shard(servers: RedisServers, asked: int, game_id: str) -> list[int]:
    """The ports of the master that holds the game, then of its replicas, as node `asked`
    sees the cluster."""
    slot = key_slot(log_key(game_id).encode())
    lines = [line.split() for line in cluster_nodes(servers.ports[asked]).splitlines()]
    port_of = {f[0]: int(f[1].split("@")[0].rpartition(":")[2]) for f in lines}
    for f in lines:
        for slots in f[8:]:
            low, _, high = slots.partition("-")
            if "master" in f[2] and low.isdigit() and int(low) <= slot <= int(high or low):
                return [port_of[f[0]]] + [port_of[r[0]] for r in lines if r[3] == f[0]]
    return []


def gaps(tally: Tally, t0: float, t1: float) -> dict[str, float]:
    """Per player (one game at a time): the longest gap between two acknowledged moves
    that overlaps [t0, t1]."""
    out = {}
    for player, times in tally.moves_at.items():
        longest = 0.0
        for before, after in zip(times, times[1:], strict=False):
            if after >= t0 and before <= t1:
                longest = max(longest, after - before)
        late = [t for t in times if t <= t1]
        if not any(t >= t0 for t in times) and late:
            longest = max(longest, t1 - late[-1])  # no move since the fault began
        out[player] = round(longest, 2)
    return out


def quiet_gaps(tally: Tally, windows: list[tuple[float, float]]) -> dict[str, float]:
    """The gaps between two acknowledged moves of a player that overlap no fault: what the
    machine's own load does to a move, to read the faults' figures against."""
    found = [after - before for times in tally.moves_at.values()
             for before, after in zip(times, times[1:], strict=False)
             if not any(after >= t0 and before <= t1 for t0, t1 in windows)]
    return {"moves": len(found), "p50_s": round(percentile(found, 0.5), 3),
            "p99_s": round(percentile(found, 0.99), 3), "max_s": round(max(found, default=0), 3)}


async def run_mode(wait_replicas: int, players: int = PLAYERS, nodes: list[int] | None = None,
                   kinds: tuple[str, ...] = ("kill", "hang"), lagging: bool = False,
                   hang_seconds: float = HANG_SECONDS) -> dict[str, Any]:
    """One mode's faults: `kinds` on each of `nodes` (every node when None), then with
    `lagging` the master of a game in play killed while its replica lags (see
    loadtests/failover.py's make_replica_lag): acknowledged moves it alone had are lost
    without WAIT, and the streams that showed them must be reset."""
    logdir = tempfile.mkdtemp(prefix="arbiter-chaos-")
    servers = start_cluster(3, 1, node_timeout_ms=NODE_TIMEOUT_MS)
    seeds = ",".join([servers.url] + [f"127.0.0.1:{p}" for p in servers.ports[1:3]])
    procs = [serve(seeds, wait_replicas, logdir, f"server-{i}") for i in range(2)]
    tally = Tally()
    faults: list[Fault] = []
    result: dict[str, Any] = {"wait_replicas": wait_replicas, "url": seeds, "logs": logdir}
    try:
        for proc, port in procs:
            if await answering(port, proc, 60) is None:
                raise RuntimeError(f"a server did not start (log in {logdir})")
        channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for _, port in procs]
        client = Client(channels, tally)
        stop = asyncio.Event()
        gamers = [Player(n, client, tally) for n in range(players)]
        tasks = [asyncio.create_task(p.play(stop)) for p in gamers]
        await asyncio.sleep(3)  # games under way, every Watch open
        # Every other node takes the faults in the other order: a fault on a master leaves it
        # a replica, and the order makes each fault hit masters and replicas alike.
        indexes = range(len(servers.ports)) if nodes is None else nodes
        plan = [(kind, i) for i in indexes for kind in (kinds if i % 2 == 0 else kinds[::-1])]
        for kind, index in plan + ([("kill-lagging", -1)] if lagging else []):
            if kind == "kill-lagging":  # the master of the first player's game
                index = servers.ports.index(shard(servers, 0, gamers[0].game_id)[0])
            fault = Fault(kind, index, role(servers, index))
            asked = (index + 1) % len(servers.ports)
            fault.on_its_shard = [f"p{p.n}" for p in gamers if p.game_id and
                                  servers.ports[index] in shard(servers, asked, p.game_id)]
            before = Counter(tally.answers)
            t0 = time.monotonic()
            if kind == "kill-lagging":
                stalled = await make_replica_lag(servers, "127.0.0.1", servers.ports[index],
                                                 gamers[0].game_id)
                servers.kill(index)
                os.kill(stalled, signal.SIGCONT)
                await wait_failed_over(servers, index, seconds=60)
                servers.restart(index)
            elif kind == "kill":
                servers.kill(index)
                await wait_failed_over(servers, index, seconds=60)
                if index == 0:  # a new server on the same URL starts with its node dead
                    proc, port = serve(seeds, wait_replicas, logdir, "server-new")
                    fault.new_server_answered_s = await answering(port, proc, 60)
                    stop_process(proc)
                servers.restart(index)
            else:
                os.kill(servers.procs[index].pid, signal.SIGSTOP)
                await asyncio.sleep(hang_seconds)
                os.kill(servers.procs[index].pid, signal.SIGCONT)
            await whole_again(servers)
            t1 = time.monotonic()
            await asyncio.sleep(SETTLE_SECONDS)
            fault.seconds = round(t1 - t0, 2)
            fault.window = (t0, t1)
            fault.internal = tally.answers["INTERNAL"] - before["INTERNAL"]
            fault.unavailable = tally.answers["UNAVAILABLE"] - before["UNAVAILABLE"]
            faults.append(fault)
            print(f"WAIT={wait_replicas} {kind} node {index} ({fault.role}): "
                  f"{fault.seconds} s", file=sys.stderr, flush=True)
        stop.set()
        await asyncio.gather(*tasks)
        await asyncio.sleep(2)  # the last rings reach every Watch
        watchers = [w for p in gamers for w in p.watches]
        for w in watchers:
            await w.stop()
        for f in faults:
            f.per_game_s = gaps(tally, *f.window)
            f.without_service_max_s = max(f.per_game_s.values(), default=0.0)
            f.without_service_p50_s = percentile(list(f.per_game_s.values()), 0.5)
            f.on_its_shard_max_s = max((v for k, v in f.per_game_s.items()
                                        if k in f.on_its_shard), default=0.0)
            f.elsewhere_max_s = max((v for k, v in f.per_game_s.items()
                                     if k not in f.on_its_shard), default=0.0)
        result["gaps_outside_faults"] = quiet_gaps(tally, [f.window for f in faults])
        result.update(await audit(servers, seeds, logdir, tally, watchers))
        for c in channels:
            await c.close()
    finally:
        for proc, _ in procs:
            stop_process(proc)
        servers.stop()
    result["faults"] = [{k: v for k, v in asdict(f).items() if k != "window"} for f in faults]
    result["answers"] = dict(tally.answers)
    result["watch_stream_ends"] = dict(tally.stream_ends)
    result["internal_answers"] = tally.answers["INTERNAL"] + tally.stream_ends["INTERNAL"]
    return result


async def truth(channel: grpc.aio.Channel, game_id: str, last: int) -> dict[int, bytes]:
    """Every spectator view of the game up to `last`, from a Watch from the start."""
    views: dict[int, bytes] = {}
    if last == 0:
        return views
    stream = channel.unary_stream(GAME + "Watch",
                                  request_serializer=apb.WatchRequest.SerializeToString,
                                  response_deserializer=bpb.Update.FromString)(
        apb.WatchRequest(game_id=game_id))
    async for update in stream:
        if update.HasField("view") and not update.HasField("started"):
            views[update.version] = update.view.SerializeToString(deterministic=True)
        if update.version >= last:
            stream.cancel()
            break
    return views


async def audit(servers: RedisServers, seeds: str, logdir: str, tally: Tally,
                watchers: list[Watcher]) -> dict[str, Any]:
    store = RedisStore(seeds)
    lost = lost_events = 0
    try:
        for a in tally.acked:
            if await store.applied(a.game_id, a.command_id) != (a.first, a.last):
                lost += 1
                lost_events += a.last - a.first + 1
        versions = {g: await store.version(g) for g in tally.created}
    finally:
        await store.close()
    # A fresh server (nothing cached) tells the store's truth.
    proc, port = serve(seeds, 0, logdir, "server-audit")
    divergent = compared = behind = 0
    try:
        if await answering(port, proc, 60) is None:
            raise RuntimeError(f"the audit's server did not start (log in {logdir})")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            for game_id, last in versions.items():
                views = await asyncio.wait_for(truth(channel, game_id, last), 60)
                setup = tally.created[game_id]
                for w in (w for w in watchers if w.game_id == game_id):
                    for version, view in w.views.items():
                        if version <= setup:
                            continue  # the setup's views are the game once set up
                        compared += 1
                        if version > last or (version in views and views[version] != view):
                            divergent += 1
                    behind += w.last < last
    finally:
        stop_process(proc)
    return {"acked_commands": len(tally.acked), "games": len(tally.created),
            "lost_acked_commands": lost, "lost_events": lost_events,
            "watch_views_compared": compared, "divergent_watch_views": divergent,
            "watches_behind_the_store": behind}


async def main(modes: list[int], players: int, hang_seconds: float) -> dict[str, Any]:
    t0 = time.monotonic()
    runs = [await run_mode(m, players, lagging=True, hang_seconds=hang_seconds) for m in modes]
    return {"players": players, "hang_seconds": hang_seconds, "pace_seconds": PACE_SECONDS,
            "node_timeout_ms": NODE_TIMEOUT_MS, "seconds": round(time.monotonic() - t0, 1),
            "runs": runs}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="0,1",
                        help="ARBITER_REDIS_WAIT_REPLICAS values, one run each")
    parser.add_argument("--players", type=int, default=PLAYERS)
    parser.add_argument("--hang-seconds", type=float, default=HANG_SECONDS)
    args = parser.parse_args()
    out = asyncio.run(main([int(m) for m in args.modes.split(",")], args.players,
                           args.hang_seconds))
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(json.dumps(out, indent=2))
