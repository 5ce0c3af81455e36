"""The script that creates the deployment's Redis Cluster (Kubernetes Job and compose service
alike) run for real against six fresh cluster-enabled redis-servers on this machine."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tools.redis_servers import cluster_port, redis_cli_binary, redis_server_binary

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PASSWORD = "a-password-for-this-test-only"


def k8s_script() -> tuple[str, list[str]]:
    docs = yaml.safe_load_all((DEPLOY / "k8s" / "redis-cluster.yaml").read_text())
    job = next(d for d in docs if d and d["kind"] == "Job")
    (container,) = job["spec"]["template"]["spec"]["containers"]
    nodes = next(e["value"] for e in container["env"] if e["name"] == "NODES").split()
    return container["args"][0], nodes


def compose_script() -> tuple[str, list[str]]:
    service = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())["services"][
        "redis-cluster-create"]
    return service["command"][2].replace("$$", "$"), service["environment"]["NODES"].split()


def test_kubernetes_and_compose_create_the_cluster_with_the_same_script() -> None:
    k8s, k8s_nodes = k8s_script()
    compose, compose_nodes = compose_script()
    assert k8s == compose
    assert len(k8s_nodes) == len(compose_nodes) == 6


@pytest.fixture
def bare_nodes() -> Iterator[list[int]]:
    """Six cluster-enabled redis-servers that know nothing of each other yet."""
    if redis_cli_binary() is None:
        pytest.skip("needs redis-cli")
    workdir = tempfile.mkdtemp(prefix="arbiter-deploy-cluster-")
    ports: list[int] = []
    while len(ports) < 6:
        port = cluster_port()
        if port not in ports:
            ports.append(port)
    procs = []
    try:
        for port in ports:
            os.makedirs(f"{workdir}/{port}")
            procs.append(subprocess.Popen(
                [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1",
                 "--dir", f"{workdir}/{port}", "--save", "", "--appendonly", "no",
                 "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-node-timeout", "2000", "--requirepass", PASSWORD,
                 "--masterauth", PASSWORD], stdout=subprocess.DEVNULL))
        yield ports
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def cli(port: int, *args: str) -> str:
    return subprocess.run([str(redis_cli_binary()), "-p", str(port), *args], text=True,
                          capture_output=True, timeout=10,
                          env={**os.environ, "REDISCLI_AUTH": PASSWORD}).stdout


def test_the_create_script_makes_three_masters_with_a_replica_each_and_runs_again_safely(
        bare_nodes: list[int], tmp_path: Path) -> None:
    script, _ = k8s_script()
    bin_dir = tmp_path / "bin"  # the script calls `redis-cli`, as in the redis image
    bin_dir.mkdir()
    (bin_dir / "redis-cli").symlink_to(str(redis_cli_binary()))
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "REDISCLI_AUTH": PASSWORD,
           "NODES": " ".join(f"127.0.0.1:{p}" for p in bare_nodes)}

    def create() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", "-ec", script], env=env, capture_output=True, text=True,
                              timeout=120)

    first = create()  # it waits for nodes still starting
    assert first.returncode == 0, first.stdout + first.stderr
    assert "cluster_state:ok" in cli(bare_nodes[0], "cluster", "info")
    assert wait_for_roles(bare_nodes[-1]) == {"master": 3, "slave": 3}

    again = create()
    assert again.returncode == 0, again.stderr
    assert "the cluster already exists" in again.stdout
    assert wait_for_roles(bare_nodes[0]) == {"master": 3, "slave": 3}


def wait_for_roles(port: int, seconds: float = 15) -> dict[str, int]:
    """The roles a node sees, once gossip has told it of every replica (or the last seen)."""
    deadline = time.monotonic() + seconds
    while True:
        roles = {"master": 0, "slave": 0}
        for line in cli(port, "cluster", "nodes").splitlines():
            for flag in line.split()[2].split(","):
                if flag in roles:
                    roles[flag] += 1
        if roles == {"master": 3, "slave": 3} or time.monotonic() > deadline:
            return roles
        time.sleep(0.2)


def test_the_create_script_waits_for_every_node(tmp_path: Path) -> None:
    """Until a node answers, nothing is created (the Job is started before the nodes)."""
    if redis_cli_binary() is None:
        pytest.skip("needs redis-cli")
    script, _ = k8s_script()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        silent = s.getsockname()[1]
    started = time.monotonic()
    env = {"PATH": os.environ["PATH"], "NODES": f"127.0.0.1:{silent}"}
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run(["sh", "-ec", script], env=env, capture_output=True, timeout=2)
    assert time.monotonic() - started >= 2
