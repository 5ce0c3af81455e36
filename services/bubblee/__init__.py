"""Bubblee Pop: what the platform imports (GAME)."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2

from services.bubblee import render as drawing
from services.bubblee import rules, view
from services.bubblee.bots import BOTS
from services.bubblee.metrics import FIGURES, observe
from services.bubblee.state import State, evolve, start
from services.bubblee.words import COMMAND_GROUPS, catalog, describe, describe_event
from services.core.decider import Game, SuiteNeeds, Variant, exploring
from services.core.happened import marked


def variants() -> list[Variant]:
    """The rulebook's variants and solo levels (conformance suite)."""
    o = bubblee_pb2.Options
    return [
        Variant("no powers", 2, o(no_powers=True)),
        Variant("1 extra black", 2, o(extra_blacks=1)),
        Variant("2 extra blacks", 2, o(extra_blacks=2)),
        Variant("opponent lines grant powers", 2, o(opponent_lines_grant_powers=True)),
        Variant("solo level 1", 1, o(solo_level=1)),
        Variant("solo level 20, 2 extra blacks", 1, o(solo_level=20, extra_blacks=2)),
    ]


GAME: Game[State] = Game(
    name="bubblee",
    title="Bubblee Pop",
    pb=bubblee_pb2,
    min_seats=1,
    max_seats=2,
    standard_seats=2,  # a duel; solo (1 seat) is chosen with Options.solo_level
    setup=rules.setup,
    start=start,
    decide=rules.decide,
    evolve=evolve,
    show=view.show,
    redact=marked(view.redact),
    describe=describe_event,
    render=drawing.render,
    describe_command=describe,
    command_groups=COMMAND_GROUPS,
    catalog=catalog,
    to_act=rules.to_act,
    legal_actions=rules.legal_actions,
    outcome=rules.outcome,
    bots=BOTS,
    default_bot="greedy",
    recheck=rules.recheck,  # a solo game set up before the levels were reordered
    redeal=None,  # nothing is hidden in Bubblee Pop
    observe=observe,
    figures=FIGURES,
    # Snapshots hold a State built by evolve, from the board and the level data.
    state_depends_on=("services/bubblee/board.py", "services/bubblee/levels.py",
                      "services/bubblee/data"),
    variants=variants,
    # The greedy bot makes lines, cascades and powers; the random quarter makes the swaps
    # and drops it would not, and so fills planets up.
    playout=exploring(BOTS["greedy"], 1, 4),
    suite=SuiteNeeds(rulings=(40, 85)),
)
