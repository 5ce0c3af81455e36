"""Fit the weights of Moody Bear's and Shadow Council's `estimate` from self-play.

    .venv/bin/python -m loadtests.fit_estimates moody_bear|shadow_council [--games N]
        [--seed S] [--every K] [--seats 5]

Plays the game's heuristic bot against itself at 5 seats (seeded: game g is dealt from
"S-g" and played from "Sp-g"), keeps every K-th position of each finished game, and pairs
each position and seat with whether that seat won. The features are the game's own, imported
from its bots.py. A logistic regression is fitted by Newton's method with a small L2: once on
the even games to give the log loss on the odd ones (against the base rate), then on all
games for the weights it prints, in the form bots.py holds them.

The committed weights came from the defaults (seed "fit"; every 4th command in Moody Bear,
every 2nd in Shadow Council); each run takes about a minute of one core and prints them
exactly:
    .venv/bin/python -m loadtests.fit_estimates moody_bear --games 1000
    .venv/bin/python -m loadtests.fit_estimates shadow_council --games 1500
"""

from __future__ import annotations

import argparse
import math
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services import games as registry
from services.core.decider import Rng, Seat
from services.moody_bear import bots as mb_bots
from services.moody_bear import cards as mb_cards
from services.shadow_council import bots as sc_bots

MAX_STEPS = 3000  # a self-play game longer than this is dropped, not scored


@dataclass(frozen=True)
class Model:
    """One game's features and how the fitted vector splits into bots.py's constants."""

    features: Callable[[Any, int], Sequence[float]]
    # (name in bots.py, first index, end index) of each constant in the fitted vector
    blocks: tuple[tuple[str, int, int], ...]
    games: int  # the number of games behind the committed weights
    every: int


def _moody_bear_features(state: Any, seat: int) -> list[float]:
    # One vector with a colour block and a Solo block, the other block zero: the two
    # models are fitted together, under one L2, as the committed weights were.
    colour = len(mb_bots.COLOUR_WEIGHTS)
    solo = len(mb_bots.SOLO_WEIGHTS)
    team = state.teams[seat]
    if team == mb_cards.SOLO:
        return [0.0] * colour + list(mb_bots._solo_features(state))
    return list(mb_bots._colour_features(state, team)) + [0.0] * solo


_MB_COLOUR = len(mb_bots.COLOUR_WEIGHTS)
_MB_ALL = _MB_COLOUR + len(mb_bots.SOLO_WEIGHTS)

MODELS: dict[str, Model] = {
    "moody_bear": Model(_moody_bear_features,
                        (("COLOUR_WEIGHTS", 0, _MB_COLOUR), ("SOLO_WEIGHTS", _MB_COLOUR, _MB_ALL)),
                        games=1000, every=4),
    "shadow_council": Model(lambda s, seat: list(sc_bots._features(s, seat)),
                            (("ESTIMATE_WEIGHTS", 0, len(sc_bots.ESTIMATE_WEIGHTS)),),
                            games=1500, every=2),
}


def self_play(name: str, seats: int, games: int, seed: str,
              every: int) -> list[tuple[int, Any, tuple[int, ...]]]:
    """(game index, position, winners) for every `every`-th command of each finished game."""
    game = registry.game(name)
    bot = game.bots[game.default_bot]
    rows: list[tuple[int, Any, tuple[int, ...]]] = []
    for g in range(games):
        players = [Seat(f"p{i}", "ai") for i in range(seats)]
        st = game.replay(game.setup(game.pb.Options(), players, Rng(f"{seed}-{g}".encode(), 0)))
        rng = Rng(f"{seed}p-{g}".encode(), 0)
        states: list[Any] = []
        step = 0
        while (res := game.outcome(st)) is None and step < MAX_STEPS:
            if step % every == 0:
                states.append(st)
            actors = game.to_act(st)
            if not actors:
                due = game.deadlines(st) if game.deadlines else []
                if not due:
                    break
                for e in game.decide(st, None, due[0][1], rng):
                    st = game.evolve(st, e)
                continue
            a = actors[0] if len(actors) == 1 else rng.choice(actors)
            cmd = bot(game.view(st, a), game.legal_actions(st, a), rng)
            for e in game.decide(st, a, cmd, rng):
                st = game.evolve(st, e)
            step += 1
        if res is None:
            continue
        rows.extend((g, s, tuple(res.winners)) for s in states)
    return rows


def fit(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 50) -> np.ndarray:
    """Weights minimising the mean log loss plus l2/2 |w|^2, by Newton's method."""
    w = np.zeros(x.shape[1])
    eye = np.eye(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-x @ w))
        grad = x.T @ (p - y) / len(y) + l2 * w
        hess = (x * (p * (1 - p))[:, None]).T @ x / len(y) + l2 * eye
        w = w - np.linalg.solve(hess, grad)
    return w


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def predict(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.asarray(1 / (1 + np.exp(-x @ w)))


def as_constants(w: np.ndarray, blocks: Sequence[tuple[str, int, int]]) -> str:
    """Each block as a tuple assignment rounded to 3 places, wrapped at 100 columns."""
    out = []
    for name, a, b in blocks:
        values = [str(round(float(v), 3)) for v in w[a:b]]
        body = ", ".join(values) + ("," if len(values) == 1 else "")
        head = f"{name} = ("
        out.append(textwrap.fill(body, width=99, initial_indent=head,
                                 subsequent_indent=" " * len(head)) + ")")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("game", choices=sorted(MODELS))
    ap.add_argument("--games", type=int, default=None)
    ap.add_argument("--seed", default="fit")
    ap.add_argument("--every", type=int, default=None)
    ap.add_argument("--seats", type=int, default=5)
    args = ap.parse_args(argv)
    model = MODELS[args.game]
    games = model.games if args.games is None else args.games
    every = model.every if args.every is None else args.every

    rows = self_play(args.game, args.seats, games, args.seed, every)
    xs: list[Sequence[float]] = []
    ys: list[float] = []
    gs: list[int] = []
    for g, st, winners in rows:
        for seat in range(len(st.hands)):
            xs.append(model.features(st, seat))
            ys.append(1.0 if seat in winners else 0.0)
            gs.append(g)
    x, y = np.array(xs, dtype=float), np.array(ys)
    train = np.array(gs) % 2 == 0  # held out by whole games: positions of one game are alike
    played = len(set(gs))
    print(f"{len(rows)} positions, {len(y)} (position, seat) pairs, from {played} finished "
          f"of {games} games (seed {args.seed}, every {every})")
    w = fit(x[train], y[train])
    base = float(y[train].mean())
    test = ~train
    right = float(np.mean((predict(w, x[test]) > 0.5) == (y[test] > 0.5)))
    print(f"held out (odd games, {int(test.sum())} pairs): log loss "
          f"{log_loss(predict(w, x[test]), y[test]):.3f}, base rate {base:.3f} gives "
          f"{log_loss(np.full(int(test.sum()), base), y[test]):.3f}; "
          f"{right:.1%} called right")
    w = fit(x, y)
    if not math.isfinite(float(np.abs(w).sum())):
        raise SystemExit("the fit diverged")
    print(f"fitted on all {len(y)} pairs (base rate {float(y.mean()):.3f}):")
    print(as_constants(w, model.blocks))


if __name__ == "__main__":
    main()
