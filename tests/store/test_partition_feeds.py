"""The `PartitionFeeds` layer's guarantees (services/core/store.py), checked on every store."""

from __future__ import annotations

import pytest

from services.core.store import Conflict, FeedEntry, Store, partition_of
from tests.conftest import new_id


async def _tail(store: Store, partition: int) -> str:
    """The id of the partition's last feed entry ("" for an empty feed)."""
    last, rows = "", await store.read_feed(partition, "", 1000)
    while rows:
        last = rows[-1].feed_id
        rows = await store.read_feed(partition, last, 1000)
    return last


def _mine(rows: list[FeedEntry], *games: str) -> list[tuple[str, int, int]]:
    return [(f.game_id, f.first_version, f.last_version) for f in rows if f.game_id in games]


async def test_every_batch_is_announced_on_its_partition_feed(store: Store) -> None:
    g = new_id()
    p = partition_of(g)
    start = await _tail(store, p)
    await store.append(g, [b"a", b"b"], 0)
    await store.append(g, [b"c"], 2)
    after = await store.read_feed(p, start, 100)
    assert _mine(after, g) == [(g, 1, 2), (g, 3, 3)]


async def test_a_refused_append_adds_nothing_to_the_feed(store: Store) -> None:
    g = new_id()
    p = partition_of(g)
    await store.append(g, [b"a"], 0, "c1")
    start = await _tail(store, p)
    with pytest.raises(Conflict):
        await store.append(g, [b"b"], 0, "c2")
    assert (await store.append(g, [b"b"], 1, "c1")).duplicate
    assert _mine(await store.read_feed(p, start, 100), g) == []


async def test_a_feed_is_read_in_order_in_pages_that_miss_and_repeat_nothing(
        store: Store) -> None:
    # Games of one partition, so that their batches share one feed.
    games: list[str] = []
    p = partition_of(new_id())
    while len(games) < 3:
        g = new_id()
        if partition_of(g) == p:
            games.append(g)
    start = await _tail(store, p)
    appended = []
    for v in range(3):
        for g in games:
            await store.append(g, [b"x"], v)
            appended.append((g, v + 1, v + 1))
    pages, after = [], start
    while page := await store.read_feed(p, after, 2):
        assert len(page) <= 2
        pages += page
        after = page[-1].feed_id
    assert _mine(pages, *games) == appended
    ids = [f.feed_id for f in pages]
    assert len(set(ids)) == len(ids)
    assert ids == sorted(ids, key=lambda i: tuple(int(x) for x in i.split("-")))
