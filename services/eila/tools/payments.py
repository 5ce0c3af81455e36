"""The validator's checks that play the engine: no − effect of an option goes unpaid whatever
order the player makes room for Fear in, and no free action lets a night's cost go unpaid.

Both run today's engine on the content being checked, from every storage that matters, so a
content edit and a rule change are judged alike (docs/eila.md, "Validator").
"""

from __future__ import annotations

from itertools import product
from typing import Any

from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import RuleError
from services.eila import engine, rules
from services.eila.data import INTANGIBLE, SLOTS, TANGIBLE, Index, Json
from services.eila.state import Play

PAUSING = engine.PAUSING


class LowDice:
    """Every draw comes out 0: the checks follow the player's choices, not the dice."""

    upfront = False

    def below(self, n: int) -> int:
        return 0


class CountingTable(engine.Table):
    """A table that notes each − effect of an option that finds less than it asks for."""

    def __init__(self, play: Play, index: Index) -> None:
        super().__init__(play, index, LowDice(), [])
        self.short: list[str] = []

    def lose(self, resource: str, amount: int) -> None:
        if resource != "fear" and self.p.combat is None and self.p.res[resource] < amount:
            self.short.append(f"-{amount} {resource} with {self.p.res[resource]}")
        super().lose(resource, amount)


def table_for(ix: Index, chapter: int, card: Json, option: Json, res: dict[str, int]) -> Play:
    """A play of `chapter` with `card` in the Present, the storage `res` and whatever the
    option's requirements ask for that storage cannot give (an item, a flag, a location...)."""
    play = Play(chapter=chapter, advanced=False, hp=10, max_hp=10, res=dict(res), items=[],
                supports=[], habits=[], upcoming=[], known=0, future=[], past=[],
                decks={"red": [], "blue": [], "habit": []})
    play.present = card["id"]
    for req in option.get("requires", []):
        (kind, arg), = req.items()
        if kind == "item":
            play.items.append(arg)
        elif kind == "support":
            play.supports.append(arg)
        elif kind == "habit":
            play.habits.append(arg)
        elif kind == "flag":
            play.flags.append(arg)
        elif kind == "ending":
            play.endings.append(arg)
        elif kind == "location":
            play.location = arg
        elif kind == "min_day":
            play.day = arg
    return play


def takes_fear_first(effects: list[Json]) -> bool:
    """Fear gained before the first pause, with a − effect after it: where making room could
    matter."""
    fear = False
    for effect in effects:
        (kind, arg), = effect.items()
        if kind in PAUSING:
            return False
        if kind == "if_item":
            if takes_fear_first(arg["then"]) or (fear and any(
                    "lose" in e for e in arg["then"])):
                return True
        if kind == "gain" and arg.get("fear"):
            fear = True
        if kind == "lose" and fear:
            return True
    return False


def storages(option: Json) -> list[dict[str, int]]:
    """Every intangible storage, with the tangibles the option asks for."""
    tangible = {r: 0 for r in TANGIBLE}
    for effect in option["effects"]:
        (kind, arg), = effect.items()
        if kind == "lose":
            for r, n in arg.items():
                if r in TANGIBLE:
                    tangible[r] = min(SLOTS, tangible[r] + n)
    out = []
    for k, e, f in product(range(SLOTS + 1), repeat=3):
        if k + e + f <= SLOTS:
            out.append({**tangible, "knowledge": k, "energy": e, "fear": f})
    return out


def every_way(t: CountingTable) -> list[str]:
    """The shortfalls of each order of making room the engine accepts, from phase `room`."""
    if t.p.phase != "room":
        return t.short
    out: list[str] = []
    accepted = 0
    for resource in ("knowledge", "energy"):
        nxt = CountingTable(t.p.clone(), t.ix)
        nxt.short = list(t.short)
        try:
            engine.make_room(nxt, resource, 1)
        except RuleError:
            continue
        accepted += 1
        out += every_way(nxt)
    return out if accepted else ["no discard is accepted to make room"]


