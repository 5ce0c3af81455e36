"""How the Redis store reports failures: unavailable (retry the same command id), never a
raw library error that a client would see as INTERNAL."""

from __future__ import annotations

import pytest
from redis.asyncio.connection import AbstractConnection

from services.core.redis_store import RedisStore
from services.core.store import StoreUnavailable
from tests.conftest import REDIS_URL, needs_redis, new_id

pytestmark = needs_redis


async def test_a_connection_closed_under_a_write_is_unavailable(monkeypatch) -> None:
    # What redis-py 8.1 raises when a node closes a connection while it is being written to
    # (seen at a cluster failover): the writer is gone.
    async def writer_gone(self, command) -> None:
        None.writelines(command)  # type: ignore[attr-defined]

    store = RedisStore(REDIS_URL)
    game = new_id()
    await store.append(game, [b"a"], 0, "c1")
    monkeypatch.setattr(AbstractConnection, "_send_packed_command", writer_gone)
    with pytest.raises(StoreUnavailable, match="lost"):
        await store.append(game, [b"b"], 1, "c2")
    with pytest.raises(StoreUnavailable):
        await store.read(game)
    assert not await store.ping()
    monkeypatch.undo()
    assert await store.read(game) == [b"a"]
    await store.close()


async def test_a_bug_of_ours_is_not_taken_for_redis_down() -> None:
    store = RedisStore(REDIS_URL)

    async def buggy(**_: object) -> None:
        None.split()  # type: ignore[attr-defined]

    store._append = buggy
    with pytest.raises(AttributeError):
        await store.append(new_id(), [b"a"], 0)
    await store.close()
