"""Eila's planner: the greedy bot's choice, checked by playing each alternative out.

When the greedy bot would commit to something (an option of the present card, a fight or a
boost, a step in the mine, a purchase, a submission), the planner takes every legal command
that shapes the attempt (all but the free actions: conversions, discards, items, spells and
answers, which it leaves to the greedy bot) and plays each out to the end of the chapter
many times, the greedy bot playing every later move. It sends the one that won the chapter
most often; on a tie, the greedy bot's own choice (which comes first). When every candidate
has won every world so far, or lost every one, it stops early: nothing is left to choose.

It plans from what the player may know. Each playout is a world dealt by `view.redeal` from
the planner's own rng (the upcoming cards whose order nobody knows, the quiz decks, the
face-down mine tiles), and its dice come from that rng too, never from the game's: so its
choice does not change with the order of what it cannot see. Every alternative is played in
the same worlds with the same dice (common random numbers), so their difference is not noise
of the worlds drawn.

A playout runs the rules' own `rules.apply`, the function `decide` runs, on the planner's copy
of the state: `decide` would add the facts of each change, which `evolve` only sets back.
"""

from __future__ import annotations

import math
import time
from typing import Any

from services.core.decider import Rng
from services.core.search import Budget
from services.eila import bots, rules
from services.eila.engine import RecordingDice
from services.eila.state import State
from services.eila.view import redeal, show

# The moves of one playout after which it counts as lost (a chapter takes a few hundred).
PLAYOUT_MOVES = 2000
# Worlds after which a choice is made when every candidate won all of them, or lost all.
SURE_AFTER = 6


def plan(state: State, seat: int, rng: Rng, budget: Budget) -> Any:
    """The command to send: the candidate that won most playouts within the budget."""
    started = time.thread_time()
    legal = rules.legal_actions(state, seat)
    greedy = bots.greedy_bot(show(state, seat), legal, rng)
    if state.phase != "playing" or greedy.WhichOneof("kind") in bots.FREE:
        return greedy  # a conversion, a discard, an item... on the way to a choice
    candidates = [greedy] + [c for c in legal
                             if c.WhichOneof("kind") not in bots.FREE and c != greedy]
    if len(candidates) == 1:
        return greedy
    worlds = b"eila-planner-%d" % rng.below(1 << 62)
    wins = [0] * len(candidates)
    played = [0] * len(candidates)
    longest = 0.0  # no playout starts that could not end within the budget
    playouts = 0
    for world_number in range(1 << 62):
        if world_number >= SURE_AFTER and len(set(wins)) == 1 and wins[0] in (0, world_number):
            return greedy  # every candidate won (or lost) every world: nothing to choose
        world = redeal(state, seat, Rng(worlds, world_number))
        for i, command in enumerate(candidates):
            now = time.thread_time()
            if (budget.playouts is not None and playouts >= budget.playouts) or (
                    now - started + longest >= budget.cpu_seconds):
                return best(candidates, wins, played)
            won = won_playout(world, seat, command, Rng(worlds, -1 - world_number),
                              started + budget.cpu_seconds)
            if won is None:  # longer than any before it: the budget ran out during it
                return best(candidates, wins, played)
            wins[i] += won
            played[i] += 1
            playouts += 1
            longest = max(longest, time.thread_time() - now)
    return best(candidates, wins, played)


def best(candidates: list[Any], wins: list[int], played: list[int]) -> Any:
    """The candidate with the highest win rate (the first of equals: the greedy bot's)."""
    rates = [w / n if n else -1.0 for w, n in zip(wins, played, strict=True)]
    return candidates[rates.index(max(rates))]


def won_playout(world: State, seat: int, command: Any, dice: Rng,
                deadline: float = math.inf) -> bool | None:
    """Whether the chapter being played is won after `command`, the greedy bot playing on;
    None once the thread's CPU time passes `deadline` (the playout is abandoned)."""
    state = world.clone()
    chance = RecordingDice(dice)
    for _ in range(PLAYOUT_MOVES):
        if time.thread_time() > deadline:
            return None
        rules.apply(state, command, chance, [])
        chance.draws.clear()
        if state.phase != "playing":
            assert state.play is not None
            return state.play.result == "won"
        command = bots.greedy_bot(show(state, seat), rules.legal_actions(state, seat), dice)
    return False
