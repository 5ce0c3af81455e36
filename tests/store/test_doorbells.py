"""The `Doorbells` layer's guarantees (services/core/store.py), checked on every store."""

from __future__ import annotations

import asyncio

from services.core.store import Store
from tests.conftest import new_id


async def _rang_for(rang: list[tuple[str, int | None]], game: str, version: int) -> None:
    while (game, version) not in rang:
        await asyncio.sleep(0.01)


async def test_a_started_doorbell_rings_each_append_once_its_entries_can_be_read(
        store: Store) -> None:
    g = new_id()
    rang: list[tuple[str, int | None]] = []
    reads: list[asyncio.Task[list[bytes]]] = []

    def ring(game: str, version: int | None) -> None:
        rang.append((game, version))
        if game == g:
            # A read started at the ring sees the entries it announces.
            reads.append(asyncio.get_running_loop().create_task(store.read(g, 0, version or 0)))

    reconnected: list[int] = []
    bell = store.doorbell(ring, lambda: reconnected.append(1))
    bell.start()
    bell.start()  # starting again changes nothing
    try:
        await asyncio.wait_for(bell.subscribed.wait(), 10)
        assert len(reconnected) == 1  # once subscribed: the waiter reads what it follows
        await store.append(g, [b"a", b"b"], 0)
        await asyncio.wait_for(_rang_for(rang, g, 2), 10)
        await store.append(g, [b"c"], 2)
        await asyncio.wait_for(_rang_for(rang, g, 3), 10)
        assert [v for game, v in rang if game == g] == [2, 3]
        assert [len(r) for r in await asyncio.gather(*reads)] == [2, 3]
    finally:
        await bell.stop()


async def test_a_stopped_doorbell_rings_no_more(store: Store) -> None:
    g = new_id()
    rang: list[tuple[str, int | None]] = []
    bell = store.doorbell(lambda game, v: rang.append((game, v)), lambda: None)
    bell.start()
    await asyncio.wait_for(bell.subscribed.wait(), 10)
    await store.append(g, [b"a"], 0)
    await asyncio.wait_for(_rang_for(rang, g, 1), 10)
    await bell.stop()
    assert not bell.subscribed.is_set()
    await store.append(g, [b"b"], 1)
    await asyncio.sleep(0.2)  # long enough for a Redis ring to arrive, were one sent
    assert [v for game, v in rang if game == g] == [1]
