"""Plain-text tables of the games without a drawing of their own (`arbiter play`).

Everything is written in words and numbers: nothing relies on colour.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.core.happened import listed, named


def _seat(view: Any, seat: int) -> str:
    return f"seat {seat}" + (" (you)" if view.HasField("seat") and view.seat == seat else "")


def moody_bear(view: Any, colour: bool = True) -> str:
    from arbiter.moody_bear.v1 import moody_bear_pb2 as mb

    def cards(values: Any) -> str:
        return listed([named(mb.Card, c) for c in values]) if len(values) else "none"

    lines = [f"phase {named(mb.Phase, view.phase)}, seat {view.turn}'s turn; "
             f"deck {view.deck_size}; discard {cards(list(view.discard)[-3:])} (latest)"]
    for p in view.players:
        team = named(mb.Team, p.team) if p.team else "unknown team"
        lines.append(f"  {_seat(view, p.seat)}: {p.hand_size} cards, {team}"
                     + (f", revealed {cards(p.revealed_hand)}" if p.revealed_hand else ""))
    if view.HasField("seat"):
        lines.append(f"your team: {named(mb.Team, view.team) if view.team else 'unknown'}; "
                     f"your hand: {cards(view.hand)}")
    if view.window.stack:
        stack = [f"{named(mb.EntryKind, e.kind)} by seat {e.seat}" for e in view.window.stack]
        lines.append("response window: " + "; ".join(stack))
    return "\n".join(lines)


def shadow_council(view: Any, colour: bool = True) -> str:
    from arbiter.shadow_council.v1 import shadow_council_pb2 as sc

    lines = [f"round {view.round} of {view.rounds}, {named(sc.Phase, view.phase)} phase"
             + (f", event {named(sc.GlobalEvent, view.event)}" if view.event else ""),
             f"zones: military {view.military}, economy {view.economy}, strategy "
             f"{view.strategy}, shadow alley {view.shadow_alley}; deck {view.deck_size}"]
    for s in view.seats:
        state = "" if s.alive else ", out"
        shadow = f", shadow {named(sc.Identity, s.shadow_identity)}" if s.shadow_identity \
            else ""
        lines.append(f"  {_seat(view, s.seat)}{' (AI)' if s.ai else ''}: "
                     f"{named(sc.Identity, s.public_identity)}, {s.gold} gold, "
                     f"{s.hand_size} cards{', guarded' if s.guarded else ''}{shadow}{state}")
    if view.HasField("seat"):
        hand = listed([named(sc.Card, c) for c in view.hand]) if view.hand else "empty"
        lines.append(f"your hand: {hand}; clues known: {len(view.clues)}")
    return "\n".join(lines)


def bubble_shadow(view: Any, colour: bool = True) -> str:
    from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as bs

    def tokens(items: Any) -> str:
        return listed([f"{c.count} {named(bs.Token, c.token)}" for c in items]) \
            if len(items) else "none"

    def pact(card: Any) -> str:
        ends = " / ".join(f"{e.quantity} {named(bs.Token, e.token)}" for e in card.ends)
        return f"pact {card.id} ({ends}{', blank' if card.blank else ''})"

    lines = [f"round {view.round}, {named(bs.Stage, view.stage)}; Magician: seat "
             f"{view.magician}; bag {view.bag_count}",
             "public pacts: " + (listed([pact(c) for c in view.public_pacts]) or "none")]
    for p in view.players:
        behind = tokens(p.behind) if p.behind else f"{p.behind_count} hidden"
        lines.append(f"  {_seat(view, p.seat)}: front {tokens(p.front)}; behind {behind}; "
                     f"{p.hand_count} pacts in hand; {p.soul} Soul")
        if p.hand:
            lines.append("    hand: " + listed([pact(c) for c in p.hand]))
    if view.HasField("pending") and view.pending.HasField("card"):
        lines.append(f"pending: {pact(view.pending.card)} from seat {view.pending.magician} "
                     f"to seat {view.pending.mortal}")
    return "\n".join(lines)


def eila(view: Any, colour: bool = True) -> str:
    lines = [f"chapter {view.chapter}: {view.chapter_title}; day {view.day}, HP {view.hp}/"
             f"{view.max_hp}, {view.phase}"]
    if view.storage:
        lines.append("storage: " + (", ".join(f"{n} {r}" for r, n in sorted(view.storage.items())
                                              if n) or "empty"))
    if view.goal.text:
        lines.append(f"goal: {view.goal.text}")
    for kind, held in (("items", view.item_cards), ("support cards", view.support_cards),
                       ("habits", view.habit_cards)):
        if held:
            lines.append(f"{kind}: " + "; ".join(
                f"{c.title}" + (f" ({c.text})" if c.text else "") for c in held))
    if view.HasField("combat"):
        c = view.combat
        lines.append(f"combat with {c.enemy} ({c.enemy_value}): your total {c.total}")
    if view.present.id:
        lines.append(f"now: {view.present.title}: {view.present.text}")
        for o in view.present.options:
            why = "" if o.available else f" [not available: {o.why_not}]"
            lines.append(f"  {o.label}. {o.text}{why}")
    if view.ending:
        lines.append(view.ending)
    return "\n".join(lines)


BOARDS: dict[str, Callable[..., str]] = {
    "moody_bear": moody_bear, "shadow_council": shadow_council,
    "bubble_shadow": bubble_shadow, "eila": eila,
}
