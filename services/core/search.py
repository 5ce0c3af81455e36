"""Search bots: they choose a command by playing the game out from what their seat may know.

A search bot never reads what its seat cannot see. It samples worlds consistent with its
view (the game's `redeal` re-deals the unseen parts from the bot's own rng), draws chance
from that same rng (never the game's seeded one, which knows the future draws), and plays
each world out with the real rules.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TypeVar

from services.core.decider import Bot, Game, Message, Outcome, Rng

S = TypeVar("S")


@dataclass(frozen=True)
class Budget:
    """What one move may spend: CPU seconds of the searching thread (time.thread_time), and
    optionally a cap on playouts. A repeatable search (a test's) sets cpu_seconds to
    math.inf and counts playouts only: a time budget depends on the machine."""

    cpu_seconds: float
    playouts: int | None = None

    def spent(self, started: float, playouts: int) -> bool:
        """Whether a search begun at thread time `started` that has run `playouts` playouts
        must stop now."""
        if self.playouts is not None and playouts >= self.playouts:
            return True
        return time.thread_time() - started >= self.cpu_seconds


def sample_world(game: Game[S], state: S, seat: int, rng: Rng) -> S:
    """One world `seat` cannot tell from the true one: whatever it cannot see (the others'
    cards, and for a game whose state holds its future draws, those draws) dealt anew from
    the bot's own rng. A game that hides nothing is its own only world."""
    return state if game.redeal is None else game.redeal(state, seat, rng)


def _applied(game: Game[S], state: S, seat: int | None, command: Message, rng: Rng) -> S:
    for event in game.decide(state, seat, command, rng):
        state = game.evolve(state, event)
    return state


def _value(result: Outcome, seat: int) -> float:
    """1 for a win (alone or with a team), 0.5 for a draw, 0 for a loss."""
    if seat in result.winners:
        return 1.0
    return 0.5 if not result.winners and result.scores and len(set(result.scores)) == 1 else 0.0


def playout(game: Game[S], world: S, seat: int, bot: Bot, rng: Rng, depth: int | None) -> float:
    """How `seat` fares in `world` when every seat plays `bot` from here: the outcome's
    value, or the game's estimate (Game.estimate) once `depth` commands are played."""
    played = 0
    while (result := game.outcome(world)) is None:
        if depth is not None and played >= depth and game.estimate is not None:
            return game.estimate(world, seat)
        actors = game.to_act(world)
        if not actors:  # only a timeout moves the game on: the server's command
            due = game.deadlines(world) if game.deadlines is not None else []
            if not due:
                return 0.5
            world = _applied(game, world, None, due[0][1], rng)
            continue
        actor = actors[0] if len(actors) == 1 else rng.choice(actors)
        command = bot(game.view(world, actor), game.legal_actions(world, actor), rng)
        world = _applied(game, world, actor, command, rng)
        played += 1
    return _value(result, seat)


def search(game: Game[S], state: S, seat: int, rng: Rng, budget: Budget,
           depth: int | None = None) -> Message:
    """The legal command of `seat` that fares best over sampled worlds (perfect-information
    Monte Carlo): each round samples one world, plays every command out in it with the
    game's heuristic bot on every seat, and adds up the results; the search stops when the
    budget is spent. Every command of a round meets the same world and the same chance (a
    fair comparison); a command tried fewer times when the budget runs out is judged by its
    mean. Ties go to the earlier legal command, so a fixed seed and playout cap repeat."""
    started = time.thread_time()
    legal = game.legal_actions(state, seat)
    if len(legal) == 1:
        return legal[0]
    if game.search is not None:
        return game.search(sample_world(game, state, seat, rng), seat, rng, budget)
    bot = game.bots[game.default_bot]
    totals, tries = [0.0] * len(legal), [0] * len(legal)
    playouts = 0
    while not budget.spent(started, playouts):
        world = sample_world(game, state, seat, rng)
        chance = rng.below(1 << 62).to_bytes(8, "big")
        for i, command in enumerate(legal):
            trial = Rng(chance, 0)  # the same draws for every command of this round
            after = _applied(game, world, seat, command, trial)
            totals[i] += playout(game, after, seat, bot, trial, depth)
            tries[i] += 1
            playouts += 1
            if budget.spent(started, playouts):
                break
    means = [t / n if n else -1.0 for t, n in zip(totals, tries, strict=True)]
    return legal[means.index(max(means))]
