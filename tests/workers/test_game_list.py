"""The game list (ListGames' read model): newest first, filtered by game, status and seat
name, paged by a cursor without counting or scanning the games; the same on the embedded
read model, on Redis and on a Redis Cluster (where the list is sharded)."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from arbiter.v1 import arbiter_pb2 as apb

from services.workers import readmodel
from services.workers.readmodel import MemoryReadModel, RedisReadModel, Update
from services.workers.shards import SHARDS
from tests.workers.conftest import url_of


@pytest_asyncio.fixture(params=["memory", "redis", "cluster"])
async def rm(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield MemoryReadModel()
        return
    model = RedisReadModel(url_of(request.param), f"arbiter:rm-{uuid.uuid4().hex[:8]}")
    yield model
    await model.drop()
    await model.close()


def update(game_id: str, game: str, created: int, seats: list[str], status: str = "active",
           from_version: int = 0, to_version: int = 3) -> Update:
    summary = apb.GameSummary(
        game_id=game_id, game=game, created_unix_ms=created, version=to_version,
        status=apb.FINISHED if status == "finished" else apb.ACTIVE,
        seats=[apb.Seat(name=n) for n in seats])
    return Update(game_id, game, from_version, to_version, created, status, seats,
                  summary.SerializeToString(), {"started": 1} if from_version == 0 else {})


async def walk(rm: Any, game: str, status: str, seat: str, size: int) -> list[str]:
    """Every page in turn; the ids in the order they came."""
    ids: list[str] = []
    after = None
    for _ in range(1000):
        page, after = await rm.page(game, status, seat, after, size)
        assert len(page) == size or after is None  # only the last page is short
        ids += [s.game_id for s in page]
        if after is None:
            return ids
    raise AssertionError("the pages never ended")


async def test_pages_follow_each_other_newest_first_under_every_filter(rm: Any) -> None:
    rng = random.Random(11)
    games: list[tuple[int, str, str, str, list[str]]] = []
    for i in range(120):
        created = 1_700_000_000_000 + rng.randrange(30) * 1000  # many share a millisecond
        # Ids and names with the separators of the list entries in them.
        game_id = f"g{i}" + ("|x" if i % 17 == 0 else "")
        game = rng.choice(["toy", "bubblee"])
        seats = rng.sample(["ann", "bob", "c|d", "e"], 2)
        status = rng.choice(["active", "finished"])
        games.append((created, game_id, game, status, seats))
        await rm.apply(update(game_id, game, created, seats))
        if status == "finished":
            await rm.apply(update(game_id, game, created, seats, "finished", 3, 9))
    for game in ("", "toy"):
        for status in ("", "active", "finished"):
            for seat in ("", "ann", "c|d", "nobody"):
                expected = [g[1] for g in sorted(games, reverse=True)
                            if (not game or g[2] == game) and (not status or g[3] == status)
                            and (not seat or seat in g[4])]
                for size in (1, 10, 50):
                    if size == 1 and (game or status or seat != "c|d"):
                        continue  # (one-game pages: a few filters are enough)
                    assert await walk(rm, game, status, seat, size) == expected, (
                        game, status, seat, size)


async def test_a_page_reads_a_few_entries_per_shard_not_every_game(
        rm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    if isinstance(rm, MemoryReadModel):
        pytest.skip("the embedded list is one sorted list: a page is a slice of it")
    for i in range(600):
        await rm.apply(update(f"g{i:04}", "toy", 1_700_000_000_000 + i, ["ann", "bob"]))
    fetched = []
    pipelined = readmodel.pipelined

    async def counting(redis: Any, method: str, calls: Any, raise_on_error: bool = True,
                       **options: Any) -> list[Any]:
        replies = await pipelined(redis, method, calls, raise_on_error, **options)
        if method == "zrevrangebylex":
            fetched.append(sum(len(r) for r in replies))
        return replies

    monkeypatch.setattr(readmodel, "pipelined", counting)
    after = None
    for _ in range(4):
        fetched.clear()
        page, after = await rm.page("toy", "active", "ann", after, 20)
        assert len(page) == 20 and fetched
        # The first round takes 2 * 21 / SHARDS + 2 entries per shard; a second round (rare
        # with games spread over the shards) 21 more from a few shards.
        assert sum(fetched) <= SHARDS * (2 * 21 // SHARDS + 2) + 3 * 21, fetched


async def test_a_finished_game_is_never_listed_as_active_again(rm: Any) -> None:
    """Two workers race: the one that read an older version writes last."""
    created = 1_700_000_000_000
    await rm.apply(update("g", "toy", created, ["ann"]))
    await rm.relist(update("g", "toy", created, ["ann"], "finished", 3, 9))
    await rm.relist(update("g", "toy", created, ["ann"], "active", 0, 3))  # late and stale
    assert (await rm.page("", "active", "", None, 10))[0] == []
    assert (await rm.page("toy", "active", "ann", None, 10))[0] == []


async def test_a_list_entry_ahead_of_its_record_never_shows_a_contradiction(rm: Any) -> None:
    """The list is written before the record: in between, a page shows no game under a
    status its summary does not have, and no game that has no summary yet."""
    created = 1_700_000_000_000
    await rm.apply(update("old", "toy", created, ["ann"]))
    await rm.relist(update("old", "toy", created, ["ann"], "finished", 3, 9))  # record: active
    await rm.relist(update("new", "toy", created + 1, ["ann"]))  # no record yet
    listed = [s.game_id for s in (await rm.page("", "", "", None, 10))[0]]
    assert listed == ["old"]
    assert (await rm.page("", "finished", "", None, 10))[0] == []
    assert (await rm.page("", "active", "", None, 10))[0] == []
