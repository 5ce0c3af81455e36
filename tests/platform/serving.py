"""A server as `make run` starts it (embedded store, Bubblee only), in a process of its own on
free ports, for the tests that run documented examples against it."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tools.redis_servers import free_port


def wait_for_port(port: int, tries: int = 400) -> bool:
    """Whether the port took a connection within `tries` tries, 50 ms apart."""
    for _ in range(tries):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


@contextlib.contextmanager
def make_run_server(data_dir: Path, http: bool = True) -> Iterator[dict[str, str]]:
    """The server's environment (its addresses), once its ports take connections."""
    grpc_port, http_port = free_port(), free_port()
    env = dict(os.environ, ARBITER_GRPC_ADDR=f"127.0.0.1:{grpc_port}",
               ARBITER_HTTP_ADDR=f"127.0.0.1:{http_port}" if http else "",
               ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}", ARBITER_DATA_DIR=str(data_dir),
               ARBITER_GAMES="bubblee")
    env.pop("ARBITER_REDIS_URL", None)
    server = subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for port in (grpc_port, http_port) if http else (grpc_port,):
            wait_for_port(port)
        yield env
    finally:
        server.terminate()
        server.wait(timeout=10)
