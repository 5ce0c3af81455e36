"""The content validator: `validate(content) -> problems` (an empty list means sound).

What it checks is listed in docs/eila.md ("Validator"), in the order of this file.
`run_validate()` is the CLI's `arbiter eila validate`.
"""

from __future__ import annotations

import sys
from typing import Any

from services.eila.data import RESOURCES, Content, Json, build_index, load_content
from services.eila.tools.cycles import gain_cycles
from services.eila.tools.payments import dodged_night_costs, unpaid_by_room

PLACES = {"future", "past", "deck"}
COLORS = {"green", "blue", "red"}
ADVANCED_TABLE = {
    1: [], 2: ["216", "227", "236", "240", "242"], 3: ["331", "346", "349", "351"],
    4: ["403", "418", "430"],
    5: ["533", "535", "536", "537", "538", "539", "540", "545", "546", "547"],
}
CHAPTER0_COLORS = {**{f"00{i}": "green" for i in range(1, 6)},
                   **{f"00{i}": "blue" for i in range(6, 9)},
                   "009": "red", "010": "red", "011": "red"}
COUNTS = {"items": 32, "supports": 14, "habits": 7}
HEART_TOKENS = 12  # "12 Heart Tokens": no goal card can have more HP
# The dice of the rulebook: (value, shield) of each face.
RED_DIE = sorted([(1, False), (2, True), (3, False), (4, False), (5, False), (6, False)])
GREEN_DIE = sorted([(0, False), (1, False), (1, False), (2, False), (1, True), (2, True)])
# Each chapter's unique element, as the rulebook describes it.
ELEMENTS = {2: ("quizzes", [f"EQ-{i}" for i in range(1, 6)] + [f"AQ-{i}" for i in range(1, 6)]),
            3: ("location_events", [str(n) for n in range(340, 353)]),
            4: ("contracts", [f"C0{i}" for i in range(1, 10)]),
            5: ("locations", [f"L{i:02}" for i in range(1, 11)])}
PRIVILEGES = [f"P0{i}" for i in range(1, 10)]
MINE_ITEMS = {"I12": "cliff", "I13": "hidden"}  # the rope and the magnifier act in the mine
PAUSING = {"combat", "move", "offer", "trigger_location", "location_action"}


