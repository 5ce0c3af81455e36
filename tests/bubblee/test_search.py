"""A search bot in a solo level cannot foresee the draws: they follow from the level's bag
seed, which no view shows, and the bot plays its worlds out from seeds of its own."""

from __future__ import annotations

import dataclasses

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME
from services.bubblee.state import _update
from services.core import bots
from services.core.decider import Game, Rng, Seat

PLAYOUTS = 12


def choices(game: Game, seeds: range) -> set[bytes]:
    """The bot's choice at the start of solo level 1, for tables whose draws to come follow
    from each of `seeds` (all else equal, the same views)."""
    events = game.setup(pb.Options(solo_level=1), [Seat("me")], Rng(b"solo", 0))
    state = game.replay(events)
    out = set()
    for seed in seeds:
        table = _update(state, draw_seed=seed)
        assert game.view(table, 0) == game.view(state, 0)
        command = bots.choose_command(game, table, 0, "hard", Rng(b"choose", 0),
                                      playouts=PLAYOUTS)
        out.add(command.SerializeToString())
    return out


def test_the_choice_does_not_depend_on_the_levels_bag_seed() -> None:
    assert len(choices(GAME, range(4))) == 1


def test_a_bot_that_plays_the_true_draws_out_is_caught() -> None:
    foreseeing = dataclasses.replace(GAME, redraw=None)
    assert len(choices(foreseeing, range(4))) > 1
