"""Take the last counter for a terminal (`arbiter play`): the pile, and whose turn it is."""

from __future__ import annotations

from typing import Any


def render(view: Any, colour: bool = True) -> str:
    pile = "o" * view.pile
    if view.outcome.winners:
        return f"{pile or '(empty)'}\nwon by seat {view.outcome.winners[0]}"
    turn = ", ".join(f"seat {s}" for s in view.to_act)
    return f"{pile} ({view.pile})\nto act: {turn}"
