"""Bubblee Pop: the decider.

Sources: the rulebook (Règles du jeu, in French), the project rulings and docs/rulings/bubblee.md.

A turn (rulebook "Tour de jeu"):
  1. refill the sky, one drawn Bubblee at a time, the player choosing each empty cell
     (skipped on the game's very first turn);
  2. optionally swap two orthogonally adjacent sky Bubblees;
  3. drop two adjacent sky Bubblees on your planet (at least one from your own sky row);
  4-5. lines of 3+ are removed with their connected same-coloured Bubblees, gravity, chain
     reactions; then the powers gained are applied in the player's order or declined.

decide computes every consequence once and records it in events; evolve only applies them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import board
from services.bubblee.board import (
    BLACK,
    BLUE,
    GREEN,
    HEIGHT,
    LINE_COLOURS,
    PURPLE,
    RED,
    WIDTH,
    YELLOW,
    Masks,
)
from services.bubblee.levels import Level, all_levels, level
from services.bubblee.state import (
    ACTION,
    PLACE,
    POWERS,
    State,
    _apply_drawn,
    _apply_dropped,
    _apply_gravity,
    _apply_lines_cleared,
    _apply_placed,
    _apply_power_used,
    _apply_settled,
    _apply_swapped,
    _apply_turn_ended,
    _evolve_game_over,
    _evolve_power_applied,
    _index,
    evolve,
    opponent_planet,
    put_counts,
    scores,
    target_remaining,
)
from services.core.decider import Decision, MalformedCommand, Outcome, Rng, RuleError, Seat

# ---- The material ---------------------------------------------------------------------

PER_COLOUR = 16  # 96 Bubblees: 16 of each of the 6 colours
BAG_BLACKS = 3  # "la pioche doit toujours contenir exactement 3 Bubblees Noirs"
START_BLACK_COLUMNS = (0, 2, 4)  # columns 1, 3, 5 of the ground row
EXTRA_BLACK_COLUMNS = (1, 3)  # the difficulty variant: 4th in column 2, 5th in column 4
SKY_CELLS = 2 * WIDTH

# Sky pairs of orthogonally adjacent cells (index = row * 5 + column).
SKY_ROW_PAIRS = tuple(
    (r * WIDTH + c, r * WIDTH + c + 1) for r in range(2) for c in range(WIDTH - 1)
)
SKY_COLUMN_PAIRS = tuple((c, WIDTH + c) for c in range(WIDTH))
SKY_PAIRS = SKY_ROW_PAIRS + SKY_COLUMN_PAIRS


# ---- Setup ----------------------------------------------------------------------------


def setup(options: pb.Options, seats: Sequence[Seat], rng: Rng) -> list[pb.Event]:
    _check_options(options, len(seats))
    if options.solo_level:
        return [_solo_setup(options, level(options.solo_level), rng)]
    planets = [_starting_planet(options.extra_blacks) for _ in range(2)]
    sky = random_sky(rng)
    bag = [PER_COLOUR - 2] * 5 + [BAG_BLACKS]
    on_planets = 2 * (3 + options.extra_blacks)
    set_aside = [0] * 5 + [PER_COLOUR - BAG_BLACKS - on_planets]
    ev = _set_up_event(options, 2, planets, sky, bag, set_aside)
    ev.game_set_up.first_player = rng.below(2)  # "à pile ou face"
    return [ev]


def _check_options(options: pb.Options, seats: int) -> None:
    if not 0 <= options.extra_blacks <= 2:
        raise MalformedCommand("BAD_OPTION", "extra_blacks must be 0, 1 or 2", "extra_blacks")
    if options.solo_level < 0:
        raise MalformedCommand("BAD_OPTION", "solo_level cannot be negative", "solo_level")
    if options.solo_level:
        level(options.solo_level)  # raises MalformedCommand for an unknown level
        if options.no_powers:
            raise MalformedCommand(
                "BAD_OPTION", "solo needs the powers: the target is cleared by them", "no_powers"
            )
        if seats != 1:
            raise MalformedCommand("BAD_SEATS", "solo is played by exactly 1 seat")
    elif seats != 2:
        raise MalformedCommand("BAD_SEATS", "Bubblee Pop is a duel of exactly 2 seats")


def _starting_planet(extra_blacks: int) -> Masks:
    columns = START_BLACK_COLUMNS + EXTRA_BLACK_COLUMNS[:extra_blacks]
    return (0, 0, 0, 0, 0, sum(board.bit(c, 0) for c in columns))


def random_sky(rng: Rng) -> list[int]:
    """2 of each of the 5 colours with no two of a colour orthogonally adjacent (rulebook:
    "aucun Bubblee ne soit adjacent à un Bubblee de même couleur"), uniformly among the
    valid layouts reached by a random backtracking fill."""
    sky = [0] * SKY_CELLS
    left = dict.fromkeys(LINE_COLOURS, 2)

    def fill(i: int) -> bool:
        if i == SKY_CELLS:
            return True
        column, row = i % WIDTH, i // WIDTH
        for colour in rng.shuffled(LINE_COLOURS):
            if not left[colour]:
                continue
            if column and sky[i - 1] == colour or row and sky[i - WIDTH] == colour:
                continue
            sky[i] = colour
            left[colour] -= 1
            if fill(i + 1):
                return True
            left[colour] += 1
            sky[i] = 0
        return False

    fill(0)
    return sky


def _solo_setup(options: pb.Options, lvl: Level, rng: Rng) -> pb.Event:
    planets = [_starting_planet(options.extra_blacks), lvl.target]
    sky = list(lvl.sky) if lvl.sky else random_sky(Rng(_level_key(lvl.bag_seed), -1))
    used = [0] * 6
    for masks in planets:
        for k in range(6):
            used[k] += masks[k].bit_count()
    for colour in sky:
        used[colour - 1] += 1
    bag = list(lvl.bag)
    set_aside = [PER_COLOUR - used[k] - bag[k] for k in range(6)]
    ev = _set_up_event(options, 1, planets, sky, bag, set_aside)
    ev.game_set_up.draw_seed = lvl.bag_seed
    return ev


def recheck(state: State | None, seat: int | None, message: Any, rng: Rng,
            recorded: Any) -> list[pb.Event] | None:
    """Log verification of a solo game stored before the levels were put in another order
    (ruling O9): its set-up is judged by the level that sets it up, whatever that level's
    number is today. None for everything else (judged as usual)."""
    if state is not None or recorded is None or not message.solo_level:
        return None
    if recorded.WhichOneof("kind") != "game_set_up":
        return None
    for lvl in all_levels():
        event = _solo_setup(message, lvl, rng)
        if event.game_set_up == recorded.game_set_up:
            return None if lvl.number == message.solo_level else [event]
    return None


def _level_key(bag_seed: int) -> bytes:
    return b"bubblee-level-bag:%d" % bag_seed


def _set_up_event(
    options: pb.Options,
    seats: int,
    planets: Sequence[Masks],
    sky: Sequence[int],
    bag: Sequence[int],
    set_aside: Sequence[int],
) -> pb.Event:
    ev = pb.Event()
    s = ev.game_set_up
    s.options.CopyFrom(options)
    s.seats = seats
    for masks in planets:
        s.planets.add().cells.extend(board.cells(masks, board.PLANET_CELLS))
    s.sky.extend(sky)
    put_counts(s.bag, bag)
    put_counts(s.set_aside, set_aside)
    return ev


# ---- Cells in messages ------------------------------------------------------------------


def _sky_index(cell: pb.SkyCell, what: str) -> int:
    column, row = cell.column, cell.row
    if not (0 <= column < WIDTH and 0 <= row < 2):
        raise MalformedCommand(
            "CELL_OUT_OF_RANGE", f"{what} is not a sky cell (columns 0-4, rows 0-1)", what
        )
    return _index(cell)


def _planet_index(cell: pb.PlanetCell, what: str) -> int:
    if not (0 <= cell.column < WIDTH and 0 <= cell.row < HEIGHT):
        raise MalformedCommand(
            "CELL_OUT_OF_RANGE", f"{what} is not a planet cell (columns 0-4, rows 0-3)", what
        )
    return _index(cell)


def _set_index(msg: pb.SkyCell | pb.PlanetCell, index: int) -> None:
    """Write a cell index (row * 5 + column) into a sky or planet cell message."""
    msg.column, msg.row = index % WIDTH, index // WIDTH


def _adjacent(a: int, b: int) -> bool:
    """Orthogonal adjacency of two cells of a 5-wide grid."""
    lo, hi = (a, b) if a < b else (b, a)
    return hi - lo == WIDTH or (hi - lo == 1 and hi % WIDTH != 0)


def _describe_sky(index: int) -> str:
    return f"sky cell (column {index % WIDTH + 1}, row {index // WIDTH + 1})"


# ---- Decide -----------------------------------------------------------------------------


def decide(state: State, seat: int | None, command: pb.Command, rng: Rng) -> list[pb.Event]:
    kind = command.WhichOneof("kind")
    parse, decide_kind = _COMMANDS[kind]
    args = parse(getattr(command, kind))
    out = Decision(state, evolve)
    decide_kind(out, args, rng)
    return out.events


# Well-formedness: what no state could ever make valid. Each check returns the command's
# cells as indexes, read once.


def _check_place(cmd: pb.Place) -> int:
    if not cmd.HasField("cell"):
        raise MalformedCommand("MISSING_CELL", "place needs a sky cell", "cell")
    return _sky_index(cmd.cell, "cell")


def _check_pair(cmd: pb.Swap | pb.Drop) -> tuple[int, int]:
    if not (cmd.HasField("a") and cmd.HasField("b")):
        raise MalformedCommand("MISSING_CELL", "two sky cells are needed", "a")
    a, b = _sky_index(cmd.a, "a"), _sky_index(cmd.b, "b")
    if not _adjacent(a, b):
        raise MalformedCommand(
            "NOT_ADJACENT", "the two sky cells must be orthogonally adjacent", "b"
        )
    return a, b


def _check_apply(cmd: pb.ApplyPower) -> pb.ApplyPower:
    if cmd.index < 0:
        raise MalformedCommand("BAD_INDEX", "a pool index cannot be negative", "index")
    if not 0 <= cmd.column < WIDTH:
        raise MalformedCommand("BAD_COLUMN", "columns are 0-4", "column")
    if cmd.HasField("a"):
        _planet_index(cmd.a, "a")
    if cmd.HasField("b"):
        _planet_index(cmd.b, "b")
    return cmd


def _check_decline(cmd: pb.DeclinePower) -> int:
    if cmd.index < 0:
        raise MalformedCommand("BAD_INDEX", "a pool index cannot be negative", "index")
    return cmd.index


def _need_phase(state: State, phase: int) -> None:
    if state.phase == phase:
        return
    if state.phase == PLACE:
        raise RuleError("PLACE_FIRST", "place the drawn Bubblee in the sky first")
    if state.phase == POWERS:
        raise RuleError("POWERS_PENDING", "apply or decline your pending powers first")
    if phase == PLACE:
        raise RuleError("NOTHING_DRAWN", "there is no drawn Bubblee to place")
    raise RuleError("NO_PENDING_POWER", "you have no pending power")


# Step 1: refill.


def _decide_place(out: Decision[State], index: int, rng: Rng) -> None:
    state = out.state
    _need_phase(state, PLACE)
    if state.sky[index]:
        raise RuleError("CELL_OCCUPIED", f"{_describe_sky(index)} is not empty", "cell")
    ev = pb.Event()
    placed = ev.placed
    _set_index(placed.cell, index)
    placed.colour = state.drawn
    out.emit(ev, _apply_placed, index, state.drawn)
    _continue_refill(out, rng)


def _draw(state: State, rng: Rng) -> int:
    """One Bubblee from the bag at random (the bag has no order). Solo draws come from the
    level's bag seed, so a level is the same puzzle every time."""
    if state.solo_level:
        rng = Rng(_level_key(state.draw_seed), state.draws)
    pick = rng.below(sum(state.bag))
    for k, count in enumerate(state.bag):
        if pick < count:
            return k + 1
        pick -= count
    raise AssertionError("unreachable: pick < bag size")


