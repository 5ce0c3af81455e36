"""The `GameMetadata` layer's guarantees (services/core/store.py), checked on every store."""

from __future__ import annotations

import pytest

from services.core.store import Conflict, Store
from tests.conftest import new_id


async def test_metadata_is_written_with_the_batch(store: Store) -> None:
    g = new_id()
    assert await store.meta(g) == {}
    await store.append(g, [b"a"], 0, "", {"game": "bubblee", "seed": "ff"})
    await store.append(g, [b"b"], 1, "", {"status": "finished"})
    meta = await store.meta(g)
    assert meta["game"] == "bubblee" and meta["status"] == "finished" and meta["version"] == "2"


async def test_a_batchs_keys_replace_the_same_keys_and_keep_the_others(store: Store) -> None:
    g = new_id()
    await store.append(g, [b"a"], 0, "", {"status": "running", "seed": "ff"})
    await store.append(g, [b"b", b"c"], 1, "", {"status": "finished"})
    assert await store.meta(g) == {"status": "finished", "seed": "ff", "version": "3"}


async def test_a_refused_append_changes_no_metadata(store: Store) -> None:
    g = new_id()
    await store.append(g, [b"a"], 0, "c1", {"status": "running"})
    with pytest.raises(Conflict):
        await store.append(g, [b"b"], 0, "c2", {"status": "stale"})
    again = await store.append(g, [b"b"], 1, "c1", {"status": "resent"})
    assert again.duplicate
    assert await store.meta(g) == {"status": "running", "version": "1"}
