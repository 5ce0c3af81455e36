"""Take the last counter: what a seat sees. Nothing is hidden, so every seat (and a
spectator) sees the pile, and every event whole."""

from __future__ import annotations

from typing import Any

from services.toy.schema import pb
from services.toy.state import State


def show(state: State, seat: int | None) -> Any:
    """The game's own fields of a View; the platform fills seat, to_act and outcome."""
    return pb.View(pile=state.pile)


def redact(event: Any, seat: int | None) -> Any:
    """A game with hidden information returns a copy with the hidden fields cleared (or
    None when the seat may not know the event happened)."""
    return event
