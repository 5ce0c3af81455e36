"""Ten thousand idle live streams on one server process, on Redis and on the embedded store.

    python -m loadtests.streams [--streams 10000] [--idle 60] [--kind play|watch]
                                [--clients 4] [--store redis,embedded]

For each store it starts one server process, then:

  1. GetView p50/p99 with no stream open (the baseline), and the server's RSS (/proc);
  2. opens the streams (spectators of one game, spread over client processes and channels),
     and reads the RSS again: the difference per stream;
  3. GetView p50/p99 again, with every stream open;
  4. leaves them idle for --idle seconds and counts the streams that ended (there should be
     none);
  5. plays one command and times its arrival on every stream (p50, p99, max), from just
     before the Act was sent.

Redis comes from ARBITER_BENCH_REDIS_URL or ARBITER_TEST_REDIS_URL (`make bench-streams`
starts a private one). Prints JSON and writes loadtests/results/streams.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from typing import Any

import grpc
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from loadtests.bench import cpu_seconds, free_port, percentile, ready

RESULTS = os.path.join(os.path.dirname(__file__), "results", "streams.json")
GAME = "/arbiter.bubblee.v1.Game/"
STREAMS_PER_CHANNEL = 500
# Opening thousands of streams at the same instant makes grpc cancel some of them at open
# (CANCELLED, or INTERNAL on the client's first write): clients open a few at a time, and
# retry with a back-off, as any client reconnecting should. Retries are counted.
OPENING_AT_ONCE = 50


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def raise_open_files() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# ---- a client process: holds its share of the streams ---------------------------------------


def client_process(address: str, game_id: str, version: int, count: int, kind: str,
                   pipe: Connection) -> None:
    raise_open_files()
    asyncio.run(_client(address, game_id, version, count, kind, pipe))


async def _client(address: str, game_id: str, version: int, count: int, kind: str,
                  pipe: Connection) -> None:
    loop = asyncio.get_running_loop()
    # A channel of its own per STREAMS_PER_CHANNEL streams: its own HTTP/2 connection.
    channels = [grpc.aio.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
                for _ in range((count + STREAMS_PER_CHANNEL - 1) // STREAMS_PER_CHANNEL)]
    arrivals: list[float] = []
    ended = [0]
    opened = [0]
    failed: dict[str, int] = {}
    all_open = asyncio.Event()
    idle = asyncio.Event()  # never set: a Play spectator sends nothing after `open`

    gave_up = [0]

    def settled() -> None:
        if opened[0] + gave_up[0] == count:
            all_open.set()

    opening = asyncio.Semaphore(OPENING_AT_ONCE)

    async def open_stream(n: int) -> Any:
        channel = channels[n // STREAMS_PER_CHANNEL]
        if kind == "watch":
            call = channel.unary_stream(
                GAME + "Watch", request_serializer=apb.WatchRequest.SerializeToString,
                response_deserializer=bpb.Update.FromString)(
                    apb.WatchRequest(game_id=game_id, from_version=version))
            await call.wait_for_connection()  # the server sends headers once it follows
            return call

        async def requests() -> Any:
            yield bpb.PlayRequest(open=apb.PlayOpen(game_id=game_id, from_version=version))
            await idle.wait()

        call = channel.stream_stream(
            GAME + "Play", request_serializer=bpb.PlayRequest.SerializeToString,
            response_deserializer=bpb.PlayResponse.FromString)(requests())
        await call.read()  # the opening message: the stream is registered
        return call

    async def hold(n: int) -> None:
        for attempt in range(5):
            try:
                async with opening:
                    call = await open_stream(n)
                break
            except grpc.aio.AioRpcError as e:
                reason = f"{e.code().name}: {e.details()}"[:80]
                failed[reason] = failed.get(reason, 0) + 1
                await asyncio.sleep(0.1 * 2 ** attempt)
        else:
            gave_up[0] += 1
            settled()
            return
        opened[0] += 1
        settled()
        try:
            first = True
            while True:
                message = await call.read()
                if message is grpc.aio.EOF:
                    break
                if first:  # Watch: one update per entry; the first of the batch counts
                    arrivals.append(time.time())
                    first = False
        except grpc.aio.AioRpcError:
            pass
        ended[0] += 1

    tasks = [loop.create_task(hold(n)) for n in range(count)]
    await asyncio.wait_for(all_open.wait(), 600)
    pipe.send(("open", (opened[0], failed)))
    while True:
        command = await loop.run_in_executor(None, pipe.recv)
        if command == "ended":
            pipe.send(("ended", ended[0]))
        elif command == "arrivals":
            deadline = time.time() + 30
            while len(arrivals) < opened[0] - ended[0] and time.time() < deadline:
                await asyncio.sleep(0.05)
            pipe.send(("arrivals", list(arrivals)))
        elif command == "stop":
            break
    for task in tasks:
        task.cancel()
    for channel in channels:
        await channel.close()


# ---- the run -------------------------------------------------------------------------------


async def get_view_latencies(address: str, game_id: str, calls: int = 2000,
                             concurrency: int = 8) -> dict[str, float]:
    async with grpc.aio.insecure_channel(address) as channel:
        get = channel.unary_unary(GAME + "GetView",
                                  request_serializer=apb.GetViewRequest.SerializeToString,
                                  response_deserializer=bpb.View.FromString)
        latencies: list[float] = []

        async def loop(n: int) -> None:
            for _ in range(calls // concurrency):
                t0 = time.perf_counter()
                await get(apb.GetViewRequest(game_id=game_id), timeout=30)
                latencies.append(time.perf_counter() - t0)

        await asyncio.gather(*(loop(n) for n in range(concurrency)))
    return {"p50_ms": round(percentile(latencies, 0.5) * 1000, 3),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 3)}


async def run_store(store: str, redis_url: str, args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    address = f"127.0.0.1:{port}"
    data = tempfile.mkdtemp(prefix="arbiter-streams-")
    env = dict(os.environ, ARBITER_GRPC_ADDR=address,
               ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}", ARBITER_GAMES="bubblee",
               ARBITER_DATA_DIR=data, ARBITER_MAX_WATCHES=str(args.streams + 1000),
               # One client holds every stream here: its share is raised with the totals.
               ARBITER_MAX_PLAYS=str(args.streams + 1000),
               ARBITER_STREAMS_PER_CLIENT=str(2 * args.streams + 1000),
               ARBITER_WATCHES_PER_GAME=str(args.streams + 1000),
               ARBITER_CLIENT_WATCHES_PER_GAME=str(args.streams + 1000))
    if store == "redis":
        env["ARBITER_REDIS_URL"] = redis_url
    else:
        env.pop("ARBITER_REDIS_URL", None)
    server = subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out: dict[str, Any] = {"store": store, "streams": args.streams, "kind": args.kind}
    clients: list[tuple[Any, Connection]] = []
    try:
        async with grpc.aio.insecure_channel(address) as channel:
            ping = channel.unary_unary("/arbiter.v1.Arbiter/Ping",
                                       request_serializer=apb.PingRequest.SerializeToString,
                                       response_deserializer=apb.PingResponse.FromString)
            await ready(ping, apb.PingRequest())
            created = await channel.unary_unary(
                GAME + "CreateGame", request_serializer=bpb.CreateGameRequest.SerializeToString,
                response_deserializer=apb.CreateGameResponse.FromString)(
                    bpb.CreateGameRequest(seats=[apb.Seat(name="a"), apb.Seat(name="b")]))
            tokens = {t.seat: t.token for t in created.tokens}
            await get_view_latencies(address, created.game_id, 400)  # warm up
            out["get_view_without_streams"] = await get_view_latencies(address,
                                                                       created.game_id)
            rss_before = rss_bytes(server.pid)

            t0 = time.perf_counter()
            context = multiprocessing.get_context("spawn")
            share = args.streams // args.clients
            for i in range(args.clients):
                mine, theirs = context.Pipe()
                count = share + (args.streams - share * args.clients if i == 0 else 0)
                process = context.Process(target=client_process, args=(
                    address, created.game_id, created.version, count, args.kind, theirs))
                process.start()
                clients.append((process, mine))
            opened, failures = 0, {}
            for _, pipe in clients:
                count, failed = pipe_recv(pipe)[1]
                opened += count
                for reason, n in failed.items():
                    failures[reason] = failures.get(reason, 0) + n
            out["open_retries"] = failures
            out["open_seconds"] = round(time.perf_counter() - t0, 1)
            out["opened"] = opened
            await asyncio.sleep(2)  # let the server settle
            rss_open = rss_bytes(server.pid)
            out["server_rss_mb_without_streams"] = round(rss_before / 2**20, 1)
            out["server_rss_mb_with_streams"] = round(rss_open / 2**20, 1)
            out["rss_kb_per_stream"] = round((rss_open - rss_before) / opened / 1024, 2)
            out["get_view_with_streams"] = await get_view_latencies(address, created.game_id)
            out["get_view_p99_ratio"] = round(out["get_view_with_streams"]["p99_ms"] /
                                              out["get_view_without_streams"]["p99_ms"], 2)

            cpu = cpu_seconds(server.pid)
            await asyncio.sleep(args.idle)
            out["server_cpu_percent_while_idle"] = round(
                (cpu_seconds(server.pid) - cpu) / args.idle * 100, 1)
            for _, pipe in clients:
                pipe.send("ended")
            out["idle_seconds"] = args.idle
            out["dropped_while_idle"] = sum(pipe_recv(pipe)[1] for _, pipe in clients)

            # One command: its batch reaches every stream.
            view = await channel.unary_unary(
                GAME + "GetView", request_serializer=apb.GetViewRequest.SerializeToString,
                response_deserializer=bpb.View.FromString)(
                    apb.GetViewRequest(game_id=created.game_id))
            seat = view.to_act[0]
            metadata = (("x-seat-token", tokens[seat]),)
            legal = await channel.unary_unary(
                GAME + "ListLegalActions",
                request_serializer=apb.ListLegalActionsRequest.SerializeToString,
                response_deserializer=bpb.LegalActions.FromString)(
                    apb.ListLegalActionsRequest(game_id=created.game_id), metadata=metadata)
            cpu = cpu_seconds(server.pid)
            sent = time.time()
            await channel.unary_unary(
                GAME + "Act", request_serializer=bpb.ActRequest.SerializeToString,
                response_deserializer=bpb.ActResponse.FromString)(
                    bpb.ActRequest(game_id=created.game_id, command=legal.commands[0],
                                   expected_version=legal.version), metadata=metadata)
            arrivals: list[float] = []
            for _, pipe in clients:
                pipe.send("arrivals")
                arrivals += pipe_recv(pipe)[1]
            fan_out_cpu = cpu_seconds(server.pid) - cpu
            delays = [a - sent for a in arrivals]
            out["fan_out"] = {"reached": len(arrivals),
                              "p50_ms": round(percentile(delays, 0.5) * 1000, 1),
                              "p99_ms": round(percentile(delays, 0.99) * 1000, 1),
                              "max_ms": round(max(delays, default=0) * 1000, 1),
                              # the server's CPU for the command and all its pushes
                              "server_cpu_ms": round(fan_out_cpu * 1000, 1)}
    finally:
        for process, pipe in clients:
            try:
                pipe.send("stop")
            except OSError:
                pass
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(data, ignore_errors=True)
    return out


def pipe_recv(pipe: Connection) -> tuple[str, Any]:
    if not pipe.poll(900):
        raise TimeoutError("a client process did not answer")
    return pipe.recv()  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--idle", type=float, default=60)
    parser.add_argument("--kind", choices=("play", "watch"), default="play")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--store", default="embedded,redis")
    args = parser.parse_args()
    raise_open_files()
    redis_url = os.environ.get("ARBITER_BENCH_REDIS_URL") or os.environ.get(
        "ARBITER_TEST_REDIS_URL", "")
    results = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": []}
    for store in args.store.split(","):
        if store == "redis" and not redis_url:
            print("no Redis (ARBITER_BENCH_REDIS_URL): skipping the Redis run", file=sys.stderr)
            continue
        results["runs"].append(asyncio.run(run_store(store, redis_url, args)))
        print(json.dumps(results["runs"][-1]), flush=True)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS, "w") as f:
        json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
