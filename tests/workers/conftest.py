"""Fixtures for the workers' tests: the toy game and Bubblee Pop, stores."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from services import games as registry  # noqa: E402
from services.core.decider import Game, Rng  # noqa: E402
from services.core.host import Caller, Host  # noqa: E402
from services.core.store import MemoryStore, Store  # noqa: E402
from services.toy import GAME as TOY  # noqa: E402
from tests.conftest import REDIS_URL  # noqa: E402


def served_games() -> dict[str, Game]:
    return {"toy": TOY, "bubblee": registry.game("bubblee")}


@pytest.fixture
def games() -> dict[str, Game]:
    return served_games()


CLUSTER_URL = os.environ.get("ARBITER_TEST_REDIS_CLUSTER_URL", "")
CLUSTER_SKIP = os.environ.get("ARBITER_TEST_REDIS_CLUSTER_SKIP", "") or (
    "needs ARBITER_TEST_REDIS_CLUSTER_URL (make test starts a private Redis Cluster)")


def url_of(kind: str) -> str:
    """The private redis-server ("redis") or a node of the private Redis Cluster ("cluster",
    3 masters and 3 replicas); the test is skipped, with the reason, where there is none."""
    if kind == "redis":
        if not REDIS_URL:
            pytest.skip("needs ARBITER_TEST_REDIS_URL (make test starts a private redis-server)")
        return REDIS_URL
    if not CLUSTER_URL:
        pytest.skip(CLUSTER_SKIP)
    return CLUSTER_URL


@pytest.fixture(params=["redis", "cluster"])
def redis_url(request: pytest.FixtureRequest) -> str:
    return url_of(request.param)


@pytest_asyncio.fixture(params=["memory", "redis", "cluster"])
async def any_store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    if request.param == "memory":
        s: Store = MemoryStore()
    else:
        from services.core.redis_store import RedisStore

        s = RedisStore(url_of(request.param))
    yield s
    await s.close()


def redis_db_url(db: int) -> str:
    """The test Redis, another database number (the broker must not share the event store's)."""
    base = REDIS_URL.rsplit("/", 1)[0] if REDIS_URL.count("/") > 2 else REDIS_URL
    return f"{base}/{db}"


async def play_random(host: Host, game: Game, n_seats: int = 2, seed: int = 0,
                      stop_at: int | None = None, names: list[str] | None = None,
                      options: Any = None) -> str:
    """Create a game of human seats and play random legal commands (to the end by default)."""
    from services.core.decider import Seat

    names = names or [f"p{i}" for i in range(n_seats)]
    made = await host.create(game.name, [Seat(n) for n in names],
                             options if options is not None else game.pb.Options())
    game_id, tokens = made.game_id, made.tokens
    rng = Rng.for_test(seed)
    for _ in range(5000):
        loaded = await host.load(game_id, fresh=True)
        if loaded.finished or (stop_at is not None and loaded.version >= stop_at):
            break
        seat = rng.choice(list(game.to_act(loaded.state)))
        command = rng.choice(game.legal_actions(loaded.state, seat))
        await host.act(game_id, Caller(token=tokens[seat]), command,
                       f"t-{loaded.version}", loaded.version)
    return game_id
