"""Many seeded games by a bot: chapter win rates and whole campaigns (docs/eila.md).

A win rate is per chapter attempt: a campaign retries a lost chapter, so counting the
chapters it won in the end would count each of them a win however many tries it took. An
attempt still being played when a game hits its command cap is neither won nor lost: it is
reported apart. `attempts` and `per_attempt` give `arbiter simulate eila` the same figures.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.eila.v1 import eila_pb2 as pb

from services.core.bots import choose_command, level
from services.core.decider import Rng, Seat
from services.core.search import Budget
from services.eila import GAME, planner
from services.eila.state import State

COMMAND_LIMIT = 5000
PLANNER_CPU: list[float] = []  # ms of CPU of each move the planner chose (main reports them)


@dataclass
class ChapterRun:
    won: bool
    ending: str
    day: int
    reason: str
    cut: bool = False  # stopped by the command cap: neither won nor lost


def new_game(options: pb.Options, seed: int) -> State:
    events = GAME.setup(options, [Seat("eila", "ai")], Rng(b"eila-sim-%d" % seed, 0))
    return GAME.replay(events)


def step(state: State, bot_name: str, seed: int, version: int) -> State:
    """One command by the bot named: one of Eila's heuristic bots, a search level (Eila's
    planner: `hard`, `120ms`), or `planner:MS:N`, the planner at MS ms of CPU a move and at
    most N playouts."""
    rng = Rng(b"bot-%d" % seed, version)
    started = time.thread_time()
    if bot_name.startswith("planner:"):
        ms, *cap = (int(n) for n in bot_name.split(":")[1:])
        command = planner.plan(state, 0, rng, Budget(ms / 1000, *cap))
    else:
        command = choose_command(GAME, state, 0, bot_name, rng)
    if level(bot_name) is not None or bot_name.startswith("planner:"):
        PLANNER_CPU.append((time.thread_time() - started) * 1000)
    for event in GAME.decide_now(state, 0, command, Rng(b"eila-sim-%d" % seed, version)):
        state = GAME.evolve(state, event)
    return state


def play_chapter(bot_name: str, chapter: int, advanced: bool, seed: int,
                 box: Sequence[str] = ()) -> ChapterRun:
    """One attempt at one chapter, from the given save box."""
    options = pb.Options(first_chapter=chapter, advanced=advanced, save_box=list(box),
                         single_chapter=True)
    state = new_game(options, seed)
    for version in range(2, COMMAND_LIMIT):
        if state.phase != "playing":
            break
        state = step(state, bot_name, seed, version)
    p = state.play
    assert p is not None
    return ChapterRun(p.result == "won", p.ending, p.day, p.reason, cut=not p.result)


def chapter_rates(bot_name: str, chapter: int, advanced: bool, seeds: range,
                  box: Sequence[str] = ()) -> tuple[float, Counter[str], int]:
    """The win rate over the attempts that ended, their endings, and how many the cap cut."""
    runs = [play_chapter(bot_name, chapter, advanced, s, box) for s in seeds]
    ended = [r for r in runs if not r.cut]
    endings = Counter(r.ending for r in ended if r.won)
    rate = sum(r.won for r in ended) / len(ended) if ended else 0.0
    return rate, endings, len(runs) - len(ended)


def attempts(state: State) -> dict[str, Any]:
    """The chapter attempts of one simulated game: won and lost by chapter, and whether one
    was still being played when the game stopped (the command cap)."""
    by_chapter: dict[str, list[int]] = {}
    for chapter, won, *_ in state.history:
        counts = by_chapter.setdefault(str(chapter), [0, 0])
        counts[0 if won else 1] += 1
    cut = state.phase == "playing"
    return {"won": sum(w for w, _ in by_chapter.values()),
            "lost": sum(lost for _, lost in by_chapter.values()),
            "cut": int(cut), "cut_chapter": state.chapter if cut else -1,
            "by_chapter": by_chapter}


def per_attempt(report: dict[str, Any], results: list[dict[str, Any]]) -> None:
    """Turn a simulation report's win rate into one per chapter attempt (the bot's `wins`
    become attempts won, out of `attempts` that ended); the games won, and the games stopped
    by the command cap, are reported apart."""
    from services.workers.simulate import wilson

    won = sum(r["attempts"]["won"] for r in results)
    ended = won + sum(r["attempts"]["lost"] for r in results)
    by_chapter: dict[str, list[int]] = {}
    for r in results:
        for chapter, (w, lost) in r["attempts"]["by_chapter"].items():
            counts = by_chapter.setdefault(chapter, [0, 0])
            counts[0] += w
            counts[1] += lost
    capped = [r for r in results if r["attempts"]["cut"] and not r["error"]]
    lo, hi = wilson(won, ended)
    for bot in report["bots"]:  # Eila is solo: one bot
        bot.update({"games_won": bot["wins"], "wins": won, "attempts": ended,
                    "win_rate": round(won / ended, 4) if ended else 0.0,
                    "ci95": [round(lo, 4), round(hi, 4)]})
    report["attempts"] = {
        "ended": ended, "won": won,
        "by_chapter": {c: {"won": w, "lost": lost, "win_rate": round(w / (w + lost), 4)}
                       for c, (w, lost) in sorted(by_chapter.items())},
        "stopped_by_cap": len(capped),
        "stopped_by_cap_in_chapter": dict(Counter(
            str(r["attempts"]["cut_chapter"]) for r in capped)),
    }


def render_attempts(a: dict[str, Any]) -> list[str]:
    lines = [f"  per chapter attempt: {a['won']} won of {a['ended']} attempts that ended "
             "(a campaign retries a lost chapter; each try counts)"]
    for chapter, c in a["by_chapter"].items():
        lines.append(f"    chapter {chapter}: won {c['won']}, lost {c['lost']}  "
                     f"{100 * c['win_rate']:5.1f}%")
    lines.append(f"  games stopped by the command cap: {a['stopped_by_cap']} (their attempt "
                 "in progress is not counted)")
    return lines


def campaign(bot_name: str, advanced: bool, seed: int, attempts: int = 5) -> tuple[int, int]:
    """A whole campaign with retries: (chapters won, chapter attempts)."""
    state = new_game(pb.Options(advanced=advanced), seed)
    version, tries = 2, 1
    while GAME.outcome(state) is None and version < 60_000:
        if state.phase == "between":
            assert state.play is not None
            if state.play.result == "lost":
                if tries >= attempts:
                    break
                tries += 1
            else:
                tries = 1
        state = step(state, bot_name, seed, version)
        version += 1
    won = sum(1 for _, w, *_ in state.history if w)
    return won, len(state.history)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--bots", default="random,random_options,greedy",
                        help="bot names, or planner:MS (MS ms of CPU a move)")
    parser.add_argument("--chapters", default="0,1,2,3,4,5")
    parser.add_argument("--modes", default="normal,advanced")
    parser.add_argument("--campaigns", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args()
    from services.workers.simulate import wilson

    for advanced in [mode == "advanced" for mode in args.modes.split(",")]:
        for chapter in map(int, args.chapters.split(",")):
            cells = []
            for bot in args.bots.split(","):
                PLANNER_CPU.clear()
                t = time.process_time()
                rate, endings, cut = chapter_rates(bot, chapter, advanced, range(args.seeds))
                ms = (time.process_time() - t) * 1000 / args.seeds
                lo, hi = wilson(round(rate * (args.seeds - cut)), args.seeds - cut)
                extra = f" endings {dict(endings)}" if len(endings) > 1 else ""
                extra += f" ({cut} cut by the command cap)" if cut else ""
                if PLANNER_CPU:
                    cpu = sorted(PLANNER_CPU)
                    extra += (f" [{len(cpu)} moves, CPU a move p50 {cpu[len(cpu) // 2]:.0f} ms"
                              f" p99 {cpu[len(cpu) * 99 // 100]:.0f} ms max {cpu[-1]:.0f} ms]")
                cells.append(f"{bot} {rate:.1%} [{lo:.1%}, {hi:.1%}] ({ms:.0f} ms CPU/game)"
                             + extra)
            print(f"chapter {chapter} {'advanced' if advanced else 'normal'}: " + "; ".join(cells),
                  flush=True)
    if not args.campaigns:
        return
    for advanced in (False, True):
        results = [campaign("greedy", advanced, s) for s in range(args.seeds // 4)]
        done = sum(1 for won, _ in results if won == 6)
        tries = sum(t for _, t in results) / len(results)
        print(f"campaign {'advanced' if advanced else 'normal'}: greedy completes "
              f"{done}/{len(results)} (at most 5 attempts a chapter), {tries:.1f} attempts")


if __name__ == "__main__":
    main()
