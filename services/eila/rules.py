"""The decider: a campaign of chapters, each a 7-day attempt driven by `engine`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import MalformedCommand, Outcome, Rng, RuleError, Seat
from services.eila import engine, facts
from services.eila.data import (
    CHAPTERS,
    RESOURCES,
    Index,
    content_version,
)
from services.eila.engine import BANDS, Dice, RecordingDice, ReplayDice, Table
from services.eila.state import Mine, Play, State, index, opening_state

RESOURCE_OF = {pb.FOOD: "food", pb.COIN: "coin", pb.STONE: "stone", pb.KNOWLEDGE: "knowledge",
               pb.ENERGY: "energy", pb.FEAR: "fear"}
ENUM_OF = {v: k for k, v in RESOURCE_OF.items()}
KEPT = ("I", "H", "S")  # what the save box holds: items, habits, support cards


# ---- setting up a chapter ------------------------------------------------------------------


def chapter_setup(ix: Index, chapter: int, advanced: bool, box: Sequence[str],
                  dice: Dice, habit_order: Sequence[str] = ()) -> Play:
    """Set-up: decks by colour, green cards in ascending order, the goal's hearts, the prologue.

    From chapter 2 the acquired habits go under the green cards, in the order the player
    chose (`habit_order`, checked by `check_habit_order`; ascending when not given). Kept
    habits are never in the habit deck: they are not put back into it.
    """
    data = ix.content.chapter(chapter)
    cards = [ix.card(c["id"], advanced) for c in data["cards"]]
    by_color: dict[str, list[str]] = {"green": [], "blue": [], "red": []}
    for card in sorted(cards, key=lambda c: c["id"]):
        by_color.setdefault(card["color"], []).append(card["id"])
    habits = list(habit_order) or sorted(c for c in box if c.startswith("H"))
    upcoming = list(by_color["green"])
    habit_deck = [h for h in sorted(ix.content.habit_cards()) if h not in habits]
    if chapter >= 2:
        upcoming += habits
    goal = engine.goal_side(ix, chapter, advanced)
    play = Play(
        chapter=chapter, advanced=advanced, hp=goal["max_hp"], max_hp=goal["max_hp"],
        res={r: 0 for r in RESOURCES},
        items=sorted(c for c in box if c.startswith("I")),
        supports=sorted(c for c in box if c.startswith("S")),
        habits=habits, upcoming=upcoming, known=len(upcoming), future=[], past=[],
        decks={"red": by_color["red"], "blue": by_color["blue"], "habit": habit_deck},
    )
    for resource, amount in data.get("prologue", {}).get("resources", {}).items():
        play.res[resource] = amount
    for item in data.get("prologue", {}).get("items", []):
        if item not in play.items:
            play.items.append(item)
    setup_mine(ix, play, data, dice)
    for kind in ("contracts", "privileges"):  # chapter 4: 5 of each, drawn at random
        ids = [c["id"] for c in data.get(kind, [])]
        if ids:
            play.offers[kind] = sorted(engine.shuffle(ids, dice)[:5])
    if data.get("locations"):
        play.location = data["locations"][0]["id"]
    for deck in ("EQ", "AQ"):
        quizzes = [q["id"] for q in data.get("quizzes", []) if q["deck"] == deck]
        if quizzes:
            play.quiz_decks[deck] = quizzes
    log: list[str] = []
    Table(play, ix, dice, log).reveal()
    return play


def check_habit_order(box: Sequence[str], order: Sequence[str]) -> None:
    """*"You can decide the order of the Habit cards"*: all the kept habits, each once."""
    kept = sorted(c for c in box if c.startswith("H"))
    if order and sorted(order) != kept:
        raise MalformedCommand("BAD_HABIT_ORDER",
                               f"the habit order must list each kept habit once: {kept}")


def setup_mine(ix: Index, play: Play, data: Any, dice: Dice) -> None:
    """Chapter 3: M1 face up at the bottom left, then the M2, M3, M4 tiles shuffled face down on
    their diagonals, and one of the three MC tiles in the far corner. Which tile lies where is
    drawn as each is turned over (`engine.draw_tile`): the same odds, and no hidden layout."""
    tiles = data.get("tiles", [])
    if not tiles:
        return
    by_band = {band: [t["id"] for t in tiles if t["band"] == band] for band in BANDS}
    layout = [""] * 9
    layout[0] = by_band["M1"][0]
    pool = sorted(t for band in BANDS[1:] for t in by_band[band])
    if dice.upfront:  # legacy logs: the layout was shuffled at once
        for band, positions in mine_positions().items():
            drawn = engine.shuffle(by_band[band], dice)
            for pos, tile in zip(positions, drawn, strict=False):
                layout[pos] = tile
        pool = by_band["MC"]
    faceup = [i == 0 for i in range(9)]
    play.mine = Mine(layout, faceup, pool=pool)


def mine_positions() -> dict[str, list[int]]:
    """Tile positions (ty * 3 + tx) by band: the band is the diagonal tx + ty."""
    out: dict[str, list[int]] = {b: [] for b in BANDS}
    for pos in range(9):
        out[engine.band_of(pos)].append(pos)
    return out


def start_chapter(state: State, chapter: int, dice: Dice, log: list[str],
                  habit_order: Sequence[str] = ()) -> None:
    ix = index(state)
    state.chapter = chapter
    state.play = chapter_setup(ix, chapter, state.advanced, state.box, dice, habit_order)
    state.play.endings = [f"{c}{e}" for c, won, e, _, _ in state.history if won]
    state.phase = "playing"
    log.append(f"chapter {chapter} begins ({'advanced' if state.advanced else 'normal'} mode)")
    log.append(f"day 1: {ix.name(state.play.present)}")


def finish_chapter(state: State, log: list[str]) -> None:
    """Win: keep the acquired cards in the save box. Lose: return them and reset the chapter."""
    play = state.play
    assert play is not None
    won = play.result == "won"
    state.history.append((play.chapter, won, play.ending, play.day, play.reason))
    if won:
        state.box = sorted(set(play.items) | set(play.supports) | set(play.habits))
        last = state.single or play.chapter == CHAPTERS[-1] or play.chapter + 1 not in (
            index().content.chapters)
        if last:
            state.phase = "over"
            state.winners = (0,)
            state.reason = f"chapter {play.chapter} won (ending {play.ending})"
            log.append("the campaign is complete")
            return
    state.phase = "between"


# ---- decider --------------------------------------------------------------------------------


def setup(options: Any, seats: Sequence[Seat], rng: Rng) -> list[Any]:
    return open_campaign(options, rng, content_version())


def open_campaign(options: Any, rng: Rng, version: str) -> list[Any]:
    """The opening events of a campaign played with content `version` (today's, or, to verify
    a stored game, the one it names when only its texts differ from today's)."""
    check_options(options)
    opened = pb.Opened(options=options, content_version=version)
    base = opening_state(options)
    base.content = version
    state = base.clone()
    log: list[str] = []
    start_chapter(state, options.first_chapter, RecordingDice(rng), log, options.habit_order)
    return [pb.Event(opened=opened), changed(base, state, True, log)]


def check_options(options: Any) -> None:
    ix = index()
    if options.first_chapter not in ix.content.chapters:
        raise MalformedCommand("BAD_CHAPTER", f"there is no chapter {options.first_chapter}")
    for card in options.save_box:
        if not card.startswith(KEPT) or (card not in ix.items and card not in ix.supports
                                        and card not in ix.cards):
            raise MalformedCommand("BAD_SAVE_BOX", f"{card} cannot be in the save box")
    check_habit_order(sorted(set(options.save_box)), options.habit_order)


def new_state(options: Any, dice: Dice, log: list[str], version: str = "") -> State:
    state = opening_state(options)
    state.content = version
    start_chapter(state, options.first_chapter, dice, log, options.habit_order)
    return state


def decide(state: State, seat: int | None, command: Any, rng: Rng) -> list[Any]:
    """Run the rules once on a copy; the event holds what changed, as facts."""
    new = state.clone()
    play = new.play
    log: list[str] = []
    apply(new, command, RecordingDice(rng), log)
    return [changed(state, new, new.play is not play, log)]


def changed(before: State, after: State, new_play: bool, log: list[str]) -> Any:
    """The event of a command: what it changed, as facts, and its public account."""
    if after.play is not None:
        engine.forget_order(after.play)
    event = pb.Event()
    for part, value in facts.changes(before, after, new_play):
        event.changed.facts.add(part=part, value=value)
    event.changed.log.extend(log)
    return event


def apply(state: State, command: Any, dice: Dice, log: list[str]) -> None:
    """Change `state` (a copy) by one command; raise before changing anything if illegal."""
    kind = command.WhichOneof("kind")
    if kind in ("start_chapter", "abandon"):
        campaign_command(state, command, dice, log)
        return
    if state.phase != "playing":
        raise RuleError("NO_CHAPTER", "no chapter is being played: start one")
    play = state.play
    assert play is not None
    table = Table(play, index(state), dice, log)
    chapter_command(table, kind, getattr(command, kind))
    engine.refresh_enemy_value(play)
    if play.result:
        finish_chapter(state, log)


def campaign_command(state: State, command: Any, dice: Dice, log: list[str]) -> None:
    if state.phase != "between":
        raise RuleError("CHAPTER_IN_PROGRESS", "finish the chapter being played first")
    assert state.play is not None
    if command.WhichOneof("kind") == "abandon":
        state.phase = "over"
        state.winners = ()
        state.reason = f"campaign abandoned at chapter {state.chapter}"
        log.append(state.reason)
        return
    wanted = command.start_chapter.chapter
    if wanted not in CHAPTERS:
        raise MalformedCommand("BAD_CHAPTER", f"there is no chapter {wanted}")
    expected = state.chapter + 1 if state.play.result == "won" else state.chapter
    if wanted != expected:
        raise RuleError("WRONG_CHAPTER", f"the next chapter to play is chapter {expected}")
    check_habit_order(state.box, command.start_chapter.habit_order)
    start_chapter(state, wanted, dice, log, command.start_chapter.habit_order)


PHASES_OF = {
    "choose": ("day",), "submit": ("night",), "end_night": ("night",), "boost": ("combat",),
    "fight": ("combat",), "move": ("moving",), "stop": ("moving",), "pick": ("picking",),
    "done_picking": ("picking",), "peek": ("peek",), "night_meal": ("meal",),
}
SIDES = {pb.NORTH: "N", pb.EAST: "E", pb.SOUTH: "S", pb.WEST: "W"}


def chapter_command(t: Table, kind: str, cmd: Any) -> None:
    phase = t.p.phase
    if kind in PHASES_OF and phase not in PHASES_OF[kind]:
        raise RuleError("WRONG_PHASE", f"you cannot {kind.replace('_', ' ')} during the {phase}")
    if phase == "room" and kind != "discard":
        raise RuleError("MAKE_ROOM", "make room for the Fear first: discard Knowledge or Energy")
    if kind == "choose":
        t.choose(cmd.option)
    elif kind == "discard" and phase == "room":
        engine.make_room(t, resource(cmd.resource), cmd.count)
    elif kind == "discard":
        engine.discard(t, resource(cmd.resource), cmd.count)
    elif kind == "convert":
        engine.convert(t, cmd.conversion)
    elif kind == "submit":
        engine.submit(t, resource(cmd.resource), cmd.count)
    elif kind == "end_night":
        engine.end_night(t)
    elif kind == "boost":
        engine.boost(t, cmd.energy)
    elif kind == "fight":
        engine.fight(t, cmd.keep_shield_cards)
    elif kind == "cast":
        engine.cast(t, cmd.card)
    elif kind == "use_item":
        engine.use_item(t, cmd.card)
    elif kind == "answer":
        engine.answer(t, cmd.quiz, cmd.answer)
    elif kind == "move":
        if cmd.direction not in SIDES:
            raise MalformedCommand("BAD_DIRECTION", "name a direction")
        engine.move(t, SIDES[cmd.direction], cmd.pay_hp)
    elif kind == "stop":
        engine.stop(t)
    elif kind == "pick":
        engine.pick(t, cmd.card)
    elif kind == "done_picking":
        engine.done_picking(t)
    elif kind == "peek":
        engine.peek(t, cmd.delay)
    elif kind == "night_meal":
        engine.night_meal(t, cmd.pay_hp)
    else:
        raise RuleError("NOT_IN_THIS_CHAPTER", f"{kind.replace('_', ' ')} is not possible now")


def resource(value: int) -> str:
    if value not in RESOURCE_OF:
        raise MalformedCommand("BAD_RESOURCE", "name a resource")
    return RESOURCE_OF[value]


# ---- who acts, what is legal, the outcome -----------------------------------------------


def to_act(state: State) -> list[int]:
    return [] if state.phase == "over" else [0]


def outcome(state: State) -> Outcome | None:
    if state.phase != "over" or state.winners is None:
        return None
    return Outcome(winners=state.winners, reason=state.reason)


def legal_actions(state: State, seat: int) -> list[Any]:
    if seat != 0 or state.phase == "over":
        return []
    if state.phase == "between":
        assert state.play is not None
        nxt = state.chapter + 1 if state.play.result == "won" else state.chapter
        return [pb.Command(start_chapter=pb.StartChapter(chapter=nxt)),
                pb.Command(abandon=pb.Abandon())]
    p = state.play
    assert p is not None
    ix = index(state)
    out: list[Any] = []
    if p.phase == "day":
        card = ix.card(p.nested or p.present, p.advanced)
        for i, option in enumerate(card["options"]):
            if not engine.why_unavailable(p, ix, option):
                out.append(pb.Command(choose=pb.ChooseOption(option=i)))
    elif p.phase == "night":
        goal = engine.goal_side(ix, p.chapter, p.advanced)
        cap = goal.get("cap", 0)
        for r, n in goal["submit"].items():
            if p.res[r] and p.submitted.get(r, 0) < n and (not cap or p.tonight < cap):
                out.append(pb.Command(submit=pb.Submit(resource=ENUM_OF[r], count=1)))
        out.append(pb.Command(end_night=pb.EndNight()))
    elif p.phase == "combat":
        if p.res["energy"]:
            out.append(pb.Command(boost=pb.Boost(energy=1)))
        out.append(pb.Command(fight=pb.Fight()))
        if engine.shield_cards_left(p, ix):  # or keep them for a later combat
            out.append(pb.Command(fight=pb.Fight(keep_shield_cards=True)))
    elif p.phase == "moving":
        for d, side in SIDES.items():
            if can_step(p, ix, side):
                out.append(pb.Command(move=pb.Move(direction=d)))
                if climbs_for_energy(p, ix, side):  # or pay 1 HP instead
                    out.append(pb.Command(move=pb.Move(direction=d, pay_hp=True)))
        out.append(pb.Command(stop=pb.StopMoving()))
    elif p.phase == "peek":
        out += [pb.Command(peek=pb.Peek(delay=False)), pb.Command(peek=pb.Peek(delay=True))]
    elif p.phase == "room":  # only a discard of Knowledge or Energy makes room
        return [pb.Command(discard=pb.Discard(resource=ENUM_OF[r], count=1))
                for r in ("knowledge", "energy") if not engine.room_leaves_unpaid(p, ix, r, 1)]
    elif p.phase == "meal":
        out += night_meals(p)
    elif p.phase == "picking":
        resource, price = engine.PRICE[p.picking]
        if p.res[resource] >= price:
            out += [pb.Command(pick=pb.Pick(card=c)) for c in p.offers[p.picking]]
        out.append(pb.Command(done_picking=pb.DonePicking()))
    out += free_actions(p, ix)
    return out


def night_meals(p: Play) -> list[Any]:
    """The ways to pay the mountain's night meal now: Food may have been converted away
    since the night began, and then only 1 HP pays it."""
    out = [pb.Command(night_meal=pb.NightMeal(pay_hp=False))] if p.res["food"] else []
    return out + [pb.Command(night_meal=pb.NightMeal(pay_hp=True))]


def free_actions(p: Play, ix: Index) -> list[Any]:
    out: list[Any] = []
    for r in RESOURCES:
        if r != "fear" and p.res[r]:
            out.append(pb.Command(discard=pb.Discard(resource=ENUM_OF[r], count=1)))
    for i, conv in enumerate(engine.conversions(p, ix)):
        if engine.can_pay(p, conv["from"]):
            out.append(pb.Command(convert=pb.Convert(conversion=i)))
    for quiz in p.quizzes:
        for choice in ix.extra[quiz]["answers"]:
            out.append(pb.Command(answer=pb.AnswerQuiz(quiz=quiz, answer=choice)))
    for item in p.items:
        if ix.items[item]["kind"] in ("sell", "consume"):
            out.append(pb.Command(use_item=pb.UseItem(card=item)))
    for card in p.supports:
        data = ix.supports[card]
        usable = data["kind"] == "heal" or (data["kind"] == "spell" and p.phase == "combat")
        if usable and engine.can_pay(p, data["cost"]):
            out.append(pb.Command(cast=pb.CastSpell(card=card)))
    return out


def can_step(p: Play, ix: Index, side: str) -> bool:
    """Whether a step that way is accepted. Toward a face-down tile only Eila's own grid is
    looked at (a wall on the tile's side is found by turning it over), so the offer tells
    nothing of what the tile hides."""
    m = p.mine
    assert m is not None
    dx, dy = engine.STEPS[side]
    if not (0 <= m.x + dx < 6 and 0 <= m.y + dy < 6):
        return False
    return not engine.blocks(engine.known_edge(Table(p, ix, ReplayDice([]), []), side), p.items)


def climbs_for_energy(p: Play, ix: Index, side: str) -> bool:
    """A cliff that way, no rope and some Energy: Energy or HP is the player's choice. Behind
    a face-down tile a cliff may lie: the choice is offered before it turns over, whatever it
    hides, so that neither its offer nor its absence tells what is there."""
    if "I12" in p.items or not p.res["energy"]:
        return False
    m = p.mine
    assert m is not None
    dx, dy = engine.STEPS[side]
    if not m.faceup[engine.tile_index(m.x + dx, m.y + dy)]:
        return True
    return engine.edge(Table(p, ix, ReplayDice([]), []), m.x, m.y, side) == "cliff"
