"""How long a human waits for the AI on the server, at each level.

    .venv/bin/python -m loadtests.ai_latency [--game bubblee] [--turns 30] [--levels ...]

A server's host in this process, as `arbiter serve` runs without a broker (AI turns in its
process pool), plays a two-seat game: seat 0 is a human played by this bench (a random legal
command as soon as it is its turn), seat 1 an AI seat at the level measured. For each human
command: the wall time from its acknowledgement until the human is to act again (the AI's
whole turn, however many commands it takes), and the AI seat's commands in that time. The
figures are wall clock on a shared machine: the CPU per move of each level is
`loadtests.bots cost`'s. Writes loadtests/results/ai_latency.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from loadtests.failover import percentile
from services import games as registry
from services.core import log as gamelog
from services.core.decider import Rng, Seat
from services.core.host import Caller, Host
from services.core.offload import CpuPool
from services.core.server import in_process_ai
from services.core.store import MemoryStore

RESULTS = Path(__file__).parent / "results" / "ai_latency.json"
LEVELS = ["greedy", "easy", "medium", "hard"]


async def waits(game_name: str, level: str, turns: int) -> dict[str, Any]:
    game = registry.game(game_name)
    bot = game.default_bot if level == "greedy" else level
    host = Host(MemoryStore(), {game.name: game}, ai_dispatch=in_process_ai,
                cpu=CpuPool(1, lookup=registry.game))
    rng = Rng(b"ai-latency", 0)
    # The pool's process starts (and imports the games) before the clock does.
    warm = await host.load((await host.create(game.name, [Seat("a"), Seat("b")],
                                              game.pb.Options())).game_id)
    await host.bot_command(warm, game.to_act(warm.state)[0], "1ms", Rng(b"warm", 0))
    seconds: list[float] = []
    ai_commands = 0
    while len(seconds) < turns:
        made = await host.create(game.name, [Seat("human"), Seat("ai", "ai", bot)],
                                 game.pb.Options())
        game_id, token = made.game_id, made.tokens[0]
        while len(seconds) < turns:
            table = await host.load(game_id)
            while not table.finished and 0 not in game.to_act(table.state):
                await asyncio.sleep(0.001)  # the AI's first turn, not timed
                table = await host.load(game_id)
            if table.finished:
                break
            command = rng.choice(game.legal_actions(table.state, 0))
            done = await host.act(game_id, Caller(token=token), command)
            acked, before = time.perf_counter(), done.version
            table = await host.load(game_id)
            if table.finished or 0 in game.to_act(table.state) and table.version == before:
                continue  # the human's turn goes on (a turn may take several commands)
            while True:
                table = await host.load(game_id)
                if table.finished or 0 in game.to_act(table.state) and table.version > before:
                    break
                await asyncio.sleep(0.001)
            if table.version > before:  # the AI played (not a human command that ended it)
                seconds.append(time.perf_counter() - acked)
                entries = gamelog.decode(await host.store.read(game_id, before))
                ai_commands += sum(1 for e in entries if e.HasField("command"))
    return {"level": level, "turns": len(seconds), "ai_commands": ai_commands,
            "wait_p50_ms": round(1000 * percentile(seconds, 0.5), 1),
            "wait_p99_ms": round(1000 * percentile(seconds, 0.99), 1),
            "wait_max_ms": round(1000 * max(seconds), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--game", default="bubblee")
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--levels", nargs="*", default=LEVELS)
    args = parser.parse_args()
    out = {}
    for level in args.levels:
        row = asyncio.run(waits(args.game, level, args.turns))
        print(json.dumps(row), flush=True)
        out[f"{args.game}/{level}"] = row
    found = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    found.update(out)
    RESULTS.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