class Checker:
    def __init__(self, content: Content) -> None:
        self.c = content
        self.ix = build_index(content)
        self.problems: list[str] = []

    def bad(self, where: str, what: str) -> None:
        self.problems.append(f"{where}: {what}")

    # ---- effects and requirements ------------------------------------------------------

    def resources(self, where: str, arg: Any) -> None:
        if not isinstance(arg, dict) or not arg:
            self.bad(where, f"expected resources, got {arg!r}")
            return
        for r, n in arg.items():
            if r not in RESOURCES:
                self.bad(where, f"unknown resource {r!r}")
            if not isinstance(n, int) or n < 0:
                self.bad(where, f"bad amount {n!r} of {r}")

    def effects(self, where: str, effects: Any, chapter: Json | None) -> None:
        if not isinstance(effects, list):
            self.bad(where, "effects must be a list")
            return
        for i, effect in enumerate(effects):
            self.effect(f"{where} effect {i + 1}", effect, chapter)

    def effect(self, where: str, effect: Any, chapter: Json | None) -> None:
        if not isinstance(effect, dict) or len(effect) != 1:
            self.bad(where, f"an effect has exactly one key: {effect!r}")
            return
        (kind, arg), = effect.items()
        ids = {c["id"]: c for c in chapter.get("cards", [])} if chapter else {}
        if kind in ("gain", "lose"):
            self.resources(where, arg)
            too_much = kind == "lose" and isinstance(arg, dict) and any(
                isinstance(n, int) and n > 8 for r, n in arg.items() if r != "fear")
            if too_much:
                self.bad(where, "asks for more than storage can ever hold")
        elif kind in ("heal", "hurt", "move"):
            if not isinstance(arg, int) or arg < 0:
                self.bad(where, f"{kind} needs a count")
        elif kind in ("blue", "red"):
            if arg not in ids:
                self.bad(where, f"{kind} card {arg} does not exist in this chapter")
            elif ids[arg]["color"] != kind:
                self.bad(where, f"card {arg} is {ids[arg]['color']}, not {kind}")
        elif kind == "habit":
            if not isinstance(arg, str) or arg not in self.ix.content.habit_cards():
                self.bad(where, f"habit {arg} does not exist")
        elif kind in ("item", "drop_item"):  # one item: "either one" icons are two options
            if not isinstance(arg, str) or arg not in self.ix.items:
                self.bad(where, f"item {arg} does not exist")
        elif kind == "support":
            if not isinstance(arg, str) or arg not in self.ix.supports:
                self.bad(where, f"support card {arg} does not exist")
        elif kind == "ending":
            if chapter is not None and arg not in chapter.get("endings", {}):
                self.bad(where, f"ending {arg} has no text in this chapter")
        elif kind == "if_item":
            if arg.get("item") not in self.ix.items:
                self.bad(where, f"item {arg.get('item')} does not exist")
            self.effects(where, arg.get("then"), chapter)
        elif kind == "combat":
            self.combat(where, arg, chapter)
        elif kind == "quiz":
            if chapter is None or not any(q["deck"] == arg for q in chapter.get("quizzes", [])):
                self.bad(where, f"no {arg} quiz deck in this chapter")
        elif kind in ("trigger_location", "cover"):
            if chapter is None or not chapter.get("tiles"):
                self.bad(where, f"{kind} needs the mine of chapter 3")
        elif kind == "offer":
            if arg not in ("contracts", "privileges") or chapter is None or not chapter.get(arg):
                self.bad(where, f"nothing to offer: {arg}")
        elif kind == "location_action":
            if chapter is None or not chapter.get("locations"):
                self.bad(where, "location actions need location cards")
        elif kind == "go":
            if chapter is None or arg not in {x["id"] for x in chapter.get("locations", [])}:
                self.bad(where, f"location {arg} does not exist")
        elif kind in ("keep_habit", "flag", "end_combat"):
            pass
        else:
            self.bad(where, f"unknown effect {kind!r}")

    def immediate(self, where: str, effects: Any) -> None:
        """A quiz reward or an item's use is a free action, carried out at once outside any
        card: nothing in it may wait for the player or act on the card in the Present."""
        if not isinstance(effects, list):
            return
        for effect in walk([e for e in effects if isinstance(e, dict) and len(e) == 1]):
            (kind, arg), = effect.items()
            if kind in PAUSING or kind == "keep_habit":
                self.bad(where, f"{kind!r} cannot be part of a free action")
            if kind == "gain" and isinstance(arg, dict) and arg.get("fear"):
                self.bad(where, "Fear cannot be gained in a free action (making room for it "
                         "waits for the player)")

    def combat(self, where: str, spec: Any, chapter: Json | None) -> None:
        if not isinstance(spec, dict) or not isinstance(spec.get("value"), int):
            self.bad(where, "a combat needs an enemy value")
            return
        if not spec.get("enemy"):
            self.bad(where, "a combat needs an enemy name")
        for weak in spec.get("weak", []):
            (k, a), = weak["if"].items()
            if k == "no" and a not in RESOURCES:
                self.bad(where, f"weakness names unknown resource {a}")
            if k == "item" and a not in self.ix.items:
                self.bad(where, f"weakness names unknown item {a}")
            if k == "support" and a not in self.ix.supports:
                self.bad(where, f"weakness names unknown support card {a}")
        self.effects(where + " (win)", spec.get("win", []), chapter)
        self.effects(where + " (lose)", spec.get("lose", []), chapter)
        if spec.get("repeat"):
            self.repeated(where, spec.get("lose", []))

    def repeated(self, where: str, lose: Any) -> None:
        """Every combat ends. One without "fight on despite injuries" ends at the first
        `fight` (always legal in a combat). A repeated one ends when won or when HP runs out,
        and this is why HP does run out (with probability 1) if it is never won:
        - each lost round's effects cost at least 1 HP and give nothing back (checked here);
        - each die has faces without a shield (`dice`), so a round without a shield face
          comes with a fixed positive chance, and such a lost round costs that HP;
        - shield cards prevent a fixed number of HP losses in total in a chapter
          (`conversion_cycles` checks the number, ruling 21);
        - no conversion cycle gains anything, HP included (`conversion_cycles`), so the HP
          that free actions can still give (healing spells, one-use items) is bounded by
          what is held when the combat starts.
        So HP plus what can still become HP plus the shield cards' rest only goes down, by 1
        at least in each such round: the combat lasts a finite number of rounds."""
        lose = lose if isinstance(lose, list) else []
        kinds = [k for e in lose if isinstance(e, dict) for k in e]
        hp = sum(e["hurt"] for e in lose if isinstance(e, dict) and isinstance(e.get("hurt"), int))
        if hp < 1 or set(kinds) - {"hurt", "lose"}:
            self.bad(where, "a repeated combat must cost HP when lost and give nothing back "
                     "(only hurt and lose effects), or it may never end")

    def requirement(self, where: str, req: Any, chapter: Json | None) -> None:
        if not isinstance(req, dict) or len(req) != 1:
            self.bad(where, f"a requirement has exactly one key: {req!r}")
            return
        (kind, arg), = req.items()
        if kind == "location" and arg not in {
                x["id"] for x in (chapter or {}).get("locations", [])}:
            self.bad(where, f"requires location {arg}, which does not exist in this chapter")
        elif kind in ("ending", "no_ending") and not self.earlier_ending(arg, chapter):
            self.bad(where, f"requires ending {arg!r}: no earlier chapter has it")
        elif kind in ("min_day", "max_fear") and not isinstance(arg, int):
            self.bad(where, f"{kind} needs a number")
        elif kind in ("item", "no_item") and arg not in self.ix.items:
            self.bad(where, f"requires unknown item {arg}")
        elif kind == "support" and arg not in self.ix.supports:
            self.bad(where, f"requires unknown support card {arg}")
        elif kind == "habit" and arg not in self.ix.content.habit_cards():
            self.bad(where, f"requires unknown habit {arg}")
        elif kind not in ("item", "no_item", "support", "habit", "flag", "no_flag", "min_day",
                          "max_fear", "shelter", "ending", "no_ending", "location"):
            self.bad(where, f"unknown requirement {kind!r}")

    def earlier_ending(self, ref: Any, chapter: Json | None) -> bool:
        """"2B": ending B of chapter 2, which must come before the chapter that asks."""
        if not isinstance(ref, str) or len(ref) < 2 or not ref[0].isdigit():
            return False
        n = int(ref[0])
        here = chapter.get("chapter", 6) if chapter else 6
        return n < here and ref[1:] in self.c.chapters.get(n, {}).get("endings", {})

    # ---- cards ----------------------------------------------------------------------------

    def card(self, where: str, card: Json, chapter: Json | None) -> None:
        options = card.get("options")
        if not card.get("title") and not card.get("name"):
            self.bad(where, "a card needs a title")
        if not options:
            self.bad(where, "a card needs at least one option")
            return
        for i, option in enumerate(options):
            w = f"{where} option {'ABCDEFGH'[i]}"
            if option.get("place") not in PLACES:
                self.bad(w, f"place must be one of {sorted(PLACES)}")
            if option.get("place") == "deck" and card.get("color") == "green":
                self.bad(w, "a green card has no deck to return to")
            if not option.get("text"):
                self.bad(w, "an option needs text")
            for req in option.get("requires", []):
                self.requirement(w, req, chapter)
            self.effects(w, option.get("effects"), chapter)
        if not any(always_available(o) for o in options):
            self.bad(where, "no option is always available: the chapter could get stuck here")

    def chapter(self, n: int, data: Json) -> None:
        where = f"chapter {n}"
        if data.get("chapter") != n:
            self.bad(where, "the file's chapter number is wrong")
        for side in ("normal", "advanced"):
            goal = data.get("goal", {}).get(side)
            if not goal:
                self.bad(where, f"the goal card has no {side} side")
                continue
            self.resources(f"{where} {side} goal", goal.get("submit"))
            if not isinstance(goal.get("max_hp"), int) or goal["max_hp"] < 1:
                self.bad(where, f"the {side} goal needs a max HP")
            elif goal["max_hp"] > HEART_TOKENS:
                self.bad(where, f"the {side} goal's max HP is above the {HEART_TOKENS} hearts")
            if "reach" in goal:
                self.reach(where, side, goal["reach"], data)
            if not goal.get("text"):
                self.bad(where, f"the {side} goal needs a text")
        if "A" not in data.get("endings", {}):
            self.bad(where, "ending A is missing")
        for r in data.get("prologue", {}).get("resources", {}):
            if r not in RESOURCES:
                self.bad(where, f"prologue names unknown resource {r}")
        cards = data.get("cards", [])
        ids = [c["id"] for c in cards]
        if len(set(ids)) != len(ids):
            self.bad(where, "card numbers repeat")
        for card in cards:
            cw = f"card {card['id']}"
            if not card["id"].startswith(str(n)) or len(card["id"]) != 3:
                self.bad(cw, f"chapter {n} cards are numbered {n}01, {n}02, ...")
            if card.get("color") not in COLORS:
                self.bad(cw, f"colour must be one of {sorted(COLORS)}")
            self.card(cw, card, data)
        if n == 0 and {c["id"]: c["color"] for c in cards} != CHAPTER0_COLORS:
            self.bad(where, "chapter 0 is cards 001-005 green, 006-008 blue, 009-011 red")
        if n > 0 and len(cards) < 25:
            self.bad(where, f"a later chapter needs at least 25 event cards, has {len(cards)}")
        if not any(c["color"] == "green" for c in cards):
            self.bad(where, "no green card: the first day would be empty")
        self.reachable(n, data)
        self.sources(n, data)
        for key in ("quizzes", "location_events", "locations", "contracts", "privileges"):
            for thing in data.get(key, []):
                if key == "quizzes":
                    self.quiz(thing, data)
                else:
                    self.card(f"{key[:-1]} {thing['id']}", thing, data)
        if data.get("tiles"):
            self.mine(data)
        self.element(n, data)

    def element(self, n: int, data: Json) -> None:
        """The chapter's unique element is all there (quizzes, mine, contracts, locations),
        and chapter 4's Opportunities card sells contracts (A) and privileges (B)."""
        if n not in ELEMENTS:
            return
        key, wanted = ELEMENTS[n]
        if sorted(x.get("id") for x in data.get(key, [])) != sorted(wanted):
            self.bad(f"chapter {n}", f"{key} must be {wanted[0]} to {wanted[-1]}")
        if n == 3 and not data.get("tiles"):
            self.bad("chapter 3", "the mine has no tiles")
        if n == 4:
            if sorted(x.get("id") for x in data.get("privileges", [])) != PRIVILEGES:
                self.bad("chapter 4", "privileges must be P01 to P09")
            sells = [[e.get("offer") for o in c.get("options", [])[:2]
                      for e in o.get("effects", [])[:1]]
                     for c in data.get("cards", []) if c.get("title") == "Opportunities"]
            if ["contracts", "privileges"] not in sells:
                self.bad("chapter 4", "the Opportunities card (A: contracts, B: privileges) "
                         "is missing")
        if n == 5 and not data.get("night_food"):
            self.bad("chapter 5", "the mountain's night meal (night_food) is missing")

    def reach(self, where: str, side: str, target: Any, data: Json) -> None:
        """A goal's location exists and a path of `go` effects leads there from the first."""
        locations = {x["id"]: x for x in data.get("locations", [])}
        if target not in locations:
            self.bad(where, f"the {side} goal names location {target!r}, which does not exist")
            return
        anywhere = {e["go"] for c in data.get("cards", []) for o in c.get("options", [])
                    for e in walk(o.get("effects", [])) if "go" in e}
        seen, todo = set(), [next(iter(locations))]
        while todo:
            here = todo.pop()
            if here in seen or here not in locations:
                continue
            seen.add(here)
            todo += [e["go"] for o in locations[here].get("options", [])
                     for e in walk(o.get("effects", [])) if "go" in e]
            todo += list(anywhere)
        if target not in seen:
            self.bad(where, f"no path of locations leads to {target}, the {side} goal")

    def quiz(self, q: Json, chapter: Json) -> None:
        where = f"quiz {q['id']}"
        if q.get("deck") not in ("EQ", "AQ"):
            self.bad(where, "deck must be EQ or AQ")
        if q.get("correct") not in q.get("answers", []):
            self.bad(where, "the correct answer is not among the answers")
        if not q.get("clue") or not any(q["clue"] in c.get("text", "")
                                         for c in chapter.get("cards", [])):
            self.bad(where, "its clue must appear in the text of a card of the chapter")
        self.effects(where + " reward", q.get("reward"), chapter)
        self.immediate(where + " reward", q.get("reward"))

    def mine(self, data: Json) -> None:
        tiles = data["tiles"]
        bands = [t["band"] for t in tiles]
        expected = {"M1": 1, "M2": 2, "M3": 3, "M4": 2, "MC": 3}
        for band, count in expected.items():
            if bands.count(band) != count:
                self.bad("mine", f"{count} {band} tiles expected, found {bands.count(band)}")
        events = {e["id"] for e in data.get("location_events", [])}
        if events != {str(n) for n in range(340, 353)}:
            self.bad("mine", "location events must be 340 to 352")
        placed = set()
        for tile in tiles:
            if len(tile.get("cells", [])) != 4:
                self.bad(f"tile {tile['id']}", "a tile has 4 grids")
                continue
            for cell in tile["cells"]:
                if cell.get("loc"):
                    placed.add(str(cell["loc"]))
                for f in ("wall", "hidden", "cliff"):
                    if set(cell.get(f, "")) - set("NESW"):
                        self.bad(f"tile {tile['id']}", f"{f} sides are N, E, S, W")
        for loc in placed - events:
            self.bad("mine", f"a grid shows location {loc}, which has no event")
        for loc in sorted(events - placed):
            self.bad("mine", f"location event {loc} is on no grid: it can never trigger")

    def reachable(self, n: int, data: Json) -> None:
        """Every blue and red card is fetched by some effect of the chapter."""
        fetched: set[str] = set()
        for thing in all_cards(data) + list(self.ix.content.habit_cards().values()):
            for option in thing.get("options", []):
                fetched |= fetches(option.get("effects", []))
        for q in data.get("quizzes", []):
            fetched |= fetches(q.get("reward", []))
        for card in data.get("cards", []):
            if card.get("color") in ("blue", "red") and card["id"] not in fetched:
                self.bad(f"card {card['id']}", f"no effect of chapter {n} fetches this card")

    def sources(self, n: int, data: Json) -> None:
        """Each goal resource can be gained somewhere (a card, the prologue or a conversion)."""
        gained: set[str] = set(data.get("prologue", {}).get("resources", {}))
        for thing in all_cards(data):
            for option in thing.get("options", []):
                gained |= gains(option.get("effects", []))
        for conv in self.c.common.get("conversions", []):
            gained |= set(conv["to"])
        for side in ("normal", "advanced"):
            for r in data.get("goal", {}).get(side, {}).get("submit", {}):
                if r not in gained:
                    self.bad(f"chapter {n}", f"nothing gives {r}, which the {side} goal needs")

    def run(self) -> list[str]:
        common = self.c.common
        for key, count in COUNTS.items():
            found = len(self.c.habits.get("habits", [])) if key == "habits" else len(
                common.get(key, []))
            if found != count:
                self.bad(key, f"{count} expected, found {found}")
        for item in common.get("items", []):
            if item.get("kind") == "combo":
                for need in item["needs"]:
                    if need not in self.ix.items:
                        self.bad(f"item {item['id']}", f"combination names unknown item {need}")
            if item.get("kind") == "consume":
                self.effects(f"item {item['id']}", item["effects"], None)
                self.immediate(f"item {item['id']}", item["effects"])
        for habit in self.c.habits.get("habits", []):
            self.card(f"habit {habit['id']}", habit, None)
        for n, data in sorted(self.c.chapters.items()):
            self.chapter(n, data)
        for n in range(6):
            if n not in self.c.chapters:
                self.bad(f"chapter {n}", "missing")
        self.advanced()
        self.obtainable()
        self.needed()
        self.dice()
        self.conversion_cycles()
        if not self.problems:  # the engine can only be played on sound content
            self.payments()
        return self.problems

    def payments(self) -> None:
        """Playing the engine: no − effect of an option goes unpaid, whatever order the
        player makes room for Fear in, and no free action lets a night's cost go unpaid."""
        cards: list[tuple[int, Json]] = []
        for n, data in sorted(self.c.chapters.items()):
            cards += [(n, card) for card in all_cards(data) if card.get("options")]
        cards += [(int(c["id"][0]), c) for c in self.c.advanced.get("cards", [])]
        first = min(self.c.chapters)
        cards += [(first, h) for h in self.c.habits.get("habits", [])]
        for problem in unpaid_by_room(self.ix, cards) + dodged_night_costs(self.ix):
            self.problems.append(problem)

    def dice(self) -> None:
        """The dice are the rulebook's (faces without a shield are what `repeated` relies
        on to prove that a combat ends)."""
        for name, faces in (("red_die", RED_DIE), ("green_die", GREEN_DIE)):
            found = sorted((f.get("value"), bool(f.get("shield")))
                           for f in self.c.common.get(name, []) if isinstance(f, dict))
            if found != faces:
                self.bad(name, f"the faces must be {faces} (value, shield)")

    def conversion_cycles(self) -> None:
        """No set of item and support cards makes conversions that gain from nothing."""
        cards = list(self.c.common.get("items", [])) + list(self.c.common.get("supports", []))
        for ids, cycle in gain_cycles(self.c.common.get("conversions", []), cards):
            self.bad(" + ".join(ids) or "board", f"resources from nothing: {cycle}")
        for card in self.c.common.get("supports", []):
            if card.get("kind") == "shield" and not (
                    isinstance(card.get("shield"), int) and card["shield"] > 0):
                self.bad(card["id"], "a shield card prevents a number of HP losses in total")

    def needed(self) -> None:
        """An item or support card that is "needed by some options" is needed by one."""
        required: set[str] = set()
        things: list[Json] = list(self.c.advanced.get("cards", []))
        things += list(self.c.habits.get("habits", []))
        for data in self.c.chapters.values():
            things += all_cards(data)
        for thing in things:
            for option in thing.get("options", []):
                required |= {a for r in option.get("requires", []) if isinstance(r, dict)
                             for k, a in r.items() if k in ("item", "support")}
        for data in self.c.chapters.values():
            features = {f for t in data.get("tiles", []) for c in t.get("cells", []) for f in c}
            required |= {item for item, feature in MINE_ITEMS.items() if feature in features}
        cards = list(self.c.common.get("items", [])) + list(self.c.common.get("supports", []))
        for card in cards:
            if card.get("kind") == "requirement" and card["id"] not in required:
                self.bad(card["id"], "no option requires it, yet it does nothing else")

    def obtainable(self) -> None:
        """Every item, support card and habit can be acquired somewhere in the campaign."""
        given: set[str] = set()
        things: list[Json] = list(self.c.advanced.get("cards", []))
        things += list(self.c.habits.get("habits", []))
        for data in self.c.chapters.values():
            things += all_cards(data)
            given |= set(data.get("prologue", {}).get("items", []))
            for q in data.get("quizzes", []):
                given |= acquired(q.get("reward", []))
        for thing in things:
            for option in thing.get("options", []):
                given |= acquired(option.get("effects", []))
        wanted = set(self.ix.items) | set(self.ix.supports) | set(self.c.habit_cards())
        for ref in sorted(wanted - given):
            self.bad(ref, "no card ever gives it")

    def advanced(self) -> None:
        cards = self.c.advanced.get("cards", [])
        wanted = sorted(c for ids in ADVANCED_TABLE.values() for c in ids)
        if sorted(c["id"] for c in cards) != wanted:
            self.bad("advanced", f"the 22 advanced events must be {', '.join(wanted)}")
        for card in cards:
            ch = int(card["id"][0])
            data = self.c.chapters.get(ch, {})
            normal = {c["id"]: c for c in all_cards(data)}.get(card["id"])
            if normal is None:
                self.bad(f"advanced {card['id']}", "replaces no card of its chapter")
                continue
            if normal.get("color") != card.get("color"):
                self.bad(f"advanced {card['id']}", "must keep the colour of the card it replaces")
            self.card(f"advanced {card['id']}", card, data)


