"""`arbiter store migrate`: games kept with 16 partitions (keys arbiter:{p<n>}:...) are
copied to the 256-partition layout, whole, once, on a standalone Redis and on a cluster."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from services.cli.main import main
from services.core.redis_store import RedisStore, migrate_old_layout, old_tag
from services.core.store import partition_of
from tests.conftest import CLUSTER_URL, NO_CLUSTER, REDIS_URL, new_id

DB = 5  # a database of its own on the standalone server


def url_of(kind: str) -> str:
    if kind == "cluster":
        if not CLUSTER_URL:
            pytest.skip(NO_CLUSTER)
        return CLUSTER_URL
    if not REDIS_URL:
        pytest.skip("needs ARBITER_TEST_REDIS_URL")
    return REDIS_URL.rsplit("/", 1)[0] + f"/{DB}"


@pytest_asyncio.fixture(params=["redis", "cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[RedisStore]:
    s = RedisStore(url_of(request.param))
    yield s
    await s.close()


async def write_old(store: RedisStore, game_id: str, entries: list[bytes],
                    commands: dict[str, str], meta: dict[str, str]) -> None:
    """A game as the 16-partition store wrote it."""
    tag = old_tag(game_id)
    for v, e in enumerate(entries, 1):
        await store.redis.xadd(f"{tag}:log:{game_id}", {"e": e}, id=f"{v}-0")
    await store.redis.hset(f"{tag}:meta:{game_id}",
                           mapping={**meta, "version": len(entries)})
    if commands:
        await store.redis.hset(f"{tag}:cmd:{game_id}", mapping=commands)
    await store.redis.xadd(f"{tag}:feed", {"g": game_id, "first": 1, "last": len(entries)})


async def test_old_games_are_copied_whole_and_once(store: RedisStore) -> None:
    a, b = new_id("old"), new_id("old")
    await write_old(store, a, [b"s", b"e1", b"e2"], {"c1": "2:2", "c2": "3:3"},
                    {"game": "bubblee", "seed": "ab", "tok:x": "0"})
    await write_old(store, b, [b"s"], {}, {"game": "eila", "seed": "cd"})
    assert a not in await store.game_ids()
    copied, _ = await migrate_old_layout(store)
    assert copied >= 2
    assert await store.read(a) == [b"s", b"e1", b"e2"] and await store.read(b) == [b"s"]
    assert await store.applied(a, "c1") == (2, 2) and await store.applied(a, "c2") == (3, 3)
    meta = await store.meta(a)
    assert (meta["game"], meta["seed"], meta["tok:x"], meta["version"]) == (
        "bubblee", "ab", "0", "3")
    assert {a, b} <= set(await store.game_ids())
    feed = await store.read_feed(partition_of(a), "", 100_000)
    assert [(f.first_version, f.last_version) for f in feed if f.game_id == a] == [(1, 3)]
    # A command resent after the move is still answered from the index.
    assert (await store.append(a, [b"x"], 3, "c2")).duplicate
    # Again: nothing copied twice.
    copied, present = await migrate_old_layout(store)
    assert copied == 0 and present >= 2
    assert await store.read(a) == [b"s", b"e1", b"e2"]


def test_the_cli_migrates_and_says_what_it_did(monkeypatch, capsys) -> None:
    url = url_of("redis")
    game = new_id("old")

    async def setup() -> None:
        s = RedisStore(url)
        await write_old(s, game, [b"s"], {}, {"game": "bubblee", "seed": "ab"})
        await s.close()

    asyncio.run(setup())
    monkeypatch.setenv("ARBITER_REDIS_URL", url)
    assert main(["store", "migrate"]) == 0
    assert "games copied to the 256-partition layout" in capsys.readouterr().out

    async def check() -> list[bytes]:
        s = RedisStore(url)
        try:
            return await s.read(game)
        finally:
            await s.close()

    assert asyncio.run(check()) == [b"s"]
