"""Take the last counter: the template game, laid out as every game is (docs/adding-a-game.md).

It is not in services/games.py, so the server does not offer it; the workers' tests add it
with ARBITER_EXTRA_GAMES="toy=services.toy", and the shared suite plays it as one of its
games (tests/conformance/suite.py): gRPC, the terminal, golden logs, variants, leaks.
"""

from __future__ import annotations

from services.core.decider import Game, SuiteNeeds, Variant, exploring
from services.core.happened import marked
from services.toy import render as table
from services.toy import rules, view
from services.toy.bots import BOTS, perfect_bot
from services.toy.metrics import observe
from services.toy.schema import pb
from services.toy.state import State, evolve, start
from services.toy.words import catalog, describe, describe_command


def variants() -> list[Variant]:
    """Besides the default game: a longer pile with a timeout, so that deadlines are played."""
    return [Variant("timeout", 2, pb.Options(pile=21, timeout_seconds=30))]


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
    redeal=view.redeal,
    view_hidden=view.view_hidden,
    describe=describe,
    describe_command=describe_command,
    catalog=catalog,
    render=table.render,
    to_act=rules.to_act,
    legal_actions=rules.legal_actions,
    outcome=rules.outcome,
    bots=BOTS,
    default_bot="random",
    observe=observe,
    deadlines=rules.deadlines,
    variants=variants,
    # The perfect bot, now and then any legal command: games that reach every rule.
    playout=exploring(perfect_bot, 1, 3),
    # A game this short needs more playouts than the suite's 2 per table to check its
    # contract in enough states; its rulings are few.
    suite=SuiteNeeds(playout_seeds=12, rulings=(3, 3)),
)