def all_cards(data: Json) -> list[Json]:
    out: list[Json] = list(data.get("cards", []))
    for key in ("location_events", "locations", "contracts", "privileges"):
        out += data.get(key, [])
    return out


def walk(effects: list[Json]) -> list[Json]:
    out = []
    for e in effects:
        out.append(e)
        (kind, arg), = e.items()
        if kind == "combat":
            out += walk(arg.get("win", [])) + walk(arg.get("lose", []))
        elif kind == "if_item":
            out += walk(arg.get("then", []))
    return out


def fetches(effects: list[Json]) -> set[str]:
    return {v for e in walk(effects) for k, v in e.items()
            if k in ("blue", "red") and isinstance(v, str)}


def acquired(effects: list[Json]) -> set[str]:
    kinds = ("item", "support", "habit")
    return {v for e in walk(effects) for k, v in e.items() if k in kinds and isinstance(v, str)}


def gains(effects: list[Json]) -> set[str]:
    return {r for e in walk(effects) for k, v in e.items() if k == "gain" for r in v}


def always_available(option: Json) -> bool:
    """No requirement, no item to return and no resource to pay before its first pause."""
    if option.get("requires"):
        return False
    for effect in option.get("effects", []):
        (kind, arg), = effect.items()
        if kind in PAUSING:
            return True
        if kind == "drop_item":
            return False
        if kind == "lose" and any(r != "fear" and n > 0 for r, n in arg.items()):
            return False
    return True


def validate(data: Content) -> list[str]:
    return Checker(data).run()


def run_validate() -> int:
    problems = validate(load_content())
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"eila content: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(run_validate())
