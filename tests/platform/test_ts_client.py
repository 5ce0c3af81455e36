"""The TypeScript client of clients/ts (code generated from protos/ by buf and protoc-gen-es,
calls by Connect-ES) plays a whole game of Bubblee Pop against a live server: over Connect
(HTTP/1.1, unary calls) and over a Play stream (gRPC on HTTP/2), and verifies each; the
grpc-js example of docs/typescript.md plays one over Play."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.platform.serving import make_run_server

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "ts"


def test_the_typescript_client_plays_a_whole_game_over_connect_and_play(
        tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the TypeScript client cannot run")
    if not (CLIENT / "gen" / ".stamp").exists():
        pytest.skip("clients/ts is not set up (`make ts`, which `make test` runs, installs its "
                    "npm packages and generates its code; npm or the npm registry was missing)")
    with make_run_server(tmp_path) as env:
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
