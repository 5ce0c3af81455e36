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


def resending(store: RedisStore) -> None:
    """Make the store's client resend every append after running it once, as redis-py does
    when a reply times out or a connection drops after the script ran."""
    real = store._append

    async def resent(**kwargs: object) -> object:
        await real(**kwargs)
        return await real(**kwargs)

    store._append = resent


async def test_a_resent_append_without_a_command_id_is_applied_once() -> None:
    store = RedisStore(REDIS_URL)
    resending(store)
    game = new_id()
    first = await store.append(game, [b"a", b"b"], 0, "", {"game": "x"})
    assert (first.first_version, first.last_version) == (1, 2)
    assert await store.read(game) == [b"a", b"b"]
    await store.close()


async def test_a_game_created_and_played_through_a_resending_client_has_each_batch_once(
        ) -> None:
    from services import games as registry
    from services.core.decider import Seat
    from services.core.host import Caller, Host

    game = registry.game("bubblee")
    store = RedisStore(REDIS_URL)
    resending(store)
    host = Host(store, {game.name: game})
    made = await host.create(game.name, [Seat("a"), Seat("b")],
                             game.pb.Options())
    game_id, tokens, created = made.game_id, made.tokens, made.version
    loaded = await host.load(game_id)
    seat = list(game.to_act(loaded.state))[0]
    result = await host.act(game_id, Caller(token=tokens[seat]),
                            game.legal_actions(loaded.state, seat)[0])  # no command id
    assert result.version > created == len(await store.read(game_id, 0, created))
    assert len(await store.read(game_id)) == result.version
    await store.close()


async def test_redis_out_of_memory_is_unavailable_and_writes_nothing() -> None:
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
