"""The games this server knows, by name. Adding a game is one line here."""

from __future__ import annotations

import importlib
from functools import cache

from services.core.decider import Game

GAME_MODULES = {
    "bubblee": "services.bubblee",
    "bubble_shadow": "services.bubble_shadow",
    "moody_bear": "services.moody_bear",
    "shadow_council": "services.shadow_council",
    "eila": "services.eila",
}


@cache
def game(name: str) -> Game:
    if name not in GAME_MODULES:
        raise KeyError(name)
    return importlib.import_module(GAME_MODULES[name]).GAME  # type: ignore[no-any-return]


def all_games() -> list[Game]:
    return [game(name) for name in GAME_MODULES]
