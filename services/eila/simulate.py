"""Many seeded games by a bot: chapter win rates and whole campaigns (docs/eila.md)."""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import Rng, Seat
from services.eila import GAME
from services.eila.engine import State

COMMAND_LIMIT = 5000


@dataclass
class ChapterRun:
    won: bool
    ending: str
    day: int
    reason: str


def new_game(options: pb.Options, seed: int) -> State:
    events = GAME.setup(options, [Seat("eila", "ai")], Rng(b"eila-sim-%d" % seed, 0))
    return GAME.replay(events)


def step(state: State, bot_name: str, seed: int, version: int) -> State:
    legal = GAME.legal_actions(state, 0)
    command = GAME.bots[bot_name](GAME.view(state, 0), legal, Rng(b"bot-%d" % seed, version))
    for event in GAME.decide(state, 0, command, Rng(b"eila-sim-%d" % seed, version)):
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
    return ChapterRun(p.result == "won", p.ending, p.day, p.reason)


def chapter_rates(bot_name: str, chapter: int, advanced: bool, seeds: range,
                  box: Sequence[str] = ()) -> tuple[float, Counter[str]]:
    runs = [play_chapter(bot_name, chapter, advanced, s, box) for s in seeds]
    endings = Counter(r.ending for r in runs if r.won)
    return sum(r.won for r in runs) / len(runs), endings


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
    parser.add_argument("--bots", default="random,random_options,greedy")
    args = parser.parse_args()
    for advanced in (False, True):
        for chapter in range(6):
            cells = []
            for bot in args.bots.split(","):
                t = time.perf_counter()
                rate, endings = chapter_rates(bot, chapter, advanced, range(args.seeds))
                ms = (time.perf_counter() - t) * 1000 / args.seeds
                extra = f" endings {dict(endings)}" if len(endings) > 1 else ""
                cells.append(f"{bot} {rate:.1%} ({ms:.0f} ms/game){extra}")
            print(f"chapter {chapter} {'advanced' if advanced else 'normal'}: " + "; ".join(cells))
    for advanced in (False, True):
        results = [campaign("greedy", advanced, s) for s in range(args.seeds // 4)]
        done = sum(1 for won, _ in results if won == 6)
        tries = sum(t for _, t in results) / len(results)
        print(f"campaign {'advanced' if advanced else 'normal'}: greedy completes "
              f"{done}/{len(results)} (at most 5 attempts a chapter), {tries:.1f} attempts")


if __name__ == "__main__":
    main()
