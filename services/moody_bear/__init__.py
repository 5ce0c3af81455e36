"""Moody Bear Kingdom: 3 to 5 players in hidden teams racing for gems, with Cancel chains."""

from __future__ import annotations

from arbiter.moody_bear.v1 import moody_bear_pb2

from services.core.decider import Game

from .bots import BOTS
from .privacy import redact, redeal, view
from .rules import deadlines, decide, legal_actions, outcome, setup, to_act
from .state import State, evolve

GAME: Game[State] = Game(
    name="moody_bear",
    title="Moody Bear Kingdom",
    pb=moody_bear_pb2,
    min_seats=3,
    max_seats=5,
    setup=setup,
    decide=decide,
    evolve=evolve,
    view=view,
    redact=redact,
    to_act=to_act,
    legal_actions=legal_actions,
    outcome=outcome,
    bots=dict(BOTS),
    standard_seats=5,
    default_bot="keeper",
    redeal=redeal,
    deadlines=deadlines,
)

__all__ = ["GAME"]
