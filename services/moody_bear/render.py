"""Moody Bear Kingdom's table as plain text for the terminal (`arbiter play`, `arbiter replay`):
everything in words and numbers, nothing told by colour alone."""

from __future__ import annotations

from typing import Any

from arbiter.moody_bear.v1 import moody_bear_pb2 as mb

from services.core.happened import listed, named, seat_label


def render(view: Any, colour: bool = True) -> str:
    def cards(values: Any) -> str:
        return listed([named(mb.Card, c) for c in values]) if len(values) else "none"

    lines = [f"phase {named(mb.Phase, view.phase)}, seat {view.turn}'s turn; "
             f"deck {view.deck_size}; discard {cards(list(view.discard)[-3:])} (latest)"]
    for p in view.players:
        team = named(mb.Team, p.team) if p.team else "unknown team"
        lines.append(f"  {seat_label(view, p.seat)}: {p.hand_size} cards, {team}"
                     + (f", revealed {cards(p.revealed_hand)}" if p.revealed_hand else ""))
    if view.HasField("seat"):
        lines.append(f"your team: {named(mb.Team, view.team) if view.team else 'unknown'}; "
                     f"your hand: {cards(view.hand)}")
        if view.known_top:
            lines.append(f"the deck's top as you arranged it: {cards(view.known_top)}")
    if view.window.stack:
        stack = [f"{named(mb.EntryKind, e.kind)} by seat {e.seat}" for e in view.window.stack]
        lines.append("response window: " + "; ".join(stack))
    return "\n".join(lines)
