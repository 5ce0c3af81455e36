"""The store contract: both stores (embedded and Redis) pass every test here."""

from __future__ import annotations

import asyncio

import pytest

from services.core.store import Conflict, MemoryStore, Store, partition_of
from tests.conftest import new_id


async def test_append_numbers_entries_from_one(store: Store) -> None:
    g = new_id()
    a = await store.append(g, [b"a", b"b"], 0, "c1", {"game": "x"})
    assert (a.first_version, a.last_version, a.duplicate) == (1, 2, False)
    b = await store.append(g, [b"c"], 2, "c2")
    assert (b.first_version, b.last_version) == (3, 3)
    assert await store.read(g) == [b"a", b"b", b"c"]
    assert await store.version(g) == 3


async def test_read_after_a_version_and_with_a_limit(store: Store) -> None:
    g = new_id()
    await store.append(g, [b"1", b"2", b"3", b"4"], 0)
    assert await store.read(g, 2) == [b"3", b"4"]
    assert await store.read(g, 1, 2) == [b"2", b"3"]
    assert await store.read(g, 4) == []


async def test_expected_version_mismatch_is_a_conflict_and_writes_nothing(store: Store) -> None:
    g = new_id()
    await store.append(g, [b"a"], 0)
    with pytest.raises(Conflict) as info:
        await store.append(g, [b"b"], 0, "late")
    assert info.value.current_version == 1
    assert await store.read(g) == [b"a"]
    # The refused command id was not recorded: it can be sent again at the right version.
    ok = await store.append(g, [b"b"], 1, "late")
    assert not ok.duplicate and ok.last_version == 2


async def test_same_command_id_returns_the_first_result(store: Store) -> None:
    g = new_id()
    await store.append(g, [b"a"], 0)
    first = await store.append(g, [b"b", b"c"], 1, "cmd")
    again = await store.append(g, [b"x"], 3, "cmd")
    assert again.duplicate and (again.first_version, again.last_version) == (2, 3)
    # Even with a stale expected version the duplicate wins over the conflict.
    stale = await store.append(g, [b"x"], 1, "cmd")
    assert stale.duplicate and stale.last_version == first.last_version
    assert await store.read(g) == [b"a", b"b", b"c"]


async def test_metadata_is_written_with_the_batch(store: Store) -> None:
    g = new_id()
    assert await store.meta(g) == {}
    await store.append(g, [b"a"], 0, "", {"game": "bubblee", "seed": "ff"})
    await store.append(g, [b"b"], 1, "", {"status": "finished"})
    meta = await store.meta(g)
    assert meta["game"] == "bubblee" and meta["status"] == "finished" and meta["version"] == "2"


async def test_every_batch_is_announced_on_its_partition_feed(store: Store) -> None:
    g = new_id()
    p = partition_of(g)
    before = await store.read_feed(p, "", 100_000)
    await store.append(g, [b"a", b"b"], 0)
    await store.append(g, [b"c"], 2)
    after = await store.read_feed(p, before[-1].feed_id if before else "", 100)
    mine = [(f.game_id, f.first_version, f.last_version) for f in after if f.game_id == g]
    assert mine == [(g, 1, 2), (g, 3, 3)]


async def test_game_ids_lists_every_game(store: Store) -> None:
    g1, g2 = new_id(), new_id()
    await store.append(g1, [b"a"], 0, "", {"game": "x"})
    await store.append(g2, [b"a"], 0, "", {"game": "x"})
    assert {g1, g2} <= set(await store.game_ids())


async def test_concurrent_appends_never_lose_or_duplicate(store: Store) -> None:
    g = new_id()
    await store.append(g, [b"0"], 0)

    async def writer(name: str) -> int:
        wrote = 0
        while wrote < 20:
            v = await store.version(g)
            try:
                await store.append(g, [f"{name}{wrote}".encode()], v, f"{name}-{wrote}")
                wrote += 1
            except Conflict:
                await asyncio.sleep(0)
        return wrote

    await asyncio.gather(*(writer(n) for n in "abcd"))
    entries = await store.read(g)
    assert len(entries) == 81 and len(set(entries)) == 81


async def test_embedded_store_survives_a_restart(tmp_path) -> None:
    path = str(tmp_path / "games.aof")
    s = MemoryStore(path)
    await s.append("g1", [b"a", b"b"], 0, "c1", {"game": "x"})
    await s.append("g1", [b"c"], 2, "c2")
    await s.close()
    reopened = MemoryStore(path)
    assert await reopened.read("g1") == [b"a", b"b", b"c"]
    assert (await reopened.append("g1", [b"z"], 3, "c2")).duplicate
    assert (await reopened.meta("g1"))["game"] == "x"


async def test_embedded_store_drops_a_torn_last_write(tmp_path) -> None:
    path = tmp_path / "games.aof"
    s = MemoryStore(str(path))
    await s.append("g1", [b"a"], 0)
    await s.close()
    with open(path, "a") as f:
        f.write('{"game": "g1", "entr')  # the process died mid-write
    reopened = MemoryStore(str(path))
    assert await reopened.read("g1") == [b"a"]
    await reopened.append("g1", [b"b"], 1)
    await reopened.close()
    assert await MemoryStore(str(path)).read("g1") == [b"a", b"b"]


async def test_the_versions_a_command_id_was_applied_as_can_be_looked_up(store: Store) -> None:
    g = new_id()
    await store.append(g, [b"a"], 0)
    await store.append(g, [b"b", b"c"], 1, "cmd")
    assert await store.applied(g, "cmd") == (2, 3)
    assert await store.applied(g, "other") is None
    assert await store.applied(new_id(), "cmd") is None


async def test_redis_out_of_memory_is_unavailable_and_writes_nothing() -> None:
    from tests.conftest import REDIS_URL

    if not REDIS_URL:
        pytest.skip("needs ARBITER_TEST_REDIS_URL (make test starts a private redis-server)")
    from services.core.redis_store import RedisStore
    from services.core.store import StoreUnavailable

    store = RedisStore(REDIS_URL.rsplit("/", 1)[0] + "/3")
    game = new_id()
    await store.append(game, [b"a"], 0, "c1")
    limit = (await store.redis.config_get("maxmemory"))["maxmemory"]
    await store.redis.config_set("maxmemory", 1)
    try:
        with pytest.raises(StoreUnavailable):
            await store.append(game, [b"b", b"c"], 1, "c2", {"status": "x"})
    finally:
        await store.redis.config_set("maxmemory", limit)
    assert await store.read(game) == [b"a"] and await store.version(game) == 1
    assert await store.applied(game, "c2") is None
    assert (await store.append(game, [b"b"], 1, "c2")).last_version == 2
    await store.close()
