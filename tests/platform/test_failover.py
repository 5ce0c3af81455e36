"""A Redis Cluster master killed under load (loadtests/failover.py, one round per mode):
clients see UNAVAILABLE, then succeed by resending the same command ids. The master dies
while its replica lags behind, so that it has acknowledged batches its replica never got:
without WAIT some acknowledged commands are lost; with ARBITER_REDIS_WAIT_REPLICAS=1 none
(nor any event or game). A plain kill on loopback rarely loses anything: the figures
over many rounds of both are in docs/performance.md (python -m loadtests.failover)."""

from __future__ import annotations

import pytest

from loadtests.failover import failover_round
from tools.redis_servers import redis_cli_binary

pytestmark = pytest.mark.skipif(redis_cli_binary() is None,
                                reason="needs redis-cli to make a cluster of its own")


@pytest.mark.slow
@pytest.mark.parametrize("wait_replicas", [0, 1])
async def test_a_master_killed_under_load(wait_replicas: int) -> None:
    r = await failover_round(wait_replicas, lagging=True, players=16, load_seconds=1.5,
                             after_seconds=1.0)
    assert r.acked_commands > 100, r
    assert r.unavailable > 0 and r.resent_then_ok > 0, r  # refused, then answered
    assert r.stuck == 0, r
    if wait_replicas:
        assert (r.lost_commands, r.lost_events, r.lost_games) == (0, 0, 0), r
    elif r.acked_just_before_kill:
        # What WAIT is for: the master acknowledged batches its replica never got.
        assert r.lost_commands > 0, r
    if not (r.lost_commands or r.lost_games):
        assert r.other_errors == {}, r  # only a lost batch may leave a game behind a cache
