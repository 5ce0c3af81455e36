"""Write golden logs: for a game's table (its default options or a variant), one game played
to its end through the host by the game's playout policy, exported as ExportLog writes it
(JSON Lines) to tests/golden/<game>/<variant>.jsonl.

    .venv/bin/python -m tests.golden.write              # the tables that have no log yet
    .venv/bin/python -m tests.golden.write eila/default # this one again (the old one goes)

A committed log is never rewritten unless it is named: it stands for the games already
stored, which every later version of the rules must keep replaying
(tests/conformance/test_golden_logs.py).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from services.core import log as gamelog
from services.core.decider import Game, Rng, Seat, Variant
from services.core.host import Caller, Host
from services.core.store import MemoryStore
from tests.conformance import suite
from tests.conformance.playouts import MAX_COMMANDS, next_command, slug, tables

FOLDER = Path(__file__).resolve().parent


def path_of(game: Game, variant: Variant) -> Path:
    return FOLDER / game.name / f"{slug(variant)}.jsonl"


async def golden_log(game: Game, variant: Variant) -> list[str]:
    host = Host(MemoryStore(), {game.name: game})
    seats = [Seat(f"p{i}") for i in range(variant.seats)]
    made = await host.create(game.name, seats, variant.options)
    game_id, tokens = made.game_id, made.tokens
    chooser = Rng(f"golden {game.name} {variant.name}".encode(), 0)
    for n in range(MAX_COMMANDS):
        loaded = await host.load(game_id)
        if loaded.finished:
            _, entries = await host.history(game_id)
            return gamelog.to_json_lines(game, entries)
        seat, command = next_command(game, loaded.state, chooser)
        if seat is None:
            await host.system_act(game_id, command, f"deadline:{game_id}:{n}", loaded.version)
        else:
            await host.act(game_id, Caller(token=tokens[seat]), command, f"c{n}",
                           loaded.version)
    raise AssertionError(f"{game.name}, {variant.name}: no end after {MAX_COMMANDS} commands")


def main(names: list[str]) -> int:
    for name in suite.NAMES:
        game = suite.game(name)
        for variant in tables(name):
            path = path_of(game, variant)
            named = f"{name}/{slug(variant)}"
            if path.exists() and named not in names:
                continue
            lines = asyncio.run(golden_log(game, variant))
            path.parent.mkdir(exist_ok=True)
            path.write_text("".join(line + "\n" for line in lines))
            print(f"{named}: {len(lines)} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
