"""The geometry of Bubblee Pop as bit masks: lines, connected groups and gravity.

A planet is held as six integers, one mask per colour (index `colour - 1`). Bit
`row * 5 + column` is the cell at that column and row; row 0 is the ground and row 3 the top
of the planet. Rows 4 and 5 (bits 20-29) are "above the planet": a drop into a full column
lands there for a moment, and the drop is legal only if lines then make room.

These functions know nothing of turns or players; the rules and the bots both use them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

WIDTH = 5
HEIGHT = 4  # rows of a planet
GRID_ROWS = 6  # rows including the two transient rows above the planet
PLANET_CELLS = WIDTH * HEIGHT

RED, PURPLE, BLUE, GREEN, YELLOW, BLACK = 1, 2, 3, 4, 5, 6
COLOURS = (RED, PURPLE, BLUE, GREEN, YELLOW, BLACK)
LINE_COLOURS = (RED, PURPLE, BLUE, GREEN, YELLOW)  # black is never removed by a line
NAMES = {RED: "red", PURPLE: "purple", BLUE: "blue", GREEN: "green", YELLOW: "yellow",
         BLACK: "black"}
LETTERS = {RED: "R", PURPLE: "P", BLUE: "B", GREEN: "G", YELLOW: "Y", BLACK: "K"}
BY_LETTER = {letter: colour for colour, letter in LETTERS.items()}

ALL = (1 << (WIDTH * GRID_ROWS)) - 1
ON_PLANET = (1 << PLANET_CELLS) - 1
ABOVE_PLANET = ALL ^ ON_PLANET


def bit(column: int, row: int) -> int:
    return 1 << (row * WIDTH + column)


def _cells_where(pred: Callable[[int, int], bool]) -> int:
    return sum(bit(c, r) for r in range(GRID_ROWS) for c in range(WIDTH) if pred(c, r))


NOT_COLUMN_0 = _cells_where(lambda c, r: c != 0)
NOT_COLUMN_4 = _cells_where(lambda c, r: c != WIDTH - 1)
ROW_TRIPLE_START = _cells_where(lambda c, r: c <= WIDTH - 3)  # a row line can start here
COLUMN_0 = _cells_where(lambda c, r: c == 0)  # shifted left by k: column k

Masks = tuple[int, int, int, int, int, int]


def occupied(masks: Sequence[int]) -> int:
    return masks[0] | masks[1] | masks[2] | masks[3] | masks[4] | masks[5]


def heights(masks: Sequence[int]) -> tuple[int, ...]:
    """How many Bubblees stand in each column (gravity always holds between steps)."""
    return _column_heights(occupied(masks))


@lru_cache(maxsize=1 << 15)
def _column_heights(occ: int) -> tuple[int, ...]:
    """Memoised: gravity leaves at most 7^5 occupancies (0-6 Bubblees per column)."""
    return tuple([((occ >> c) & COLUMN_0).bit_count() for c in range(WIDTH)])


def cells(masks: Sequence[int], n: int) -> list[int]:
    """The colour of cells 0..n-1 (0 when empty): each colour's set bits, not n lookups."""
    out = [0] * n
    for k, mask in enumerate(masks):
        for index in cells_of(mask):
            if index < n:
                out[index] = k + 1
    return out


def colour_at(masks: Sequence[int], index: int) -> int:
    """The colour at cell `index` (row * 5 + column), 0 when empty."""
    b = 1 << index
    for k in range(6):
        if masks[k] & b:
            return k + 1
    return 0


def neighbours(x: int) -> int:
    """Every cell orthogonally adjacent to a cell of `x` (and `x` itself)."""
    return (x | ((x << 1) & NOT_COLUMN_0) | ((x >> 1) & NOT_COLUMN_4) | (x << 5) | (x >> 5)) & ALL


def flood(seed: int, within: int) -> int:
    """The cells of `within` orthogonally connected to `seed`."""
    x = seed & within
    while True:
        grown = neighbours(x) & within
        if grown == x:
            return x
        x = grown


def line_starts(mask: int) -> int:
    """First cells of every line of 3+ in a row or a column (diagonals never count)."""
    row = mask & (mask >> 1) & (mask >> 2) & ROW_TRIPLE_START
    column = mask & (mask >> 5) & (mask >> 10)
    return row | column


def components(mask: int) -> list[int]:
    """The orthogonally connected groups of `mask`, lowest cell first."""
    groups = []
    while mask:
        group = flood(mask & -mask, mask)
        groups.append(group)
        mask &= ~group
    return groups


def groups_to_remove(masks: Sequence[int]) -> list[tuple[int, int]]:
    """(colour, group) for every line of 3+ together with all same-coloured Bubblees connected
    to it; one entry per connected group."""
    found = []
    for colour in LINE_COLOURS:
        m = masks[colour - 1]
        starts = line_starts(m)
        if starts:
            for group in components(flood(starts, m)):
                found.append((colour, group))
    return found


def gravity(masks: Sequence[int]) -> tuple[list[int], list[tuple[int, int]]]:
    """Let every Bubblee fall in its column: the new masks and the (from, to) cell moves."""
    occ = occupied(masks)
    if not (~occ & (occ >> WIDTH) & ALL):  # no empty cell has a Bubblee above it
        return list(masks), []
    out = list(masks)
    moves = []
    for column in range(WIDTH):
        target = column
        for index in range(column, WIDTH * GRID_ROWS, WIDTH):
            b = 1 << index
            if not occ & b:
                continue
            if index != target:
                k = colour_at(masks, index) - 1
                out[k] = (out[k] & ~b) | (1 << target)
                moves.append((index, target))
            target += WIDTH
    return out, moves


Wave = tuple[list[tuple[int, int]], list[tuple[int, int]]]  # (removed groups, gravity moves)


def resolve(masks: Sequence[int]) -> tuple[Masks, list[Wave]]:
    """Remove lines, let the rest fall, and repeat until nothing more happens (the chain
    reaction). Returns the settled masks and, per wave, the groups removed and the moves."""
    current = list(masks)
    waves: list[Wave] = []
    while True:
        groups = groups_to_remove(current)
        if not groups:
            return (current[0], current[1], current[2], current[3], current[4],
                    current[5]), waves
        for colour, group in groups:
            current[colour - 1] &= ~group
        current, moves = gravity(current)
        waves.append((groups, moves))


def cells_of(mask: int) -> list[int]:
    """The cell indexes of `mask`, lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def from_rows(rows: Sequence[str]) -> Masks:
    """Masks from a picture, top row first: letters R P B G Y K, '.' for empty; the last
    string is the ground row."""
    masks = [0] * 6
    for r, line in enumerate(reversed(rows)):
        for c, ch in enumerate(line.replace(" ", "")):
            if ch != ".":
                masks[BY_LETTER[ch] - 1] |= bit(c, r)
    return (masks[0], masks[1], masks[2], masks[3], masks[4], masks[5])


def to_rows(masks: Sequence[int], rows: int = HEIGHT) -> list[str]:
    """The picture `from_rows` reads, top row first."""
    return ["".join(LETTERS.get(colour_at(masks, r * WIDTH + c), ".") for c in range(WIDTH))
            for r in reversed(range(rows))]


def settled(masks: Sequence[int]) -> bool:
    """No hole below a Bubblee and no Bubblee above the planet."""
    occ = occupied(masks)
    return not (~occ & (occ >> WIDTH) & ALL) and not occ & ABOVE_PLANET
