"""The rules of Eila and Something Shiny as plain functions over a chapter attempt.

`apply(state, command, dice)` (in rules.py) changes a copy of the state by one command; decide
runs it once and records what changed as facts (facts.py), which evolve applies. Each function
below is one rule of the rulebook; the state is copied before it is changed (see `State.clone`).

Nobody knows the order of a shuffled deck until its cards are revealed, so the rules draw it card
by card as cards are revealed (the same odds as a shuffle), and the face-down mine tiles as they
are turned over: the state never holds an order no one has seen. Logs written before events held
facts shuffled at once (`Dice.upfront`, see legacy.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from services.core.decider import MalformedCommand, Rng, RuleError
from services.eila.data import DAYS, INTANGIBLE, SLOTS, TANGIBLE, Index, Json
from services.eila.state import Combat, Play


class Dice(Protocol):
    # True only to replay or verify logs from before events held facts: a shuffle then ordered
    # the whole deck (or laid out the mine) at once, and cards were taken from the top.
    upfront: bool

    def below(self, n: int) -> int: ...


class RecordingDice:
    """Draws from the game's Rng and records each draw (the legacy events kept them)."""

    def __init__(self, rng: Rng, upfront: bool = False) -> None:
        self.rng = rng
        self.upfront = upfront
        self.draws: list[int] = []

    def below(self, n: int) -> int:
        value = self.rng.below(n)
        self.draws.append(value)
        return value


class ReplayDice:
    """Replays recorded draws (a legacy event's, or a test's chosen dice)."""

    def __init__(self, draws: list[int], upfront: bool = False) -> None:
        self.draws = list(draws)
        self.upfront = upfront

    def below(self, n: int) -> int:
        value = self.draws.pop(0)
        assert 0 <= value < n, "recorded draw out of range"
        return value


def shuffle(items: list[str], dice: Dice) -> list[str]:
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = dice.below(i + 1)
        out[i], out[j] = out[j], out[i]
    return out


