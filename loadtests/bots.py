"""Search bots: CPU per move at each level, and the event loop's latency while one thinks.

    .venv/bin/python -m loadtests.bots cost [--games 2] [--game bubblee ...]
    .venv/bin/python -m loadtests.bots loop [--seconds 20]
    .venv/bin/python -m loadtests.bots duel GAME LEVEL [--games 16] [--seed S] [--seats N]

`cost`: positions of games played by each game's default bot; at each with a choice, the
level's bot chooses, timed by time.thread_time (the searching thread's CPU): p50, p99 and
max per level and game. `loop`: a server's Host in this process plays a game whose seats are
all `hard` bots (Bubblee Pop), its AI turns in process as without a broker, while a ticker
on the same event loop sleeps 1 ms again and again: how late each wake-up is, with the
search in the process pool (the server's default), in a thread beside the loop, and, for
reference, with the heuristic bot. `duel`: the level at one seat, the game's default bot at
the others, seats rotated, the games of `arbiter simulate GAME --bots LEVEL,DEFAULT,...
--seed S` one line each as they end (a long run can be read while it plays).
Writes loadtests/results/bots.json.
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
from services.core import bots
from services.core.decider import Game, Rng, Seat
from services.core.host import Host
from services.core.offload import CpuPool
from services.core.server import in_process_ai
from services.core.store import MemoryStore
from services.workers.simulate import play_one, wilson

RESULTS = Path(__file__).parent / "results" / "bots.json"
SEARCHABLE = [n for n in registry.GAME_MODULES if bots.searchable(registry.game(n))]


def positions(game: Game, games: int) -> list[tuple[Any, int]]:
    """(state, seat to act) wherever that seat has a choice, in games of the default bot."""
    found = []
    for g in range(games):
        seats = [Seat(f"p{i}", "ai") for i in range(game.seat_count)]
        state = game.replay(game.setup(game.pb.Options(), seats, Rng(b"cost-%d" % g, 0)))
        rng, step = Rng(b"cost-bots-%d" % g, 0), 0
        while game.outcome(state) is None and step < 2000:
            actors = game.to_act(state)
            seat = actors[rng.below(len(actors))]
            if len(game.legal_actions(state, seat)) > 1:
                found.append((state, seat))
            command = bots.choose_command(game, state, seat, "", rng)
            for event in game.decide(state, seat, command, Rng(b"cost-%d" % g, step + 1)):
                state = game.evolve(state, event)
            step += 1
    return found


def cost(names: list[str], games: int, every: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        game = registry.game(name)
        chosen = positions(game, games)[::every]
        for level in bots.LEVELS:
            spent = []
            for k, (state, seat) in enumerate(chosen):
                started = time.thread_time()
                bots.choose_command(game, state, seat, level, Rng(b"cost", k))
                spent.append(time.thread_time() - started)
            row = {"moves": len(spent), "p50_ms": 1000 * percentile(spent, 0.5),
                   "p99_ms": 1000 * percentile(spent, 0.99), "max_ms": 1000 * max(spent)}
            out[f"{name}/{level}"] = row
            print(f"{name:15} {level:7} " + " ".join(
                f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()),
                flush=True)
    return out


async def loop_lag(bot: str, cpu: CpuPool, seconds: float) -> dict[str, Any]:
    """How late a 1 ms sleep wakes while AI seats named `bot` play each other here."""
    game = registry.game("bubblee")
    host = Host(MemoryStore(), {game.name: game}, ai_dispatch=in_process_ai, cpu=cpu)
    seats = [Seat(f"p{i}", "ai", bot) for i in range(game.seat_count)]
    # The pool's process starts (and imports the games) before the clock does.
    warm = (await host.create(game.name, [Seat("a"), Seat("b")], game.pb.Options())).game_id
    table = await host.load(warm)
    await host.bot_command(table, table.game.to_act(table.state)[0], "1ms", Rng(b"warm", 0))
    lags, played, deadline = [], 0, time.monotonic() + seconds
    game_id = (await host.create(game.name, seats, game.pb.Options())).game_id
    while time.monotonic() < deadline:
        asked = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append(time.perf_counter() - asked - 0.001)
        loaded = await host.load(game_id)
        if loaded.finished:
            played += loaded.version
            game_id = (await host.create(game.name, seats, game.pb.Options())).game_id
    played += (await host.load(game_id)).version
    return {"bot": bot, "versions": played, "wakeups": len(lags),
            "lag_p50_ms": 1000 * percentile(lags, 0.5), "lag_p99_ms": 1000 * percentile(lags, 0.99),
            "lag_max_ms": 1000 * max(lags)}


def loop(seconds: float) -> dict[str, Any]:
    out = {}
    for label, bot, cpu in (("heuristic", "greedy", CpuPool()),
                            ("hard, process pool", "hard",
                             CpuPool(1, lookup=registry.game)),
                            ("hard, thread", "hard", CpuPool(0))):
        row = asyncio.run(loop_lag(bot, cpu, seconds))
        print(f"{label:20} " + " ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                         for k, v in row.items()), flush=True)
        out[label] = row
    return out


def duel(name: str, level: str, games: int, seed: str, seats: int) -> dict[str, Any]:
    game = registry.game(name)
    seats = seats or game.seat_count
    entries = [level] + [game.default_bot] * (seats - 1)
    won = seats_won = 0
    for index in range(games):
        result = play_one(game, entries, seed, index)
        won += 0 in result["winner_entries"]
        seats_won += len(result["winner_entries"])
        print(f"game {index}: winners {result['winner_entries']} (entry 0 is {level})",
              flush=True)
    fair = seats_won / (games * seats)  # a seat's share of the wins, on average
    row = {"games": games, "seats": seats, "seed": seed, "won": won, "rate": won / games,
           "ci95": wilson(won, games), "fair_share": fair, "ratio": won / games / fair}
    print(row)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["cost", "loop", "duel"])
    parser.add_argument("duel", nargs="*", help="duel: GAME LEVEL")
    parser.add_argument("--game", action="append", choices=SEARCHABLE)
    parser.add_argument("--games", type=int, default=2, help="games of positions per game")
    parser.add_argument("--every", type=int, default=3, help="time one position in this many")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--seed", default="duel")
    parser.add_argument("--seats", type=int, default=0, help="duel: 0 for the standard table")
    args = parser.parse_args()
    if args.what == "cost":
        key, found = "cost", cost(args.game or SEARCHABLE, args.games, args.every)
    elif args.what == "loop":
        key, found = "loop", loop(args.seconds)
    else:
        name, level = args.duel
        found_row = duel(name, level, args.games, args.seed, args.seats)
        key, found = "duel", {f"{name}/{found_row['seats']}/{level}/{args.seed}": found_row}
    # Read when written: runs of other kinds may have ended meanwhile.
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results.setdefault(key, {}).update(found)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")

if __name__ == "__main__":
    main()
