"""Draw a Bubblee Pop view for a terminal (`arbiter play bubblee`, `arbiter replay`).

The board is drawn as it lies on the table: planet 1 at the top (its ground row first,
since its gravity pulls away from the sky), the two sky rows in the middle, planet 0 at the
bottom (ground row last). Column numbers 1-5 run along both edges. `colour=False` draws
letters (R P B G Y, K for black, . for empty) for tests and logs.
"""

from __future__ import annotations

from collections.abc import Sequence

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee.board import HEIGHT, LETTERS, NAMES, WIDTH

ANSI = {1: "31", 2: "35", 3: "34", 4: "32", 5: "33", 6: "90"}
RESET = "\x1b[0m"
PHASES = {
    pb.PHASE_PLACE: "place the drawn Bubblee",
    pb.PHASE_ACTION: "swap (optional) and drop",
    pb.PHASE_POWERS: "apply or decline powers",
    pb.PHASE_OVER: "game over",
}
COUNT_FIELDS = ("red", "purple", "blue", "green", "yellow", "black")


def _cell(colour: int, use_colour: bool) -> str:
    if not colour:
        return "·" if use_colour else "."
    if use_colour:  # a letter too: the board never relies on colour alone
        return f"\x1b[{ANSI[colour]}m{LETTERS[colour]}{RESET}"
    return LETTERS[colour]


def _row(cells: Sequence[int], use_colour: bool) -> str:
    return " ".join(_cell(c, use_colour) for c in cells)


def _counts(counts: pb.ColourCounts, use_colour: bool) -> str:
    parts = []
    for colour, name in enumerate(COUNT_FIELDS, start=1):
        n = getattr(counts, name)
        if n:
            parts.append(f"{_cell(colour, use_colour)}{n}")
    return " ".join(parts) or "-"


def _planet_rows(planet: pb.Planet) -> list[list[int]]:
    """Rows of a planet, ground row first (a 25-cell planet shows its row above the top)."""
    cells = list(planet.cells)
    return [cells[r * WIDTH : (r + 1) * WIDTH] for r in range(len(cells) // WIDTH)]


def _seat_line(view: pb.View, seat: int, use_colour: bool) -> str:
    if view.seats == 1 and seat == 1:
        return f"target planet: {view.target_remaining} coloured left"
    zone = _counts(view.score_zones[seat], use_colour)
    marker = " <" if view.turn == seat and view.phase != pb.PHASE_OVER else ""
    you = " (you)" if view.HasField("seat") and view.seat == seat else ""
    return f"seat {seat}{you}: {view.scores[seat]} points  zone {zone}{marker}"


def render(view: pb.View, colour: bool = True) -> str:
    pad = "    "
    numbers = pad + " ".join(str(c + 1) for c in range(WIDTH))
    lines = [_seat_line(view, 1, colour), numbers]
    top = _planet_rows(view.planets[1])
    for r, row in enumerate(top):
        label = "grd" if r == 0 else ("top" if r == HEIGHT - 1 else "   ")
        lines.append(f"{label} {_row(row, colour)}")
    sky = list(view.sky)
    lines.append(f"sky {_row(sky[WIDTH:], colour)}   <- seat 1's row")
    lines.append(f"sky {_row(sky[:WIDTH], colour)}   <- seat 0's row")
    bottom = _planet_rows(view.planets[0])
    for r in reversed(range(len(bottom))):
        label = "grd" if r == 0 else ("top" if r == HEIGHT - 1 else "   ")
        lines.append(f"{label} {_row(bottom[r], colour)}")
    lines.append(numbers)
    lines.append(_seat_line(view, 0, colour))
    lines.append(_status(view, colour))
    return "\n".join(lines)


def _status(view: pb.View, use_colour: bool) -> str:
    if view.phase == pb.PHASE_OVER:
        o = view.outcome
        who = ", ".join(f"seat {w}" for w in o.winners) or "nobody"
        return f"game over ({o.reason}): won by {who}"
    parts = [f"turn: seat {view.turn}", PHASES.get(view.phase, "")]
    if view.drawn:
        parts.append(f"drawn {_cell(view.drawn, use_colour)} ({NAMES[view.drawn]})")
    if view.pool:
        parts.append("powers " + " ".join(f"{i}:{NAMES[p]}" for i, p in enumerate(view.pool)))
    if view.swapped:
        parts.append("swap used")
    parts.append(f"bag {view.bag_size} ({_counts(view.bag, use_colour)})")
    return " | ".join(parts)
