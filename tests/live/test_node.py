"""Play from a Node.js client (@grpc/grpc-js from the npm registry), on both stores: what it
was pushed is checked against Watch, Replay and GetView, as for the Python client."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import google.rpc
import pytest
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.moody_bear.v1 import moody_bear_pb2 as mpb
from arbiter.v1 import arbiter_pb2 as apb

from tests.live.playing import Seat, Served, check_against_watch_and_views, method, served

__all__ = ["served"]  # the fixture

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "node"
CACHE = ROOT / ".cache" / "node"  # npm installs here, inside the work tree (git ignores it)
GOOGLE_PROTOS = Path(google.rpc.__path__[0]).parent.parent


@pytest.fixture(scope="module")
def node_modules() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("Node.js and npm are not installed here")
    CACHE.mkdir(parents=True, exist_ok=True)
    wanted = (HERE / "package.json").read_text()
    installed = CACHE / "package.json"
    if not (CACHE / "node_modules" / "@grpc" / "grpc-js").exists() or \
            not installed.exists() or installed.read_text() != wanted:
        installed.write_text(wanted)
        try:
            subprocess.run([npm, "install", "--prefix", str(CACHE), "--no-audit", "--no-fund",
                            "--no-package-lock"], check=True, capture_output=True, timeout=300)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            pytest.skip(f"npm could not install @grpc/grpc-js: {e}")
    return CACHE / "node_modules"


async def run_node(node_modules: Path, s: Served, game: str, game_id: str,
                   tokens: dict[int, str], max_commands: int) -> dict[int, Seat]:
    env = dict(os.environ, NODE_PATH=str(node_modules))
    process = await asyncio.create_subprocess_exec(
        "node", str(HERE / "play.js"), s.address, game, game_id, json.dumps(tokens),
        str(ROOT / "protos"), str(GOOGLE_PROTOS), str(max_commands), env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 90)
    assert process.returncode == 0, err.decode()
    pb = bpb if game == "bubblee" else mpb
    seats = {seat: Seat(seat, token) for seat, token in tokens.items()}
    for line in out.decode().splitlines():
        record = json.loads(line)
        message = pb.PlayResponse.FromString(base64.b64decode(record["message"]))
        seats[record["seat"]].messages.append(message)
        if message.HasField("answer"):
            seats[record["seat"]].answers.append(message.answer)
    return seats


async def test_a_whole_bubblee_game_against_a_bot_from_node(node_modules: Path,
                                                            served: Served) -> None:
    created = await method(served.channel, "bubblee", "CreateGame", apb.CreateGameResponse)(
        bpb.CreateGameRequest(seats=[apb.Seat(name="ann"),
                                     apb.Seat(name="bot", kind=apb.AI, bot="greedy")]))
    seats = await run_node(node_modules, served, "bubblee", created.game_id,
                           {0: created.tokens[0].token}, 1000)
    ann = seats[0]
    assert ann.messages[-1].updates[-1].HasField("finished"), "played to the end"
    assert len(ann.answers) > 5 and all(not a.HasField("error") for a in ann.answers)
    await check_against_watch_and_views(served.channel, "bubblee", created.game_id, ann)


async def test_a_moody_bear_game_with_a_response_window_from_node(node_modules: Path,
                                                                 served: Served) -> None:
    created = await method(served.channel, "moody_bear", "CreateGame", apb.CreateGameResponse)(
        mpb.CreateGameRequest(seats=[apb.Seat(name=f"p{i}") for i in range(4)],
                              options=mpb.Options(response_deadline_seconds=1)))
    seats = await run_node(node_modules, served, "moody_bear", created.game_id,
                           {t.seat: t.token for t in created.tokens}, 80)
    for seat in seats.values():
        assert any(u.event.window_closed.by_deadline for m in seat.messages
                   for u in m.updates), "the deadline closed a window, pushed to every seat"
        await check_against_watch_and_views(served.channel, "moody_bear", created.game_id,
                                            seat)