class Table:
    """A chapter attempt being changed by one command: the play, the data, dice and the log."""

    def __init__(self, play: Play, index: Index, dice: Dice, log: list[str]) -> None:
        self.p = play
        self.ix = index
        self.dice = dice
        self.log = log

    def say(self, line: str) -> None:
        self.log.append(line)

    # ---- storage ----------------------------------------------------------------------

    def free(self, resource: str) -> int:
        kind = TANGIBLE if resource in TANGIBLE else INTANGIBLE
        return SLOTS - sum(self.p.res[r] for r in kind)

    def gain(self, resource: str, amount: int) -> None:
        """Acquire up to `amount`: what does not fit is simply not taken (Fear excepted)."""
        if resource == "fear":
            for _ in range(amount):
                self.gain_one_fear()
            return
        taken = min(amount, self.free(resource))
        self.p.res[resource] += taken
        if taken:
            self.say(f"+{taken} {resource}")

    def take_fear(self, amount: int, resume: str) -> bool:
        """Fear must be taken, one at a time. When room must be made and both Knowledge and
        Energy are held, the player chooses which to discard: the rest of the Fear waits
        (phase "room", `make_room`) and False is returned."""
        for taken in range(amount):
            if self.p.result:
                return True
            full = self.p.res["fear"] < SLOTS and self.free("fear") == 0
            if full and self.p.res["knowledge"] and self.p.res["energy"]:
                self.p.fear_due, self.p.resume = amount - taken, resume
                self.p.phase = "room"
                self.say("no room for the Fear: discard 1 Knowledge or 1 Energy")
                return False
            self.gain_one_fear()
        return True

    def gain_one_fear(self) -> None:
        """Fear must be taken: make room by discarding the other intangible held (the player
        chose beforehand, or only one kind is there); past 8 Fear, lose 1 HP instead."""
        if self.p.res["fear"] >= SLOTS:
            self.say("no room for more Fear: -1 HP")
            self.hurt(1, blockable=False)
            return
        if self.free("fear") == 0:
            victim = "knowledge" if self.p.res["knowledge"] else "energy"
            self.p.res[victim] -= 1
            self.say(f"1 {victim} discarded to make room for Fear")
        self.p.res["fear"] += 1
        self.say("+1 fear")

    def lose(self, resource: str, amount: int) -> None:
        """Discard; the option's prerequisites made sure there is enough (Fear: what you have)."""
        paid = min(amount, self.p.res[resource])
        self.p.res[resource] -= paid
        if paid:
            self.say(f"-{paid} {resource}")

    # ---- HP -------------------------------------------------------------------------

    def heal(self, amount: int) -> None:
        healed = min(amount, self.p.max_hp - self.p.hp)
        self.p.hp += healed
        if healed:
            self.say(f"+{healed} HP")

    def hurt(self, amount: int, blockable: bool = True) -> None:
        for _ in range(amount):
            if self.p.result:
                return
            if blockable and self.p.shields > 0:
                self.p.shields -= 1
                self.say("a shield face cancels 1 HP loss")
                continue
            if blockable and self.p.combat is not None and not self.p.combat.keep_cards \
                    and shield_cards_left(self.p, self.ix):
                self.p.shield_cards_used += 1
                self.say("a shield support card prevents 1 HP loss")
                continue
            self.p.hp -= 1
            self.say("-1 HP")
            if self.p.hp <= 0:
                self.end("lost", "", "Eila ran out of HP")

    def end(self, result: str, ending: str, reason: str) -> None:
        self.p.result = result
        self.p.ending = ending
        self.p.reason = reason
        self.p.phase = "over"
        self.p.queue = []
        self.say(f"chapter {self.p.chapter} {result}: {reason}")

    # ---- goal -----------------------------------------------------------------------

    def goal(self) -> Json:
        return goal_side(self.ix, self.p.chapter, self.p.advanced)

    def check_goal(self) -> None:
        """You win immediately when the goal is achieved."""
        goal = self.goal()
        submitted = all(self.p.submitted.get(r, 0) >= n for r, n in goal["submit"].items())
        if submitted and self.p.location == goal.get("reach", self.p.location):
            self.end("won", "A", "the goal is achieved")

    # ---- the day ----------------------------------------------------------------------

    def reveal(self) -> None:
        """Step 1: reveal the upcoming card; with none left, the night begins."""
        if self.p.upcoming:
            self.p.present = self.p.upcoming.pop(self.next_card())
            if self.p.present == self.p.bottom:
                self.p.bottom = ""
            self.p.known = max(0, self.p.known - 1)
            self.p.phase = "day"
            self.say(f"day {self.p.day}: {self.ix.name(self.p.present)}")
            return
        self.p.present = ""
        self.p.phase = "night"
        self.p.tonight = 0
        self.say(f"night {self.p.day}")
        if self.ix.content.chapter(self.p.chapter).get("night_food"):  # the harsh mountain
            if self.p.res["food"]:
                self.p.phase = "meal"  # "you lose 1 Food or 1 HP": the player's choice
            else:
                self.hurt(1, blockable=False)

    def next_card(self) -> int:
        """Where the next upcoming card is: on top when the player knows the top card, else
        any of the cards whose order nobody knows, drawn now (as a shuffle would have put it)."""
        unknown = len(self.p.upcoming) - (1 if self.p.bottom else 0)
        if self.p.known or unknown <= 1 or self.dice.upfront:
            return 0
        return self.dice.below(unknown)

    def card(self, card_id: str) -> Json:
        return self.ix.card(card_id, self.p.advanced)

    def choose(self, option_index: int) -> None:
        card = self.card(self.p.nested or self.p.present)
        options = card["options"]
        if not 0 <= option_index < len(options):
            raise MalformedCommand("NO_SUCH_OPTION",
                                   f"card {card['id']} has no option {option_index}")
        why = why_unavailable(self.p, self.ix, options[option_index])
        if why:
            raise RuleError("OPTION_UNAVAILABLE",
                            f"option {letter(option_index)} is unavailable: {why}")
        self.say(f"option {letter(option_index)}: {options[option_index]['text']}")
        self.p.queue = list(options[option_index]["effects"])
        if not self.p.nested:
            self.p.place = options[option_index]["place"]
        self.p.phase = "resolve"
        self.run()

    def run(self) -> None:
        """Execute the pending effects left to right, until one waits for the player."""
        while self.p.phase == "resolve":
            if self.p.queue:
                self.execute(self.p.queue.pop(0))
            elif self.p.nested:  # back to the card that triggered the location
                self.p.nested = ""
                self.p.queue, self.p.saved = self.p.saved, []
            else:
                self.resolve_present()
                self.reveal()

    def open_nested(self, card_id: str) -> None:
        """Resolve another card (a location event or location action) inside the present one."""
        self.p.nested = card_id
        self.p.saved, self.p.queue = self.p.queue, []
        self.p.phase = "day"
        self.say(f"{self.ix.name(card_id)}")

    def resolve_present(self) -> None:
        """Step 3: place the card in the Future, the Past or back into its original deck."""
        card_id, place = self.p.present, self.p.place
        if place == "future":
            self.p.future.append(card_id)
        elif place == "past":
            self.p.past.append(card_id)
        elif self.card(card_id)["color"] in ("contract", "privilege"):  # on offer again
            kind = self.card(card_id)["color"] + "s"
            self.p.offers[kind] = sorted(self.p.offers.get(kind, []) + [card_id])
        else:
            self.p.decks.setdefault(self.card(card_id)["color"], []).append(card_id)
        self.say(f"{card_id} goes to {'its deck' if place == 'deck' else 'the ' + place}")
        self.p.present = ""

    def execute(self, effect: Json) -> None:
        (kind, arg), = effect.items()
        EFFECTS[kind](self, arg)


# ---- effects: one function per symbol --------------------------------------------------


