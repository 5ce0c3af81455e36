"""The ladder: `arbiter ladder GAME` plays every bot against the others and rates them.

Pairings: at 2 seats every pair of bots; at more seats every bot alone against a field of
another (one bot per seat: A, B, B, B...), the fields being the game's own heuristic bots
unless named (a field of search bots costs a search at every seat). Each pairing is a
simulation (seats rotated, so every bot plays every seat; on the `sim` workers with a broker,
else in local processes), and every pairing plays the same seeds: the deals are alike, only
the bots differ. A search level's strength is a CPU budget per move (thread time): its games
are not repeatable from the seed as a heuristic bot's are.

Ratings: a Bradley-Terry fit over every game at once, on the Elo scale (400 points: 10 to 1
odds), the mean rating 1500. A game counts as comparisons between seats of different bots:
each winner beats each loser, weighted 1/(seats - 1) so that one seat's game weighs at most
one. Between equal bots these are even whatever the seat count or the teams, so a bot that
wins its fair share rates as its field does. A game nobody won, a win every seat shares and
an unfinished game compare nobody: they are counted apart. Intervals: the 2.5 and 97.5
percentiles of the ratings refitted to games drawn again with replacement within each
pairing (a bootstrap, with a fixed seed).

Head to head: at 2 seats, A's share of the games one of the two won (Wilson interval); at
more seats, how often A's seat won (alone or with its team) against the fair share (the
winners per game over the seats, in the same games), and where seats win by side (teams,
factions) A's rate on each side.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from services.core.bots import LEVELS
from services.core.decider import Game
from services.workers import gameset
from services.workers.simulate import Plan, check, play, progress_bar, wilson

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
BOOTSTRAP = 200  # resamples for the intervals
PRIOR = 0.5  # pseudo-wins each way between two bots that met: a 10-0 result rates finitely
Comparison = tuple[str, str, float]  # winner's bot, loser's bot, weight


class BadLadder(ValueError):
    """A ladder that cannot be played: the sentence says why."""


def entrants(game: Game) -> list[str]:
    """Every heuristic bot the game has, in its own order, then every search level."""
    return [*game.bots, *LEVELS]


def pairings(bots: Sequence[str], seats: int, fields: Sequence[str] = ()
             ) -> list[tuple[str, ...]]:
    if seats == 2:
        return list(itertools.combinations(bots, 2))
    return [(a,) + (b,) * (seats - 1) for a in bots for b in (fields or bots) if a != b]


def comparisons(result: dict[str, Any], bots: Sequence[str]) -> list[Comparison]:
    """A finished game as winner-beats-loser comparisons between seats of different bots."""
    if not result["finished"]:
        return []
    n = len(bots)
    won = set(result["winner_entries"])
    weight = 1 / (n - 1)
    return [(bots[w], bots[lost], weight) for w in won for lost in range(n)
            if lost not in won and bots[lost] != bots[w]]


def fit(compared: Sequence[Comparison], names: Sequence[str], prior: float = PRIOR,
        rounds: int = 2000) -> dict[str, float]:
    """Bradley-Terry strengths by the minorisation-maximisation iteration (Hunter 2004), as
    Elo ratings with mean 1500. `prior` adds that many wins each way to every pair that met."""
    wins: dict[tuple[str, str], float] = defaultdict(float)
    for winner, loser, weight in compared:
        wins[winner, loser] += weight
    met = {frozenset(pair) for pair in wins}
    for pair in met:
        a, b = sorted(pair)
        wins[a, b] += prior
        wins[b, a] += prior
    games: dict[tuple[str, str], float] = defaultdict(float)  # both ways, per pair
    total_wins: dict[str, float] = defaultdict(float)
    for (a, b), w in wins.items():
        games[a, b] += w
        games[b, a] += w
        total_wins[a] += w
    strength = dict.fromkeys(names, 1.0)
    for _ in range(rounds):
        new = {}
        for a in names:
            denominator = sum(games[a, b] / (strength[a] + strength[b])
                              for b in names if b != a and games[a, b])
            new[a] = total_wins[a] / denominator if denominator else strength[a]
        # Only ratios matter: keep the geometric mean at 1 so the numbers stay in range.
        scale = math.exp(sum(math.log(max(v, 1e-300)) for v in new.values()) / len(new))
        new = {a: v / scale for a, v in new.items()}
        converged = max(abs(new[a] - strength[a]) for a in names) < 1e-12
        strength = new
        if converged:
            break
    elo = {a: 400 * math.log10(max(v, 1e-300)) for a, v in strength.items()}
    mean = sum(elo.values()) / len(elo)
    return {a: round(v - mean + 1500, 1) for a, v in elo.items()}


def ratings(played: dict[tuple[str, ...], list[dict[str, Any]]], names: Sequence[str],
            seed: str = "ladder", resamples: int = BOOTSTRAP) -> list[dict[str, Any]]:
    """Each bot's rating with its bootstrap interval, best first."""
    per_pairing = {bots: [comparisons(r, bots) for r in games] for bots, games in played.items()}
    point = fit([c for games in per_pairing.values() for g in games for c in g], names)
    draws: dict[str, list[float]] = {a: [] for a in names}
    rng = random.Random(seed)
    for _ in range(resamples):
        sample = [c for games in per_pairing.values()
                  for g in rng.choices(games, k=len(games)) for c in g]
        for a, v in fit(sample, names).items():
            draws[a].append(v)
    out = []
    for a in names:
        d = sorted(draws[a])
        lo, hi = (d[int(0.025 * (len(d) - 1))], d[int(0.975 * (len(d) - 1))]) if d else (
            point[a], point[a])
        out.append({"bot": a, "elo": point[a], "ci95": [lo, hi],
                    "games": sum(len(g) for bots, g in played.items() if a in bots)})
    return sorted(out, key=lambda r: -r["elo"])


