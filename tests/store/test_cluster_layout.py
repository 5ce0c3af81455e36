"""The Redis store on a real Redis Cluster: a game's keys on one slot, games on every master,
and listing them reaches every master."""

from __future__ import annotations

from collections import Counter

from redis.crc import key_slot

from services.core.partitions import PARTITIONS, partition_tag
from services.core.redis_store import RedisStore, feed_key
from services.core.store import partition_of
from tests.conftest import CLUSTER_URL, needs_cluster, new_id

pytestmark = needs_cluster


async def test_a_games_keys_share_one_slot_and_games_spread_over_every_master() -> None:
    store = RedisStore(CLUSTER_URL)
    assert store.cluster
    await store.redis.initialize()
    masters = {n.name for n in store.redis.get_primaries()}
    assert len(masters) == 3
    games = [new_id("spread") for _ in range(60)]
    for g in games:
        await store.append(g, [b"a"], 0, "c", {"game": "x"})
        slots = {key_slot(k.encode()) for k in store._keys(g)}
        assert slots == {key_slot(feed_key(partition_of(g)).encode())}
    on = Counter(store.redis.get_node_from_key(store._keys(g)[0]).name for g in games)
    assert set(on) == masters, on
    # Every master's games come back, not only those of the node the URL names.
    assert set(games) <= set(await store.game_ids())
    await store.close()


async def test_partitions_are_spread_evenly_over_the_masters() -> None:
    store = RedisStore(CLUSTER_URL)
    await store.redis.initialize()
    per_master = Counter(store.redis.get_node_from_key(f"{{{partition_tag(p)}}}").name
                         for p in range(PARTITIONS))
    assert max(per_master.values()) - min(per_master.values()) <= 2, per_master
    await store.close()


async def test_keys_of_the_old_layout_are_not_listed_as_games() -> None:
    store = RedisStore(CLUSTER_URL)
    old = new_id("old")
    await store.redis.hset(f"arbiter:{{p3}}:meta:{old}", mapping={"game": "x", "version": 1})
    assert old not in await store.game_ids()
    await store.redis.delete(f"arbiter:{{p3}}:meta:{old}")
    await store.close()