def _continue_refill(out: Decision[State], rng: Rng) -> None:
    state = out.state
    if 0 in state.sky:
        ev = pb.Event()
        colour = ev.drawn.colour = _draw(state, rng)
        out.emit(ev, _apply_drawn, colour)
    else:
        _check_can_drop(out)


def _start_turn(out: Decision[State], rng: Rng) -> None:
    """The end of the game is checked before refilling: "il n'y a plus assez de Bubblees pour
    remplir le Ciel"."""
    state = out.state
    empty = state.sky.count(0)
    if sum(state.bag) < empty:
        _game_over_by_bag(out)
    elif not empty:
        _check_can_drop(out)
    else:
        _continue_refill(out, rng)


def _check_can_drop(out: Decision[State]) -> None:
    """A player who cannot drop (even after a swap) loses at once."""
    state = out.state
    if not any_legal_drop(state, state.turn, allow_swap=not state.swapped):
        _game_over_loss(out, state.turn, no_drop_reason(state, state.turn))


def no_drop_reason(state: State, seat: int) -> str:
    """Why `seat` cannot drop: a full planet, or room too small for any pair the sky offers
    (a pair needs two cells: one free cell in a column takes only a horizontal pair's half)."""
    heights = board.heights(state.planets[seat])
    room = [c + 1 for c in range(WIDTH) if heights[c] < board.HEIGHT]
    if not room:
        return "no legal drop: the planet is full"
    columns = ", ".join(str(c) for c in room)
    where = f"column {columns} has" if len(room) == 1 else f"columns {columns} have"
    return (f"no legal drop: only {where} room, and no pair of sky Bubblees fits without "
            "leaving one above the planet")


