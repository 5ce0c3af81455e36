"""On a Redis Cluster every kind of key spreads over all the masters: a few hundred games'
streams, command indexes, metadata, partition feeds, read models (records, summaries,
snapshots, statistics, the list's shards) and deadlines, counted on each master."""

from __future__ import annotations

import uuid
from collections import Counter, defaultdict

import pytest
import redis.asyncio as aioredis

from services.core.decider import Seat
from services.core.host import Caller, Host
from services.core.redis_conn import connect
from services.core.redis_store import RedisStore, feed_key
from services.core.store import partition_of
from services.workers.deadlines import RedisDeadlines, Scheduler
from services.workers.projections import ProjectionWorker
from services.workers.readmodel import RedisReadModel
from tests.workers.conftest import CLUSTER_SKIP, CLUSTER_URL, TOY

GAMES = 300


async def keys_per_master(url: str) -> dict[str, list[str]]:
    """Every key, by the master that holds it (SCAN on each master itself)."""
    cluster = connect(url)
    await cluster.initialize()
    out: dict[str, list[str]] = {}
    for node in cluster.get_primaries():
        plain = aioredis.Redis(host=node.host, port=node.port)
        out[node.name] = [k.decode() async for k in plain.scan_iter(count=1000)]
        await plain.aclose()
    await cluster.aclose()
    return out


async def test_every_kind_of_key_spreads_over_every_master() -> None:
    if not CLUSTER_URL:
        pytest.skip(CLUSTER_SKIP)
    tag = uuid.uuid4().hex[:8]
    rm_prefix, dl_prefix = f"arbiter:rm-{tag}", f"arbiter:dl-{tag}"
    store = RedisStore(CLUSTER_URL)
    host = Host(store, {"toy": TOY})
    ids = set()
    for i in range(GAMES):
        made = await host.create(
            "toy", [Seat("a"), Seat("b")], TOY.pb.Options(pile=9))
        game_id, tokens, version = made.game_id, made.tokens, made.version
        loaded = await host.load(game_id)
        seat = next(iter(TOY.to_act(loaded.state)))
        await host.act(game_id, Caller(token=tokens[seat]),
                       TOY.legal_actions(loaded.state, seat)[0], f"c{i}", version)
        ids.add(game_id)
    rm = RedisReadModel(CLUSTER_URL, rm_prefix)
    worker = ProjectionWorker(store, rm, {"toy": TOY}, group=f"spread-{tag}", snapshot_every=2)
    deadlines = RedisDeadlines(store.redis, dl_prefix)
    worker.projector.listeners.append(Scheduler(deadlines, host, idle=600).schedule_for)
    await worker.catch_up()
    assert await deadlines.pending() >= GAMES

    feeds = {feed_key(partition_of(g)) for g in ids}
    counts: dict[str, Counter[str]] = defaultdict(Counter)  # kind -> master -> keys
    game_keys = []
    for master, keys in (await keys_per_master(CLUSTER_URL)).items():
        for key in keys:
            game_id = key.rsplit(":", 1)[-1]
            if game_id in ids:  # the game's stream, command index, metadata
                counts[key.rsplit(":", 2)[-2]][master] += 1
                game_keys.append(key)
            elif key in feeds:
                counts["feed"][master] += 1
            elif key.startswith((rm_prefix + ":", dl_prefix + ":")):
                kind = key.split("}:", 1)[1].split(":")[0]  # version, summary, list, due...
                counts[f"{key.split(':')[1]} {kind}"][master] += 1
    # Leave the shared cluster as it was: the workers' tests that start a consumer group read
    # every feed from its start, and a rebuild reads every game.
    for key in game_keys:
        await store.redis.delete(key)
    for feed in feeds:
        mine = [i for i, f in await store.redis.xrange(feed) if f[b"g"].decode() in ids]
        await store.redis.xdel(feed, *mine)
    await rm.drop()
    await rm.close()
    await store.close()

    masters = len(await keys_per_master(CLUSTER_URL))
    assert masters == 3
    kinds = {f"rm-{tag} {k}" for k in ("version", "summary", "snapshot", "stats", "list")}
    kinds |= {f"dl-{tag} due", "feed"}
    assert kinds <= set(counts), sorted(counts)
    assert len([k for k in counts if k not in kinds]) >= 3  # stream, command index, metadata
    for kind, per_master in counts.items():
        total = sum(per_master.values())
        assert len(per_master) == masters, (kind, per_master)
        # Even within a third either way of the mean (partition tags are spaced evenly).
        assert min(per_master.values()) >= total / masters * 0.66, (kind, per_master)