def head_to_head(bots: tuple[str, ...], games: list[dict[str, Any]]) -> dict[str, Any]:
    """What one pairing's games say, with the undecided counted apart."""
    finished = [r for r in games if r["finished"]]
    row: dict[str, Any] = {"bots": list(bots), "games": len(games),
                           "unfinished": len(games) - len(finished),
                           "errors": [r["error"] for r in games if r["error"]][:5]}
    if len(bots) == 2:
        a_won = sum(1 for r in finished if r["winner_entries"] == [0])
        b_won = sum(1 for r in finished if r["winner_entries"] == [1])
        decided = a_won + b_won
        lo, hi = wilson(a_won, decided)
        row.update({"a": bots[0], "b": bots[1], "a_won": a_won, "b_won": b_won,
                    "shared": sum(1 for r in finished if len(r["winner_entries"]) > 1),
                    "no_winner": sum(1 for r in finished if not r["winner_entries"]),
                    "a_rate": round(a_won / decided, 4) if decided else None,
                    "ci95": [round(lo, 4), round(hi, 4)]})
        return row
    a_won = sum(1 for r in finished if 0 in r["winner_entries"])
    winners = sum(len(r["winner_entries"]) for r in finished)
    fair = winners / (len(bots) * len(finished)) if finished else 0.0
    lo, hi = wilson(a_won, len(finished))
    row.update({"a": bots[0], "field": bots[1], "a_won": a_won, "finished": len(finished),
                "no_winner": sum(1 for r in finished if not r["winner_entries"]),
                "a_rate": round(a_won / len(finished), 4) if finished else None,
                "ci95": [round(lo, 4), round(hi, 4)], "fair_share": round(fair, 4),
                "share_ratio": round(a_won / len(finished) / fair, 3) if fair else None})
    if any("sides" in r for r in finished):
        row["a_by_side"] = by_side(finished)
    return row