# Step 2: the optional swap.


def _decide_swap(out: Decision[State], cells: tuple[int, int], rng: Rng) -> None:
    state = out.state
    _need_phase(state, ACTION)
    if state.swapped:
        raise RuleError("SWAP_ALREADY_USED", "you have already swapped this turn")
    a, b = cells
    for index, what in ((a, "a"), (b, "b")):
        if not state.sky[index]:
            raise RuleError("CELL_EMPTY", f"{_describe_sky(index)} is empty", what)
    ev = pb.Event()
    _set_index(ev.swapped.a, a)
    _set_index(ev.swapped.b, b)
    out.emit(ev, _apply_swapped, a, b)
    _check_can_drop(out)


# Step 3: the drop.


def landing_order(seat_row: int, a: int, b: int) -> tuple[int, int]:
    """In a vertical pair the Bubblee from the mover's own sky row lands first."""
    if a % WIDTH == b % WIDTH and b // WIDTH == seat_row:
        return b, a
    return a, b


Landings = tuple[tuple[int, int, int], tuple[int, int, int]]  # (sky cell, planet cell, colour)


def drop_check(state: State, seat: int, a: int, b: int) -> str | None:
    """Why dropping sky cells a and b is illegal for `seat` now, or None if it is legal."""
    return _plan_drop(state, seat, a, b)[0]


