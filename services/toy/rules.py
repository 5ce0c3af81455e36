"""Take the last counter: the rules as a pure decider.

Two seats take 1 to 3 counters in turn from a pile; whoever takes the last one wins, and
scores its stake. Each seat is dealt a secret stake from 1 to 3, shown to the others once the
game is over. Random draws at setup decide who starts and deal the stakes; they are recorded
in the opening events, as every random outcome must be. The server may issue a system
command `timeout`, naming the turn by the pile it began with: the seat to act takes one
counter (a turn already over refuses it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.core.decider import Decision, MalformedCommand, Outcome, Rng, RuleError, Seat
from services.toy.schema import pb
from services.toy.state import SEATS, STAKES, State, evolve

PILE = 15  # the pile of a default game
MOST = 3  # counters a seat may take in one turn


def setup(options: Any, seats: Sequence[Seat], rng: Rng) -> list[Any]:
    if options.pile < 0 or options.timeout_seconds < 0:
        raise MalformedCommand("BAD_OPTIONS", "the pile and the timeout cannot be negative")
    opened = pb.Opened(pile=options.pile or PILE, first=rng.below(SEATS),
                       timeout_seconds=options.timeout_seconds)
    dealt = [pb.Event(dealt=pb.Dealt(seat=seat, stake=rng.choice(STAKES)))
             for seat in range(SEATS)]
    return [pb.Event(opened=opened), *dealt]


def decide(state: State, seat: int | None, command: Any, rng: Rng) -> list[Any]:
    """The events of a command, built with core's Decision (decision.state is the state
    after the events emitted so far, for a rule that depends on them)."""
    decision = Decision(state, evolve)
    if command.WhichOneof("kind") == "timeout":
        if seat is not None:
            raise RuleError("SYSTEM_ONLY", "only the server may time a seat out")
        if command.timeout != state.pile:
            raise RuleError("STALE_TIMEOUT", "that turn is over")
        decision.emit(pb.Event(took=pb.Took(seat=state.turn, count=1, forced=True)))
        return decision.events
    if not 1 <= command.take <= MOST:
        raise MalformedCommand("BAD_COUNT", "take 1, 2 or 3 counters", "take")
    if command.take > state.pile:
        raise RuleError("TOO_MANY", f"only {state.pile} counters are left")
    decision.emit(pb.Event(took=pb.Took(seat=state.turn, count=command.take)))
    return decision.events


def to_act(state: State) -> list[int]:
    return [] if state.winner is not None else [state.turn]


def legal_actions(state: State, seat: int) -> list[Any]:
    """Ready-to-send commands: none for a seat that may not act now, or once the game is over."""
    if seat not in to_act(state):
        return []
    return [pb.Command(take=n) for n in range(1, min(MOST, state.pile) + 1)]


def outcome(state: State) -> Outcome | None:
    if state.winner is None:
        return None
    scores = tuple(stake if seat == state.winner else 0 for seat, stake in enumerate(state.stakes))
    return Outcome((state.winner,), scores, reason="took the last")


def deadlines(state: State) -> list[tuple[float, Any]]:
    """With a timeout option, the server takes a counter for a seat that waits too long."""
    if state.timeout and state.winner is None:
        return [(float(state.timeout), pb.Command(timeout=state.pile))]
    return []
