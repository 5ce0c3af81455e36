"""Play bots against each other through the real rules (for tests and win-rate figures)."""

from __future__ import annotations

from collections.abc import Sequence

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME, rules
from services.bubblee.state import State, evolve
from services.core.decider import Bot, Outcome, Rng, Seat


def play(
    bots: Sequence[Bot], seed: int, options: pb.Options | None = None, max_commands: int = 5000
) -> tuple[Outcome, State]:
    """One game, each seat played by its bot, which sees only its view and legal commands."""
    options = options or pb.Options()
    game_seed = b"arena-%d" % seed
    seats = [Seat(f"bot{i}", "ai") for i in range(len(bots))]
    events = rules.setup(options, seats, Rng(game_seed, 0))
    state = GAME.replay(events)
    version = len(events)
    bot_rng = Rng(b"arena-bots-%d" % seed, 0)
    for _ in range(max_commands):
        if state.outcome is not None:
            return state.outcome, state
        seat = state.turn
        command = bots[seat](GAME.view(state, seat), rules.legal_actions(state, seat), bot_rng)
        for ev in GAME.decide_now(state, seat, command, Rng(game_seed, version)):
            state = evolve(state, ev)
            version += 1
    raise AssertionError("the game did not end")


def win_rate(bot: Bot, other: Bot, games: int, seed: int = 0) -> float:
    """Share of games `bot` wins against `other`, seats alternating; a shared win counts half."""
    won = 0.0
    for g in range(games):
        me = g % 2
        pair = [other, other]
        pair[me] = bot
        outcome, _ = play(pair, seed * 100_000 + g)
        if me in outcome.winners:
            won += 1.0 / len(outcome.winners)
    return won / games
