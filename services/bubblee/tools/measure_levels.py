"""Measure every solo level's win rate over many bot seeds, with 95% intervals (ruling O9).

    python -m services.bubblee.tools.measure_levels [games per level, default 200] [first last]

The careless greedy player (solver.careless_greedy) plays each level with bot seeds 0 to N-1
through the real rules. Printed per level: wins of N with the Wilson score interval, and the
mean of the coloured Bubblees left on the target at the end with a normal interval. Then the
levels in the order those figures give (fewer left is easier; on equal left, more wins), and
each neighbouring pair of that order whose intervals do not overlap (an order that holds with
confidence) or do (it does not). The figures go to docs/rulings/bubblee.md by hand.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee.levels import all_levels
from services.bubblee.state import target_remaining
from services.bubblee.tools import arena
from services.bubblee.tools.solver import careless_greedy

Z = 1.96  # 95%


@dataclass(frozen=True)
class Measure:
    number: int
    name: str
    games: int
    wins: int
    left: list[int]

    def rate(self) -> tuple[float, float, float]:
        """Win rate and its Wilson score interval."""
        n, p = self.games, self.wins / self.games
        centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
        half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
        return p, max(0.0, centre - half), min(1.0, centre + half)

    def mean_left(self) -> tuple[float, float, float]:
        n = len(self.left)
        mean = sum(self.left) / n
        var = sum((x - mean) ** 2 for x in self.left) / max(1, n - 1)
        half = Z * math.sqrt(var / n)
        return mean, mean - half, mean + half

    def rank(self) -> tuple[int, int]:
        return (sum(self.left), -self.wins)  # as levels.Difficulty.rank


def measure(number: int, name: str, games: int) -> Measure:
    wins, left = 0, []
    for seed in range(games):
        outcome, state = arena.play([careless_greedy], seed, pb.Options(solo_level=number))
        wins += outcome.winners == (0,)
        left.append(target_remaining(state))
    return Measure(number, name, games, wins, left)


def separated(easier: Measure, harder: Measure) -> bool:
    """The intervals of the figure that orders the pair (what is left) do not overlap."""
    return easier.mean_left()[2] < harder.mean_left()[1]


def main() -> None:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    first, last = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (1, 999)
    found = []
    print("| level | name | wins | rate (95% interval) | mean left (95% interval) | left |")
    print("|---|---|---|---|---|---|")
    for lvl in all_levels()[first - 1:last]:
        m = measure(lvl.number, lvl.name, games)
        found.append(m)
        p, lo, hi = m.rate()
        mean, mlo, mhi = m.mean_left()
        print(f"| {m.number} | {m.name} | {m.wins}/{games} | {p:.3f} ({lo:.3f}-{hi:.3f}) | "
              f"{mean:.2f} ({mlo:.2f}-{mhi:.2f}) | {sum(m.left)} |", flush=True)
    order = sorted(found, key=Measure.rank)
    print("order by measure:", ", ".join(str(m.number) for m in order))
    for a, b in zip(order, order[1:], strict=False):
        print(f"{a.number} -> {b.number}: {'separated' if separated(a, b) else 'overlapping'}")


if __name__ == "__main__":
    main()
