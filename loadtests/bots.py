"""Search bots: CPU per move at each level, and the event loop's latency while one thinks.

    .venv/bin/python -m loadtests.bots cost [--games 2] [--game bubblee ...]
    .venv/bin/python -m loadtests.bots loop [--seconds 20]
    .venv/bin/python -m loadtests.bots duel GAME LEVEL [--games 16] [--seed S] [--seats N]
        [--teams [--sides red,blue]]
    .venv/bin/python -m loadtests.bots eila [--chapters 0,5] [--modes normal,advanced]
        [--first-seed 100] [--attempts 60] [--level hard] [--contrast greedy|none]

`cost`: positions of games played by each game's default bot; at each with a choice, the
level's bot chooses, timed by time.thread_time (the searching thread's CPU): p50, p99 and
max per level and game. `loop`: a server's Host in this process plays a game whose seats are
all `hard` bots (Bubblee Pop), its AI turns in process as without a broker, while a ticker
on the same event loop sleeps 1 ms again and again: how late each wake-up is, with the
search in the process pool (the server's default), in a thread beside the loop, and, for
reference, with the heuristic bot. `duel`: the level at one seat, the game's default bot at
the others, seats rotated, the games of `arbiter simulate GAME --bots LEVEL,DEFAULT,...
--seed S` one line each as they end (a long run can be read while it plays). `duel
--teams`, in a game where seats win together (Moody Bear's teams, Shadow Council's
factions): each side in turn played by the level at every seat the deal puts on it, the
others by the default bot, against the same deals played by the default bot alone (the
side's fair share); a side's row is kept as it ends, so sides played by separate processes
add up, and the summary weighs each side by the seats it is dealt (a seat's team, pooled).
Writes loadtests/results/bots.json.

`eila`: attempts at Eila's chapters, each played alone from an empty save box (seeds
first-seed on), by the level (Eila's campaign planner) and by the contrast bot on the same
seeds (`--contrast none`: the level's attempts only). Each attempt is kept in
loadtests/results/eila.json under its mode, chapter, bot and seed, so runs over other seeds
add to it (a seed played again replaces its attempt); the summary printed at the end counts
every attempt kept: wins of attempts with their 95% Wilson interval, and the level's CPU a
move (p50, p99, max, whole ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
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
from services.workers.simulate import SIDE_NAMES, SIDES, game_seed, play_one, wilson

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
    won = seats_won = lost = shared = 0
    for index in range(games):
        result = play_one(game, entries, seed, index)
        won += 0 in result["winner_entries"]
        # 2 seats: a game is decided unless both share the win
        lost += 0 not in result["winner_entries"]
        shared += 0 in result["winner_entries"] and len(result["winner_entries"]) > 1
        seats_won += len(result["winner_entries"])
        print(f"game {index}: winners {result['winner_entries']} (entry 0 is {level})",
              flush=True)
    fair = seats_won / (games * seats)  # a seat's share of the wins, on average
    row = {"games": games, "seats": seats, "seed": seed, "won": won, "rate": won / games,
           "ci95": wilson(won, games), "fair_share": fair, "ratio": won / games / fair,
           "lost": lost, "shared": shared}
    if seats == 2:  # the goal's measure: the search bot's share of the decided games
        decided = games - shared
        row["decided_rate"] = (won - shared) / decided if decided else 0.0
        row["decided_ci95"] = wilson(won - shared, decided)
    print(row)
    return row


def duel_side(name: str, level: str, games: int, seed: str, seats: int, side: str
              ) -> dict[str, Any]:
    """`side` played by `level` at every seat dealt to it, against the same deals played by
    the default bot alone: how often those seats are among the winners each way, over the
    games that deal the side (the share of them that won, where a seat may change sides on
    the way: Shadow Council's identities can be swapped)."""
    game = registry.game(name)
    seats = seats or game.seat_count
    default = [game.default_bot] * seats
    won: list[float] = []
    fair: list[float] = []
    members = 0
    for index in range(games):
        table = [Seat(f"seat{s}", "ai") for s in range(seats)]
        start = game.replay(game.setup(game.pb.Options(), table,
                                       Rng(game_seed(seed, index), 0)))
        dealt = [s for s, x in enumerate(SIDES[name](start)) if x == side]
        if not dealt:
            continue  # not dealt at this table (the Solo at 4 seats)
        members += len(dealt)
        alone = play_one(game, default, seed, index)
        result = play_one(game, default, seed, index, side_bots={side: level})
        won.append(len(set(dealt) & set(result["winner_seats"])) / len(dealt))
        fair.append(len(set(dealt) & set(alone["winner_seats"])) / len(dealt))
        print(f"game {index}: {side} {won[-1]:.2f} with {level}, {fair[-1]:.2f} with "
              f"{game.default_bot} ({sum(won):g} against {sum(fair):g} of {len(won)})",
              flush=True)
    n = len(won)
    rate = sum(won) / n if n else 0.0
    spread = (sum((w - rate) ** 2 for w in won) / max(1, n - 1) / max(1, n)) ** 0.5
    whole = all(w in (0.0, 1.0) for w in won)
    row = {"games": n, "seats": seats, "seed": seed, "side": side, "won": sum(won),
           "rate": rate,
           "ci95": wilson(int(sum(won)), n) if whole else (rate - 1.96 * spread,
                                                          rate + 1.96 * spread),
           "se": spread, "fair": sum(fair), "fair_share": sum(fair) / n if n else 0.0,
           "seats_dealt": members / n / seats if n else 0.0}
    print(row)
    return row


def team_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A seat's team, pooled over the sides: each side's rate weighed by the share of the
    seats it is dealt, against its fair share weighed alike (with a normal-approximation
    interval of the weighted rate, from each side's standard error)."""
    weight = sum(r["seats_dealt"] for r in rows)
    rate = sum(r["seats_dealt"] * r["rate"] for r in rows) / weight
    fair = sum(r["seats_dealt"] * r["fair_share"] for r in rows) / weight
    spread = sum((r["seats_dealt"] / weight * r["se"]) ** 2 for r in rows) ** 0.5
    summary = {"sides": [r["side"] for r in rows], "games": sum(r["games"] for r in rows),
               "rate": rate, "ci95": (rate - 1.96 * spread, rate + 1.96 * spread),
               "fair_share": fair, "ratio": rate / fair if fair else 0.0}
    print(summary)
    return summary


EILA_RESULTS = Path(__file__).parent / "results" / "eila.json"


def eila_attempts(chapters: list[int], modes: list[str], seeds: range, bots_: list[str]
                  ) -> None:
    """Play and keep each attempt (see the module's doc), one line each as it ends."""
    from services.eila.tools import simulate as eila

    for mode in modes:
        for chapter in chapters:
            for bot in bots_:
                for seed in seeds:
                    eila.PLANNER_CPU.clear()
                    run = eila.play_chapter(bot, chapter, mode == "advanced", seed)
                    spent = list(eila.PLANNER_CPU)
                    # Read when written: another run may have added attempts meanwhile.
                    kept = json.loads(EILA_RESULTS.read_text()) if EILA_RESULTS.exists() else {}
                    cell = kept.setdefault(f"{mode}/{chapter}/{bot}", {})
                    cell[str(seed)] = {
                        "won": run.won, "cut": run.cut, "ending": run.ending, "day": run.day,
                        "reason": run.reason, "moves": len(spent),
                        "cpu_s": round(sum(spent) / 1000, 3),
                        # whole ms -> moves: a histogram, so that runs add up
                        "cpu_ms": dict(Counter(str(int(ms)) for ms in spent)),
                    }
                    EILA_RESULTS.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
                    print(f"{mode} chapter {chapter} {bot} seed {seed}: "
                          f"{'cut' if run.cut else 'won' if run.won else 'lost'} "
                          f"({run.reason}; {len(spent)} searched moves, "
                          f"{sum(spent) / 1000:.1f} s CPU)", flush=True)


def eila_summary() -> list[dict[str, Any]]:
    """One row per mode, chapter and bot over every attempt kept, printed."""
    kept = json.loads(EILA_RESULTS.read_text()) if EILA_RESULTS.exists() else {}
    rows = []
    for key in sorted(kept, key=lambda k: (k.split("/")[0] != "normal", k)):
        mode, chapter, bot = key.split("/")
        attempts = [a for a in kept[key].values() if not a["cut"]]
        won = sum(a["won"] for a in attempts)
        hist: Counter[int] = Counter()
        for a in kept[key].values():
            hist.update({int(ms): n for ms, n in a["cpu_ms"].items()})
        spent = [float(ms) for ms in sorted(hist.elements())]
        seeds = sorted(map(int, kept[key]))
        lo, hi = wilson(won, len(attempts))
        row = {"mode": mode, "chapter": int(chapter), "bot": bot, "attempts": len(attempts),
               "won": won, "rate": won / len(attempts) if attempts else 0.0, "ci95": [lo, hi],
               "cut": len(kept[key]) - len(attempts), "seeds": f"{seeds[0]}-{seeds[-1]}",
               "lost_by": dict(Counter(a["reason"] for a in attempts if not a["won"]))}
        if spent:
            row["cpu_ms"] = {"moves": len(spent), "p50": percentile(spent, 0.5),
                             "p99": percentile(spent, 0.99), "max": spent[-1]}
        rows.append(row)
        cpu = (f"  CPU a move p50 {row['cpu_ms']['p50']} p99 {row['cpu_ms']['p99']} "
               f"max {row['cpu_ms']['max']} ms ({len(spent)} moves)" if spent else "")
        print(f"{mode:8} chapter {chapter} {bot:7} {won:3}/{len(attempts):3} "
              f"{100 * row['rate']:5.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] seeds {row['seeds']}"
              + cpu, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["cost", "loop", "duel", "eila"])
    parser.add_argument("duel", nargs="*", help="duel: GAME LEVEL")
    parser.add_argument("--game", action="append", choices=SEARCHABLE)
    parser.add_argument("--games", type=int, default=2, help="games of positions per game")
    parser.add_argument("--every", type=int, default=3, help="time one position in this many")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--seed", default="duel")
    parser.add_argument("--seats", type=int, default=0, help="duel: 0 for the standard table")
    parser.add_argument("--teams", action="store_true", help="duel: a side played by the "
                        "level at every seat it is dealt")
    parser.add_argument("--sides", default="", help="duel --teams: the sides to play (all)")
    parser.add_argument("--chapters", default="0,1,2,3,4,5", help="eila: chapters to play")
    parser.add_argument("--modes", default="normal,advanced", help="eila: modes to play")
    parser.add_argument("--first-seed", type=int, default=100, help="eila: the first seed")
    parser.add_argument("--attempts", type=int, default=0, help="eila: seeds a chapter "
                        "(0: play none, only print what is kept)")
    parser.add_argument("--level", default="hard", help="eila: the planner's level")
    parser.add_argument("--contrast", default="greedy", help="eila: the bot on the same seeds "
                        "(none: the level alone)")
    args = parser.parse_args()
    if args.what == "eila":
        seeds = range(args.first_seed, args.first_seed + args.attempts)
        eila_attempts([int(c) for c in args.chapters.split(",")], args.modes.split(","),
                      seeds, [args.level] + ([] if args.contrast == "none" else [args.contrast]))
        eila_summary()
        return
    if args.what == "cost":
        key, found = "cost", cost(args.game or SEARCHABLE, args.games, args.every)
    elif args.what == "loop":
        key, found = "loop", loop(args.seconds)
    elif args.teams:
        name, level = args.duel
        key, found = "teams", {}
        for side in args.sides.split(",") if args.sides else SIDE_NAMES[name]:
            row = duel_side(name, level, args.games, args.seed, args.seats, side)
            if row["games"]:
                found[f"{name}/{row['seats']}/{level}/{args.seed}/{side}"] = row
    else:
        name, level = args.duel
        found_row = duel(name, level, args.games, args.seed, args.seats)
        key, found = "duel", {f"{name}/{found_row['seats']}/{level}/{args.seed}": found_row}
    # Read when written: runs of other kinds may have ended meanwhile.
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results.setdefault(key, {}).update(found)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    if key == "teams":  # every side kept for this game, table, level and seed, pooled
        prefix = next(iter(found)).rsplit("/", 1)[0] + "/" if found else ""
        kept = [r for k, r in results["teams"].items() if prefix and k.startswith(prefix)]
        if kept:
            results["teams"][prefix + "pooled"] = team_summary(
                [r for r in kept if "side" in r])
            RESULTS.write_text(json.dumps(results, indent=1) + "\n")

if __name__ == "__main__":
    main()
