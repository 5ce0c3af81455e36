"""Resources from nothing: is there a way to repeat free conversions and come out ahead?

A conversion turns the resources on its left into those on its right (the board's, and those
of the items and support cards that say "free action"; a healing spell turns its cost into
1 HP). A cycle is how many times each conversion is used; it is a net gain when, taken all
together, it gives back at least what it took of every resource and more of one (Fear
excepted: gaining Fear is no gain). Such a cycle can be repeated for ever, so it is an error
in the content whatever the storage limits make of it.

Finding one is a small linear programme (scale the counts so they sum to at most 1, then
maximise what the cycle gains), solved exactly with fractions by the simplex method; a
positive optimum is a gain cycle, and its rational solution scales to whole counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations

from services.eila.data import RESOURCES, Json

HP = "hp"  # healing spells turn resources into HP: a cycle that gains HP is a gain too
TRACKED = (*RESOURCES, HP)


def maximise(c: Sequence[Fraction], a: Sequence[Sequence[Fraction]], b: Sequence[Fraction]
             ) -> tuple[Fraction, list[Fraction]] | None:
    """max c.x subject to a.x <= b, x >= 0, for b >= 0 (so x = 0 is a vertex to start from).
    The simplex method with Bland's rule (it cannot cycle); None when unbounded."""
    m, n = len(a), len(c)
    rows = [[*map(Fraction, a[i]), *(Fraction(int(i == j)) for j in range(m)), Fraction(b[i])]
            for i in range(m)]
    reduced = [*(-Fraction(v) for v in c), *([Fraction(0)] * (m + 1))]
    basis = [n + i for i in range(m)]
    while True:
        entering = next((j for j in range(n + m) if reduced[j] < 0), None)
        if entering is None:
            break
        candidates = [i for i in range(m) if rows[i][entering] > 0]
        if not candidates:
            return None
        best = min(rows[i][-1] / rows[i][entering] for i in candidates)
        leaving = min((i for i in candidates if rows[i][-1] / rows[i][entering] == best),
                      key=lambda i: basis[i])
        pivot = rows[leaving][entering]
        rows[leaving] = [v / pivot for v in rows[leaving]]
        for i in range(m):
            if i != leaving and rows[i][entering]:
                factor = rows[i][entering]
                rows[i] = [v - factor * w for v, w in zip(rows[i], rows[leaving], strict=True)]
        factor = reduced[entering]
        reduced = [v - factor * w for v, w in zip(reduced, rows[leaving], strict=True)]
        basis[leaving] = entering
    x = [Fraction(0)] * n
    for i, var in enumerate(basis):
        if var < n:
            x[var] = rows[i][-1]
    return reduced[-1], x


def net(conversion: Json) -> dict[str, int]:
    """What one use changes: + its right side, - its left side."""
    out = dict.fromkeys(TRACKED, 0)
    for r, n in conversion["from"].items():
        out[r] -= n
    for r, n in conversion["to"].items():
        out[r] += n
    return out


def gain_cycle(conversions: Sequence[Json]) -> dict[int, int]:
    """A net-gain cycle among the conversions, as whole counts by index ({} when none)."""
    if not conversions:
        return {}
    nets = [net(conv) for conv in conversions]
    n = len(nets)
    # Nothing may run short: -(sum of x_i * net_i)[r] <= 0 for every r; and sum x_i <= 1.
    a = [[Fraction(-nets[i][r]) for i in range(n)] for r in TRACKED] + [[Fraction(1)] * n]
    b = [Fraction(0)] * len(TRACKED) + [Fraction(1)]
    gained = [Fraction(sum(nets[i][r] for r in TRACKED if r != "fear")) for i in range(n)]
    solved = maximise(gained, a, b)
    assert solved is not None, "sum x <= 1 bounds the programme"
    value, x = solved
    if value <= 0:
        return {}
    scale = math.lcm(*(v.denominator for v in x))
    counts = [int(v * scale) for v in x]
    common = math.gcd(*counts)
    return {i: c // common for i, c in enumerate(counts) if c}


def conversion_of(card: Json) -> Json | None:
    """The repeatable conversion a card gives, if any (one-use items are not repeatable)."""
    if card.get("kind") == "conversion":
        return {"from": card["from"], "to": card["to"]}
    if card.get("kind") == "heal":
        return {"from": card["cost"], "to": {HP: 1}}
    return None


def gain_cycles(board: Sequence[Json], cards: Sequence[Json]) -> list[tuple[list[str], str]]:
    """Every smallest set of item and support cards whose conversions (with the board's) make
    a net-gain cycle, with the cycle in words. Every combination of cards is covered: if the
    cards all together have no such cycle, no smaller set has one."""
    convertible = [(card["id"], conv) for card in cards if (conv := conversion_of(card))]
    if not gain_cycle([*board, *(conv for _, conv in convertible)]):
        return []
    found: list[tuple[list[str], str]] = []
    for size in range(len(convertible) + 1):
        for subset in combinations(convertible, size):
            ids = [card_id for card_id, _ in subset]
            if any(set(smaller) <= set(ids) for smaller, _ in found):
                continue
            convs = [*board, *(conv for _, conv in subset)]
            cycle = gain_cycle(convs)
            if cycle:
                found.append((ids, describe(convs, cycle, ["board"] * len(board) + ids)))
    return found


def describe(convs: Sequence[Json], cycle: dict[int, int], names: Sequence[str]) -> str:
    total = dict.fromkeys(TRACKED, 0)
    uses = []
    for i, times in sorted(cycle.items()):
        for r, n in net(convs[i]).items():
            total[r] += times * n
        sides = " + ".join(f"{n} {r}" for r, n in convs[i]["from"].items())
        gives = " + ".join(f"{n} {r}" for r, n in convs[i]["to"].items())
        uses.append(f"{times} x {names[i]} ({sides} -> {gives})")
    gain = ", ".join(f"+{n} {r}" for r, n in total.items() if n > 0)
    return f"{'; '.join(uses)} gains {gain} each time round"
