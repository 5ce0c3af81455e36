"""Random self-play through the real decide/evolve, timed: the platform's benchmark calls it.

A "turn" is one player's whole turn (refill placements, optional swap, drop, powers). The
timing of a turn covers the pure core only: for each of its commands, the Rng (its key is
derived on the first draw, and most decisions draw nothing), decide, and evolve of every event
it returned. Choosing the command (legal_actions and a random pick)
is not timed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME, rules
from services.bubblee.state import evolve
from services.core.decider import Rng, Seat


@dataclass
class SelfPlayResult:
    games: int = 0
    turns: int = 0
    commands: int = 0
    turn_micros: list[float] = field(default_factory=list)  # one per turn
    cascade_depths: list[int] = field(default_factory=list)  # one per drop
    outcomes: list[tuple[int, ...]] = field(default_factory=list)  # winners per game

    @property
    def turns_per_second(self) -> float:
        total = sum(self.turn_micros)
        return self.turns * 1e6 / total if total else 0.0


def play_random_games(
    n: int, seed: int = 0, options: pb.Options | None = None
) -> SelfPlayResult:
    """Play `n` random games (a duel unless `options` say otherwise) from `seed`."""
    options = options or pb.Options()
    seats = [Seat("a"), Seat("b")] if not options.solo_level else [Seat("solo")]
    result = SelfPlayResult()
    for g in range(n):
        game_seed = b"selfplay-%d-%d" % (seed, g)
        events = rules.setup(options, seats, Rng(game_seed, 0))
        state = GAME.replay(events)
        version = len(events)
        chooser = Rng(b"selfplay-choices-%d-%d" % (seed, g), 0)
        turn_time = 0.0
        while state.outcome is None:
            seat = state.turn
            legal = rules.legal_actions(state, seat)
            command = chooser.choice(legal)
            start = time.perf_counter()
            new = GAME.decide_now(state, seat, command, Rng(game_seed, version))
            for ev in new:
                state = evolve(state, ev)
            turn_time += time.perf_counter() - start
            version += len(new)
            result.commands += 1
            for ev in new:
                kind = ev.WhichOneof("kind")
                if kind == "settled" and ev.settled.cause == pb.CAUSE_DROP:
                    result.cascade_depths.append(ev.settled.waves)
                elif kind in ("turn_ended", "game_over"):
                    result.turns += 1
                    result.turn_micros.append(turn_time * 1e6)
                    turn_time = 0.0
        result.games += 1
        result.outcomes.append(state.outcome.winners)
    return result


def main() -> None:
    import statistics

    result = play_random_games(200, seed=1)
    micros = sorted(result.turn_micros)
    print(
        f"{result.games} games, {result.turns} turns, {result.commands} commands: "
        f"{result.turns_per_second:,.0f} turns/s "
        f"(median {statistics.median(micros):.1f} us, "
        f"p99 {micros[len(micros) * 99 // 100]:.1f} us);"
        f" mean cascade depth {statistics.mean(result.cascade_depths):.3f}, "
        f"max {max(result.cascade_depths)}"
    )


if __name__ == "__main__":
    main()
