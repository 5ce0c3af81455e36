"""Fixtures shared by every test: the stores under test and a private Redis."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio  # noqa: F401  (asyncio support)

from services.core.store import MemoryStore, Store

REDIS_URL = os.environ.get("ARBITER_TEST_REDIS_URL", "")
needs_redis = pytest.mark.skipif(
    not REDIS_URL, reason="needs ARBITER_TEST_REDIS_URL (make test starts a private redis-server)")
# One node of a private Redis Cluster (3 masters, 3 replicas) that `make test` starts.
CLUSTER_URL = os.environ.get("ARBITER_TEST_REDIS_CLUSTER_URL", "")
NO_CLUSTER = os.environ.get("ARBITER_TEST_REDIS_CLUSTER_SKIP", "") or (
    "needs ARBITER_TEST_REDIS_CLUSTER_URL (make test starts a private Redis Cluster)")
needs_cluster = pytest.mark.skipif(not CLUSTER_URL, reason=NO_CLUSTER)


def new_id(prefix: str = "test") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest_asyncio.fixture(params=["memory", "redis", "cluster"])
async def store(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[Store]:
    if request.param == "memory":
        s: Store = MemoryStore(str(tmp_path / "store.aof"))
    elif request.param == "cluster":
        if not CLUSTER_URL:
            pytest.skip(NO_CLUSTER)
        from services.core.redis_store import RedisStore

        # A cluster has database 0 only; the raw entries written here belong to no game
        # served, so the workers of a server on the same cluster skip them.
        s = RedisStore(CLUSTER_URL)
    else:
        if not REDIS_URL:
            pytest.skip("needs ARBITER_TEST_REDIS_URL (make test starts a private redis-server)")
        from services.core.redis_store import RedisStore

        # A database of its own: these tests write raw entries that no game could read.
        s = RedisStore(REDIS_URL.rsplit("/", 1)[0] + "/3")
    yield s
    await s.close()
