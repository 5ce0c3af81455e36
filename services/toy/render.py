"""Take the last counter for a terminal (`arbiter play`): the pile, each seat's stake as the
viewer may know it, and whose turn it is."""

from __future__ import annotations

from typing import Any


def render(view: Any, colour: bool = True) -> str:
    pile = "o" * view.pile
    seats = [f"seat {place}: took {player.taken}, stake "
             f"{player.stake if player.HasField('stake') else 'secret'}"
             for place, player in enumerate(view.players)]
    if view.outcome.winners:
        return "\n".join([pile or "(empty)", *seats, f"won by seat {view.outcome.winners[0]}"])
    turn = ", ".join(f"seat {s}" for s in view.to_act)
    return "\n".join([f"{pile} ({view.pile})", *seats, f"to act: {turn}"])
