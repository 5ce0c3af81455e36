"""Take the last counter: the template game, laid out as every game is (docs/adding-a-game.md).

It is not in services/games.py, so the server does not offer it; the workers' tests add it
with ARBITER_EXTRA_GAMES="toy=services.toy", and the conformance suite plays it
(tests/conformance/test_template.py).
"""

from __future__ import annotations

from services.core.decider import Game
from services.core.happened import marked
from services.toy import render as table
from services.toy import rules, view
from services.toy.bots import BOTS
from services.toy.metrics import observe
from services.toy.schema import pb
from services.toy.state import State, evolve, start
from services.toy.words import describe

GAME: Game[State] = Game(
    name="toy",
    title="Take the last counter",
    pb=pb,
    min_seats=2,
    max_seats=2,
    setup=rules.setup,
    start=start,
    decide=rules.decide,
    evolve=evolve,
    show=view.show,
    redact=marked(view.redact),
    describe=describe,
    render=table.render,
    to_act=rules.to_act,
    legal_actions=rules.legal_actions,
    outcome=rules.outcome,
    bots=BOTS,
    default_bot="random",
    observe=observe,
    deadlines=rules.deadlines,
)
