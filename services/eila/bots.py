"""Bots: they decide from the player's View, the legal commands and the public card data.

- random: any legal command.
- random_options: submits at night, otherwise a random option, move or purchase.
- greedy: scores each available option by what it does to a valuation of storage, HP and
  story progress (one step ahead, combats by their chance of winning), converts and submits
  when that helps, and spends Energy in a combat only when it turns a loss into a win.
"""

from __future__ import annotations

from typing import Any

from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import Rng
from services.eila.data import DAYS, INTANGIBLE, RESOURCES, SLOTS, TANGIBLE, Json
from services.eila.rules import ENUM_OF, RESOURCE_OF, index


def random_bot(view: Any, legal: list[Any], rng: Rng) -> Any:
    return rng.choice(legal)


FREE = {"discard", "convert", "use_item", "cast", "answer"}


def random_options_bot(view: Any, legal: list[Any], rng: Rng) -> Any:
    """A baseline that plays sensibly at night (submits, then ends it) but picks its options,
    moves and purchases at random, and never uses free actions."""
    if view.phase == "between":
        return _kinds(legal, "start_chapter")[0]
    submits = _kinds(legal, "submit")
    if submits:
        return submits[0]
    answers = _kinds(legal, "answer")
    if answers:
        return rng.choice(answers)
    # Making room for Fear is done by discarding: then every legal command is a discard.
    return rng.choice([c for c in legal if c.WhichOneof("kind") not in FREE] or legal)


def _kinds(legal: list[Any], kind: str) -> list[Any]:
    return [c for c in legal if c.WhichOneof("kind") == kind]


class Valuer:
    """How much a position is worth to Eila, from the view's goal, day and time track."""

    def __init__(self, view: Any) -> None:
        self.need = {r: view.goal.needed[r] - view.goal.submitted[r] for r in view.goal.needed}
        self.nights_left = DAYS - view.time_track
        self.max_hp = view.max_hp

    def worth(self, res: dict[str, int], hp: int, extra: float = 0.0) -> float:
        if hp <= 0:
            return -1000.0
        score = extra + 8.0 * hp - (25.0 if hp == 1 else 0.0)
        for r in RESOURCES:
            n = res[r]
            need = self.need.get(r, 0)
            if need:
                score += 6.0 * min(n, need) + 0.8 * max(0, n - need)
            elif r == "energy":
                useful = min(n, self.nights_left)
                score += 3.5 * useful + 0.6 * (n - useful)
            elif r == "fear":
                score -= 1.5 * n + (3.0 * (n - 4) if n > 4 else 0)
            else:
                score += {"food": 1.5, "coin": 0.8, "knowledge": 0.6, "stone": 1.5}[r] * n
        return score


def simulate(effects: list[Json], res: dict[str, int], hp: int, max_hp: int, view: Any,
             val: Valuer) -> tuple[dict[str, int], int, float]:
    """Walk the effects on a copy of storage; combats are weighed by their chance."""
    res = dict(res)
    extra = 0.0
    for i, effect in enumerate(effects):
        (kind, arg), = effect.items()
        if kind == "gain":
            for r, n in arg.items():
                slots = TANGIBLE if r in TANGIBLE else INTANGIBLE
                if r == "fear":
                    for _ in range(n):
                        if res["fear"] >= SLOTS:
                            hp -= 1
                        else:
                            if sum(res[k] for k in slots) >= SLOTS:
                                victim = "knowledge" if res["knowledge"] else "energy"
                                res[victim] -= 1
                            res["fear"] += 1
                else:
                    res[r] += min(n, SLOTS - sum(res[k] for k in slots))
        elif kind == "lose":
            for r, n in arg.items():
                res[r] = max(0, res[r] - n)
        elif kind == "heal":
            hp = min(max_hp, hp + arg)
        elif kind == "hurt":
            hp -= arg
        elif kind in ("blue", "item", "support"):
            extra += 3.0
        elif kind in ("habit", "keep_habit"):
            extra += 1.5
        elif kind == "red":
            extra += 0.3
        elif kind == "ending":
            extra += 500.0
        elif kind == "go":
            extra += 12.0 if view.goal.text.startswith("Reach") else 1.0
        elif kind == "location_action":
            extra += 2.5 if view.location.id != "L10" else 0.5
        elif kind == "combat":
            chance = win_chance(arg, res, view)
            rest = effects[i + 1:]
            w = simulate(list(arg["win"]) + rest, res, hp, max_hp, view, val)
            lo = simulate(list(arg["lose"]) + rest, res, hp, max_hp, view, val)
            value = chance * val.worth(w[0], w[1], w[2]) + (1 - chance) * val.worth(*lo)
            return res, hp, extra + value - val.worth(res, hp)
    return res, hp, extra