def _plan_drop(state: State, seat: int, a: int, b: int) -> tuple[str | None, Landings | None]:
    """drop_check's answer and, for a legal drop, where each Bubblee lands, in landing order."""
    sky = state.sky
    if not sky[a] or not sky[b]:
        return "CELL_EMPTY", None
    if a // WIDTH == b // WIDTH and a // WIDTH != seat:
        return "NOT_YOUR_ROW", None
    first, second = landing_order(seat, a, b)
    masks = state.planets[seat]
    cell1, cell2 = _landing_cells(board.heights(masks), first, second)
    if not _makes_room(masks, cell1, cell2, sky[first], sky[second]):
        return "COLUMN_FULL", None
    return None, ((first, cell1, sky[first]), (second, cell2, sky[second]))


def _landing_cells(hs: Sequence[int], first: int, second: int) -> tuple[int, int]:
    """Each Bubblee falls straight down its column onto the top of the pile (possibly above a
    full column); in a vertical pair the second lands on the first."""
    c1, c2 = first % WIDTH, second % WIDTH
    r2 = hs[c2] + 1 if c1 == c2 else hs[c2]
    return hs[c1] * WIDTH + c1, r2 * WIDTH + c2


def _land(
    masks: Masks, hs: Sequence[int], first: int, second: int, colour1: int, colour2: int
) -> list[int]:
    """The masks once the pair (first, second) has landed."""
    return _put(masks, *_landing_cells(hs, first, second), colour1, colour2)


def _put(masks: Masks, cell1: int, cell2: int, colour1: int, colour2: int) -> list[int]:
    out = list(masks)
    out[colour1 - 1] |= 1 << cell1
    out[colour2 - 1] |= 1 << cell2
    return out


def _makes_room(masks: Masks, cell1: int, cell2: int, colour1: int, colour2: int) -> bool:
    """A drop landing on cell1 and cell2 is legal if nothing is left above the planet once
    its lines are resolved (always, when both land on the planet)."""
    if cell1 < board.PLANET_CELLS and cell2 < board.PLANET_CELLS:
        return True
    landed = _put(masks, cell1, cell2, colour1, colour2)
    if not (board.line_starts(landed[colour1 - 1]) or board.line_starts(landed[colour2 - 1])):
        return False  # only a line through a dropped Bubblee could make room
    settled_masks, _ = board.resolve(landed)
    return not board.occupied(settled_masks) & board.ABOVE_PLANET


