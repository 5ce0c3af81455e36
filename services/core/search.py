"""Search bots: they choose a command by playing the game out from what their seat may know.

A search bot never reads what its seat cannot see. It samples worlds consistent with its
view (the game's `redeal` re-deals the unseen parts from the bot's own rng), draws chance
from that same rng (never the game's seeded one, which knows the future draws), and plays
each world out with the real rules.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
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
    cards; the draws to come, where the state holds them) dealt anew from the bot's own rng.
    A game that hides nothing and draws as it goes is its own only world."""
    if game.redeal is not None:
        state = game.redeal(state, seat, rng)
    return state if game.redraw is None else game.redraw(state, rng)


def _applied(game: Game[S], state: S, seat: int | None, command: Message, rng: Rng) -> S:
    for event in game.decide(state, seat, command, rng):
        state = game.evolve(state, event)
    return state


def _value(result: Outcome, seat: int) -> float:
    """1 for a win, alone, shared or with a team; 0 otherwise."""
    return 1.0 if seat in result.winners else 0.0


def playout(game: Game[S], world: S, seat: int, bot: Bot, rng: Rng, depth: int | None,
            stop: Callable[[], bool] = lambda: False) -> float | None:
    """How `seat` fares in `world` when every seat plays `bot` from here: the outcome's
    value, or the game's estimate (Game.estimate) once `depth` commands are played. None
    when `stop` says the budget ran out on the way (checked at every command)."""
    played = 0
    while (result := game.outcome(world)) is None:
        if stop():
            return None
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
        legal = game.legal_actions(world, actor)
        if len(legal) == 1:  # no choice (a window's pass without a card to answer): no view
            world = _applied(game, world, actor, legal[0], rng)
            played += 1
            continue
        command = bot(game.view(world, actor), legal, rng)
        world = _applied(game, world, actor, command, rng)
        played += 1
    return _value(result, seat)


@dataclass
class Lead:
    """A candidate's lead over the heuristic's choice, world by world."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    def add(self, difference: float) -> None:
        self.n += 1
        self.total += difference
        self.squares += difference ** 2

    def clear(self, caution: float) -> bool:
        """Whether the mean lead is above `caution` standard errors (over two worlds at
        least)."""
        if self.n < 2:
            return False
        mean = self.total / self.n
        spread = max(0.0, self.squares / self.n - mean * mean)
        return mean > caution * math.sqrt(spread / (self.n - 1))


def search(game: Game[S], state: S, seat: int, rng: Rng, budget: Budget,
           depth: int | None = None, caution: float = 0.0) -> Message:
    """The legal command of `seat` that fares best over sampled worlds (perfect-information
    Monte Carlo). Each round samples one world and plays each candidate command out in it,
    every seat then playing the game's heuristic bot; every candidate of a round meets the
    same world and the same chance, a fair comparison. After rounds 1, 2, 4, 8... the worse
    half of the candidates is dropped (successive halving), so that the budget goes to the
    commands that could be best. The search stops when the budget is spent, and plays the
    best mean among the candidates left. The heuristic bot's own choice is the first
    candidate: ties, and a budget too small to tell the commands apart, go to it. With
    `caution` above 0, the best candidate replaces the heuristic's choice only when it beats
    it, world by world, by more than `caution` standard errors of the mean difference (a
    noisy lead is no reason to leave the heuristic). A fixed seed and playout cap give the
    same choice."""
    started = time.thread_time()
    legal = (game.search_commands or game.legal_actions)(state, seat)
    if len(legal) == 1:
        return legal[0]
    if game.search is not None:
        return game.search(sample_world(game, state, seat, rng), seat, rng, budget)
    bot = game.bots[game.default_bot]
    view = game.view(state, seat)
    usual = bot(view, legal, rng)
    if game.candidates is not None:  # the heuristic's choice stays a candidate
        weighed = game.candidates(view, legal)
        legal = weighed if usual in weighed else [usual, *weighed]
    candidates = sorted(range(len(legal)), key=lambda i: legal[i] != usual)
    totals, tries = [0.0] * len(legal), [0] * len(legal)
    # Each candidate's lead over the heuristic's choice in the worlds both met (a choice
    # not among the legal commands as listed, e.g. in another order, is not paired).
    usual_at = candidates[0] if legal[candidates[0]] == usual else -1
    leads = [Lead() for _ in legal]
    playouts = rounds = 0

    def out_of_budget() -> bool:  # a playout cut short by the budget is not counted
        return budget.spent(started, playouts)

    while not budget.spent(started, playouts):
        world = sample_world(game, state, seat, rng)
        chance = rng.below(1 << 62).to_bytes(8, "big")
        usual_value: float | None = None
        # With caution, the heuristic's choice plays first: the others are paired with it.
        order = sorted(candidates, key=lambda i: i != usual_at) if caution > 0 else candidates
        for i in order:
            trial = Rng(chance, 0)  # the same draws for every candidate of this round
            after = _applied(game, world, seat, legal[i], trial)
            value = playout(game, after, seat, bot, trial, depth, out_of_budget)
            if value is None:
                break
            totals[i] += value
            tries[i] += 1
            if i == usual_at:
                usual_value = value
            elif usual_value is not None:
                leads[i].add(value - usual_value)
            playouts += 1
            if budget.spent(started, playouts):
                break
        else:  # a whole round
            rounds += 1
            if rounds & (rounds - 1) == 0 and len(candidates) > 2:
                ranked = sorted(candidates, key=lambda i: -totals[i] / tries[i])
                kept = ranked[:max(2, len(ranked) // 2)]
                if caution > 0 and usual_at in ranked and usual_at not in kept:
                    # Every lead is measured against it: dropped after a world or two of
                    # bad luck, it would let the best of many noisy means win unchecked.
                    kept.append(usual_at)
                candidates = kept
    tried = [i for i in candidates if tries[i]]
    if not tried:
        return usual
    best = max(tried, key=lambda i: (totals[i] / tries[i], -candidates.index(i)))
    if (caution > 0 and usual_at in candidates and best != usual_at
            and not leads[best].clear(caution)):
        return usual
    return legal[best]
