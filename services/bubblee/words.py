"""Bubblee Pop in words: a command as the board draws it (columns 1-5, rows from the ground),
and an event as a seat is told it."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee.board import BLUE, NAMES, PURPLE, WIDTH, YELLOW
from services.core.decider import CatalogEntry
from services.core.happened import does, listed, plural, who, whose


def _row(row: int, view: pb.View | None) -> str:
    """A sky row as the seat the view is for sees it."""
    if view is None or not view.HasField("seat"):
        return f"seat {row}'s sky row"
    if row == view.seat:
        return "your sky row"
    return "the target's sky row" if view.seats == 1 else "the opponent's sky row"


def _colour_at(cell: pb.SkyCell, view: pb.View | None) -> str:
    """"red " for a red sky Bubblee ("" without the view)."""
    colour = view.sky[cell.row * WIDTH + cell.column] if view is not None else 0
    return f"{NAMES[colour]} " if colour else ""


def _swap(s: pb.Swap, view: pb.View | None) -> str:
    a, b = sorted((s.a, s.b), key=lambda c: (c.row, c.column))
    if a.row == b.row:
        return (f"swap the {_colour_at(a, view)}and {_colour_at(b, view)}Bubblees of columns "
                f"{a.column + 1} and {b.column + 1} of {_row(a.row, view)}")
    return (f"swap the {_colour_at(a, view)}Bubblee of {_row(a.row, view)} with the "
            f"{_colour_at(b, view)}Bubblee of {_row(b.row, view)} in column {a.column + 1}")


def _planet(cell: pb.PlanetCell) -> str:
    return f"column {cell.column + 1}, row {cell.row + 1} from the ground"


def _power_name(index: int, view: pb.View | None) -> str:
    """"power 1 (red)": pending powers counted from 1, in the order gained."""
    power = view.pool[index] if view is not None and index < len(view.pool) else 0
    return f"power {index + 1}" + (f" ({NAMES[power]})" if power else "")


def _describe_power(p: pb.ApplyPower, view: pb.View | None) -> str:
    power = view.pool[p.index] if view is not None and p.index < len(view.pool) else 0
    name = _power_name(p.index, view)
    if p.HasField("a") and p.HasField("b"):
        return f"{name}: swap {_planet(p.a)} with {_planet(p.b)}"
    column = f"column {p.column + 1}"
    if not p.HasField("a"):
        if power == BLUE:
            return f"{name}: drop the opponent's sky Bubblee of {column} onto their planet"
        return f"{name}: {column}"
    bubblee = "your Bubblee"
    if view is not None:
        cells = view.planets[view.turn].cells
        index = p.a.row * WIDTH + p.a.column
        if index < len(cells) and cells[index]:
            bubblee = f"your {NAMES[cells[index]]} Bubblee"
    moving = f"{bubblee} at {_planet(p.a)}"
    if power == PURPLE:
        return f"{name}: send {moving} to {column} of the opponent's planet"
    if power == YELLOW:
        return f"{name}: put {moving} in your score zone"
    return f"{name}: move {moving} ({column})"


def _drop(d: pb.Drop, view: pb.View | None) -> str:
    onto = "your planet" if view is not None and view.HasField("seat") else "the planet"
    if d.a.column == d.b.column:
        return f"drop the two Bubblees of column {d.a.column + 1} onto {onto}"
    left, right = sorted((d.a.column, d.b.column))
    return (f"drop the Bubblees of columns {left + 1} and {right + 1} of "
            f"{_row(d.a.row, view)} onto {onto}")


COMMAND_GROUPS = {"place": "place", "swap": "swap", "drop": "drop",
                  "apply_power": "use a power", "decline_power": "decline a power"}


def describe(command: pb.Command, view: pb.View | None = None) -> str:
    """A command in words, as the board draws it (columns 1-5, rows from the ground). With
    the view it is sent from, the Bubblees are named by colour and the rows by whose they
    are, a power names its colour, and a forced placement says so."""
    kind = command.WhichOneof("kind")
    if kind == "place":
        forced = view is not None and list(view.sky).count(0) == 1
        cell = command.place.cell
        drawn = f"the drawn {NAMES[view.drawn]} Bubblee" if view is not None and view.drawn \
            else "the drawn Bubblee"
        return (f"place {drawn} in column {cell.column + 1} of {_row(cell.row, view)}"
                + (" (the only empty cell)" if forced else ""))
    if kind == "swap":
        return _swap(command.swap, view)
    if kind == "drop":
        return _drop(command.drop, view)
    if kind == "apply_power":
        return _describe_power(command.apply_power, view)
    if kind == "decline_power":
        return f"decline {_power_name(command.decline_power.index, view)}"
    return "no action"


# ---- events in words (View.happened, `arbiter play` and `arbiter replay`) ---------------------


def _planet_of(planet: int, seat: int | None) -> str:
    if seat is None:
        return f"planet {planet}"
    return "your planet" if planet == seat else "the other planet"


def _zone_of(owner: int, seat: int | None) -> str:
    """A score zone by the planet it belongs to (in solo the target's is no seat's)."""
    return "your score zone" if owner == seat else f"the score zone of {_planet_of(owner, seat)}"


def _colour(colour: int) -> str:
    return NAMES.get(colour, "hidden")


def _at(cell: pb.PlanetCell) -> str:
    return f"column {cell.column + 1} row {cell.row + 1}"


def _power_words(p: pb.PowerApplied, seat: int | None) -> str:
    power = _colour(p.power)
    effect = p.WhichOneof("effect")
    if effect == "swapped":
        s = p.swapped
        return (f"the {power} power swapped the Bubblees at {_at(s.a)} and {_at(s.b)} of "
                f"{_planet_of(s.planet, seat)}")
    if effect == "sent":
        s = p.sent
        source = (f"from {_at(s.from_planet_cell)}" if s.HasField("from_planet_cell")
                  else f"from column {s.from_sky.column + 1} of the sky")
        return (f"the {power} power sent a {_colour(s.colour)} Bubblee {source} to column "
                f"{s.to_cell.column + 1} of {_planet_of(s.to_planet, seat)}")
    if effect == "banked":
        b = p.banked
        return (f"the {power} power put the {_colour(b.colour)} Bubblee at {_at(b.cell)} of "
                f"{_planet_of(b.planet, seat)} in {whose(b.scorer, seat)} score zone")
    return f"the {power} power was used"


def describe_event(event: pb.Event, seat: int | None) -> str | None:
    """An event in words for `seat` (everything in Bubblee Pop is public)."""
    kind = event.WhichOneof("kind")
    if kind == "game_set_up":
        e = event.game_set_up
        if e.seats == 1:
            return f"solo level {e.options.solo_level} is set up: clear the target planet"
        return f"the game is set up; {does(e.first_player, seat, 'play', 'plays')} first"
    if kind == "drawn":
        return f"a {_colour(event.drawn.colour)} Bubblee was drawn from the bag"
    if kind == "placed":
        e = event.placed
        return (f"the {_colour(e.colour)} Bubblee was placed in column {e.cell.column + 1} "
                f"of {whose(e.cell.row, seat)} sky row")
    if kind == "swapped":
        e = event.swapped
        return (f"the sky Bubblees at column {e.a.column + 1} of {whose(e.a.row, seat)} row "
                f"and column {e.b.column + 1} of {whose(e.b.row, seat)} row were swapped")
    if kind == "dropped":
        e = event.dropped
        falls = listed([f"{_colour(x.colour)} in column {x.to_cell.column + 1}"
                        for x in e.landings])
        return f"{falls} dropped onto {_planet_of(e.planet, seat)}"
    if kind == "lines_cleared":
        e = event.lines_cleared
        gained = (f"; the {_colour(e.power_gained)} power was gained" if e.power_gained
                  else "")
        return (f"a line of {len(e.cells)} {_colour(e.colour)} was cleared from "
                f"{_planet_of(e.planet, seat)} into {_zone_of(e.scorer, seat)} "
                f"(wave {e.wave}){gained}")
    if kind == "gravity":
        e = event.gravity
        return f"{plural(len(e.moves), 'Bubblee')} fell on {_planet_of(e.planet, seat)}"
    if kind == "settled":
        e = event.settled
        if not e.waves:
            return None  # a drop that cleared nothing: its landing was told
        return f"{_planet_of(e.planet, seat)} settled after {plural(e.waves, 'wave')} of lines"
    if kind == "power_applied":
        return _power_words(event.power_applied, seat)
    if kind == "power_declined":
        return f"the {_colour(event.power_declined.power)} power was declined"
    if kind == "turn_ended":
        e = event.turn_ended
        if e.next_seat == e.seat:
            return f"{whose(e.seat, seat)} turn ended; another turn for the same seat"
        return f"{whose(e.seat, seat)} turn ended; now {whose(e.next_seat, seat)} turn"
    if kind == "game_over":
        o = event.game_over.outcome
        winners = listed([who(w, seat) for w in o.winners]) if o.winners else "nobody"
        return f"game over: {winners} won ({o.reason})" if o.reason else \
            f"game over: {winners} won"
    return None


# ---- the catalog (Arbiter.GetCatalog) ---------------------------------------------------------

# The powers in English, from the rulebook (Bubblee Pop, "Pouvoirs des couleurs"; "Zone de
# Score" and "Installation" for the zones).
POWERS = {
    "COLOUR_RED": "Swap 2 adjacent Bubblees of the opponent's planet, horizontally or "
                  "vertically.",
    "COLOUR_PURPLE": "Send one of your uncovered Bubblees onto the opponent's planet, in the "
                     "same column; if every column is full it may still be sent, and the "
                     "opponent is eliminated.",
    "COLOUR_BLUE": "Drop a Bubblee of the opponent's side of the sky onto the opponent's "
                   "planet, in the same column; if every column is full it may still be sent, "
                   "and the opponent is eliminated.",
    "COLOUR_GREEN": "Swap 2 adjacent Bubblees of your own planet; if 2 lines of different "
                    "colours form, put them in your score zone and apply their powers in the "
                    "order you choose.",
    "COLOUR_YELLOW": "Put one of your uncovered Bubblees in your score zone.",
    "COLOUR_BLACK": "No power. Never removed by a line, even of 3 or more black Bubblees, only "
                    "by a power; in a score zone it is worth 1 point too.",
}
ZONES = {
    "PLANET": ("planet", "Your 5 columns of 4 rows: it holds up to 20 Bubblees. A player who "
               "cannot drop onto a full planet loses at once."),
    "SKY": ("sky", "Two rows of 5 cells between the planets, refilled from the bag at the "
            "start of each turn but the first; each player drops 2 adjacent Bubblees from it."),
    "SCORE_ZONE": ("score zone", "Where the Bubblees removed by your lines go: each is worth 1 "
                   "point at the end, and their colours give you their powers."),
    "BAG": ("bag", "The draw pile: the game ends when it cannot refill the sky."),
}


def catalog() -> list[CatalogEntry]:
    colours = [CatalogEntry(pb.Colour.Name(c), "colour", f"{NAMES[c]} Bubblee",
                            POWERS[pb.Colour.Name(c)]) for c in NAMES]
    return colours + [CatalogEntry(key, "zone", name, text) for key, (name, text) in
                      ZONES.items()]
