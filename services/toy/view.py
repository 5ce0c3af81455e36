"""Take the last counter: what a seat sees. Nothing is hidden, so every seat (and a
spectator) sees the pile, and every event whole."""

from __future__ import annotations

from typing import Any

from services.core.log import outcome_to_pb
from services.toy.rules import outcome, to_act
from services.toy.schema import pb
from services.toy.state import State


def view(state: State, seat: int | None) -> Any:
    v = pb.View(pile=state.pile, to_act=list(to_act(state)))
    if seat is not None:
        v.seat = seat
    result = outcome(state)
    if result is not None:
        v.outcome.CopyFrom(outcome_to_pb(result))
    return v


def redact(event: Any, seat: int | None) -> Any:
    """A game with hidden information returns a copy with the hidden fields cleared (or
    None when the seat may not know the event happened)."""
    return event
