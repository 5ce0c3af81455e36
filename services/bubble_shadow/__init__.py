"""Bubble and Shadow (2-5 players): what the platform imports."""

from __future__ import annotations

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import rules, views
from services.bubble_shadow.bots import BOTS
from services.core.decider import Game

GAME: Game[rules.State] = Game(
    name="bubble_shadow",
    title="Bubble and Shadow",
    pb=pb,
    min_seats=2,
    max_seats=5,
    standard_seats=3,
    setup=rules.setup,
    decide=rules.decide,
    evolve=rules.evolve,
    view=views.view,
    redact=views.redact,
    to_act=rules.to_act,
    legal_actions=rules.legal_actions,
    outcome=rules.outcome,
    bots=BOTS,
    default_bot="greedy",
    redeal=views.redeal,
)
