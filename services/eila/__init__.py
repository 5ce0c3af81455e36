"""Eila and Something Shiny: a solo campaign (chapters 0-5) whose content is authored data."""

from __future__ import annotations

from arbiter.eila.v1 import eila_pb2

from services.core.decider import Game, SuiteNeeds, Variant, exploring
from services.eila import bots, legacy, planner, rules, view
from services.eila import render as table
from services.eila.state import State, evolve, start
from services.eila.words import COMMAND_GROUPS, catalog, describe, describe_command


def variants() -> list[Variant]:
    """The advanced campaign, and chapters played alone: each chapter's own rules are met
    even when a campaign stops early (conformance suite)."""
    o = eila_pb2.Options
    return [
        Variant("advanced", 1, o(advanced=True)),
        Variant("chapter 2 alone", 1, o(first_chapter=2, single_chapter=True)),
        Variant("chapter 3 alone", 1, o(first_chapter=3, single_chapter=True)),
        # From chapter 3, not alone: a chapter 4 set up at the start would deal its offers
        # in the opening, where every deal then shows its own (the opening leak test needs
        # two deals the player cannot tell apart).
        Variant("advanced from chapter 3", 1, o(first_chapter=3, advanced=True)),
        Variant("chapter 5 alone", 1, o(first_chapter=5, single_chapter=True)),
    ]


GAME: Game[State] = Game(
    name="eila",
    title="Eila and Something Shiny",
    pb=eila_pb2,
    min_seats=1,
    max_seats=1,
    setup=rules.setup,
    start=start,
    decide=rules.decide,
    evolve=evolve,
    show=view.show,
    redact=view.redact,  # names its hidden paths itself, the same on every process
    describe=describe,
    describe_command=describe_command,
    command_groups=COMMAND_GROUPS,
    catalog=catalog,
    render=table.render,
    to_act=rules.to_act,
    legal_actions=rules.legal_actions,
    outcome=rules.outcome,
    bots={"random": bots.random_bot, "random_options": bots.random_options_bot,
          "greedy": bots.greedy_bot},
    default_bot="greedy",
    redeal=view.redeal,
    search=planner.plan,  # the search levels play Eila's campaign planner
    recheck=legacy.recheck,
    variants=variants,
    # The greedy bot wins chapters (random play loses chapter 0 and abandons), now and then
    # doing anything legal: quizzes answered wrong, combats lost, a campaign abandoned.
    playout=exploring(bots.greedy_bot, 1, 10),
    suite=SuiteNeeds(playout_seeds=10, rulings=(36, 61), unreached_events={
        "started": "written before Eila's events held facts; stored games keep them "
        "(tests/eila/test_facts.py::test_a_legacy_log_loads_replays_and_verifies, and the "
        "golden logs of tests/golden/eila)",
        "acted": "the same (tests/eila/test_facts.py::"
        "test_a_legacy_game_goes_on_with_facts_and_verifies)",
    }),
)
