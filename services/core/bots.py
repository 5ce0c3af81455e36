"""How an AI seat picks its command: one function for every caller (the server's AI turns,
the idle timeout, the simulations, the terminal and the tools).

A bot is named by a seat: one of the game's heuristic bots (Game.bots: "greedy", "keeper"),
or a search bot at a level, "easy", "medium", "hard", or a CPU budget per move, "120ms"
(1 to 250). A heuristic bot is given the seat's view and its legal commands; a search bot
plays worlds out from what the seat may know (services/core/search.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from services.core.decider import Game, MalformedCommand, Message, Rng
from services.core.search import Budget, search


@dataclass(frozen=True)
class Level:
    """A search bot's strength: CPU per move, and how many commands a playout plays before
    the game's estimate judges it (None: to the end), with the depth of a game whose
    commands are finer or coarser than most (game name, or "game/seats" for one table size,
    -> depth)."""

    budget: Budget
    depth: int | None
    depths: tuple[tuple[str, int | None], ...] = ()
    # Per game: how sure the search must be before it overrules the heuristic (search.py's
    # `caution`, in standard errors); 0 where a game is not named.
    cautions: tuple[tuple[str, float], ...] = ()

    def depth_for(self, game: str, seats: int = 0) -> int | None:
        """The playout depth in `game` at a table of `seats` (0: any)."""
        depths = dict(self.depths)
        return depths.get(f"{game}/{seats}", depths.get(game, self.depth))

    def caution_for(self, game: str) -> float:
        return dict(self.cautions).get(game, 0.0)


# A short playout judged by the game's estimate buys more sampled worlds than a long one:
# the depth grows with the budget (docs/bots.md gives the measurements). A game without an
# estimate plays every playout to the end.
LEVELS: dict[str, Level] = {
    "easy": Level(Budget(0.015), 4),
    "medium": Level(Budget(0.060), 8),
    # 25 ms below 250: a GC pause or a last command. A Shadow Council playout command cost
    # 0.65 ms when its depth was chosen (0.36 ms since): 3 commands keep the playouts many.
    # In the team games the search overrules the heuristic bot only on a clear lead
    # (docs/bots.md): teammates that all search keep its conventions. Moody Bear's playouts
    # look 24 commands ahead, 12 at 3 players: measured on the same deals, 24 won more
    # games for a team at 5 players (59 of 100 against 49) and fewer at 3 (93 of 200
    # against 108).
    "hard": Level(Budget(0.225), 12, depths=(("shadow_council", 3), ("moody_bear", 24),
                                             ("moody_bear/3", 12)),
                  cautions=(("moody_bear", 1.0), ("shadow_council", 1.0))),
}
MAX_MS = 250
_MS = re.compile(r"([1-9][0-9]{0,2})ms")


def level(name: str) -> Level | None:
    """The search level a bot name asks for; None for a heuristic bot's name or no name."""
    if name in LEVELS:
        return LEVELS[name]
    if (m := _MS.fullmatch(name)) and int(m.group(1)) <= MAX_MS:
        hard = LEVELS["hard"]
        return Level(Budget(int(m.group(1)) / 1000), hard.depth, hard.depths, hard.cautions)
    return None


def searchable(game: Game) -> bool:
    """Whether search bots may play `game`: it hides nothing, or it can re-deal what a seat
    cannot see (without `redeal`, a search would play the true hidden cards out)."""
    return game.redeal is not None or not game.suite.no_redeal


def bot_names(game: Game) -> list[str]:
    """The names a seat of `game` may give its bot, as a player reads them."""
    levels = [*LEVELS, f"<N>ms (1-{MAX_MS})"] if searchable(game) else []
    return [*sorted(game.bots), *levels]


def known(game: Game, name: str) -> bool:
    """Whether `name` (empty: the game's default) names a bot of `game`."""
    if (name or game.default_bot) in game.bots:
        return True
    return level(name) is not None and searchable(game)


def check(game: Game, name: str, where: str = "seats") -> None:
    """Refuse a bot name no bot answers to, with the choices (UNKNOWN_BOT)."""
    if not known(game, name):
        raise MalformedCommand("UNKNOWN_BOT", f"no bot named {name!r} for {game.title}; "
                               f"choose one of {', '.join(bot_names(game))}", where)


def choose_command(game: Game, state: object, seat: int, bot_name: str, rng: Rng, *,
                   playouts: int | None = None) -> Message:
    """The command the bot `bot_name` (empty: the game's default) sends for `seat`.

    `playouts` caps a search bot by playouts instead of CPU time, so that a fixed seed gives
    the same choice on any machine (tests and repeatable experiments)."""
    found = level(bot_name)
    if found is None:
        bot = game.bots[bot_name or game.default_bot]
        return bot(game.view(state, seat), game.legal_actions(state, seat), rng)
    if not searchable(game):
        raise ValueError(f"{game.title} cannot re-deal what a seat cannot see: no search bot")
    budget = found.budget if playouts is None else Budget(math.inf, playouts)
    seats = game.table_size(state) if game.table_size is not None else 0
    return search(game, state, seat, rng, budget, found.depth_for(game.name, seats),
                  found.caution_for(game.name))
