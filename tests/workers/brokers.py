"""The brokers the Celery tests run on: a database of the private test Redis, and a RabbitMQ
vhost made for the test run (with rabbitmqctl, or the management API) and deleted after."""

from __future__ import annotations

import atexit
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from urllib.parse import quote, urlparse

import pytest

from tests.conftest import REDIS_URL
from tests.workers.conftest import ROOT, redis_db_url

# Where RabbitMQ listens (the development machines and CI run one there, guest/guest).
AMQP_BASE = os.environ.get("ARBITER_TEST_AMQP_URL", "amqp://guest:guest@127.0.0.1:5672")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reachable(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def _management(method: str, path: str, body: dict[str, str] | None = None) -> None:
    u = urlparse(AMQP_BASE)
    request = urllib.request.Request(
        f"http://{u.hostname}:15672/api/{path}", method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"content-type": "application/json", "authorization": "Basic " +
                 base64.b64encode(f"{u.username}:{u.password}".encode()).decode()})
    urllib.request.urlopen(request, timeout=10).close()


def _rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", *args], check=True, timeout=60, capture_output=True)


def _make_vhost() -> tuple[str, Callable[[], None]]:
    """A fresh vhost on the test RabbitMQ that guest may use, and how to delete it."""
    u = urlparse(AMQP_BASE)
    if not reachable(u.hostname or "127.0.0.1", u.port or 5672):
        pytest.skip(f"RabbitMQ is not reachable at {u.hostname}:{u.port or 5672}")
    vhost = f"arbiter-test-{uuid.uuid4().hex[:10]}"
    user = u.username or "guest"
    if shutil.which("rabbitmqctl"):
        try:
            _rabbitmqctl("add_vhost", vhost)
            _rabbitmqctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")
        except (subprocess.SubprocessError, OSError) as e:
            pytest.skip(f"rabbitmqctl cannot create a vhost here: {e}")
        # rabbitmqctl takes seconds (it boots an Erlang node): delete in the background.
        return vhost, lambda: _deleting.append(subprocess.Popen(
            ["rabbitmqctl", "delete_vhost", vhost], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
    if reachable(u.hostname or "127.0.0.1", 15672):
        _management("PUT", f"vhosts/{quote(vhost, safe='')}")
        _management("PUT", f"permissions/{quote(vhost, safe='')}/{user}",
                    {"configure": ".*", "write": ".*", "read": ".*"})
        return vhost, lambda: _management("DELETE", f"vhosts/{quote(vhost, safe='')}")
    pytest.skip("cannot create a RabbitMQ vhost: no rabbitmqctl and no management API on "
                "port 15672")


_deleting: list[subprocess.Popen[bytes]] = []
_vhost: Future[tuple[str, Callable[[], None]]] | None = None


@atexit.register
def _wait_for_deletions() -> None:
    if _vhost is not None and _vhost.exception() is None:  # made but never used
        _vhost.result()[1]()
    for proc in _deleting:
        proc.wait(timeout=120)


def start_making_a_vhost() -> None:
    """Begin making the RabbitMQ vhost now, while other tests run (it takes seconds)."""
    global _vhost
    if _vhost is None:
        _vhost = ThreadPoolExecutor(1).submit(_make_vhost)


@contextmanager
def rabbitmq_vhost() -> Iterator[str]:
    """The amqp:// URL of a vhost of its own, deleted after the block."""
    global _vhost
    start_making_a_vhost()
    assert _vhost is not None
    future, _vhost = _vhost, None
    vhost, drop = future.result()  # a skip in the thread is raised here
    try:
        yield f"{AMQP_BASE}/{vhost}"
    finally:
        drop()


@contextmanager
def broker_url(kind: str) -> Iterator[str]:
    """A broker of this kind (redis or rabbitmq), empty, for the duration of the block."""
    if kind == "rabbitmq":
        with rabbitmq_vhost() as url:
            yield url
        return
    if not REDIS_URL:
        pytest.skip("needs ARBITER_TEST_REDIS_URL (make test starts a private redis-server)")
    start_making_a_vhost()  # for the RabbitMQ tests that follow
    import redis

    url = redis_db_url(1)
    redis.Redis.from_url(url).flushdb()  # no tasks left from an earlier run
    yield url


def worker_env(broker: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": ROOT, "ARBITER_REDIS_URL": REDIS_URL,
           "ARBITER_BROKER_URL": broker, "ARBITER_EXTRA_GAMES": "toy=services.toy",
           **extra}
    for name in ("ARBITER_RESULT_BACKEND", "PROMETHEUS_MULTIPROC_DIR"):
        if name not in extra:
            env.pop(name, None)
    return env


@contextmanager
def arbiter_workers(broker: str, *kinds: str, concurrency: int = 2,
                    env: dict[str, dict[str, str]] | None = None) -> Iterator[list[str]]:
    """`arbiter workers <kind>` for each kind, started side by side on `broker` (with
    `env[kind]` added to its environment); the address of each one's /metrics."""
    ports = [free_port() for _ in kinds]
    logs = [tempfile.TemporaryFile() for _ in kinds]  # a pipe nobody reads would fill up
    procs = [subprocess.Popen(
        [sys.executable, "-m", "services.cli.main", "workers", kind, "-c", str(concurrency)],
        cwd=ROOT, env=worker_env(broker, ARBITER_METRICS_ADDR=f"127.0.0.1:{port}",
                                 **(env or {}).get(kind, {})),
        stdout=log, stderr=subprocess.STDOUT)
        for kind, port, log in zip(kinds, ports, logs, strict=True)]

    def output(i: int) -> str:
        logs[i].seek(0)
        return f"arbiter workers {kinds[i]}:\n" + logs[i].read().decode(errors="replace")[-3000:]

    try:
        deadline = time.monotonic() + 60
        for i, port in enumerate(ports):
            while not reachable("127.0.0.1", port):
                if procs[i].poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"did not start: {output(i)}")
                time.sleep(0.1)
        yield [f"127.0.0.1:{port}" for port in ports]
        for i, proc in enumerate(procs):
            assert proc.poll() is None, f"died during the tests: {output(i)}"
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for log in logs:
            log.close()


def scrape(addr: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample a /metrics serves, by name and labels."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://{addr}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def sample(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str,
           **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)
