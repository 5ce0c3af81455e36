"""Take the last counter's bots: they see their seat's view and the legal commands only."""

from __future__ import annotations

from typing import Any

from services.core.decider import Rng


def random_bot(view: Any, legal: list[Any], rng: Rng) -> Any:
    return rng.choice(legal)


def perfect_bot(view: Any, legal: list[Any], rng: Rng) -> Any:
    """Leave a multiple of four when it can."""
    for c in legal:
        if (view.pile - c.take) % 4 == 0:
            return c
    return rng.choice(legal)


BOTS = {"random": random_bot, "perfect": perfect_bot}
