"""Take the last counter's bots: they see their seat's view and the legal commands only."""

from __future__ import annotations

from typing import Any

from services.core.decider import Rng

GUESS = 4  # the other seat's reach is hidden: leave a multiple of 4, safe against a reach of 3


def random_bot(view: Any, legal: list[Any], rng: Rng) -> Any:
    return rng.choice(legal)


def careful_bot(view: Any, legal: list[Any], rng: Rng) -> Any:
    """Take the last counters when it can; else leave a multiple of four when it can."""
    for c in legal:
        if c.take == view.pile or (view.pile - c.take) % GUESS == 0:
            return c
    return rng.choice(legal)


BOTS = {"random": random_bot, "careful": careful_bot}