def by_side(finished: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Entry 0's win rate on each side it played."""
    played: Counter[str] = Counter()
    won: Counter[str] = Counter()
    for r in finished:
        seat = r["entry_seats"][0]
        side = r["sides"][seat]
        played[side] += 1
        won[side] += seat in r["winner_seats"]
    out = {}
    for side in sorted(played):
        lo, hi = wilson(won[side], played[side])
        out[side] = {"games": played[side], "won": won[side],
                     "rate": round(won[side] / played[side], 4),
                     "ci95": [round(lo, 4), round(hi, 4)]}
    return out


def ladder(game_name: str, games: int, bots: Sequence[str] = (), seats: int = 0,
           workers: int = 1, seed: str = "ladder", broker_url: str = "",
           quiet: bool = False, fields: Sequence[str] = ()) -> dict[str, Any]:
    game = gameset.game(game_name)
    if game.max_seats < 2:
        raise BadLadder(f"{game.title} is played alone: a ladder needs two seats or more "
                        "(its bots are compared by `arbiter balance`)")
    seats = seats or max(2, game.seat_count)
    if not game.min_seats <= seats <= game.max_seats or seats < 2:
        raise BadLadder(f"{game.title} takes {max(2, game.min_seats)} to {game.max_seats} "
                        f"seats in a ladder, not {seats}")
    names = list(bots) or entrants(game)
    if len(set(names)) != len(names) or len(names) < 2:
        raise BadLadder(f"a ladder needs two different bots or more, not {names}")
    fields = list(fields) or [b for b in names if b in game.bots] or names
    if seats > 2 and not set(fields) <= set(names):
        raise BadLadder(f"a field must be one of the bots rated ({', '.join(names)}), "
                        f"not {', '.join(sorted(set(fields) - set(names)))}")
    plans = [Plan(game_name, games, list(p), seed=seed, workers=workers)
             for p in pairings(names, seats, fields)]
    for plan in plans:
        check(plan)  # every pairing before any game: a bad name is an error, not half a run
    played: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    seconds = 0.0
    for plan in plans:
        if not quiet:
            print(f"{game_name}: {', '.join(plan.bots)}", file=sys.stderr)
        results, took = play(plan, None if quiet else progress_bar(sys.stderr), broker_url)
        played[tuple(plan.bots)] = results
        seconds += took
    return {"game": game_name, "title": game.title, "seats": seats, "seed": seed,
            "games_per_pairing": games, "bots": names, "fields": fields if seats > 2 else [],
            "ratings": ratings(played, names, seed),
            "head_to_head": [head_to_head(b, g) for b, g in played.items()],
            "seconds": round(seconds, 1), "workers": workers, "celery": bool(broker_url)}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def render(report: dict[str, Any]) -> str:
    """A game's ladder as text (the terminal) and as the section of docs/ladder.md."""
    lines = [f"### {report['title']}", "",
             f"{report['seats']} seats, {report['games_per_pairing']} games per pairing, seed "
             f"`{report['seed']}`"
             + (f"; fields: {', '.join(report['fields'])}" if report.get("fields") else "")
             + f"; {report['seconds']} s.", "", "| bot | Elo | 95% interval | games |",
             "|---|---|---|---|"]
    for r in report["ratings"]:
        lines.append(f"| {r['bot']} | {r['elo']:.0f} | {r['ci95'][0]:.0f} to "
                     f"{r['ci95'][1]:.0f} | {r['games']} |")
    lines.append("")
    if report["seats"] == 2:
        lines += ["| A | B | A won | B won | A's share of decided (95%) | shared | no winner "
                  "| unfinished |", "|---|---|---|---|---|---|---|---|"]
        for h in report["head_to_head"]:
            lines.append(f"| {h['a']} | {h['b']} | {h['a_won']} | {h['b_won']} | "
                         f"{_pct(h['a_rate'])} ({_pct(h['ci95'][0])}-{_pct(h['ci95'][1])}) | "
                         f"{h['shared']} | {h['no_winner']} | {h['unfinished']} |")
    else:
        lines += ["| A (one seat) | field | A's seat won (95%) | fair share | x fair | "
                  "A by side | unfinished |", "|---|---|---|---|---|---|---|"]
        for h in report["head_to_head"]:
            sides = ", ".join(f"{side} {s['won']}/{s['games']}"
                              for side, s in h.get("a_by_side", {}).items()) or "-"
            ratio = "-" if h["share_ratio"] is None else f"{h['share_ratio']:.2f}"
            lines.append(f"| {h['a']} | {h['field']} | {_pct(h['a_rate'])} "
                         f"({_pct(h['ci95'][0])}-{_pct(h['ci95'][1])}) | "
                         f"{_pct(h['fair_share'])} | {ratio} | {sides} | {h['unfinished']} |")
    return "\n".join(lines) + "\n"


BEGIN, END = "<!-- figures: written by `make ladder` -->", "<!-- /figures -->"


def write(report: dict[str, Any], path: str = "", docs: str = "") -> None:
    """The JSON at `path`; with `docs`, also docs/ladder/GAME.json and the figures part of
    docs/ladder.md (between its markers: the prose around them stays)."""
    from services.workers.balance import saved, write_figures

    if path:
        with open(path, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
    if not docs:
        return
    folder = os.path.join(docs, "ladder")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{report['game']}.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    write_figures(os.path.join(docs, "ladder.md"), "Ladder", BEGIN, END,
                  "\n".join(render(r) for r in saved(folder)))
