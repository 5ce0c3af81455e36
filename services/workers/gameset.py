"""The games a worker process serves: the registry's, plus any named in ARBITER_EXTRA_GAMES.

ARBITER_EXTRA_GAMES="toy=tests.workers.toygame" adds games defined outside services/ (the
tests' toy game) to workers started as separate processes: "name=module", comma-separated;
the module must define GAME.
"""

from __future__ import annotations

import importlib
import logging
import os

from services import games as registry
from services.core.decider import Game

log = logging.getLogger("arbiter.workers")


def extra_modules() -> dict[str, str]:
    out = {}
    for item in os.environ.get("ARBITER_EXTRA_GAMES", "").split(","):
        if "=" in item:
            name, module = item.split("=", 1)
            out[name.strip()] = module.strip()
    return out


def game(name: str) -> Game:
    extra = extra_modules()
    if name in extra:
        return importlib.import_module(extra[name]).GAME  # type: ignore[no-any-return]
    return registry.game(name)


def all_games(names: list[str] | None = None) -> dict[str, Game]:
    """Every game that imports (a game still being written is left out, with a warning)."""
    out: dict[str, Game] = {}
    for name in names or [*registry.GAME_MODULES, *extra_modules()]:
        try:
            out[name] = game(name)
        except Exception:  # noqa: BLE001
            log.warning("game %s does not import; not served by this worker", name,
                        exc_info=True)
    return out
