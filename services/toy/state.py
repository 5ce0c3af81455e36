"""Take the last counter: the state of a game, and the two functions that fold events into it.

The state is a frozen value (evolve returns a new one), so the conformance suite can compare a
state with a copy taken before decide and evolve ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class State:
    pile: int
    turn: int
    winner: int | None = None
    timeout: int = 0  # seconds a seat has before the server takes one counter for it


def start(event: Any) -> State:
    """The game the opening event sets up."""
    opened = event.opened
    return State(opened.pile, opened.first, timeout=opened.timeout_seconds)


def evolve(state: State, event: Any) -> State:
    """Apply what the event records: no rule runs here and nothing is drawn."""
    pile = state.pile - event.took.count
    return State(pile, 1 - state.turn, event.took.seat if pile == 0 else None, state.timeout)
