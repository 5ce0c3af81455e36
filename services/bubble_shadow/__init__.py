"""Bubble and Shadow (2-5 players): what the platform imports."""

from __future__ import annotations

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import render as table
from services.bubble_shadow import rules, view
from services.bubble_shadow.bots import BOTS, estimate, search_commands
from services.bubble_shadow.state import State, evolve, start
from services.bubble_shadow.words import (
    COMMAND_GROUPS,
    catalog,
    describe,
    describe_command,
    view_hidden,
)
from services.core.decider import Game, SuiteNeeds, Variant, exploring
from services.core.happened import marked


def variants() -> list[Variant]:
    """Every seat count, the Complacency variant and the special tokens (conformance suite)."""
    everything = pb.Options(all_special_tokens=True)
    return [
        Variant("2 players", 2, pb.Options()),
        Variant("4 players", 4, pb.Options()),
        Variant("5 players", 5, pb.Options()),
        Variant("2 players, all special tokens", 2, everything),
        Variant("3 players, all special tokens", 3, everything),
        Variant("4 players, all special tokens, Crown swaps its holder's counts", 4,
                pb.Options(all_special_tokens=True, crown_swaps_holder_only=True)),
        Variant("3 players, Complacency", 3, pb.Options(complacency=True)),
        Variant("4 players, Complacency, all special tokens", 4,
                pb.Options(complacency=True, all_special_tokens=True)),
        Variant("5 players, Complacency, all special tokens", 5,
                pb.Options(complacency=True, all_special_tokens=True)),
    ]


GAME: Game[State] = Game(
    name="bubble_shadow",
    title="Bubble and Shadow",
    pb=pb,
    min_seats=2,
    max_seats=5,
    standard_seats=3,
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
    bots=BOTS,
    default_bot="greedy",
    estimate=estimate,
    search_commands=search_commands,
    redeal=view.redeal,
    variants=variants,
    # The greedy bot trades well but never declares satisfaction (Complacency); the random
    # quarter does.
    playout=exploring(BOTS["greedy"], 1, 4),
    suite=SuiteNeeds(rulings=(30, 100)),
)
