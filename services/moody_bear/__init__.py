"""Moody Bear Kingdom: 3 to 5 players in hidden teams racing for gems, with Cancel chains."""

from __future__ import annotations

from arbiter.moody_bear.v1 import moody_bear_pb2

from services.core.decider import Game, SuiteNeeds, Variant, exploring
from services.core.happened import marked

from . import render as table
from . import view
from .bots import BOTS, candidates, estimate
from .moves import legal_actions, to_act
from .rules import deadlines, decide, outcome, setup
from .state import State, evolve, start
from .words import COMMAND_GROUPS, catalog, describe, describe_command, view_hidden


def variants() -> list[Variant]:
    """Every seat count, the 4-player advanced structure, the Duo Jewel, a response deadline
    (conformance suite)."""
    o = moody_bear_pb2.Options
    return [
        Variant("3 players", 3, o()),
        Variant("4 players", 4, o()),
        Variant("4 players, five-player structure", 4, o(five_player_structure=True)),
        Variant("5 players, Duo Jewel", 5, o(duo_jewel=True)),
        Variant("4 players, Duo Jewel, response deadline", 4,
                o(duo_jewel=True, response_deadline_seconds=30)),
    ]


GAME: Game[State] = Game(
    name="moody_bear",
    title="Moody Bear Kingdom",
    pb=moody_bear_pb2,
    min_seats=3,
    max_seats=5,
    setup=setup,
    start=start,
    decide=decide,
    evolve=evolve,
    show=view.show,
    view_hidden=view_hidden,
    redact=marked(view.redact),
    describe=describe,
    describe_command=describe_command,
    command_groups=COMMAND_GROUPS,
    catalog=catalog,
    render=table.render,
    to_act=to_act,
    legal_actions=legal_actions,
    outcome=outcome,
    bots=dict(BOTS),
    standard_seats=5,
    default_bot="keeper",
    estimate=estimate,
    table_size=lambda state: state.players,
    candidates=candidates,
    redeal=view.redeal,
    deadlines=deadlines,
    variants=variants,
    # Random play ends most games at once with a wrong proclamation; the keeper plays long
    # games, and the random quarter plays the cards it keeps (passing, a look at a hand, the
    # top cards) and proclaims wrongly now and then.
    playout=exploring(BOTS["keeper"], 1, 4),
    # A short game: more playouts, so that each kind is reached several times.
    suite=SuiteNeeds(playout_seeds=24, rulings=(30, 31), unreached_events={
        "deck_reshuffled": "the deck runs out only in a game that nobody proclaims and whose "
        "every Dark Swallow a Mace sends back (tests/moody_bear/test_deck.py::"
        "test_deck_exhaustion_shuffles_the_discard_pile_into_a_new_deck)",
        "nothing_to_draw": "the same, with the discard pile empty too (tests/moody_bear/"
        "test_deck.py::test_with_no_deck_and_no_discard_pile_nothing_is_drawn)",
    }),
)

__all__ = ["GAME"]
