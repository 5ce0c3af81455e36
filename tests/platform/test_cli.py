"""The `arbiter` command: verify, replay, export and play, as a user runs them."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from services import games as registry
from services.core import log as gamelog
from services.core.decider import Seat
from services.core.host import Host
from services.core.server import in_process_ai
from services.core.store import MemoryStore


@pytest.fixture(autouse=True)
def kept_games_here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`arbiter play` keeps its games in a folder of the test's own."""
    monkeypatch.setenv("ARBITER_PLAY_DIR", str(tmp_path / "play"))


def arbiter(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.cli.main", *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


async def finished_log() -> list[str]:
    game = registry.game("bubblee")
    host = Host(MemoryStore(), {"bubblee": game}, ai_dispatch=in_process_ai)
    seats = [Seat("a", "ai", "random"), Seat("b", "ai", "greedy")]
    game_id = (await host.create("bubblee", seats, game.pb.Options())).game_id
    while not (await host.load(game_id)).finished:
        await asyncio.sleep(0)
    _, entries = await host.history(game_id)
    return gamelog.to_json_lines(game, entries)


def write(path: Path, lines: list[str]) -> str:
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_verify_accepts_a_finished_log_and_names_a_tampered_line(tmp_path: Path) -> None:
    lines = asyncio.run(finished_log())
    ok = arbiter("verify", write(tmp_path / "game.jsonl", lines))
    assert ok.returncode == 0 and ok.stdout.startswith("OK:"), ok.stdout + ok.stderr
    target = next(i for i, line in enumerate(lines) if '"placed"' in line)
    row = json.loads(lines[target])
    cell = row["event"]["placed"]["cell"]
    cell["column"] = (cell.get("column", 0) + 1) % 5
    bad = arbiter("verify", write(tmp_path / "bad.jsonl",
                                  lines[:target] + [json.dumps(row)] + lines[target + 1:]))
    assert bad.returncode == 1
    assert f"line {target + 1}:" in bad.stdout


def test_verify_of_a_running_game_says_not_finished_with_its_own_code(tmp_path: Path) -> None:
    async def running_log() -> list[str]:
        game = registry.game("bubblee")
        host = Host(MemoryStore(), {"bubblee": game})
        game_id = (await host.create("bubblee", [Seat("a"), Seat("b")],
                                     game.pb.Options())).game_id
        _, entries = await host.history(game_id)
        return gamelog.to_json_lines(game, entries)

    run = arbiter("verify", write(tmp_path / "running.jsonl", asyncio.run(running_log())))
    assert run.returncode == 3, run.stdout + run.stderr
    assert run.stdout.startswith("not finished: ") and "FAILED" not in run.stdout
    assert "3 the game is not finished" in " ".join(arbiter("verify", "--help").stdout.split())


def test_stats_are_sentences_without_raw_keys(tmp_path: Path) -> None:
    async def two_games() -> None:
        game = registry.game("bubblee")
        store = MemoryStore(str(tmp_path / "arbiter.aof"))
        host = Host(store, {"bubblee": game}, ai_dispatch=in_process_ai)
        for bots in (("random", "greedy"), ("greedy", "greedy")):
            seats = [Seat(b, "ai", b) for b in bots]
            game_id = (await host.create("bubblee", seats, game.pb.Options())).game_id
            while not (await host.load(game_id)).finished:
                await asyncio.sleep(0)
        await store.close()

    asyncio.run(two_games())
    env = {k: v for k, v in os.environ.items() if k != "ARBITER_REDIS_URL"}
    run = subprocess.run([sys.executable, "-m", "services.cli.main", "stats", "bubblee"],
                         capture_output=True, text=True, timeout=120,
                         env={**env, "ARBITER_DATA_DIR": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.startswith("bubblee: 2 games started, 2 finished\n"), out
    assert "bot greedy: won " in out and "default options: 1 games" in out
    assert "events: " in out and "cascade depth: " in out
    for raw in ("|", "obs:", "event:", "ai:", "lineup", "#"):
        assert raw not in out, (raw, out)


def test_replay_draws_the_boards_step_by_step(tmp_path: Path) -> None:
    lines = asyncio.run(finished_log())
    path = write(tmp_path / "game.jsonl", lines)
    run = arbiter("replay", path, "--all", "--no-colour")
    assert run.returncode == 0, run.stderr
    assert "game over" in run.stdout
    assert run.stdout.count("v1:") == 0 or "v2:" in run.stdout
    # Every entry after the "started" line (v1) is described, in order.
    shown = [int(m) for m in re.findall(r"^v(\d+):", run.stdout, re.MULTILINE)]
    assert sorted(set(shown)) == list(range(2, len(lines) + 1)) and shown == sorted(shown)
    # A board is drawn after each step, not only at the end.
    assert run.stdout.count("grd ") >= 2 * 10, "several boards are drawn"
    to = arbiter("replay", path, "--to", "5", "--no-colour")
    assert to.returncode == 0 and "v5:" in to.stdout and "v6:" not in to.stdout


def test_verify_of_a_missing_file_says_so_without_a_traceback(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.jsonl")
    done = subprocess.run([sys.executable, "-m", "services.cli.main", "verify", missing],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "ARBITER_GRPC_ADDR": "127.0.0.1:9"})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{missing!r} is not a file, and the server at 127.0.0.1:9 answered" in done.stderr


def test_play_a_terminal_game_against_a_bot() -> None:
    # Always take the first listed move; quit after a few.
    run = arbiter("play", "bubblee", "--bot", "random", "--no-colour",
                  stdin="0\n" * 12 + "q\n")
    assert run.returncode == 0, run.stderr
    assert "your move>" in run.stdout
    assert "refused" not in run.stdout


async def test_verify_of_a_stored_game_asks_the_server_which_checks_a_running_game_for_the_admin(
        ) -> None:
    import socket

    from services.core.server import Config
    from services.process import build

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    game = registry.game("bubblee")
    process = build(Config(grpc_addr=f"127.0.0.1:{port}", admin_token="adm"),
                    {"bubblee": game}, MemoryStore())
    server, host = process.server, process.host
    await server.start()
    try:
        game_id = (await host.create("bubblee", [Seat("a"), Seat("b")],
                                     game.pb.Options())).game_id
        env = {**os.environ, "ARBITER_GRPC_ADDR": f"127.0.0.1:{port}"}

        async def verify(admin: str) -> subprocess.CompletedProcess[bytes]:
            run = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "services.cli.main", "verify", game_id,
                env={**env, "ARBITER_ADMIN_TOKEN": admin}, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            out, err = await run.communicate()
            return subprocess.CompletedProcess([], run.returncode or 0, out, err)

        admin = await verify("adm")
        assert admin.returncode == 0 and b"OK: 2 entries re-run by the server" in admin.stdout
        anyone = await verify("")  # a running game, not a tampered one: its own exit code
        assert anyone.returncode == 3 and anyone.stdout.startswith(b"not finished: ")
        assert b"FAILED" not in anyone.stdout
    finally:
        await server.stop(None)
