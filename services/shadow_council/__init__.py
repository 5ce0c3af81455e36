"""Shadow Council: hidden shadow identities, 32 cards, 12 events, guessing (4-6 players)."""

from __future__ import annotations

from arbiter.shadow_council.v1 import shadow_council_pb2

from services.core.decider import Game, SuiteNeeds, Variant, exploring
from services.core.happened import marked
from services.shadow_council import render as table
from services.shadow_council import rules, view
from services.shadow_council.bots import BOTS, estimate
from services.shadow_council.state import State, evolve, start
from services.shadow_council.words import (
    COMMAND_GROUPS,
    catalog,
    describe,
    describe_command,
    view_hidden,
)


def variants() -> list[Variant]:
    """Every seat count, fewer and more rounds, the full deck, the public reading of Scout
    (ruling 22a) (conformance suite)."""
    o = shadow_council_pb2.Options
    return [
        Variant("4 players", 4, o()),
        Variant("6 players", 6, o()),
        Variant("4 players, 3 rounds, full deck", 4, o(rounds=3, full_deck=True)),
        Variant("6 players, 7 rounds, full deck", 6, o(rounds=7, full_deck=True)),
        # Long, with the full deck: Scout, a rare card, gets played.
        Variant("5 players, 7 rounds, full deck, Scout revealed", 5,
                o(rounds=7, full_deck=True, scout_public=True)),
    ]


GAME: Game[State] = Game(
    name="shadow_council",
    title="Shadow Council",
    pb=shadow_council_pb2,
    min_seats=4,
    max_seats=6,
    standard_seats=5,
    setup=rules.setup,
    start=start,
    decide=rules.decide,
    evolve=evolve,
    show=view.show,
    view_hidden=view_hidden,
    redact=marked(view.redact),
    describe=describe,
    describe_command=describe_command,
    command_groups=COMMAND_GROUPS,
    catalog=catalog,
    render=table.render,
    to_act=rules.to_act,
    legal_actions=rules.legal_actions,
    outcome=rules.outcome,
    bots=dict(BOTS),
    default_bot="sleuth",
    estimate=estimate,
    redeal=view.redeal,
    variants=variants,
    # The sleuth peeks, guards and guesses; the random half attacks the guarded seats it
    # would spare (AttackBlocked).
    playout=exploring(BOTS["sleuth"], 1, 2),
    # A short game: more playouts, so that each kind is reached several times.
    suite=SuiteNeeds(playout_seeds=30, rulings=(35, 100)),
)
