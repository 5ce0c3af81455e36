"""Take the last counter: the rules as a pure decider.

Two seats take 1 to 3 counters in turn from a pile; whoever takes the last one wins. A random
draw at setup decides who starts (recorded in the opening event, as every random outcome
must be). The server may issue a system command `timeout`, naming the turn by the pile it
began with: the seat to act takes one counter (a turn already over refuses it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.core.decider import MalformedCommand, Outcome, Rng, RuleError, Seat
from services.toy.schema import pb
from services.toy.state import State


def setup(options: Any, seats: Sequence[Seat], rng: Rng) -> list[Any]:
    pile = options.pile or 15
    return [pb.Event(opened=pb.Opened(pile=pile, first=rng.below(2),
                                      timeout_seconds=options.timeout_seconds))]


def decide(state: State, seat: int | None, command: Any, rng: Rng) -> list[Any]:
    kind = command.WhichOneof("kind")
    if kind is None:
        raise MalformedCommand("NO_COMMAND", "the command names no action")
    if kind == "timeout":
        if seat is not None:
            raise RuleError("SYSTEM_ONLY", "only the server may time a seat out")
        if command.timeout != state.pile:
            raise RuleError("STALE_TIMEOUT", "that turn is over")
        return [pb.Event(took=pb.Took(seat=state.turn, count=1, forced=True))]
    if not 1 <= command.take <= 3:
        raise MalformedCommand("BAD_COUNT", "take 1, 2 or 3 counters", "take")
    if command.take > state.pile:
        raise RuleError("TOO_MANY", f"only {state.pile} counters are left")
    return [pb.Event(took=pb.Took(seat=state.turn, count=command.take))]


def to_act(state: State) -> list[int]:
    return [] if state.winner is not None else [state.turn]


def legal_actions(state: State, seat: int) -> list[Any]:
    """Ready-to-send commands: none for a seat that may not act now, or once the game is over."""
    if seat not in to_act(state):
        return []
    return [pb.Command(take=n) for n in range(1, min(3, state.pile) + 1)]


def outcome(state: State) -> Outcome | None:
    return None if state.winner is None else Outcome((state.winner,), reason="took the last")


def deadlines(state: State) -> list[tuple[float, Any]]:
    """With a timeout option, the server takes a counter for a seat that waits too long."""
    if state.timeout and state.winner is None:
        return [(float(state.timeout), pb.Command(timeout=state.pile))]
    return []

