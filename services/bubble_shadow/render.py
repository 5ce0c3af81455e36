"""Bubble and Shadow's table as plain text for the terminal (`arbiter play`, `arbiter replay`):
everything in words and numbers, nothing told by colour alone."""

from __future__ import annotations

from typing import Any

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as bs

from services.core.happened import listed, named, seat_label


def render(view: Any, colour: bool = True) -> str:
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
        lines.append(f"  {seat_label(view, p.seat)}: front {tokens(p.front)}; behind {behind}; "
                     f"{p.hand_count} pacts in hand; {p.soul} Soul")
        if p.hand:
            lines.append("    hand: " + listed([pact(c) for c in p.hand]))
    if view.HasField("pending") and view.pending.HasField("card"):
        lines.append(f"pending: {pact(view.pending.card)} from seat {view.pending.magician} "
                     f"to seat {view.pending.mortal}")
    return "\n".join(lines)