def fx_gain(t: Table, arg: dict[str, int]) -> None:
    gains = list(arg.items())
    for i, (resource, amount) in enumerate(gains):
        if resource != "fear":
            t.gain(resource, amount)
        elif not t.take_fear(amount, "resolve"):  # the player makes room: the rest waits
            if gains[i + 1:]:
                t.p.queue.insert(0, {"gain": dict(gains[i + 1:])})
            return


def fx_lose(t: Table, arg: dict[str, int]) -> None:
    for resource, amount in arg.items():
        t.lose(resource, amount)


def fx_heal(t: Table, arg: int) -> None:
    t.heal(arg)


def fx_hurt(t: Table, arg: int) -> None:
    t.hurt(arg)


def fx_blue(t: Table, card_id: str) -> None:
    """Blue card-deck icon: the blue card goes to the Future."""
    if card_id in t.p.decks.get("blue", []):
        t.p.decks["blue"].remove(card_id)
        t.p.future.append(card_id)
        t.say(f"{t.ix.name(card_id)} goes to the Future")


def _to_top(t: Table, deck: str, card_id: str) -> None:
    if card_id in t.p.decks.get(deck, []):
        t.p.decks[deck].remove(card_id)
        t.p.upcoming.insert(0, card_id)
        t.p.known += 1
        t.say(f"{t.ix.name(card_id)} goes on top of the upcoming deck")


def fx_red(t: Table, card_id: str) -> None:
    """Red card-deck icon: the red card goes on top of the upcoming deck."""
    _to_top(t, "red", card_id)


def fx_habit(t: Table, card_id: str) -> None:
    """H icon: the habit card goes on top of the upcoming deck."""
    _to_top(t, "habit", card_id)


def fx_keep_habit(t: Table, _: Any) -> None:
    if t.p.present not in t.p.habits:
        t.p.habits.append(t.p.present)
        t.say(f"habit acquired: {t.ix.name(t.p.present)}")


def fx_item(t: Table, item: str) -> None:
    """Item-search icon: acquire the item unless you already possess it."""
    if item not in t.p.items:
        t.p.items.append(item)
        t.say(f"item acquired: {t.ix.name(item)}")


def fx_drop_item(t: Table, item: str) -> None:
    if item in t.p.items:
        t.p.items.remove(item)
        t.say(f"item returned: {t.ix.name(item)}")


def fx_support(t: Table, card: str) -> None:
    if card not in t.p.supports:
        t.p.supports.append(card)
        t.say(f"support card acquired: {t.ix.name(card)}")


def fx_ending(t: Table, ending: str) -> None:
    """An alternative ending: you win the chapter at once."""
    t.end("won", ending, f"alternative ending {ending}")


def fx_if_item(t: Table, arg: Json) -> None:
    """'If you possess' events: each effect applies only with its item."""
    if arg["item"] in t.p.items:
        t.p.queue[0:0] = list(arg["then"])


def fx_combat(t: Table, spec: Json) -> None:
    """Enemy: roll Eila's red die (and the green die with Leo's Lucky Die), then wait."""
    red = t.ix.content.common["red_die"][t.dice.below(6)]
    green_val, green_shield = -1, False
    if has_green_die(t.p):
        green = t.ix.content.common["green_die"][t.dice.below(6)]
        green_val, green_shield = green["value"], green["shield"]
    value = enemy_value(t.p, spec)
    boost = item_combat_bonus(t.p, t.ix)
    t.p.combat = Combat(spec["enemy"], value, red["value"], red["shield"], green_val,
                        green_shield, boost, spec)
    t.p.phase = "combat"
    dice = f"red die {red['face']}" + (f", green die {green_val}" if green_val >= 0 else "")
    t.say(f"combat with {spec['enemy']} ({value}): {dice}")


def fx_end_combat(t: Table, _: Any) -> None:
    t.p.combat = None
    t.p.shields = 0


def fx_quiz(t: Table, deck: str) -> None:
    """Chapter 2: draw a random quiz card of that deck and keep it until you answer it."""
    cards = t.p.quiz_decks.get(deck, [])
    if cards:
        quiz = cards.pop(t.dice.below(len(cards)))
        t.p.quizzes.append(quiz)
        t.say(f"quiz drawn: {quiz}")


def fx_flag(t: Table, flag: str) -> None:
    if flag not in t.p.flags:
        t.p.flags.append(flag)


# ---- chapter 2: quizzes -------------------------------------------------------------------


def answer(t: Table, quiz: str, choice: str) -> None:
    """Answer a drawn quiz card: the reward if right; either way the card is turned over."""
    if quiz not in t.p.quizzes:
        raise RuleError("NO_SUCH_QUIZ", f"you hold no quiz card {quiz}")
    data = t.ix.extra[quiz]
    if choice not in data["answers"]:
        raise MalformedCommand("BAD_ANSWER", f"{quiz} has no answer {choice!r}")
    t.p.quizzes.remove(quiz)
    if choice == data["correct"]:
        t.say(f"{quiz}: {choice} is right")
        for effect in data["reward"]:
            t.execute(effect)
    else:
        t.say(f"{quiz}: {choice} is wrong; the reward is lost")


# ---- chapter 3: the mine -------------------------------------------------------------------

