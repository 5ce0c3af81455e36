"""The `GameListing` layer's guarantees (services/core/store.py), checked on every store."""

from __future__ import annotations

from services.core.store import Store
from tests.conftest import new_id


async def test_game_ids_lists_every_game(store: Store) -> None:
    g1, g2, never = new_id(), new_id(), new_id()
    await store.append(g1, [b"a"], 0, "", {"game": "x"})
    await store.append(g2, [b"a"], 0, "", {"game": "x"})
    await store.version(never)  # looked at, never appended to
    listed = await store.game_ids()
    assert {g1, g2} <= set(listed) and never not in listed
    assert len(listed) == len(set(listed))
