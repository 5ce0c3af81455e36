"""Shadow Council's table as plain text for the terminal (`arbiter play`, `arbiter replay`):
everything in words and numbers, nothing told by colour alone."""

from __future__ import annotations

from typing import Any

from arbiter.shadow_council.v1 import shadow_council_pb2 as sc

from services.core.happened import listed, named, seat_label


def render(view: Any, colour: bool = True) -> str:
    lines = [f"round {view.round} of {view.rounds}, {named(sc.Phase, view.phase)} phase"
             + (f", event {named(sc.GlobalEvent, view.event)}" if view.event else ""),
             f"zones: military {view.military}, economy {view.economy}, strategy "
             f"{view.strategy}, shadow alley {view.shadow_alley}; deck {view.deck_size}"]
    for s in view.seats:
        state = "" if s.alive else ", out"
        shadow = f", shadow {named(sc.Identity, s.shadow_identity)}" if s.shadow_identity \
            else ""
        lines.append(f"  {seat_label(view, s.seat)}{' (AI)' if s.ai else ''}: "
                     f"{named(sc.Identity, s.public_identity)}, {s.gold} gold, "
                     f"{s.hand_size} cards{', guarded' if s.guarded else ''}{shadow}{state}")
    if view.HasField("seat"):
        hand = listed([named(sc.Card, c) for c in view.hand]) if view.hand else "empty"
        lines.append(f"your hand: {hand}; clues known: {len(view.clues)}")
    return "\n".join(lines)