def win_chance(spec: Json, res: dict[str, int], view: Any) -> float:
    ix = index()
    bonus = 0
    for item in view.items:
        data = ix.items[item]
        if data["kind"] == "combat" or (data["kind"] == "combo"
                                        and all(n in view.items for n in data["needs"])):
            bonus += data["bonus"]
    bonus += res["energy"]  # the bot would spend about half its Energy (+2 each) if needed
    for card in view.supports:
        data = ix.supports[card]
        if data["kind"] == "spell" and all(res[r] >= n for r, n in data["cost"].items()):
            bonus += data["bonus"]
    value = int(spec["value"])
    wins = sum(1 for face in (1, 2, 3, 4, 5, 6) if face + bonus >= value)
    return wins / 6


def greedy_bot(view: Any, legal: list[Any], rng: Rng) -> Any:
    if view.phase == "between":
        return _kinds(legal, "start_chapter")[0]
    val = Valuer(view)
    res = {r: view.storage[r] for r in RESOURCES}
    for command in _kinds(legal, "submit"):
        return command
    for command in _kinds(legal, "answer"):  # the bot has read every clue
        if index().extra[command.answer.quiz]["correct"] == command.answer.answer:
            return command
    if view.phase == "combat":
        return combat_choice(view, legal)
    if view.phase == "room":
        return room_choice(view, legal, res, val)
    if view.phase == "meal":
        return least_loss(view, legal, res, val)
    if view.phase == "moving":
        return mine_choice(view, legal)
    if view.phase == "picking":
        return pick_choice(view, legal)
    if view.phase == "peek":  # face a red card last: the day's resources may help
        first = index().card(view.upcoming_top[0], view.advanced)
        return legal[1] if first.get("color") == "red" else legal[0]
    conv = best_conversion(view, legal, res, val)
    if conv is not None:
        return conv
    for command in _kinds(legal, "use_item"):
        item = index().items[command.use_item.card]
        if item["kind"] == "sell" or view.hp < view.max_hp:
            return command
    if view.phase == "night":
        return _kinds(legal, "end_night")[0]
    choices = _kinds(legal, "choose")
    if choices:
        return best_option(view, choices, res, val)
    return legal[0]


def best_conversion(view: Any, legal: list[Any], res: dict[str, int], val: Valuer) -> Any:
    base = val.worth(res, view.hp)
    best, best_gain = None, 0.25
    for command in _kinds(legal, "convert"):
        conv = [c for c in view.conversions if c.index == command.convert.conversion][0]
        data = conversion_data(view, conv.index)
        after = dict(res)
        for r, n in data["from"].items():
            after[r] -= n
        for r, n in data["to"].items():
            slots = TANGIBLE if r in TANGIBLE else INTANGIBLE
            after[r] += min(n, SLOTS - sum(after[k] for k in slots))
        gain = val.worth(after, view.hp) - base
        if gain > best_gain:
            best, best_gain = command, gain
    return best


def least_loss(view: Any, legal: list[Any], res: dict[str, int], val: Valuer) -> Any:
    """The night meal: 1 Food or 1 HP, whichever leaves the position worth more."""
    def worth(command: Any) -> float:
        after, hp = dict(res), view.hp
        if command.night_meal.pay_hp:
            hp -= 1
        else:
            after["food"] -= 1
        return val.worth(after, hp)

    return max(_kinds(legal, "night_meal"), key=worth)


