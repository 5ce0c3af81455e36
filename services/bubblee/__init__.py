"""Bubblee Pop: what the platform imports (GAME)."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2

from services.bubblee import rules
from services.bubblee.bots import BOTS
from services.bubblee.metrics import observe
from services.core.decider import Game

GAME: Game[rules.State] = Game(
    name="bubblee",
    title="Bubblee Pop",
    pb=bubblee_pb2,
    min_seats=1,
    max_seats=2,
    standard_seats=2,  # a duel; solo (1 seat) is chosen with Options.solo_level
    setup=rules.setup,
    decide=rules.decide,
    evolve=rules.evolve,
    view=rules.view,
    redact=rules.redact,
    to_act=rules.to_act,
    legal_actions=rules.legal_actions,
    outcome=rules.outcome,
    bots=BOTS,
    default_bot="greedy",
    redeal=None,  # nothing is hidden in Bubblee Pop
    observe=observe,
)
