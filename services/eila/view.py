"""What the player sees: the present card with its options (and why one is unavailable),
storage, HP, day, items, the decks as sets (never the upcoming deck's hidden order); and
`redeal`, which deals anew what the player cannot see (the leak tests, the planner)."""

from __future__ import annotations

from typing import Any

from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import Rng
from services.eila import engine, facts
from services.eila.data import RESOURCES, Index, Json
from services.eila.state import Play, State, index


def describe_effect(effect: Json, ix: Index) -> str:
    (kind, arg), = effect.items()
    if kind in ("gain", "lose"):
        sign = "+" if kind == "gain" else "-"
        return ", ".join(f"{sign}{n} {r}" for r, n in arg.items())
    simple = {
        "heal": lambda a: f"gain {a} HP", "hurt": lambda a: f"lose {a} HP",
        "blue": lambda a: f"{ix.name(a)} to the Future",
        "red": lambda a: f"{ix.name(a)} on top of the upcoming deck",
        "habit": lambda a: f"habit {ix.name(a)} on top of the upcoming deck",
        "keep_habit": lambda a: "keep this habit", "item": lambda a: f"acquire {ix.name(a)}",
        "drop_item": lambda a: f"return {ix.name(a)}",
        "support": lambda a: f"acquire support card {ix.name(a)}",
        "ending": lambda a: f"win: alternative ending {a}",
        "quiz": lambda a: f"draw a {a} quiz card", "flag": lambda a: "",
        "end_combat": lambda a: "", "move": lambda a: f"move by 0-{a} grids",
        "trigger_location": lambda a: "trigger the event located there",
        "cover": lambda a: "cover this location", "offer": lambda a: f"buy {a}",
        "location_action": lambda a: "take one action of your location",
        "go": lambda a: f"go on to {ix.name(a)}",
    }
    if kind in simple:
        return simple[kind](arg)
    if kind == "combat":
        weak = "".join(f" ({w['value']} {describe_condition(w['if'], ix)})"
                       for w in arg.get("weak", []))
        win = "; ".join(filter(None, (describe_effect(e, ix) for e in arg["win"]))) or "nothing"
        lose = "; ".join(filter(None, (describe_effect(e, ix) for e in arg["lose"]))) or "nothing"
        again = ", fight on despite injuries" if arg.get("repeat") else ""
        return f"fight {arg['enemy']} ({arg['value']}{weak}{again}): win: {win}; lose: {lose}"
    if kind == "if_item":
        inner = "; ".join(describe_effect(e, ix) for e in arg["then"])
        return f"if you possess {ix.name(arg['item'])}: {inner}"
    return kind


def mine_view(p: Play, ix: Index) -> Any:
    """Face-up tiles in full; face-down tiles show nothing but that they are face down."""
    m = p.mine
    assert m is not None
    mv = pb.MineView(x=m.x, y=m.y, moves_left=p.moves)
    for pos, tile in enumerate(m.tiles):
        tx, ty = pos % 3, pos // 3
        if not m.faceup[pos]:
            mv.face_down.append(f"{tx},{ty}")
            continue
        for i, cell in enumerate(ix.extra[tile]["cells"]):
            feats = ",".join(f"{f}:{cell[f]}" for f in ("wall", "hidden", "cliff") if cell.get(f))
            if cell.get("dark"):
                feats = (feats + ",dark").lstrip(",")
            loc = cell.get("loc") or 0
            mv.cells.append(pb.MineCell(x=tx * 2 + i % 2, y=ty * 2 + i // 2, tile=tile,
                                        feature=feats, location=loc,
                                        shelter=bool(cell.get("shelter")),
                                        covered=loc in m.covered))
    return mv


def describe_condition(cond: Json, ix: Index) -> str:
    (kind, arg), = cond.items()
    if kind == "no":
        return f"if you have no {arg}"
    return f"if you possess {ix.name(arg)}"


def describe_option(option: Json, ix: Index, placed: bool = True) -> str:
    parts = [describe_effect(e, ix) for e in option["effects"]]
    where = {"future": "to the Future", "past": "to the Past", "deck": "back to its deck"}
    if placed:  # a location card or location event is not placed: it stays where it is
        parts.append(f"card {where[option['place']]}")
    return f"{option['text']} ({'; '.join(p for p in parts if p)})"


def card_view(card: Json, play: Play | None, ix: Index) -> Any:
    cv = pb.CardView(id=card["id"], title=card.get("title", card.get("name", "")),
                     text=card.get("text", ""), color=card.get("color", ""))
    for i, option in enumerate(card.get("options", [])):
        why = engine.why_unavailable(play, ix, option) if play is not None else ""
        text = describe_option(option, ix, card.get("color") != "location")
        cv.options.append(pb.OptionView(label=engine.letter(i), text=text,
                                        available=not why, why_not=why))
    return cv


def held(thing: Json | None, ref: str, colour: str) -> Any:
    """An item or a support card the player holds: its name and what it does."""
    if thing is None:
        return pb.CardView(id=ref, title=ref, color=colour)
    return pb.CardView(id=ref, title=thing.get("name", ref), text=thing.get("text", ""),
                       color=colour)


def next_chapter(state: State) -> int:
    """The chapter being played, or about to be: between chapters, the next one after a win
    and the same one again after a loss."""
    p = state.play
    if p is None:
        return state.chapter
    if state.phase == "between" and p.result == "won":
        return p.chapter + 1
    return p.chapter