def room_choice(view: Any, legal: list[Any], res: dict[str, int], val: Valuer) -> Any:
    """Making room for Fear: Energy is kept for the nights to come, so Knowledge goes, unless
    the goal still needs it and there is Energy to spare (measured: better than weighing the
    two with the valuation, which undervalues the Energy of later nights)."""
    offered = [c for c in legal if c.discard.resource in (pb.KNOWLEDGE, pb.ENERGY)]
    if len(offered) == 1:  # the other would leave the option unpaid (ruling 9a)
        return offered[0]
    knowledge, energy = offered
    spare_energy = res["energy"] - (DAYS - view.time_track)
    if res["knowledge"] <= val.need.get("knowledge", 0) and spare_energy > 0:
        return energy
    return knowledge


def conversion_data(view: Any, i: int) -> Json:
    from services.eila import engine

    ix = index()
    stub = type("P", (), {"items": list(view.items), "supports": list(view.supports)})
    return engine.conversions(stub, ix)[i]  # type: ignore[arg-type]


def best_option(view: Any, choices: list[Any], res: dict[str, int], val: Valuer) -> Any:
    ix = index()
    card = ix.card(view.present.id, view.advanced)
    best, best_score = choices[0], float("-inf")
    for command in choices:
        option = card["options"][command.choose.option]
        after, hp, extra = simulate(list(option["effects"]), res, view.hp, view.max_hp, view, val)
        keep = {"future": 1.0, "past": 0.0, "deck": 0.3}[option["place"]]
        score = val.worth(after, hp, extra) + keep
        if score > best_score:
            best, best_score = command, score
    return best


STEP = {pb.NORTH: (0, 1), pb.EAST: (1, 0), pb.SOUTH: (0, -1), pb.WEST: (-1, 0)}


def mine_choice(view: Any, legal: list[Any]) -> Any:
    """Stop on an uncovered location; else step towards one, or deeper into the unknown."""
    m = view.mine
    cells = {(c.x, c.y): c for c in m.cells}
    here = cells.get((m.x, m.y))
    stop = _kinds(legal, "stop")[0]
    if here is not None and here.location and not here.covered:
        return stop
    best, best_score = stop, 0.0
    for command in _kinds(legal, "move"):
        dx, dy = STEP[command.move.direction]
        x, y = m.x + dx, m.y + dy
        cell = cells.get((x, y))
        score = 0.3 * (x + y)
        if cell is None:
            score += 2.0
        else:
            if cell.location and not cell.covered:
                score += 4.0
            if "dark" in cell.feature:
                score -= 3.0 if view.storage["fear"] >= 5 else 1.5
        if score > best_score:
            best, best_score = command, score
    return best


def pick_choice(view: Any, legal: list[Any]) -> Any:
    """Take the offers the bot can afford while keeping what the goal needs."""
    val = Valuer(view)
    picks = _kinds(legal, "pick")
    if picks:
        kind_res = "knowledge" if picks[0].pick.card.startswith("C") else "coin"
        spare = view.storage[kind_res] - val.need.get(kind_res, 0)
        price = 1 if kind_res == "knowledge" else 3
        if spare >= price:
            return picks[0]
    return _kinds(legal, "done_picking")[0]


def combat_choice(view: Any, legal: list[Any]) -> Any:
    c = view.combat
    short = c.enemy_value - c.total
    if short > 0:
        ix = index()
        for command in _kinds(legal, "cast"):
            if ix.supports[command.cast.card]["kind"] == "spell":
                return command
        boosts = _kinds(legal, "boost")
        if boosts and view.storage["energy"] * 2 >= short:
            return boosts[0]
    return _kinds(legal, "fight")[0]


__all__ = ["random_bot", "random_options_bot", "greedy_bot", "ENUM_OF", "RESOURCE_OF"]
