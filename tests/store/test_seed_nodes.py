"""ARBITER_REDIS_URL's seed nodes (services/core/redis_conn.py): a process starts while any
seed answers, the first named included, and several seeds are for a cluster only."""

from __future__ import annotations

import pytest

from services.core.redis_conn import first_answering, seeds
from services.core.redis_store import RedisStore, live_nodes
from services.core.store import StoreUnavailable
from tests.conftest import CLUSTER_URL, REDIS_URL, needs_cluster, needs_redis, new_id
from tools.redis_servers import free_port


def dead_address() -> str:
    return f"127.0.0.1:{free_port()}"  # nothing listens there


def test_a_seed_without_a_scheme_takes_the_first_urls_scheme_credentials_and_database() -> None:
    assert seeds("rediss://u:p%2Cw@a:1/2?ssl_cert_reqs=none, b:3 ,redis://c:4/0,[::1]:5") == [
        "rediss://u:p%2Cw@a:1/2?ssl_cert_reqs=none", "rediss://u:p%2Cw@b:3/2?ssl_cert_reqs=none",
        "redis://c:4/0", "rediss://u:p%2Cw@[::1]:5/2?ssl_cert_reqs=none"]
    assert seeds("redis://a:1/0") == ["redis://a:1/0"]


@pytest.mark.parametrize("url", ["", "a:1", "redis://a:1,b", "redis://a:1,b:port"])
def test_a_list_that_names_no_node_is_refused_with_the_reason(url: str) -> None:
    with pytest.raises(ValueError, match="ARBITER_REDIS_URL"):
        seeds(url)
    with pytest.raises(StoreUnavailable, match="ARBITER_REDIS_URL"):
        RedisStore(url)


@needs_cluster
async def test_a_store_starts_on_a_cluster_whose_first_named_node_is_dead() -> None:
    dead = dead_address()
    url = f"redis://{dead}/0,{CLUSTER_URL.split('://', 1)[1].split('/', 1)[0]}"
    assert first_answering(url)[1]  # the second seed answered: a cluster
    store = RedisStore(url)
    try:
        assert store.cluster
        game = new_id()
        await store.append(game, [b"a"], 0)
        assert await store.read(game) == [b"a"]
        assert await store.ping()
    finally:
        await store.close()


@needs_redis
def test_no_answering_seed_names_each_failure() -> None:
    dead = dead_address()
    with pytest.raises(StoreUnavailable, match=f"no node of ARBITER_REDIS_URL answers: {dead}"):
        RedisStore(f"redis://{dead}/0")


@needs_redis
def test_a_standalone_redis_among_several_seeds_is_refused() -> None:
    dead = dead_address()
    with pytest.raises(StoreUnavailable, match="standalone Redis: several seeds"):
        RedisStore(f"redis://{dead}/0,{REDIS_URL.split('://', 1)[1].split('/', 1)[0]}")


def test_the_doorbell_moves_to_nodes_the_cluster_does_not_flag_failing() -> None:
    nodes = (
        "a1 10.0.0.1:6379@16379,redis-0 myself,master - 0 0 1 connected 0-5460\n"
        "a2 10.0.0.2:6379@16379,redis-1,shard-id=x slave a1 0 0 1 connected\n"
        "a3 10.0.0.3:6379@16379 master,fail - 0 0 2 disconnected 5461-10922\n"
        "a4 10.0.0.4:6379@16379,,shard-id=y master,fail? - 0 0 3 connected 10923-16383\n"
        "a5 10.0.0.5:6379@16379,,shard-id=z slave a4 0 0 3 connected\n"
        "a6 10.0.0.6:6379@16379 slave a3 0 0 2 disconnected\n")
    assert live_nodes(nodes, "redis://:pw@seed:1/0") == [
        "redis://:pw@redis-0:6379/0", "redis://:pw@redis-1:6379/0", "redis://:pw@10.0.0.5:6379/0"]
