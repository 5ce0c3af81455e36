"""Search bots: they choose a command by playing the game out from what their seat may know.

A search bot never reads what its seat cannot see. It samples worlds consistent with its
view (the game's `redeal` re-deals the unseen parts from the bot's own rng), draws chance
from that same rng (never the game's seeded one, which knows the future draws), and plays
each world out with the real rules.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """What one move may spend: CPU seconds of the searching thread (time.thread_time), and
    optionally a cap on playouts. A repeatable search (a test's) sets cpu_seconds to
    math.inf and counts playouts only: a time budget depends on the machine."""

    cpu_seconds: float
    playouts: int | None = None

    def spent(self, started: float, playouts: int) -> bool:
        """Whether a search begun at thread time `started` that has run `playouts` playouts
        must stop now."""
        if self.playouts is not None and playouts >= self.playouts:
            return True
        return time.thread_time() - started >= self.cpu_seconds
