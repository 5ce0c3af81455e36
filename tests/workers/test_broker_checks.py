"""A broker (or result backend) that cannot work stops the server and every worker at start
with one sentence: an unknown scheme, the event store's own Redis database, a Redis Cluster
node, a broker that is not there, a RabbitMQ vhost that does not exist. Also a /metrics
address in use."""

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

import pytest

from services.workers.celery_app import BrokerUnusable, check, check_env, result_backend
from tests.conftest import REDIS_URL, needs_redis
from tests.workers.brokers import AMQP_BASE, free_port, reachable
from tests.workers.conftest import ROOT, redis_db_url


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