def show(state: State, seat: int | None) -> Any:
    ix = index(state)
    v = pb.View(phase=state.phase, chapter=state.chapter, advanced=state.advanced)
    v.log.extend(state.log)
    v.save_box.extend(state.box)
    for chapter, won, ending, day, reason in state.history:
        v.history.append(pb.ChapterResult(chapter=chapter, won=won, ending=ending, day=day,
                                          reason=reason))
    opening = ix.content.chapters.get(next_chapter(state), {})
    v.chapter_title = opening.get("title", "")
    v.prologue = opening.get("prologue", {}).get("text", "")
    p = state.play
    if p is None:
        return v
    if state.phase == "playing":
        v.phase = p.phase
    v.day, v.hp, v.max_hp, v.time_track = p.day, p.hp, p.max_hp, p.track
    for r in RESOURCES:
        v.storage[r] = p.res[r]
    if p.present:
        v.present.CopyFrom(card_view(ix.card(p.nested or p.present, p.advanced), p, ix))
    goal = engine.goal_side(ix, p.chapter, p.advanced)
    v.goal.text = goal["text"]
    v.goal.cap = goal.get("cap", 0)
    v.goal.submitted_tonight = p.tonight
    for r, n in goal["submit"].items():
        v.goal.needed[r] = n
        v.goal.submitted[r] = p.submitted.get(r, 0)
    if p.combat is not None and p.phase == "combat":
        c = p.combat
        v.combat.CopyFrom(pb.CombatView(
            enemy=c.enemy, enemy_value=c.value, red=c.red, red_shield=c.red_shield,
            green=c.green, green_shield=c.green_shield, boost=c.boost,
            total=c.total("S14" in p.supports), shields=engine.shield_count(p, ix),
            shield_cards_left=engine.shield_cards_left(p, ix),
            repeats=bool(c.spec.get("repeat"))))
    for i, conv in enumerate(engine.conversions(p, ix)):
        v.conversions.append(pb.ConversionView(index=i, text=conv["text"],
                                               available=engine.can_pay(p, conv["from"])))
    v.items.extend(p.items)
    v.supports.extend(p.supports)
    v.habits.extend(p.habits)
    v.item_cards.extend(held(ix.items.get(i), i, "item") for i in p.items)
    v.support_cards.extend(held(ix.supports.get(s), s, "support") for s in p.supports)
    v.habit_cards.extend(card_view(ix.card(h), None, ix) if h in ix.cards
                         else held(None, h, "habit") for h in p.habits)
    v.upcoming_count = len(p.upcoming)
    v.upcoming_top.extend(p.upcoming[: p.known])
    end = len(p.upcoming) - (1 if p.bottom else 0)
    v.upcoming_rest.extend(sorted(p.upcoming[p.known:end]))
    v.upcoming_bottom = p.bottom
    v.future.extend(p.future)
    v.past.extend(p.past)
    v.pending.extend(filter(None, (describe_effect(e, ix) for e in p.queue)))
    for quiz in p.quizzes:
        q = ix.extra[quiz]
        v.quizzes.append(pb.QuizView(id=quiz, question=q["question"], answers=q["answers"],
                                     reward=", ".join(describe_effect(e, ix) for e in q["reward"])))
    if p.mine is not None:
        v.mine.CopyFrom(mine_view(p, ix))
    for kind in ("contracts", "privileges"):
        for card in p.offers.get(kind, []):
            v.offers.append(card_view(ix.extra[card], None, ix))
    if p.location:
        v.location.CopyFrom(card_view(ix.extra[p.location], p, ix))
    if p.ending:
        v.ending = ix.content.chapter(p.chapter).get("endings", {}).get(p.ending, "")
    return v


def redact(event: Any, seat: int | None) -> Any:
    """Facts hold no hidden order; the decks' contents are left out as in the view. A legacy
    event's draws may give away the upcoming deck's order: of those only the log is shown.

    `hidden` names what is left out from the event's kind and the parts its facts name, so
    it is the same on every process whatever events it redacted before (a cache keyed on
    the event's shape alone mixed up events whose facts name different parts)."""
    out = pb.Event()
    out.CopyFrom(event)
    kind = out.WhichOneof("kind")
    hidden: list[str] = []
    if kind == "changed":
        hidden = facts.shown(out.changed)
    elif kind in ("started", "acted"):
        del getattr(out, kind).draws[:]
        hidden = [f"{kind}.draws"]
    del out.hidden[:]
    out.hidden.extend(hidden)
    return out


def redeal(state: State, seat: int, rng: Rng) -> State:
    """A world the player cannot tell from `state`: the upcoming cards whose order nobody
    knows and the quiz decks dealt anew from `rng`. Each pile keeps its cards (the player can
    tell them from what was seen: the chapter's cards less those revealed); only their order
    is dealt, after sorting, so that the result depends on `rng` alone and never on the
    arrangement it replaces. The face-down mine tiles lie nowhere yet: each is drawn from
    the pool when turned over, and the pool is shown (its order is no secret)."""
    new = state.clone()
    p = new.play
    if p is None:
        return new
    engine.forget_order(p)  # and face-down tiles a legacy game laid go back to their pool
    end = len(p.upcoming) - (1 if p.bottom else 0)
    p.upcoming[p.known:end] = rng.shuffled(sorted(p.upcoming[p.known:end]))
    p.quiz_decks = {deck: rng.shuffled(sorted(cards))
                    for deck, cards in sorted(p.quiz_decks.items())}
    p.decks = {deck: sorted(cards) for deck, cards in p.decks.items()}  # fetched by name
    return new
