"""The games the shared suite plays: every game of services/games.py, and the template
(services/toy/), which the server does not offer but which is held to all that a game is
held to, so that what a newcomer copies is what the suite tests.

What the suite needs to know of a game besides its rules (seeds, floors, kinds its playouts
never reach) the game declares itself (`Game.suite`): no file here names a game.
"""

from __future__ import annotations

from services import games as registry
from services.core.decider import Game

TEMPLATE = "toy"
NAMES = [*registry.GAME_MODULES, TEMPLATE]


def game(name: str) -> Game:
    """A game of the suite by name: a registered game, or the template."""
    if name == TEMPLATE:
        from services.toy import GAME

        return GAME
    return registry.game(name)


def all_games() -> list[Game]:
    return [game(name) for name in NAMES]
