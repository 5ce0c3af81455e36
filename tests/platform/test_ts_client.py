"""The TypeScript client of clients/ts (code generated from protos/ by buf and protoc-gen-es,
calls by Connect-ES) plays a whole game of Bubblee Pop against a live server: over Connect
(HTTP/1.1, unary calls) and over a Play stream (gRPC on HTTP/2), and verifies each; the
grpc-js example of docs/typescript.md plays one over Play."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "ts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_typescript_client_plays_a_whole_game_over_connect_and_play(
        tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the TypeScript client cannot run")
    if not (CLIENT / "gen" / ".stamp").exists():
        pytest.skip("clients/ts is not set up (`make ts`, which `make test` runs, installs its "
                    "npm packages and generates its code; npm or the npm registry was missing)")
    grpc_port, http_port = free_port(), free_port()
    env = dict(os.environ, ARBITER_GRPC_ADDR=f"127.0.0.1:{grpc_port}",
               ARBITER_HTTP_ADDR=f"127.0.0.1:{http_port}",
               ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}", ARBITER_DATA_DIR=str(tmp_path),
               ARBITER_GAMES="bubblee")
    env.pop("ARBITER_REDIS_URL", None)
    server = subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for port in (grpc_port, http_port):
            for _ in range(400):
                try:
                    socket.create_connection(("127.0.0.1", port), 0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
        run = subprocess.run([str(CLIENT / "node_modules" / ".bin" / "tsx"), "play.ts"],
                             cwd=CLIENT, env=env, capture_output=True, text=True, timeout=300)
        # docs/typescript.md's grpc-js example, as written, from the project's root; the
        # packages it imports are found beside it.
        doc = (ROOT / "docs" / "typescript.md").read_text()
        match = re.search(r"<!-- example: grpc-js -->\n```js\n(.*?)```", doc, re.S)
        assert match, "docs/typescript.md has no grpc-js example"
        (tmp_path / "node_modules").symlink_to(CLIENT / "node_modules")
        (tmp_path / "play.mjs").write_text(match.group(1))
        grpc_js = subprocess.run(["node", str(tmp_path / "play.mjs")], cwd=ROOT, env=env,
                                 capture_output=True, text=True, timeout=300)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert run.returncode == 0, run.stdout + run.stderr
    games = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert [g["transport"] for g in games] == ["connect", "play"], run.stdout
    for game in games:
        # A whole game: it ended (a winner, or a draw with the scores), Ann moved many times,
        # and its public log re-runs to the same events.
        assert game["moves"] > 5 and game["version"] > 20, game
        assert game["winners"] or len(game["scores"]) == 2, game
        assert game["verified"] is True and game["entries"] == game["version"], game
    assert grpc_js.returncode == 0, grpc_js.stdout + grpc_js.stderr
    assert re.fullmatch(r"game over at version \d{2,} winners \[.*\]\n", grpc_js.stdout), (
        grpc_js.stdout)
