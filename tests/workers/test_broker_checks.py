"""A broker (or result backend) that cannot work stops the server and every worker at start
with one sentence: an unknown scheme, the event store's own Redis database, a Redis Cluster
node, a read-only replica, a broker that is not there, a RabbitMQ vhost that does not exist or
where the user has no permissions. Also a /metrics address in use; an ai worker whose Celery
stops exits non-zero; several ai workers run on one host."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from services.workers.celery_app import BrokerUnusable, check, check_env, result_backend
from tests.conftest import REDIS_URL, needs_redis
from tests.workers.brokers import AMQP_BASE, free_port, reachable
from tests.workers.conftest import ROOT, redis_db_url
from tools.redis_servers import start_standalone


def refusal(broker: str, backend: str = "", event_store: str = "") -> str:
    with pytest.raises(BrokerUnusable) as info:
        check(broker, event_store, backend, timeout=2)
    message = str(info.value)
    assert "\n" not in message and message.strip() == message
    return message


def test_an_unknown_scheme_is_refused() -> None:
    assert "neither RabbitMQ (amqp://) nor Redis" in refusal("kafka://127.0.0.1:9092")
    assert "neither RabbitMQ" in refusal("127.0.0.1:5672")


def test_a_broker_that_is_not_there_is_refused_without_its_password() -> None:
    port = free_port()
    message = refusal(f"amqp://guest:secret@127.0.0.1:{port}/x")
    assert f"127.0.0.1:{port}" in message and "cannot be used" in message
    assert "secret" not in message
    assert "cannot be reached" in refusal(f"redis://:secret@127.0.0.1:{port}/1")


@needs_redis
def test_the_event_stores_own_database_is_refused() -> None:
    assert "the event store's own Redis database" in refusal(
        REDIS_URL, event_store=REDIS_URL)
    # another database of the same server is fine
    check(redis_db_url(1), REDIS_URL, redis_db_url(1), timeout=2)
    message = refusal(redis_db_url(1), backend=REDIS_URL, event_store=REDIS_URL)
    assert message.startswith("ARBITER_RESULT_BACKEND") and "event store" in message


def test_a_result_backend_arbiter_does_not_work_with_is_refused() -> None:
    if not REDIS_URL:
        pytest.skip("needs ARBITER_TEST_REDIS_URL")
    # Celery 5 has no amqp:// result backend; `rpc://` is what sends results over AMQP.
    message = refusal(redis_db_url(1), backend="amqp://guest:guest@127.0.0.1:5672//")
    assert "ARBITER_RESULT_BACKEND" in message and "rpc://" in message


def test_the_default_result_backend_follows_the_broker() -> None:
    assert result_backend("amqp://guest:guest@rabbit:5672/arbiter", {}) == "rpc://"
    assert result_backend("redis://redis:6379/1", {}) == "redis://redis:6379/1"
    assert result_backend("redis://redis:6379/1",
                          {"ARBITER_RESULT_BACKEND": "redis://other:6379/2"}) == \
        "redis://other:6379/2"


def test_a_missing_rabbitmq_vhost_is_refused() -> None:
    host, _, port = AMQP_BASE.rpartition("@")[2].partition(":")
    if not reachable(host, int(port or 5672)):
        pytest.skip(f"RabbitMQ is not reachable at {host}:{port}")
    vhost = f"arbiter-missing-{uuid.uuid4().hex[:8]}"
    assert f"vhost {vhost} not found" in refusal(f"{AMQP_BASE}/{vhost}")


@pytest.fixture(scope="module")
def cluster_node() -> Iterator[str]:
    """A Redis started in cluster mode (one node is enough to be refused as a broker)."""
    binary = shutil.which("redis-server")
    if not binary:
        pytest.skip("no redis-server binary to start a cluster node with")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="arbiter-cluster-node-")
    # The cluster bus port is chosen too (by default it is port + 10000, maybe past 65535).
    proc = subprocess.Popen([binary, "--port", str(port), "--cluster-port", str(free_port()),
                             "--bind", "127.0.0.1", "--cluster-enabled", "yes", "--save", "",
                             "--appendonly", "no", "--dir", workdir], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not reachable("127.0.0.1", port):
            assert time.monotonic() < deadline and proc.poll() is None, "no cluster node"
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def test_a_redis_cluster_node_is_refused(cluster_node: str) -> None:
    # Database 1 is refused by the node itself (SELECT); database 0 is seen in INFO.
    for url in (f"{cluster_node}/1", f"{cluster_node}/0"):
        assert "is a Redis Cluster node" in refusal(url)
    if REDIS_URL:
        message = refusal(redis_db_url(1), backend=f"{cluster_node}/0")
        assert message.startswith("ARBITER_RESULT_BACKEND") and "Cluster node" in message


def test_the_broker_cannot_share_the_event_stores_cluster() -> None:
    cluster = os.environ.get("ARBITER_TEST_REDIS_CLUSTER_URL", "")
    if not cluster:
        pytest.skip(os.environ.get("ARBITER_TEST_REDIS_CLUSTER_SKIP", "no test Redis Cluster"))
    node = cluster.rsplit("/", 1)[0] if cluster.count("/") > 2 else cluster
    assert "is a Redis Cluster node" in refusal(f"{node}/1", event_store=cluster)
    assert "Redis Cluster node" in refusal(f"{node}/0", event_store=f"{node}/5")


def test_check_env_checks_only_what_is_set() -> None:
    assert check_env({}) == ""
    with pytest.raises(BrokerUnusable):
        check_env({"ARBITER_BROKER_URL": "kafka://x"})


async def test_a_server_on_the_embedded_store_refuses_a_broker() -> None:
    """The ai workers could not reach games kept inside the server: AI seats would wait for
    the rescue deadline, 30 s a turn."""
    from services.core.server import Config
    from services.core.startup import CannotStart
    from services.process import serve
    from tests.workers.conftest import TOY

    config = Config(grpc_addr=f"127.0.0.1:{free_port()}",
                    metrics_addr=f"127.0.0.1:{free_port()}", broker_url="redis://x:6379/1")
    with pytest.raises(CannotStart, match="ARBITER_BROKER_URL needs ARBITER_REDIS_URL"):
        await serve(config, {"toy": TOY})


# ---- the processes stop at start, with the sentence and no traceback --------------------------


def start(args: list[str], **env: str) -> subprocess.Popen[str]:
    full = {**os.environ, "PYTHONPATH": ROOT, "ARBITER_EXTRA_GAMES": "toy=services.toy",
            "ARBITER_GRPC_ADDR": f"127.0.0.1:{free_port()}",
            "ARBITER_METRICS_ADDR": f"127.0.0.1:{free_port()}",
            "ARBITER_DATA_DIR": tempfile.mkdtemp(prefix="arbiter-check-"), **env}
    return subprocess.Popen([sys.executable, "-m", "services.cli.main", *args], cwd=ROOT,
                            env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_the_server_the_workers_and_simulate_stop_at_start_with_one_line(
        cluster_node: str) -> None:
    """One case per way in (the server, a Celery worker, an asyncio worker, the simulate
    command; the unit tests above cover every refusal), started side by side since each
    start pays the CLI's imports. Each must exit 2 with one line, where the server used to
    start and leave AI turns to the 30 s rescue."""
    events = REDIS_URL or "redis://127.0.0.1:1/0"
    down = f"redis://127.0.0.1:{free_port()}/1"
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    in_use = f"127.0.0.1:{busy.getsockname()[1]}"
    cases = {
        "serve, broker not there": (
            ["serve", "--games", "bubblee"], {"ARBITER_BROKER_URL": down,
                                              "ARBITER_REDIS_URL": events},
            f"arbiter serve: ARBITER_BROKER_URL {down} cannot be reached"),
        "ai worker on a cluster node": (
            ["workers", "ai"], {"ARBITER_BROKER_URL": f"{cluster_node}/1",
                                "ARBITER_REDIS_URL": events},
            "is a Redis Cluster node"),
        "deadline worker, metrics address in use": (
            ["workers", "deadlines"], {"ARBITER_REDIS_URL": events,
                                       "ARBITER_METRICS_ADDR": in_use},
            f"arbiter workers: cannot serve /metrics on '{in_use}'"),
        "simulate on a broker not there": (
            ["simulate", "toy", "--games", "5", "--bots", "perfect,random"],
            {"ARBITER_BROKER_URL": down}, "ARBITER_BROKER_URL"),
    }
    if not REDIS_URL:  # it gets past its checks to the metrics only with a Redis
        del cases["deadline worker, metrics address in use"]
    procs = {name: start(args, **env) for name, (args, env, _) in cases.items()}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 2, f"{name}: exit {proc.returncode}\n{err}"
            assert "Traceback" not in err, f"{name}:\n{err}"
            lines = [line for line in err.splitlines() if " INFO " not in line]
            assert len(lines) == 1, f"{name}: {err}"
            assert cases[name][2] in lines[0], f"{name}: {lines[0]}"
    finally:
        busy.close()
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# ---- brokers that connect but cannot carry tasks --------------------------------------------


@contextmanager
def vhost_with_permissions(configure: str, write: str, read: str) -> Iterator[str]:
    """A vhost of its own where the test user has these permissions; its amqp:// URL.
    rabbitmqctl is needed to make one."""
    from urllib.parse import urlparse

    u = urlparse(AMQP_BASE)
    if not reachable(u.hostname or "127.0.0.1", u.port or 5672):
        pytest.skip(f"RabbitMQ is not reachable at {u.hostname}:{u.port or 5672}")
    if not shutil.which("rabbitmqctl"):
        pytest.skip("no rabbitmqctl to make a vhost with chosen permissions")
    vhost = f"arbiter-perm-{uuid.uuid4().hex[:10]}"

    def ctl(*args: str) -> None:
        subprocess.run(["rabbitmqctl", *args], check=True, timeout=60, capture_output=True)

    try:
        ctl("add_vhost", vhost)
        ctl("set_permissions", "-p", vhost, u.username or "guest", configure, write, read)
    except (subprocess.SubprocessError, OSError) as e:
        pytest.skip(f"rabbitmqctl cannot make a vhost here: {e}")
    try:
        yield f"{AMQP_BASE}/{vhost}"
    finally:
        subprocess.Popen(["rabbitmqctl", "delete_vhost", vhost], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)


def test_a_rabbitmq_vhost_without_permissions_for_the_user_is_refused() -> None:
    # The user may open the vhost but neither configure, write nor read in it: the
    # connection alone succeeds, and Celery used to fail only once started.
    with vhost_with_permissions("^$", "^$", "^$") as url:
        message = refusal(url)
        assert "ACCESS_REFUSED" in message and "set_permissions" in message
        assert "guest:guest" not in message
    # Read only.
    with vhost_with_permissions("^$", "^$", ".*") as url:
        assert "ACCESS_REFUSED" in refusal(url)


@needs_redis
def test_a_read_only_redis_replica_is_refused_as_broker_and_as_result_backend() -> None:
    master_port = int(REDIS_URL.rsplit(":", 1)[1].split("/")[0])
    replica = start_standalone(["--replicaof", "127.0.0.1", str(master_port)])
    try:
        url = f"{replica.url.rsplit('/', 1)[0]}/1" if replica.url.count("/") > 2 \
            else f"{replica.url}/1"
        message = refusal(url)
        assert "read-only replica" in message and message.startswith("ARBITER_BROKER_URL")
        message = refusal(redis_db_url(1), backend=url)
        assert "read-only replica" in message and message.startswith("ARBITER_RESULT_BACKEND")
    finally:
        replica.stop()


@needs_redis
def test_the_event_stores_own_database_under_another_name_is_refused() -> None:
    """localhost for 127.0.0.1: the same server, whatever the URL calls it."""
    assert "127.0.0.1" in REDIS_URL
    as_localhost = REDIS_URL.replace("127.0.0.1", "localhost")
    assert "the event store's own Redis database" in refusal(as_localhost, event_store=REDIS_URL)
    assert "the event store's own Redis database" in refusal(
        redis_db_url(1), backend=as_localhost, event_store=REDIS_URL)
    # Another database of the same server, under either name, is fine.
    check(redis_db_url(1).replace("127.0.0.1", "localhost"), REDIS_URL, "rpc://", timeout=2)
    # A server that is not there cannot be the event store's.
    assert "cannot be reached" in refusal(f"redis://localhost:{free_port()}/0",
                                          event_store=REDIS_URL)


@needs_redis
@pytest.mark.slow
def test_an_ai_worker_whose_celery_stops_exits_non_zero_with_a_sentence() -> None:
    # Permissions for the start check's own queue only: the check passes, and Celery then
    # fails on its first exchange (a permission set an operator could well write).
    own = r"^arbiter\.broker-check\..*$"
    with vhost_with_permissions(own, r"^(amq\.default|arbiter\.broker-check\..*)$",
                                own) as url:
        proc = start(["workers", "ai", "-c", "1"], ARBITER_BROKER_URL=url,
                     ARBITER_REDIS_URL=REDIS_URL)
        try:
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode not in (0, None), err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("arbiter workers ai: the Celery worker stopped with status"), last


@needs_redis
@pytest.mark.slow
def test_two_ai_workers_run_side_by_side_on_one_host_under_names_of_their_own() -> None:
    from services.workers.celery_app import make_app
    from tests.workers.brokers import arbiter_workers, broker_url

    with broker_url("redis") as url, arbiter_workers(url, "ai", "ai", concurrency=1):
        app = make_app(url, results=False)
        names: set[str] = set()
        deadline = time.monotonic() + 30
        while len(names) < 2 and time.monotonic() < deadline:
            names |= {name for reply in app.control.ping(timeout=1.0) for name in reply}
        assert len(names) == 2, names
        assert all(name.startswith("ai-") for name in names), names