def any_legal_drop(state: State, seat: int, allow_swap: bool) -> bool:
    """Is some drop legal, now or (when the swap is still unused) after one swap? Only the
    colours reaching the two dropped cells matter, so each drop pair is tried with the
    colours a swap touching it could bring."""
    sky = state.sky
    masks = state.planets[seat]
    hs = board.heights(masks)
    for c in range(WIDTH):
        if hs[c] <= HEIGHT - 2 and sky[c] and sky[c + WIDTH]:
            return True  # a vertical pair always fits in a column with room for two
    pairs = _LANDING_PAIRS[seat]
    for first, second in pairs:
        if sky[first] and sky[second]:
            cell1, cell2 = _landing_cells(hs, first, second)
            if _makes_room(masks, cell1, cell2, sky[first], sky[second]):
                return True
    if not allow_swap:
        return False
    for first, second in pairs:
        cell1, cell2 = _landing_cells(hs, first, second)  # the same whatever the swap
        for x, y in _SWAPS_TOUCHING[first, second]:
            if sky[x] and sky[y]:
                swapped = list(sky)
                swapped[x], swapped[y] = sky[y], sky[x]
                c1, c2 = swapped[first], swapped[second]
                if c1 and c2 and _makes_room(masks, cell1, cell2, c1, c2):
                    return True
    return False


def _drop_pairs(seat: int) -> tuple[tuple[int, int], ...]:
    """A horizontal pair of the mover's own row, or any vertical pair."""
    return _DROP_PAIRS[seat]


