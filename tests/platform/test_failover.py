"""A Redis Cluster master killed under load (loadtests/failover.py, one round per mode):
clients see UNAVAILABLE, then succeed by resending the same command ids. The master dies
while its replica lags behind, so that it has acknowledged batches its replica never got:
without WAIT some acknowledged commands are lost; with ARBITER_REDIS_WAIT_REPLICAS=1 none
(nor any event or game). A plain kill on loopback rarely loses anything: the figures
over many rounds of both are in docs/performance.md (python -m loadtests.failover)."""

from __future__ import annotations

import asyncio

import grpc
import pytest
import redis.asyncio as aioredis
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from loadtests.chaos import run_mode
from loadtests.failover import (
    GAME,
    NODE_TIMEOUT_MS,
    Player,
    Round,
    cluster_nodes,
    failover_round,
    free_port,
)
from services import games as registry
from services.core.redis_store import LIVE_CHANNEL, MAP_SECONDS, RedisDoorbell, RedisStore
from services.core.server import Config
from services.process import build, shutdown
from tools.redis_servers import RedisServers, redis_cli_binary, start_cluster

pytestmark = pytest.mark.skipif(redis_cli_binary() is None,
                                reason="needs redis-cli to make a cluster of its own")


@pytest.mark.slow
@pytest.mark.parametrize("wait_replicas", [0, 1])
async def test_a_master_killed_under_load(wait_replicas: int) -> None:
    r = await failover_round(wait_replicas, lagging=True, players=16, load_seconds=1.5,
                             after_seconds=1.0)
    assert r.acked_commands > 100, r
    assert r.unavailable > 0 and r.resent_then_ok > 0, r  # refused, then answered
    assert r.stuck == 0, r
    if wait_replicas:
        assert (r.lost_commands, r.lost_events, r.lost_games) == (0, 0, 0), r
    elif r.acked_just_before_kill:
        # What WAIT is for: the master acknowledged batches its replica never got.
        assert r.lost_commands > 0, r
    if not (r.lost_commands or r.lost_games):
        assert r.other_errors == {}, r  # only a lost batch may leave a game behind a cache


async def _subscribed_node(servers: RedisServers) -> int:
    """The index of the node that holds a subscriber of the live channel (only one process
    of the test listens)."""
    for _ in range(200):
        for i, port in enumerate(servers.ports):
            if servers.procs[i].poll() is not None:
                continue
            node = aioredis.Redis(host="127.0.0.1", port=port)
            try:
                if (await node.pubsub_numsub(LIVE_CHANNEL))[0][1]:
                    return i
            finally:
                await node.aclose()
        await asyncio.sleep(0.05)
    raise AssertionError("no node holds the live channel's subscriber")