def unpaid_by_room(ix: Index, cards: list[tuple[int, Json]]) -> list[str]:
    """Options whose − effects some accepted order of making room for Fear leaves unpaid."""
    problems = []
    for chapter, card in cards:
        for i, option in enumerate(card.get("options", [])):
            if not takes_fear_first(option["effects"]) and not any(
                    "if_item" in e for e in option["effects"]):
                continue
            for res in storages(option):
                play = table_for(ix, chapter, card, option, res)
                if engine.why_unavailable(play, ix, option):
                    continue
                t = CountingTable(play, ix)
                t.choose(i)
                short = every_way(t)
                if short:
                    where = f"card {card['id']} option {engine.letter(i)}"
                    problems.append(f"{where}: a − effect goes unpaid when room is made for "
                                    f"Fear from {storage_text(res)} ({short[0]})")
                    break
    return problems


def storage_text(res: dict[str, int]) -> str:
    return ", ".join(f"{r} {n}" for r, n in res.items() if n)


# ---- the night ----------------------------------------------------------------------------


def night_plays(ix: Index, chapter: int) -> list[Play]:
    """A chapter's night waiting for its first cost (the meal, or the time track), with every
    conversion card held and storages around what the costs ask for."""
    convert = [i for i, d in ix.items.items() if d["kind"] == "conversion"]
    convert_s = [s for s, d in ix.supports.items() if d["kind"] == "conversion"]
    out = []
    for food, energy, knowledge, coin in product((0, 1, 2), (0, 1, 2), (0, 2), (0, 3)):
        res = {r: 0 for r in (*TANGIBLE, *INTANGIBLE)}
        res.update(food=food, energy=energy, knowledge=knowledge, coin=coin)
        play = Play(chapter=chapter, advanced=False, hp=10, max_hp=10, res=res,
                    items=list(convert), supports=list(convert_s), habits=[], upcoming=[],
                    known=0, future=[], past=[], decks={"red": [], "blue": [], "habit": []})
        engine.Table(play, ix, LowDice(), []).reveal()  # no card left: the night begins
        if play.phase in ("meal", "night"):
            out.append(play)
    return out


def night_cost_paid(before: Play, after: Play, cost: str) -> bool:
    """The night's cost was paid: HP, or Food (the meal) or Energy (the time track). More
    than 1 may go when the next night begins at once (no card left to reveal)."""
    paid = before.res[cost] > after.res[cost] or before.hp > after.hp
    return paid or after.result == "lost"


def dodged_night_costs(ix: Index) -> list[str]:
    """Night costs that a free action, taken first, lets go unpaid: each free action the
    engine offers, then each way of paying the cost it offers after."""
    problems = []
    for chapter in sorted(ix.content.chapters):
        for play in night_plays(ix, chapter):
            cost, kind = ("food", "night_meal") if play.phase == "meal" else ("energy",
                                                                               "end_night")
            for free in [None, *rules.free_actions(play, ix)]:
                first = play.clone()
                if free is not None and not perform(first, ix, free):
                    continue
                for command in costs_offered(first, kind):
                    after = first.clone()
                    if perform(after, ix, command) and not night_cost_paid(first, after, cost):
                        what = command_text(free) if free is not None else "nothing"
                        problems.append(f"chapter {chapter}: the night's {cost} cost goes "
                                        f"unpaid after {what} ({command_text(command)})")
                        return problems
    return problems


def costs_offered(play: Play, kind: str) -> list[Any]:
    if kind == "end_night":
        return [pb.Command(end_night=pb.EndNight())]
    return rules.night_meals(play)


def perform(play: Play, ix: Index, command: Any) -> bool:
    """Apply a command to `play` in place; False when the engine refuses it."""
    kind = command.WhichOneof("kind")
    try:
        rules.chapter_command(engine.Table(play, ix, LowDice(), []), kind, getattr(command, kind))
    except RuleError:
        return False
    return True


def command_text(command: Any) -> str:
    kind = command.WhichOneof("kind")
    fields = ", ".join(f"{f.name}={v}" for f, v in getattr(command, kind).ListFields())
    return f"{kind}({fields})"
