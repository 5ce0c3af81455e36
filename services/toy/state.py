"""Take the last counter: the state of a game, and the two functions that fold events into it.

The state is a frozen value (evolve returns a new one), so the conformance suite can compare a
state with a copy taken before decide and evolve ran. Each evolver applies the facts its event
records (who took how many, which stake was dealt to whom): it neither recomputes nor draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.core.frozen import replace

SEATS = 2
STAKES = (1, 2, 3)  # the stakes a seat may be dealt (the rules deal them, redeal too)


@dataclass(frozen=True)
class State:
    pile: int
    turn: int
    # Each seat's secret stake (what it scores if it wins); 0 until it is dealt.
    stakes: tuple[int, ...] = (0,) * SEATS
    taken: tuple[int, ...] = (0,) * SEATS  # counters each seat has taken so far
    winner: int | None = None
    timeout: int = 0  # seconds a seat has before the server takes one counter for it


def start(event: Any) -> State:
    """The game the opening event sets up (the stakes are dealt by the events after it)."""
    opened = event.opened
    return State(opened.pile, opened.first, timeout=opened.timeout_seconds)


def evolve(state: State, event: Any) -> State:
    """Apply what the event records: no rule runs here and nothing is drawn."""
    kind = event.WhichOneof("kind")
    if kind == "dealt":
        return replace(state, stakes=put(state.stakes, event.dealt.seat, event.dealt.stake))
    took = event.took
    pile = state.pile - took.count
    return replace(state, pile=pile, turn=(took.seat + 1) % SEATS,
                   taken=put(state.taken, took.seat, state.taken[took.seat] + took.count),
                   winner=took.seat if pile == 0 else None)


def put(values: tuple[int, ...], seat: int, value: int) -> tuple[int, ...]:
    """`values` with the seat's entry replaced."""
    return values[:seat] + (value,) + values[seat + 1:]