STEPS = {"N": (0, 1), "E": (1, 0), "S": (0, -1), "W": (-1, 0)}
OPPOSITE = {"N": "S", "S": "N", "E": "W", "W": "E"}


def tile_index(x: int, y: int) -> int:
    """The map tile (0-8) holding the grid (x, y): tiles are 2x2 grids, 3 to a row."""
    return (y // 2) * 3 + x // 2


BANDS = ("M1", "M2", "M3", "M4", "MC")


def band_of(pos: int) -> str:
    """Tiles are laid by band, the band being the diagonal tx + ty of the position."""
    return BANDS[pos // 3 + pos % 3]


def draw_tile(t: Table, pos: int) -> str:
    """The tile turned over at `pos`: any of its band's tiles not yet laid."""
    m = t.p.mine
    assert m is not None
    band = [tile for tile in m.pool if t.ix.extra[tile]["band"] == band_of(pos)]
    tile = band[t.dice.below(len(band))] if len(band) > 1 else band[0]
    m.pool.remove(tile)
    return tile


def forget_order(p: Play) -> None:
    """What no one has seen keeps no order: the upcoming cards whose order is unknown are
    sorted, and face-down mine tiles go back to the pool they are drawn from when turned
    over. (Games from before events held facts held a shuffled order; new ones never do.)"""
    end = len(p.upcoming) - (1 if p.bottom else 0)
    if end - p.known > 1:
        p.upcoming[p.known:end] = sorted(p.upcoming[p.known:end])
    m = p.mine
    if m is not None and any(tile and not up for tile, up in zip(m.tiles, m.faceup,
                                                                   strict=True)):
        hidden = [tile for tile, up in zip(m.tiles, m.faceup, strict=True) if tile and not up]
        laid = [tile for tile, up in zip(m.tiles, m.faceup, strict=True) if up]
        m.pool = sorted((set(m.pool) | set(hidden)) - set(laid))
        m.tiles = [tile if up else "" for tile, up in zip(m.tiles, m.faceup, strict=True)]


def mine_cell(t: Table, x: int, y: int) -> Json:
    """The grid at (x, y): cells are listed SW, SE, NW, NE within their tile."""
    m = t.p.mine
    assert m is not None
    tile = t.ix.extra[m.tiles[tile_index(x, y)]]
    cell: Json = tile["cells"][(y % 2) * 2 + x % 2]
    return cell


def fx_move(t: Table, steps: int) -> None:
    """'Move by 0-N grids': wait for the player's steps, then go on."""
    t.p.moves = steps
    t.p.phase = "moving"


def marked(cell: Json, side: str) -> str:
    """The wall, hidden passage or cliff drawn on one side of a grid, or ''."""
    return next((f for f in ("wall", "hidden", "cliff") if side in cell.get(f, "")), "")


def edge(t: Table, x: int, y: int, side: str) -> str:
    """What lies between (x, y) and its neighbour on `side`: wall, hidden, cliff or ''."""
    dx, dy = STEPS[side]
    marks = {marked(mine_cell(t, x, y), side), marked(mine_cell(t, x + dx, y + dy), OPPOSITE[side])}
    return next((f for f in ("wall", "hidden", "cliff") if f in marks), "")


def known_edge(t: Table, side: str) -> str:
    """What Eila can see of the edge on `side` of her grid: all of it when the tile beyond is
    face up, else only what is drawn on her own grid."""
    m = t.p.mine
    assert m is not None
    dx, dy = STEPS[side]
    if m.faceup[tile_index(m.x + dx, m.y + dy)]:
        return edge(t, m.x, m.y, side)
    return marked(mine_cell(t, m.x, m.y), side)


def blocks(feature: str, items: list[str]) -> bool:
    """A wall cannot be passed; nor can a hidden passage without the magnifier (I13)."""
    return feature == "wall" or (feature == "hidden" and "I13" not in items)


def barrier(feature: str) -> str:
    return "a wall" if feature == "wall" else "a hidden passage (you need a magnifier)"


def move(t: Table, side: str, pay_hp: bool = False) -> None:
    m = t.p.mine
    assert m is not None
    dx, dy = STEPS[side]
    x, y = m.x + dx, m.y + dy
    if not (0 <= x < 6 and 0 <= y < 6):
        raise RuleError("EDGE_OF_MINE", "the mine ends there")
    feature = known_edge(t, side)  # a wall she can see blocks before anything turns over
    if blocks(feature, t.p.items):
        raise RuleError("BLOCKED", f"{barrier(feature)} blocks the way")
    tile = tile_index(x, y)
    if not m.faceup[tile]:
        m.faceup[tile] = True
        if not m.tiles[tile]:
            m.tiles[tile] = draw_tile(t, tile)
        t.say(f"tile {m.tiles[tile]} turned over")
        feature = edge(t, m.x, m.y, side)
        if blocks(feature, t.p.items):  # on the tile's side: back, without spending the move
            t.say(f"{barrier(feature)}: Eila stays where she is")
            return
    if feature == "cliff" and "I12" not in t.p.items:  # "Cost 1 Energy or 1 HP": her choice
        if t.p.res["energy"] and not pay_hp:
            t.lose("energy", 1)
        else:
            t.hurt(1, blockable=False)
        t.say("climbing the cliff")
    m.x, m.y = x, y
    t.p.moves -= 1
    t.say(f"moved {side} to ({x}, {y})")
    if mine_cell(t, x, y).get("dark") and not t.take_fear(1, "moving"):
        return  # the player makes room for it first
    if t.p.result:
        return
    if t.p.moves == 0:
        stop(t)


def stop(t: Table) -> None:
    t.p.moves = 0
    t.p.phase = "resolve"
    t.run()


def location_here(t: Table) -> int:
    m = t.p.mine
    if m is None:
        return 0
    loc = mine_cell(t, m.x, m.y).get("loc") or 0
    return 0 if loc in m.covered else int(loc)


def fx_trigger_location(t: Table, _: Any) -> None:
    """Reveal the location event of the current grid (none if it has no number)."""
    loc = location_here(t)
    if loc:
        t.open_nested(str(loc))


def fx_cover(t: Table, _: Any) -> None:
    m = t.p.mine
    loc = location_here(t)
    if m is not None and loc:
        m.covered.append(loc)
        t.say(f"location {loc} covered")


def at_shelter(p: Play, ix: Index) -> bool:
    if p.mine is not None:
        m = p.mine
        tile = ix.extra[m.tiles[tile_index(m.x, m.y)]]
        return bool(tile["cells"][(m.y % 2) * 2 + m.x % 2].get("shelter"))
    if p.location:
        return bool(ix.extra[p.location].get("shelter"))
    return False


# ---- chapter 4: contracts and privileges ----------------------------------------------------

PRICE = {"contracts": ("knowledge", 1), "privileges": ("coin", 3)}


def fx_offer(t: Table, kind: str) -> None:
    t.p.picking = kind
    t.p.phase = "picking"


def pick(t: Table, card: str) -> None:
    kind = t.p.picking
    if card not in t.p.offers.get(kind, []):
        raise RuleError("NOT_ON_OFFER", f"{card} is not among the {kind} on offer")
    resource, price = PRICE[kind]
    if t.p.res[resource] < price:
        raise RuleError("NOT_ENOUGH", f"{card} costs {price} {resource}")
    t.p.res[resource] -= price
    t.p.offers[kind].remove(card)
    t.p.future.append(card)
    t.say(f"{t.ix.name(card)} taken for {price} {resource}: it goes to the Future")


def done_picking(t: Table) -> None:
    t.p.picking = ""
    t.p.phase = "resolve"
    t.run()


# ---- chapter 5: locations --------------------------------------------------------------------


def fx_location_action(t: Table, _: Any) -> None:
    """Execute one action of the current location card."""
    if t.p.location:
        t.open_nested(t.p.location)


def fx_go(t: Table, location: str) -> None:
    """Lead onward: reveal the next location card; it covers the last one."""
    t.p.location = location
    t.say(f"Eila reaches {t.ix.name(location)}")
    t.check_goal()


EFFECTS: dict[str, Callable[[Table, Any], None]] = {
    "gain": fx_gain, "lose": fx_lose, "heal": fx_heal, "hurt": fx_hurt, "blue": fx_blue,
    "red": fx_red, "habit": fx_habit, "keep_habit": fx_keep_habit, "item": fx_item,
    "drop_item": fx_drop_item, "support": fx_support, "ending": fx_ending,
    "if_item": fx_if_item, "combat": fx_combat, "end_combat": fx_end_combat, "quiz": fx_quiz,
    "flag": fx_flag, "move": fx_move, "trigger_location": fx_trigger_location,
    "cover": fx_cover, "offer": fx_offer, "location_action": fx_location_action, "go": fx_go,
}
# Effects that wait for the player (a combat, steps in the mine, purchases, a nested card).
PAUSING = {"combat", "move", "offer", "trigger_location", "location_action"}


# ---- prerequisites ----------------------------------------------------------------------


def letter(i: int) -> str:
    return "ABCDEFGH"[i]


def why_unavailable(p: Play, ix: Index, option: Json) -> str:
    """The missing prerequisite of an option, or "" when it may be chosen.

    The option is walked left to right up to its first combat: each − effect needs the
    resources you hold at that point (Fear excepted), each item discard needs the item. What
    the option gains before (a possessed item's effects included) counts, and so does what
    Fear taken before pushes out of storage: where the player would choose between Knowledge
    and Energy, both ways are followed, and the option is available if one of them can pay.
    """
    for req in option.get("requires", []):
        why = requirement_missing(p, req, ix)
        if why:
            return why
    return unpaid(p, ix, list(option["effects"]), [dict(p.res)])


def unpaid(p: Play, ix: Index, effects: list[Json], ways: list[dict[str, int]]) -> str:
    """Why `effects`, run from any of the storages `ways`, cannot pay a − effect before their
    first pause (every way of making room for Fear followed); "" when one way pays them."""
    effects = list(effects)
    while effects:
        (kind, arg), = effects.pop(0).items()
        if kind in PAUSING:
            break
        if kind == "if_item" and arg["item"] in p.items:  # its effects come next
            effects[0:0] = list(arg["then"])
        elif kind == "gain":
            for r, n in arg.items():
                for _ in range(n if r == "fear" else 0):  # taken in full, pushing others out
                    ways = [after for res in ways for after in fear_taken(res)]
                if r != "fear":
                    kind_slots = TANGIBLE if r in TANGIBLE else INTANGIBLE
                    for res in ways:
                        res[r] += min(n, SLOTS - sum(res[k] for k in kind_slots))
        elif kind == "lose":
            for r, n in arg.items():
                if r != "fear" and all(res[r] < n for res in ways):
                    return f"you need {n} {r} and have {max(res[r] for res in ways)}"
                ways = [res for res in ways if r == "fear" or res[r] >= n]
                for res in ways:
                    res[r] = max(0, res[r] - n)
        elif kind == "drop_item" and arg not in p.items:
            return f"you do not possess {ix.name(arg)}"
    return ""


def room_leaves_unpaid(p: Play, ix: Index, resource: str, count: int) -> str:
    """Why making room for the waiting Fear with `count` `resource` would leave the rest of
    the option unpayable (*"You cannot choose an option with a − effect unless you have
    enough resources to discard"*), or "". A combat's outcome takes what there is (ruling
    7), and so does a step in the mine: only an option being resolved is looked at."""
    if p.resume != "resolve" or p.combat is not None or p.res[resource] < count:
        return ""
    res = {**p.res, resource: p.res[resource] - count}
    rest: list[Json] = [{"gain": {"fear": p.fear_due}}, *p.queue]
    return unpaid(p, ix, rest, [res])


def fear_taken(res: dict[str, int]) -> list[dict[str, int]]:
    """Storage after 1 Fear is taken: each way the player may make room for it."""
    if res["fear"] >= SLOTS:
        return [res]  # it costs 1 HP instead
    if sum(res[k] for k in INTANGIBLE) < SLOTS:
        return [{**res, "fear": res["fear"] + 1}]
    return [{**res, k: res[k] - 1, "fear": res["fear"] + 1}
            for k in ("knowledge", "energy") if res[k]]


def requirement_missing(p: Play, req: Json, ix: Index) -> str:
    (kind, arg), = req.items()
    if kind == "item" and arg not in p.items:
        return f"you need {ix.name(arg)}"
    if kind == "no_item" and arg in p.items:
        return f"not while you possess {ix.name(arg)}"
    if kind == "support" and arg not in p.supports:
        return f"you need {ix.name(arg)}"
    if kind == "habit" and arg not in p.habits:
        return f"you need the habit {ix.name(arg)}"
    if kind == "flag" and arg not in p.flags:
        return "you have not done that yet"
    if kind == "no_flag" and arg in p.flags:
        return "you have already done that"
    if kind == "shelter" and not at_shelter(p, ix):
        return "only where there is a shelter"
    if kind == "ending" and arg not in p.endings:
        return f"only after ending {arg[1:]} of chapter {arg[0]}"
    if kind == "no_ending" and arg in p.endings:
        return f"not after ending {arg[1:]} of chapter {arg[0]}"
    if kind == "location" and p.location != arg:
        return f"only at {ix.name(arg)}"
    if kind == "min_day" and p.day < arg:
        return f"only from day {arg}"
    if kind == "max_fear" and p.res["fear"] > arg:
        return f"only with at most {arg} Fear"
    return ""


# ---- combat ---------------------------------------------------------------------------


def has_green_die(p: Play) -> bool:
    return "S12" in p.supports


def enemy_value(p: Play, spec: Json) -> int:
    """Weaknesses lower the enemy's combat value when their condition holds."""
    value = int(spec["value"])
    for weak in spec.get("weak", []):
        cond = weak["if"]
        (kind, arg), = cond.items()
        holds = (
            (kind == "no" and p.res[arg] == 0)
            or (kind == "item" and arg in p.items)
            or (kind == "support" and arg in p.supports)
        )
        if holds:
            value = min(value, int(weak["value"]))
    return value


def item_combat_bonus(p: Play, ix: Index) -> int:
    """Items and passive support cards add to Eila's combat value (never to the green die)."""
    bonus = 0
    for item in p.items:
        data = ix.items[item]
        if data["kind"] == "combat":
            bonus += data["bonus"]
        elif data["kind"] == "combo" and all(n in p.items for n in data["needs"]):
            bonus += data["bonus"]
    for card in p.supports:
        if ix.supports[card]["kind"] == "passive":
            bonus += ix.supports[card]["bonus"]
    return bonus


def shield_count(p: Play, ix: Index) -> int:
    """The HP losses this round's shield faces cancel (one each)."""
    c = p.combat
    assert c is not None
    return int(c.red_shield) + int(c.green_shield)


def shield_cards_left(p: Play, ix: Index) -> int:
    """*"A support card showing a shield can prevent 2 HP loss in total"*: what the shield
    cards held have not yet prevented in this chapter (they work in combats only)."""
    total = sum(ix.supports[card].get("shield", 0) for card in p.supports)
    return max(0, total - p.shield_cards_used)


def refresh_enemy_value(p: Play) -> None:
    """A weakness's condition is looked at again whenever it may have changed (a free action
    in combat can remove the Fear an enemy feeds on): the value is the one that holds now."""
    if p.combat is not None:
        p.combat.value = enemy_value(p, p.combat.spec)


def boost(t: Table, energy: int) -> None:
    if energy <= 0:
        raise MalformedCommand("BAD_COUNT", "boost with at least 1 Energy")
    if t.p.res["energy"] < energy:
        raise RuleError("NOT_ENOUGH", f"you have only {t.p.res['energy']} Energy")
    assert t.p.combat is not None
    t.p.res["energy"] -= energy
    t.p.combat.boost += 2 * energy
    t.say(f"{energy} Energy spent: +{2 * energy} combat value")


def fight(t: Table, keep_shield_cards: bool = False) -> None:
    """Compare the values: win on equal or more; shields cancel HP losses of the outcome.
    *"A support card showing a shield can prevent 2 HP loss in total"*: "can", so the player
    may keep the shield support cards for a later combat (`keep_shield_cards`)."""
    c = t.p.combat
    assert c is not None
    refresh_enemy_value(t.p)
    c.keep_cards = keep_shield_cards
    total = c.total("S14" in t.p.supports)
    won = total >= c.value
    t.say(f"combat value {total} against {c.value}: {'won' if won else 'lost'}")
    branch = list(c.spec["win" if won else "lose"])
    t.p.shields = shield_count(t.p, t.ix)
    again = [] if won or not c.spec.get("repeat") else [{"combat": c.spec}]
    t.p.queue[0:0] = branch + [{"end_combat": True}] + again
    t.p.phase = "resolve"
    t.run()


# ---- free actions ------------------------------------------------------------------------


def conversions(p: Play, ix: Index) -> list[Json]:
    """The free conversions: the board's, then those of items and support cards held."""
    out = list(ix.content.common["conversions"])
    held = [ix.items[i] for i in p.items] + [ix.supports[s] for s in p.supports]
    for data in held:
        if data["kind"] == "conversion":
            text = f"{data['name']}: {data['text']}"
            out.append({"from": data["from"], "to": data["to"], "text": text})
    return out


def can_pay(p: Play, cost: dict[str, int]) -> bool:
    return all(p.res[r] >= n for r, n in cost.items())


def convert(t: Table, index: int) -> None:
    options = conversions(t.p, t.ix)
    if not 0 <= index < len(options):
        raise MalformedCommand("NO_SUCH_CONVERSION", f"there is no conversion {index}")
    conv = options[index]
    if not can_pay(t.p, conv["from"]):
        raise RuleError("NOT_ENOUGH", f"you cannot pay for {conv['text']}")
    for r, n in conv["from"].items():
        t.p.res[r] -= n
    t.say(f"converted: {conv['text']}")
    for r, n in conv["to"].items():
        t.gain(r, n)


def discard(t: Table, resource: str, count: int) -> None:
    if count <= 0:
        raise MalformedCommand("BAD_COUNT", "discard at least 1")
    if resource == "fear":
        raise RuleError("FEAR_STAYS", "Fear can only be discarded by card effects")
    if t.p.res[resource] < count:
        raise RuleError("NOT_ENOUGH", f"you have only {t.p.res[resource]} {resource}")
    t.p.res[resource] -= count
    t.say(f"discarded {count} {resource}")


def use_item(t: Table, item: str) -> None:
    if item not in t.p.items:
        raise RuleError("NO_SUCH_ITEM", f"you do not possess {item}")
    data = t.ix.items[item]
    if data["kind"] not in ("sell", "consume"):
        raise RuleError("NOT_USABLE", f"{data['name']} cannot be used that way")
    t.p.items.remove(item)
    t.say(f"used {t.ix.name(item)}")
    if data["kind"] == "sell":
        fx_gain(t, data["gain"])
    else:
        for effect in data["effects"]:
            t.execute(effect)


def cast(t: Table, card: str) -> None:
    if card not in t.p.supports:
        raise RuleError("NO_SUCH_SUPPORT", f"you do not possess {card}")
    data = t.ix.supports[card]
    if data["kind"] not in ("spell", "heal"):
        raise RuleError("NOT_A_SPELL", f"{data['name']} is not cast")
    if data["kind"] == "spell" and t.p.phase != "combat":
        raise RuleError("NOT_IN_COMBAT", f"{data['name']} can only be used in combat")
    if not can_pay(t.p, data["cost"]):
        raise RuleError("NOT_ENOUGH", f"you cannot pay for {data['name']}")
    for r, n in data["cost"].items():
        t.p.res[r] -= n
    t.say(f"cast {data['name']}")
    if data["kind"] == "spell":
        assert t.p.combat is not None
        t.p.combat.boost += data["bonus"]
    else:
        t.heal(1)


def make_room(t: Table, resource: str, count: int) -> None:
    """*"you must discard other resources to make room for it"*: the player's discard of
    Knowledge or Energy makes room for that many of the waiting Fear; then play goes on."""
    if resource not in ("knowledge", "energy"):
        raise RuleError("MAKE_ROOM", "discard Knowledge or Energy to make room for the Fear")
    if count <= 0 or count > t.p.fear_due:
        raise MalformedCommand("BAD_COUNT", f"discard 1 to {t.p.fear_due} to make room")
    if t.p.res[resource] < count:
        raise RuleError("NOT_ENOUGH", f"you have only {t.p.res[resource]} {resource}")
    why = room_leaves_unpaid(t.p, t.ix, resource, count)
    if why:
        raise RuleError("OPTION_UNPAYABLE",
                        f"discarding {resource} would leave the option unpaid: {why}")
    t.p.res[resource] -= count
    t.say(f"discarded {count} {resource} to make room for Fear")
    due, resume = t.p.fear_due, t.p.resume
    t.p.fear_due, t.p.resume, t.p.phase = 0, "", resume
    if not t.take_fear(due, resume) or t.p.result:
        return
    if resume == "resolve":
        t.run()
    elif t.p.moves == 0:
        stop(t)


# ---- the night -----------------------------------------------------------------------------


def night_meal(t: Table, pay_hp: bool) -> None:
    """The mountain: *"At the beginning of each night phase, you lose 1 Food or 1 HP"*.
    What can be paid is looked at now, not when the night began: Food converted or discarded
    away meanwhile leaves 1 HP as the only way to pay."""
    if not pay_hp and not t.p.res["food"]:
        raise RuleError("NOT_ENOUGH", "you have no Food left for the night meal: pay 1 HP")
    t.p.phase = "night"
    if pay_hp:
        t.say("the night meal: 1 HP instead of Food")
        t.hurt(1, blockable=False)
    else:
        t.lose("food", 1)


def goal_side(ix: Index, chapter: int, advanced: bool) -> Json:
    goal: Json = ix.content.chapter(chapter)["goal"]["advanced" if advanced else "normal"]
    return goal


def submit(t: Table, resource: str, count: int) -> None:
    """Night: place goal resources on the goal card, at most `cap` a night."""
    if count <= 0:
        raise MalformedCommand("BAD_COUNT", "submit at least 1")
    goal = t.goal()
    needed = goal["submit"].get(resource, 0) - t.p.submitted.get(resource, 0)
    if needed <= 0:
        raise RuleError("NOT_NEEDED", f"the goal needs no more {resource}")
    if count > needed:
        raise RuleError("TOO_MANY", f"the goal needs only {needed} more {resource}")
    if t.p.res[resource] < count:
        raise RuleError("NOT_ENOUGH", f"you have only {t.p.res[resource]} {resource}")
    cap = goal.get("cap", 0)
    if cap and t.p.tonight + count > cap:
        raise RuleError("NIGHT_CAP", f"at most {cap} resources may be submitted a night")
    t.p.res[resource] -= count
    t.p.submitted[resource] = t.p.submitted.get(resource, 0) + count
    t.p.tonight += count
    t.say(f"submitted {count} {resource}")
    t.check_goal()


def end_night(t: Table) -> None:
    """1 Energy on the time track or lose 1 HP; the 7th slot loses; shuffle the Future in."""
    if t.p.res["energy"]:
        t.p.res["energy"] -= 1
        t.say("1 Energy on the time track")
    else:
        t.say("no Energy: a heart goes on the time track")
        t.hurt(1, blockable=False)
    t.p.track += 1
    if t.p.result:
        return
    if t.p.track >= DAYS:
        t.end("lost", "", "the 7th slot of the time track is occupied")
        return
    if t.dice.upfront:
        t.p.upcoming = shuffle(t.p.future, t.dice) + t.p.upcoming
    else:  # face down in no order: cards are drawn from them as they are revealed
        t.p.upcoming = sorted(t.p.future + t.p.upcoming)
    t.p.future = []
    t.p.known = 0
    t.p.day += 1
    if "I16" in t.p.items and t.p.upcoming:  # the pocket watch shows the first card
        t.p.upcoming.insert(0, t.p.upcoming.pop(t.next_card()))
        t.p.known = 1
        t.p.phase = "peek"
        t.say(f"the pocket watch shows {t.ix.name(t.p.upcoming[0])} first")
        return
    t.reveal()


def peek(t: Table, delay: bool) -> None:
    """Pocket watch: face the previewed card first, or resolve it as the day's last event."""
    if delay and len(t.p.upcoming) > 1:
        card = t.p.upcoming.pop(0)
        t.p.upcoming.append(card)
        t.p.bottom = card
        t.p.known = 0
        t.say(f"{t.ix.name(card)} will be the last event of the day")
    t.reveal()

