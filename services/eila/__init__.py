"""Eila and Something Shiny: a solo campaign (chapters 0-5) whose content is authored data."""

from __future__ import annotations

from arbiter.eila.v1 import eila_pb2

from services.core.decider import Game
from services.core.happened import marked
from services.eila import bots, rules
from services.eila.view import describe, view

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
    redact=marked(rules.redact),
    describe=describe,
    to_act=rules.to_act,
    legal_actions=rules.legal_actions,
    outcome=rules.outcome,
    bots={"random": bots.random_bot, "random_options": bots.random_options_bot,
          "greedy": bots.greedy_bot},
    default_bot="greedy",
    redeal=rules.redeal,
)
