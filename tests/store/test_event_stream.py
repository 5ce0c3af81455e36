"""The `EventStream` layer's guarantees (services/core/store.py), checked on every store:
the embedded one, a single Redis and a Redis Cluster (the `store` fixture)."""

from __future__ import annotations

import asyncio

import pytest

from services.core.store import Conflict, EventStream
from tests.conftest import new_id


async def test_append_numbers_entries_from_one(store: EventStream) -> None:
    g = new_id()
    a = await store.append(g, [b"a", b"b"], 0, "c1", {"game": "x"})
    assert (a.first_version, a.last_version, a.duplicate) == (1, 2, False)
    b = await store.append(g, [b"c"], 2, "c2")
    assert (b.first_version, b.last_version) == (3, 3)
    assert await store.read(g) == [b"a", b"b", b"c"]
    assert await store.version(g) == 3


async def test_an_unknown_game_is_at_version_zero_with_no_entries(store: EventStream) -> None:
    g = new_id()
    assert await store.version(g) == 0
    assert await store.read(g) == [] and await store.read(g, 0, 5) == []


async def test_read_after_a_version_and_with_a_limit(store: EventStream) -> None:
    g = new_id()
    await store.append(g, [b"1", b"2", b"3", b"4"], 0)
    assert await store.read(g, 2) == [b"3", b"4"]
    assert await store.read(g, 1, 2) == [b"2", b"3"]
    assert await store.read(g, 4) == []


async def test_expected_version_mismatch_is_a_conflict_and_writes_nothing(
        store: EventStream) -> None:
    g = new_id()
    await store.append(g, [b"a"], 0)
    with pytest.raises(Conflict) as info:
        await store.append(g, [b"b"], 0, "late")
    assert info.value.current_version == 1
    with pytest.raises(Conflict) as ahead:
        await store.append(g, [b"b"], 5, "late")  # a version from the future is no better
    assert ahead.value.current_version == 1
    assert await store.read(g) == [b"a"] and await store.version(g) == 1
    # The refused command id was not recorded: it can be sent again at the right version.
    assert await store.applied(g, "late") is None
    ok = await store.append(g, [b"b"], 1, "late")
    assert not ok.duplicate and ok.last_version == 2


async def test_same_command_id_returns_the_first_result(store: EventStream) -> None:
    g = new_id()
    await store.append(g, [b"a"], 0)
    first = await store.append(g, [b"b", b"c"], 1, "cmd")
    again = await store.append(g, [b"x"], 3, "cmd")
    assert again.duplicate and (again.first_version, again.last_version) == (2, 3)
    # Even with a stale expected version the duplicate wins over the conflict.
    stale = await store.append(g, [b"x"], 1, "cmd")
    assert stale.duplicate and stale.last_version == first.last_version
    assert await store.read(g) == [b"a", b"b", b"c"]


async def test_a_command_id_belongs_to_its_game(store: EventStream) -> None:
    g1, g2 = new_id(), new_id()
    await store.append(g1, [b"a"], 0, "cmd")
    other = await store.append(g2, [b"b"], 0, "cmd")
    assert not other.duplicate and await store.read(g2) == [b"b"]


async def test_batches_without_a_command_id_are_each_written(store: EventStream) -> None:
    g = new_id()
    await store.append(g, [b"a"], 0)
    second = await store.append(g, [b"a"], 1)
    assert not second.duplicate and await store.read(g) == [b"a", b"a"]


async def test_games_are_independent(store: EventStream) -> None:
    g1, g2 = new_id(), new_id()
    await store.append(g1, [b"a", b"b"], 0)
    await store.append(g2, [b"x"], 0)
    await store.append(g1, [b"c"], 2)
    assert await store.read(g2) == [b"x"] and await store.version(g2) == 1
    assert await store.read(g1) == [b"a", b"b", b"c"]


async def test_the_versions_a_command_id_was_applied_as_can_be_looked_up(
        store: EventStream) -> None:
    g = new_id()
    await store.append(g, [b"a"], 0)
    await store.append(g, [b"b", b"c"], 1, "cmd")
    assert await store.applied(g, "cmd") == (2, 3)
    assert await store.applied(g, "other") is None
    assert await store.applied(new_id(), "cmd") is None


async def test_concurrent_appends_never_lose_or_duplicate(store: EventStream) -> None:
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


async def test_of_appends_racing_at_one_version_exactly_one_wins(store: EventStream) -> None:
    g = new_id()
    await store.append(g, [b"0"], 0)
    results = await asyncio.gather(
        *(store.append(g, [f"{i}".encode()], 1, f"racer-{i}") for i in range(8)),
        return_exceptions=True)
    won = [r for r in results if not isinstance(r, BaseException)]
    assert len(won) == 1 and won[0].last_version == 2
    assert all(isinstance(r, Conflict) and r.current_version == 2
               for r in results if isinstance(r, BaseException))
    assert await store.version(g) == 2
