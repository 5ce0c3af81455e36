"""Eila and Something Shiny: a solo campaign (chapters 0-5) whose content is authored data."""

from __future__ import annotations

from arbiter.eila.v1 import eila_pb2

from services.core.decider import Game
from services.eila import bots, legacy, rules
from services.eila.view import view

GAME: Game = Game(
    name="eila",
    title="Eila and Something Shiny",
    pb=eila_pb2,
    min_seats=1,
    max_seats=1,
    setup=rules.setup,
    decide=rules.decide,
    evolve=rules.evolve,
    view=view,
    redact=rules.redact,
    to_act=rules.to_act,
    legal_actions=rules.legal_actions,
    outcome=rules.outcome,
    bots={"random": bots.random_bot, "random_options": bots.random_options_bot,
          "greedy": bots.greedy_bot},
    default_bot="greedy",
    # Nothing is hidden in the state: a shuffled deck's cards and the face-down tiles are
    # drawn as they are revealed, so there is nothing to re-deal.
    redeal=None,
    recheck=legacy.recheck,
)