_DROP_PAIRS = tuple(
    tuple(p for p in SKY_ROW_PAIRS if p[0] // WIDTH == seat) + SKY_COLUMN_PAIRS for seat in (0, 1)
)
_LANDING_PAIRS = tuple(
    tuple(landing_order(seat, a, b) for a, b in _DROP_PAIRS[seat]) for seat in (0, 1)
)
_SWAPS_TOUCHING = {
    pair: tuple(swap for swap in SKY_PAIRS if set(swap) & set(pair))
    for seat in (0, 1)
    for pair in _LANDING_PAIRS[seat]
}


def _decide_drop(out: Decision[State], cells: tuple[int, int], rng: Rng) -> None:
    state = out.state
    _need_phase(state, ACTION)
    seat = state.turn
    a, b = cells
    problem, landings = _plan_drop(state, seat, a, b)
    if problem == "CELL_EMPTY":
        empty = a if not state.sky[a] else b
        raise RuleError("CELL_EMPTY", f"{_describe_sky(empty)} is empty")
    if problem == "NOT_YOUR_ROW":
        raise RuleError(
            "NOT_YOUR_ROW", "a horizontal pair must be dropped from your own sky row"
        )
    if problem == "COLUMN_FULL":
        raise RuleError(
            "COLUMN_FULL",
            "that drop would leave a Bubblee above your planet: the column is full and no line "
            "makes room",
        )
    assert landings is not None
    ev = pb.Event()
    dropped = ev.dropped
    dropped.planet = seat
    for landing in landings:
        dropped.landings.append(_landing_message(*landing))
    out.emit(ev, _apply_dropped, seat, landings)
    _resolve(out, seat, pb.CAUSE_DROP)
    _after_step(out, rng)


@cache
def _landing_message(index: int, cell: int, colour: int) -> pb.Landing:
    """One Landing, built once and copied into events (cheaper than field by field)."""
    landing = pb.Landing(colour=colour)
    _set_index(landing.from_sky, index)
    _set_index(landing.to_cell, cell)
    return landing


def _resolve(out: Decision[State], planet: int, cause: int) -> None:
    """Lines, gravity and chain reactions on one planet, each wave as events. Removed
    Bubblees score for the planet's owner; powers go to the mover's pool when the planet is
    the mover's own (or, with the option, also the opponent's)."""
    state = out.state
    mover = state.turn
    grants = not state.no_powers and (planet == mover or state.opponent_lines_grant_powers)
    _, waves = board.resolve(state.planets[planet])
    for number, (groups, moves) in enumerate(waves, start=1):
        for colour, group in groups:
            ev = pb.Event()
            lc = ev.lines_cleared
            lc.planet = planet
            lc.colour = colour
            for cell in board.cells_of(group):
                _set_index(lc.cells.add(), cell)
            lc.scorer = planet
            power = lc.power_gained = colour if grants else 0
            lc.wave = number
            out.emit(ev, _apply_lines_cleared, planet, colour, group, planet, power)
        if moves:
            ev = pb.Event()
            ev.gravity.planet = planet
            for source, target in moves:
                move = ev.gravity.moves.add()
                _set_index(move.from_cell, source)
                _set_index(move.to_cell, target)
            out.emit(ev, _apply_gravity, planet, moves)
    ev = pb.Event()
    settled = ev.settled
    settled.planet = planet
    settled.cause = cause
    settled.waves = len(waves)
    out.emit(ev, _apply_settled)


def _after_step(out: Decision[State], rng: Rng) -> None:
    """After a drop or a power: the solo target may be cleared; pending powers wait for the
    player; otherwise the turn ends."""
    state = out.state
    if state.outcome is not None:
        return
    if state.solo_level and not target_remaining(state):
        _game_over_solo_win(out)
    elif not state.pool:
        ev = pb.Event()
        ended = ev.turn_ended
        ended.seat = state.turn
        next_seat = ended.next_seat = (state.turn + 1) % state.seats
        out.emit(ev, _apply_turn_ended, next_seat)
        _start_turn(out, rng)


# Step 5: powers.


def _decide_decline(out: Decision[State], index: int, rng: Rng) -> None:
    state = out.state
    _need_phase(state, POWERS)
    power = _pool_entry(state, index)
    ev = pb.Event()
    ev.power_declined.index = index
    ev.power_declined.power = power
    out.emit(ev, _apply_power_used, index)
    _after_step(out, rng)


def _pool_entry(state: State, index: int) -> int:
    if index >= len(state.pool):
        raise RuleError("NO_SUCH_POWER", f"there is no pending power number {index}", "index")
    return state.pool[index]


def _decide_apply(out: Decision[State], cmd: pb.ApplyPower, rng: Rng) -> None:
    state = out.state
    _need_phase(state, POWERS)
    power = _pool_entry(state, cmd.index)
    ev = pb.Event()
    applied = ev.power_applied
    applied.index = cmd.index
    applied.power = power
    _POWERS[power](state, cmd, applied)
    out.emit(ev, _evolve_power_applied, applied)  # rare: decoding the event is cheap enough
    kind = applied.WhichOneof("effect")
    if kind == "swapped":
        _resolve(out, applied.swapped.planet, pb.CAUSE_POWER)
    elif kind == "sent":
        if applied.sent.to_cell.row >= HEIGHT:
            _game_over_loss(out, applied.sent.to_planet, "eliminated: the planet is full")
            return
        _resolve(out, applied.sent.to_planet, pb.CAUSE_POWER)
    # yellow (and purple's source) take an uncovered Bubblee: nothing can fall or line up.
    _after_step(out, rng)


def _swap_targets(state: State, planet: int, cmd: pb.ApplyPower, applied: pb.PowerApplied) -> None:
    # Rule errors, not malformed: the same ApplyPower is valid for a column power (purple,
    # blue, yellow), so only the pending power makes it wrong.
    if not (cmd.HasField("a") and cmd.HasField("b")):
        raise RuleError("MISSING_CELL", "this power needs two planet cells a and b", "a")
    a, b = _planet_index(cmd.a, "a"), _planet_index(cmd.b, "b")
    if not _adjacent(a, b):
        raise RuleError("NOT_ADJACENT", "the two cells must be orthogonally adjacent", "b")
    occ = board.occupied(state.planets[planet])
    for index, what in ((a, "a"), (b, "b")):
        if not occ >> index & 1:
            raise RuleError("CELL_EMPTY", f"there is no Bubblee at {_describe_planet(index)}", what)
    applied.swapped.planet = planet
    _set_index(applied.swapped.a, a)
    _set_index(applied.swapped.b, b)


def _describe_planet(index: int) -> str:
    return f"column {index % WIDTH + 1}, row {index // WIDTH + 1}"


def _red(state: State, cmd: pb.ApplyPower, applied: pb.PowerApplied) -> None:
    """Red: swap 2 adjacent Bubblees of the opponent's planet."""
    _swap_targets(state, opponent_planet(state, state.turn), cmd, applied)


def _green(state: State, cmd: pb.ApplyPower, applied: pb.PowerApplied) -> None:
    """Green: swap 2 adjacent Bubblees of your own planet."""
    _swap_targets(state, state.turn, cmd, applied)


def _uncovered(state: State, planet: int, cmd: pb.ApplyPower) -> int:
    """The cell of the top Bubblee of the command's column ("non recouvert"); a cell named
    in `a` must be that one."""
    column = cmd.column
    h = board.heights(state.planets[planet])[column]
    if not h:
        raise RuleError("COLUMN_EMPTY", f"column {column + 1} of your planet is empty", "column")
    cell = (h - 1) * WIDTH + column
    if cmd.HasField("a") and _planet_index(cmd.a, "a") != cell:
        raise RuleError(
            "NOT_UNCOVERED",
            f"the Bubblee that moves is the uncovered one of column {column + 1}, at "
            f"{_describe_planet(cell)}", "a")
    return cell


def send_target(state: State, planet: int, column: int) -> int | None:
    """Where a Bubblee sent by purple or blue lands on `planet` in `column`: the top of the
    column; row 4 (above) only when every column is full (that eliminates the receiver).
    None when the column is full while another has room, or, in solo, when all are full."""
    hs = board.heights(state.planets[planet])
    if hs[column] < HEIGHT:
        return hs[column] * WIDTH + column
    if min(hs) < HEIGHT or state.solo_level:
        return None
    return HEIGHT * WIDTH + column


def _target_cell(state: State, planet: int, column: int) -> int:
    cell = send_target(state, planet, column)
    if cell is None:
        raise RuleError(
            "TARGET_COLUMN_FULL",
            f"column {column + 1} of the opponent's planet is full and another column has room"
            if not state.solo_level
            else f"column {column + 1} of the target planet is full",
            "column",
        )
    return cell


def _purple(state: State, cmd: pb.ApplyPower, applied: pb.PowerApplied) -> None:
    """Purple: send one of your uncovered Bubblees to the same column of the opponent."""
    source = _uncovered(state, state.turn, cmd)
    target_planet = opponent_planet(state, state.turn)
    cell = _target_cell(state, target_planet, cmd.column)
    sent = applied.sent
    sent.colour = board.colour_at(state.planets[state.turn], source)
    sent.to_planet = target_planet
    _set_index(sent.to_cell, cell)
    _set_index(sent.from_planet_cell, source)


def _blue(state: State, cmd: pb.ApplyPower, applied: pb.PowerApplied) -> None:
    """Blue: drop the Bubblee of the opponent's sky row in that column onto their planet."""
    target_planet = opponent_planet(state, state.turn)
    sky_index = target_planet * WIDTH + cmd.column
    if not state.sky[sky_index]:
        raise RuleError("CELL_EMPTY", f"{_describe_sky(sky_index)} is empty", "column")
    cell = _target_cell(state, target_planet, cmd.column)
    sent = applied.sent
    sent.colour = state.sky[sky_index]
    sent.to_planet = target_planet
    _set_index(sent.to_cell, cell)
    _set_index(sent.from_sky, sky_index)


def _yellow(state: State, cmd: pb.ApplyPower, applied: pb.PowerApplied) -> None:
    """Yellow: put one of your uncovered Bubblees in your score zone."""
    source = _uncovered(state, state.turn, cmd)
    banked = applied.banked
    banked.planet = state.turn
    _set_index(banked.cell, source)
    banked.colour = board.colour_at(state.planets[state.turn], source)
    banked.scorer = state.turn


_POWERS = {RED: _red, GREEN: _green, PURPLE: _purple, BLUE: _blue, YELLOW: _yellow}

# Per command kind: the well-formedness check (which reads the command) and the decision.
_COMMANDS: dict[str, tuple[Callable[[Any], Any], Callable[[Decision[State], Any, Rng], None]]] = {
    "place": (_check_place, _decide_place),
    "swap": (_check_pair, _decide_swap),
    "drop": (_check_pair, _decide_drop),
    "apply_power": (_check_apply, _decide_apply),
    "decline_power": (_check_decline, _decide_decline),
}


# The end.


def _game_over(out: Decision[State], winners: Sequence[int], reason: str) -> None:
    ev = pb.Event()
    o = ev.game_over.outcome
    o.winners.extend(winners)
    o.scores.extend(scores(out.state))
    o.reason = reason
    out.emit(ev, _evolve_game_over, ev.game_over)


def _game_over_by_bag(out: Decision[State]) -> None:
    """Most points wins; a tie is shared. Solo: the target was not cleared in time."""
    state = out.state
    if state.solo_level:
        _game_over(out, (), "the bag cannot refill the sky: the target was not cleared")
        return
    points = scores(state)
    best = max(points)
    _game_over(
        out,
        [s for s in range(state.seats) if points[s] == best],
        "the bag cannot refill the sky",
    )


def _game_over_loss(out: Decision[State], loser: int, reason: str) -> None:
    """A loss at once (planet full / eliminated): every other seat wins."""
    _game_over(out, [s for s in range(out.state.seats) if s != loser], reason)


def _game_over_solo_win(out: Decision[State]) -> None:
    _game_over(out, (0,), "the target planet is cleared")


def to_act(state: State) -> tuple[int, ...]:
    return () if state.outcome is not None else (state.turn,)


def outcome(state: State) -> Outcome | None:
    return state.outcome


def legal_actions(state: State, seat: int) -> list[pb.Command]:
    if state.outcome is not None or seat != state.turn:
        return []
    if state.phase == PLACE:
        return [_place(i) for i, colour in enumerate(state.sky) if not colour]
    if state.phase == ACTION:
        return _legal_swaps_and_drops(state, seat)
    return _legal_powers(state, seat)


def _place(index: int) -> pb.Command:
    cmd = pb.Command()
    _set_index(cmd.place.cell, index)
    return cmd


def _pair_command(kind: str, a: int, b: int) -> pb.Command:
    cmd = pb.Command()
    msg = getattr(cmd, kind)
    _set_index(msg.a, a)
    _set_index(msg.b, b)
    return cmd


def _legal_swaps_and_drops(state: State, seat: int) -> list[pb.Command]:
    out: list[pb.Command] = []
    if not state.swapped:
        # Swapping two Bubblees of one colour changes nothing (and only gives up the swap):
        # legal, but not offered.
        out.extend(
            _pair_command("swap", a, b) for a, b in SKY_PAIRS
            if state.sky[a] and state.sky[b] and state.sky[a] != state.sky[b]
        )
    out.extend(
        _pair_command("drop", a, b)
        for a, b in _drop_pairs(seat)
        if drop_check(state, seat, a, b) is None
    )
    return out


def _legal_powers(state: State, seat: int) -> list[pb.Command]:
    """One entry per distinct pending colour (entries of one colour are interchangeable):
    every valid target, and declining."""
    out = []
    seen = set()
    for index, power in enumerate(state.pool):
        if power in seen:
            continue
        seen.add(power)
        for a, b, column in power_targets(state, seat, power):
            cmd = pb.Command()
            apply = cmd.apply_power
            apply.index = index
            if a >= 0:
                _set_index(apply.a, a)
            if b >= 0:
                _set_index(apply.b, b)
            apply.column = column
            out.append(cmd)
        cmd = pb.Command()
        cmd.decline_power.index = index
        out.append(cmd)
    return out


PLANET_PAIRS = tuple(
    (i, j)
    for i in range(board.PLANET_CELLS)
    for j in (i + 1, i + WIDTH)
    if j < board.PLANET_CELLS and _adjacent(i, j)
)


def power_targets(state: State, seat: int, power: int) -> list[tuple[int, int, int]]:
    """Every valid target of a power as (cell a, cell b, column); -1 where unused. Red and
    green name the two cells swapped (never two of one colour: that changes nothing);
    purple and yellow name in `a` the uncovered Bubblee that moves."""
    if power in (RED, GREEN):
        planet = seat if power == GREEN else opponent_planet(state, seat)
        masks = state.planets[planet]
        colour = [board.colour_at(masks, i) for i in range(board.PLANET_CELLS)]  # 0: empty
        return [(a, b, 0) for a, b in PLANET_PAIRS
                if colour[a] and colour[b] and colour[a] != colour[b]]
    own = board.heights(state.planets[seat])
    top = [(own[c] - 1) * WIDTH + c for c in range(WIDTH)]
    if power == YELLOW:
        return [(top[c], -1, c) for c in range(WIDTH) if own[c]]
    target = opponent_planet(state, seat)
    if power == PURPLE:
        return [(top[c], -1, c) for c in range(WIDTH)
                if own[c] and send_target(state, target, c) is not None]
    candidates = [c for c in range(WIDTH) if state.sky[target * WIDTH + c]]
    return [(-1, -1, c) for c in candidates if send_target(state, target, c) is not None]


# Black is in the material but has no power.
assert BLACK not in _POWERS