@pytest.mark.slow
async def test_a_watch_hears_another_servers_moves_after_its_subscription_node_dies() -> None:
    """Server A's Watch hears moves made through server B; the node A's subscription is on
    (the node ARBITER_REDIS_URL names) is killed; A's subscription moves to another node of
    the cluster and the Watch hears every later move, the first made after the kill too."""
    servers = start_cluster(3, 1, node_timeout_ms=NODE_TIMEOUT_MS)
    games = {"bubblee": registry.game("bubblee")}
    stores = [RedisStore(servers.url), RedisStore(servers.url)]
    a, b = (build(Config(grpc_addr=f"127.0.0.1:{free_port()}"), games, s) for s in stores)
    for p in (a, b):
        await p.server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{a.port}") as to_a, \
                grpc.aio.insecure_channel(f"127.0.0.1:{b.port}") as to_b:
            player = Player(to_b, 0, Round(0, False), [], [])
            created = await player.call(GAME + "CreateGame", bpb.CreateGameRequest(
                seats=[apb.Seat(name="a"), apb.Seat(name="b")]), apb.CreateGameResponse)
            tokens = {t.seat: t.token for t in created.tokens}
            watch = to_a.unary_stream(GAME + "Watch",
                                      request_serializer=apb.WatchRequest.SerializeToString,
                                      response_deserializer=bpb.Update.FromString)(
                apb.WatchRequest(game_id=created.game_id))
            heard: list[int] = []

            async def listen() -> None:
                async for update in watch:
                    heard.append(update.version)

            listening = asyncio.create_task(listen())
            while not heard or heard[-1] < created.version:
                await asyncio.sleep(0.05)
            victim = await _subscribed_node(servers)
            servers.kill(victim)
            moves = 0
            for _ in range(12):
                view = await player.call(GAME + "GetView",
                                         apb.GetViewRequest(game_id=created.game_id), bpb.View)
                if view.HasField("outcome"):
                    break
                seat = view.to_act[0]
                legal = await player.call(GAME + "ListLegalActions", apb.ListLegalActionsRequest(
                    game_id=created.game_id), bpb.LegalActions, tokens[seat])
                reply = await player.call(GAME + "Act", bpb.ActRequest(
                    game_id=created.game_id, command=legal.commands[0],
                    command_id=f"move-{moves}", expected_version=view.version),
                    bpb.ActResponse, tokens[seat])
                assert reply is not None, player.result
                moves += 1
                # Each move is heard on A before the next is made.
                for _ in range(400):
                    if heard and heard[-1] >= reply.version:
                        break
                    await asyncio.sleep(0.05)
                assert heard[-1] >= reply.version, f"A's Watch missed move {moves}"
            assert moves >= 4
            watch.cancel()
            await asyncio.gather(listening, return_exceptions=True)
    finally:
        for p in (a, b):
            await shutdown(p, 0)
        for s in stores:
            await s.close()
        servers.stop()


@pytest.mark.slow
async def test_chaos_the_url_node_killed_under_play_and_watches() -> None:
    """One fault of the chaos run (python -m loadtests.chaos): the node ARBITER_REDIS_URL
    names first is killed under play through two servers, with WAIT: a new server on the
    same URL starts meanwhile, nothing acknowledged is lost, no Watch shows a board the
    store does not hold or stays behind it, and nothing answers INTERNAL."""
    r = await run_mode(1, players=2, nodes=[0], kinds=("kill",))
    (fault,) = r["faults"]
    assert fault["new_server_answered_s"] is not None, r
    assert r["acked_commands"] > 20 and r["watch_views_compared"] > 20, r
    assert (r["lost_acked_commands"], r["divergent_watch_views"], r["internal_answers"],
            r["watches_behind_the_store"]) == (0, 0, 0, 0), r


async def test_a_failover_makes_the_doorbell_say_so() -> None:
    """A replica promoted (here by a manual failover, with every node alive) may have lacked
    the old master's last appends: the doorbell, still subscribed, calls `reconnected` so
    that the hub re-reads what it holds and finds what the store no longer has."""
    servers = start_cluster(3, 1, node_timeout_ms=NODE_TIMEOUT_MS)
    said: list[float] = []
    bell = RedisDoorbell(servers.url, lambda game, version: None, lambda: said.append(1))
    bell.start()
    try:
        await asyncio.wait_for(bell.subscribed.wait(), 10)
        await asyncio.sleep(2 * MAP_SECONDS)
        assert len(said) == 1  # subscribed once; no failover yet
        replica = next(i for i in range(len(servers.ports)) if "slave" in next(
            line for line in cluster_nodes(servers.ports[i]).splitlines() if "myself" in line))
        node = aioredis.Redis(host="127.0.0.1", port=servers.ports[replica])
        await node.execute_command("CLUSTER", "FAILOVER")
        await node.aclose()
        for _ in range(200):
            if len(said) > 1:
                break
            await asyncio.sleep(0.05)
        assert len(said) == 2 and bell.subscribed.is_set()
    finally:
        await bell.stop()
        servers.stop()
