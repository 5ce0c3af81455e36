"""Several server processes acting on the same games at once, through one Redis (a
standalone server, and a Redis Cluster).

Nothing may be lost or duplicated: every log has contiguous versions, re-runs cleanly against
its seed, and every server ends with the view that replaying the log gives.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import subprocess
import sys
import time

import grpc
import pytest
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core import log as gamelog
from services.core.happened import naming
from tests.conftest import CLUSTER_URL, NO_CLUSTER, REDIS_URL
from tests.platform.test_grpc import ADMIN, Client

pytestmark = pytest.mark.skipif(not REDIS_URL, reason="needs ARBITER_TEST_REDIS_URL")

SERVERS = 3
GAMES = 3
CLIENTS = 12
SECONDS = 6.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_url(kind: str) -> str:
    if kind == "cluster" and not CLUSTER_URL:
        pytest.skip(NO_CLUSTER)
    return CLUSTER_URL if kind == "cluster" else REDIS_URL


def start_server(port: int, url: str = REDIS_URL) -> subprocess.Popen[bytes]:
    # On the cluster the store is under test, not the workers (tests/workers has theirs):
    # in-process projections polling 256 feeds through the cluster client would slow these
    # servers down two- to threefold on a small machine.
    workers = {"ARBITER_PROJECTIONS": "external", "ARBITER_DEADLINES": "external"} if (
        url == CLUSTER_URL) else {}
    env = dict(os.environ, **workers, ARBITER_REDIS_URL=url, ARBITER_GRPC_ADDR=f"127.0.0.1:{port}",
               ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}", ARBITER_ADMIN_TOKEN=ADMIN,
               ARBITER_GAMES="bubblee",
               # 12 players on one address race on purpose: the appends are under test here,
               # not the command rates (tests/platform/test_limits.py has theirs).
               ARBITER_COMMAND_RATE="0", ARBITER_SEAT_COMMAND_RATE="0")
    return subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def wait_ready(client: Client, seconds: float = 60) -> None:
    # A server process takes 13 s to start when three start at once on a busy 2-core machine.
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            await client.call("/arbiter.v1.Arbiter/Ping", apb.PingRequest(), apb.PingResponse,
                              timeout=1)
            return
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.05)
    raise RuntimeError("server did not start")


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "servers"), [("redis", SERVERS), ("cluster", 2)])
async def test_processes_racing_on_the_same_games_lose_and_duplicate_nothing(
        kind: str, servers: int) -> None:
    url = redis_url(kind)
    ports = [free_port() for _ in range(servers)]
    procs = [start_server(p, url) for p in ports]
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{p}") for p in ports]
    clients = [Client(c) for c in channels]
    try:
        for c in clients:
            await wait_ready(c)
        created = [await clients[0].create() for _ in range(GAMES)]
        tokens = {g.game_id: {t.seat: t.token for t in g.tokens} for g in created}
        accepted = 0
        rng = random.Random(4)

        async def player(n: int) -> None:
            nonlocal accepted
            deadline = time.monotonic() + SECONDS
            k = 0
            while time.monotonic() < deadline:
                k += 1
                client = rng.choice(clients)
                game_id = rng.choice(list(tokens))
                view = await client.view(game_id)
                if view.outcome.reason or not view.to_act:
                    await asyncio.sleep(0.01)
                    continue
                token = tokens[game_id][view.to_act[0]]
                legal = await client.legal(game_id, token)
                if not legal.commands:
                    continue
                try:
                    await client.act(game_id, token, rng.choice(list(legal.commands)),
                                     f"p{n}-{k}")
                    accepted += 1
                except grpc.aio.AioRpcError as e:
                    # Another player moved first: the command no longer fits.
                    assert e.code() in (grpc.StatusCode.FAILED_PRECONDITION,
                                        grpc.StatusCode.INVALID_ARGUMENT), e.details()

        await asyncio.gather(*(player(n) for n in range(CLIENTS)))
        assert accepted > 20
        game = registry.game("bubblee")
        for g in created:
            export = await clients[0].call("/arbiter.v1.Arbiter/ExportLog",
                                           apb.ExportLogRequest(game_id=g.game_id),
                                           apb.ExportLogResponse, admin=True)
            entries = gamelog.from_json_lines(game, list(export.lines))
            assert [e.version for e in entries] == list(range(1, len(entries) + 1))
            ids = [e.command.command_id for e in entries if e.HasField("command")]
            assert len(ids) == len(set(ids)), "a command was applied twice"
            verified = await clients[0].call(
                "/arbiter.v1.Arbiter/VerifyLog", apb.VerifyLogRequest(game_id=g.game_id),
                apb.VerifyLogResponse, admin=True)
            assert verified.ok, verified.reason
            state = game.replay([gamelog.game_event(game, e) for e in entries
                                 if e.WhichOneof("body") == "event"])
            expected = game.view(state, None)
            expected.version = len(entries)
            # A spectator is told the last command's events, in words, by every server.
            last = gamelog.batches(entries)[-1].entries
            with naming(["ann", "bob"]):  # the seats, called by their names
                told = [game.describe(gamelog.game_event(game, e), None) for e in last
                        if e.WhichOneof("body") == "event"]
            expected.happened.extend(text for text in told if text)
            for client in clients:
                assert await client.view(g.game_id) == expected
    finally:
        for c in channels:
            await c.close()
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_a_command_sent_twice_to_two_servers_applies_once(kind: str) -> None:
    asyncio.run(_twice(redis_url(kind)))


async def _twice(url: str) -> None:
    ports = [free_port() for _ in range(2)]
    procs = [start_server(p, url) for p in ports]
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{p}") for p in ports]
    a, b = (Client(c) for c in channels)
    try:
        await wait_ready(a)
        await wait_ready(b)
        created = await a.create()
        token, _ = await a.mover(created)
        command = (await a.legal(created.game_id, token)).commands[0]
        first, second = await asyncio.gather(
            a.act(created.game_id, token, command, "same-id"),
            b.act(created.game_id, token, command, "same-id"))
        assert first.version == second.version
        assert [e.SerializeToString() for e in first.events] == [
            e.SerializeToString() for e in second.events]
        assert (await b.view(created.game_id)).version == first.version
        assert isinstance(first, bpb.ActResponse)
    finally:
        for c in channels:
            await c.close()
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
