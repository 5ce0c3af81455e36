"""Solo levels (authored by the Arbiter project: the official 20 levels are not public).

Each level of data/levels.json gives a pre-filled target planet, the bag's content and the
bag seed its draws come from (so a level is the same puzzle every time), optionally the
starting sky, and its measured difficulty (solver.difficulty). The solo rules are in
docs/rulings/bubblee.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

from services.bubblee import board
from services.core.decider import MalformedCommand

LEVELS_FILE = Path(__file__).parent / "data" / "levels.json"
COLOUR_KEYS = ("red", "purple", "blue", "green", "yellow", "black")
PER_COLOUR = 16


class Difficulty(NamedTuple):
    """How hard a level is to win, measured by solver.difficulty (ruling O9)."""

    wins: int  # games the careless greedy player won, of solver.MEASURE_GAMES
    left: int  # coloured Bubblees left on the target at the end, summed over those games

    def rank(self) -> tuple[int, int]:
        """Sorts easier levels first: more left on the target is harder; on equal left, fewer
        wins is. What is left is measured on every game, won or lost, so it tells the hard
        levels apart where nearly every game is lost (ruling O9)."""
        return (self.left, -self.wins)


@dataclass(frozen=True)
class Level:
    number: int
    name: str
    target: board.Masks
    bag: tuple[int, ...]  # count per colour (index colour - 1)
    bag_seed: int
    sky: tuple[int, ...] | None  # 10 colours (index row * 5 + column) or None: random valid
    difficulty: Difficulty


@cache
def all_levels() -> tuple[Level, ...]:
    data = json.loads(LEVELS_FILE.read_text())
    levels = tuple(_parse(entry) for entry in data["levels"])
    for number, lvl in enumerate(levels, start=1):
        if lvl.number != number:
            raise ValueError(f"levels.json: level {lvl.number} is out of order")
    return levels


def _parse(entry: dict) -> Level:
    sky = None
    if "sky" in entry:
        # top line first, as on screen: the target's row (row 1), then yours (row 0)
        row1, row0 = entry["sky"]
        sky = tuple(board.BY_LETTER[ch] for ch in row0 + row1)
    return Level(
        number=entry["level"],
        name=entry["name"],
        target=board.from_rows(entry["target"]),
        bag=tuple(entry["bag"].get(key, 0) for key in COLOUR_KEYS),
        bag_seed=entry["bag_seed"],
        sky=sky,
        difficulty=Difficulty(**entry["difficulty"]),
    )


def level(number: int) -> Level:
    levels = all_levels()
    if not 1 <= number <= len(levels):
        raise MalformedCommand(
            "BAD_OPTION", f"there is no solo level {number} (1-{len(levels)})", "solo_level"
        )
    return levels[number - 1]


def problems(lvl: Level, extra_blacks: int = 0) -> list[str]:
    """What makes a level unplayable (empty when it is valid)."""
    out = []
    if not board.settled(lvl.target):
        out.append("the target planet is not settled (a hole under a Bubblee)")
    if board.groups_to_remove(lvl.target):
        out.append("the target planet already holds a line")
    if not any(lvl.target[c - 1] for c in board.LINE_COLOURS):
        out.append("the target planet has no coloured Bubblee to clear")
    used = [m.bit_count() for m in lvl.target]
    used[5] += 3 + extra_blacks  # the player's planet
    for colour in lvl.sky or ():
        used[colour - 1] += 1
    if lvl.sky is None:
        used = [n + 2 for n in used[:5]] + [used[5]]
    else:
        if sorted(lvl.sky) != sorted(c for c in board.LINE_COLOURS for _ in range(2)):
            out.append("the sky must hold 2 of each of the 5 colours")
        for a in range(10):
            for b in (a + 1, a + 5):
                if b < 10 and (b - a == 5 or b % 5) and lvl.sky[a] == lvl.sky[b]:
                    out.append("two sky Bubblees of one colour are adjacent")
    for k, key in enumerate(COLOUR_KEYS):
        if lvl.bag[k] < 0 or used[k] + lvl.bag[k] > PER_COLOUR:
            out.append(f"more than {PER_COLOUR} {key} Bubblees are used")
    if sum(lvl.bag) < 2:
        out.append("the bag cannot refill the sky even once")
    return out
