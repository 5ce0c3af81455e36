"""The games a worker process serves: the registry's, plus any named in ARBITER_EXTRA_GAMES.

ARBITER_EXTRA_GAMES="toy=services.toy" adds games the registry leaves out (the template
game, which the tests play) to workers started as separate processes: "name=module",
comma-separated; the module must define GAME.
"""

from __future__ import annotations

import importlib
import os

from services import games as registry
from services.core.decider import Game


def extra_modules() -> dict[str, str]:
    out = {}
    for item in os.environ.get("ARBITER_EXTRA_GAMES", "").split(","):
        if "=" in item:
            name, module = item.split("=", 1)
            out[name.strip()] = module.strip()
    return out


class BrokenGame(Exception):
    """A game this process should serve does not import: the process must not start without it."""


def game(name: str) -> Game:
    module = extra_modules().get(name) or registry.GAME_MODULES.get(name)
    if module is None:
        raise KeyError(name)
    try:
        return importlib.import_module(module).GAME  # type: ignore[no-any-return]
    except Exception as e:
        raise BrokenGame(f"game {name} ({module}) does not import: {e!r}") from e


def all_games() -> dict[str, Game]:
    """Every game of the registry and of ARBITER_EXTRA_GAMES; one that does not import stops
    the caller (a worker that left it out would leave its games without AI turns,
    projections or deadlines, silently)."""
    return {name: game(name) for name in [*registry.GAME_MODULES, *extra_modules()]}
