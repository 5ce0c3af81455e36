"""ARBITER_REDIS_WAIT_REPLICAS: an append is answered only once N replicas acknowledged it,
on a real master and replica (standalone replication; the failover test covers a cluster)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import pytest
import redis
import redis.asyncio

from services.core.redis_store import RedisStore
from services.core.store import StoreUnavailable
from tests.conftest import new_id
from tools.redis_servers import RedisServers, redis_cli_binary, start_standalone

TIMEOUT = 0.5


def wait_synced(replica: RedisServers, seconds: float = 20) -> None:
    cli = redis_cli_binary()
    assert cli, "needs redis-cli"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        info = subprocess.run([cli, "-p", str(replica.ports[0]), "info", "replication"],
                              capture_output=True, text=True, timeout=5).stdout
        if "master_link_status:up" in info:
            return
        time.sleep(0.05)
    raise RuntimeError("the replica did not sync")


@pytest.fixture
def master_and_replica():
    if os.name != "posix" or redis_cli_binary() is None:
        pytest.skip("needs POSIX signals and redis-cli")
    master = start_standalone(["--repl-diskless-sync-delay", "0"])  # sync the replica now
    replica = start_standalone(["--replicaof", "127.0.0.1", str(master.ports[0])])
    try:
        wait_synced(replica)
        probe = redis.Redis(port=master.ports[0])
        probe.set("ready", 1)
        assert probe.wait(1, 10_000) == 1, "the replica acknowledges nothing"
        probe.close()
        yield master, replica
    finally:
        replica.stop()
        master.stop()


async def test_an_append_waits_for_its_replica_and_a_retry_waits_too(master_and_replica
                                                                     ) -> None:
    master, replica = master_and_replica
    store = RedisStore(master.url, wait_replicas=1, timeout=TIMEOUT)
    game = new_id()
    assert (await store.append(game, [b"a"], 0, "c1")).last_version == 1
    os.kill(replica.procs[0].pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        with pytest.raises(StoreUnavailable, match="0 of 1 replicas"):
            await store.append(game, [b"b"], 1, "c2")
        assert time.monotonic() - t0 < 2 * TIMEOUT
        # The batch is on the master, not acknowledged: the client was told unavailable.
        assert await store.read(game) == [b"a", b"b"]
        # A retry from another connection (another server) must wait for the same batch:
        # its duplicate answer alone proves nothing about the replica.
        other = RedisStore(master.url, wait_replicas=1, timeout=TIMEOUT)
        with pytest.raises(StoreUnavailable):
            await other.append(game, [b"b"], 1, "c2")
    finally:
        os.kill(replica.procs[0].pid, signal.SIGCONT)
    again = await other.append(game, [b"b"], 1, "c2")
    assert again.duplicate and (again.first_version, again.last_version) == (2, 2)
    await asyncio.gather(store.close(), other.close())


async def test_more_replicas_asked_than_there_are_is_unavailable(master_and_replica) -> None:
    master, _ = master_and_replica
    store = RedisStore(master.url, wait_replicas=2, timeout=TIMEOUT)
    with pytest.raises(StoreUnavailable, match="1 of 2 replicas"):
        await store.append(new_id(), [b"a"], 0, "c1")
    await store.close()


async def test_a_conflict_is_still_a_conflict_in_wait_mode(master_and_replica) -> None:
    from services.core.store import Conflict

    master, _ = master_and_replica
    store = RedisStore(master.url, wait_replicas=1, timeout=TIMEOUT)
    game = new_id()
    await store.append(game, [b"a"], 0)
    with pytest.raises(Conflict):
        await store.append(game, [b"b"], 0, "late")
    await store.close()


async def test_a_master_demoted_while_its_append_waits_is_unavailable(master_and_replica
                                                                     ) -> None:
    """A failover that demotes the master (back from a hang, it finds its replica promoted)
    ends the WAIT it was blocked in with an UNBLOCKED error: the append is unavailable, to be
    resent with the same command id, not an internal error."""
    master, replica = master_and_replica
    store = RedisStore(master.url, wait_replicas=1, timeout=4.0)  # WAIT blocks up to 2 s
    admin = redis.asyncio.Redis(port=master.ports[0])
    os.kill(replica.procs[0].pid, signal.SIGSTOP)
    try:
        append = asyncio.create_task(store.append(new_id(), [b"a"], 0, "c1"))
        await asyncio.sleep(0.5)  # the script ran; WAIT is blocked
        await admin.replicaof("127.0.0.1", str(replica.ports[0]))
        with pytest.raises(StoreUnavailable):
            await append
    finally:
        os.kill(replica.procs[0].pid, signal.SIGCONT)
        await asyncio.gather(store.close(), admin.aclose())
