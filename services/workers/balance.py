"""A balance report a designer can trust: `arbiter balance GAME` (or `--all`) runs experiments.

Every row (a seat count, the bots at every seat, options) is played over three seed ranges
(seeds `<seed>/1`, `/2`, `/3`; on the Celery `sim` workers when ARBITER_BROKER_URL is set, else
in local processes), and every figure is given with its 95% (Wilson) interval per range and
pooled. The rule for a claim: a figure departs from its even share only where the pooled
interval excludes it and all three ranges fall on the same side of it; a pooled interval that
holds the even share says "even"; anything else is "no claim" (the ranges disagree).

- The same table is played by bots of increasing strength (random, the game's heuristic,
  and the search levels): an effect that grows with skill is the rules', one that vanishes
  is the bots'.
- Ablations: the option variants that remove a suspected cause, side by side with the
  standard rows; where no option removes it, a counterfactual on the final tally of the same
  games (Shadow Council's zone bonus point).
- The first mover is who moved first, among the winners or not; where sides win together
  (Moody Bear's teams, Shadow Council's factions) each side's win rate against its even
  share.
- A row whose games are the same command for command as another row's is flagged and its
  figures are not printed as a result.

Each game's report is written as JSON and a plot (PNG) into docs/balance/, and the figures
part of docs/balance.md is written anew (between its markers); the rest of that page is
prose and stays as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import text_format

from services.core.decider import Game
from services.workers import gameset
from services.workers.simulate import Plan, play, progress_bar, summarise, wilson

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
BEGIN, END = "<!-- figures: written by `make balance` -->", "<!-- /figures -->"
RANGES = 3  # seed ranges per row: a claim needs all of them to agree


@dataclass(frozen=True)
class Scenario:
    """One row of the report: a seat count, bots, and options in text format."""

    label: str
    bots: tuple[str, ...]
    options: str = ""
    kind: str = "seats"  # seats | variant | side | chapter
    side_bots: tuple[tuple[str, str], ...] = ()  # (side, bot): that side's seats play it


def tiers(game: Game, seats: int) -> list[str]:
    """The bots of the table, weakest first: random, the heuristic, then a search level at the
    seat counts a claim rests on."""
    names = list(dict.fromkeys(b for b in ("random", game.default_bot) if b in game.bots))
    return names + (list(SEARCH_LEVELS) if seats in SEARCHED_SEATS.get(game.name, ()) else [])


# Only at the seat counts the report's claims are about: a search seat costs far more than a
# heuristic's (CPU per move: `easy` 15 ms, `hard` 225 ms; docs/bots.md). `hard` is the tier
# the claims rest on; `easy` stays beside it, a step between the heuristic and `hard`. A
# `hard` row costs minutes of CPU: `arbiter balance GAME --rows LABEL...` plays only the rows
# named and merges them into the report already written (merge_rows).
SEARCH_LEVELS = ("easy", "hard")
SEARCHED_SEATS = {"bubblee": (2,), "bubble_shadow": (2,), "moody_bear": (5,),
                  "shadow_council": (5,)}


def scenarios(game_name: str) -> list[Scenario]:
    game = gameset.game(game_name)
    best = game.default_bot
    out: list[Scenario] = []
    counts = seat_counts(game)
    for n in counts:
        for bot in tiers(game, n):
            out.append(Scenario(f"{n} seats, {bot}", (bot,) * n))
    typical = (best,) * (counts[0] + 1 if len(counts) > 1 else counts[0]) if counts else ()
    for label, options, seats in VARIANTS.get(game_name, []):
        bots = (best,) * seats if seats else typical
        out.append(Scenario(f"{label}, {len(bots)} seats, {best}", bots, options,
                            kind="variant"))
    for side, bot, seats, teams in SIDE_ROWS.get(game_name, []):
        out.append(Scenario(f"{seats} seats, {side} {bot}, the others {teams}", (teams,) * seats,
                            kind="side", side_bots=((side, bot),)))
    if game_name == "eila":
        for chapter in range(6):
            for mode in ("standard", "advanced"):
                for bot in ("greedy",):  # random_options runs to the command cap past chapter 1
                    options = f"single_chapter: true first_chapter: {chapter}"
                    if mode == "advanced":
                        options += " advanced: true"
                    out.append(Scenario(f"chapter {chapter}, {mode}, {bot}", (bot,), options,
                                        kind="chapter"))
    return out


def seat_counts(game: Game) -> list[int]:
    """The smallest count of two seats or more, and the standard count: where the rulebooks'
    seat-dependent rules (a 2-player turn order, a 5-player Solo) show, at a bounded cost."""
    smallest = max(2, game.min_seats)
    return sorted({smallest, max(smallest, game.seat_count)}) if game.max_seats >= 2 else []


# The option variants set beside the standard rows (text format of Options; a seat count, or
# 0 for the smallest count plus one): each removes or adds one suspected cause.
VARIANTS: dict[str, list[tuple[str, str, int]]] = {
    "bubblee": [("no powers", "no_powers: true", 0), ("2 extra blacks", "extra_blacks: 2", 0),
                ("opponent lines grant powers", "opponent_lines_grant_powers: true", 0)],
    "bubble_shadow": [("complacency", "complacency: true", 0),
                      ("all special tokens", "all_special_tokens: true", 0)],
    "moody_bear": [("duo jewel", "duo_jewel: true", 5),
                   ("five-player structure", "five_player_structure: true", 4)],
    "shadow_council": [("full deck", "full_deck: true", 0)],
}


# A side played by one bot against the others played by another, whatever seats the deal
# gives it: (side, its bot, seats, the others' bot). Moody Bear's Solo who never acts, against
# keepers (the audit's row) and against `hard` teams: does waiting for the Dark Swallow win
# against teams that play well?
SIDE_ROWS: dict[str, list[tuple[str, str, int, str]]] = {
    "moody_bear": [("solo", "passive", 5, "keeper"), ("solo", "passive", 5, "hard")],
}


def simulate(game_name: str, s: Scenario, games: int, workers: int, seed: str,
             broker_url: str) -> dict[str, Any]:
    """A row: the scenario played over RANGES seed ranges of `games` games each."""
    game = gameset.game(game_name)
    options = text_format.Parse(s.options, game.pb.Options()) if s.options else None
    ranges, seconds = [], 0.0
    for k in range(1, RANGES + 1):
        plan = Plan(game_name, games, list(s.bots), seed=f"{seed}/{k}",
                    options=options.SerializeToString() if options else b"", workers=workers,
                    side_bots=dict(s.side_bots))
        print(f"{game_name}: {s.label}, seeds {plan.seed}", file=sys.stderr)
        results, took = play(plan, progress_bar(sys.stderr), broker_url)
        ranges.append(results)
        seconds += took
    row = row_of(game, s, ranges)
    row["seconds"] = round(seconds, 1)
    return row


def row_of(game: Game, s: Scenario, ranges: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """A scenario's row from each range's games: the pooled figures, each range's, and what
    they let us claim."""
    plan = Plan(game.name, 0, list(s.bots))
    per_range = [figures(s, summarise(game, plan, results), results) for results in ranges]
    pooled = [r for results in ranges for r in results]
    row = figures(s, summarise(game, plan, pooled), pooled)
    row["ranges"] = [{k: r[k] for k in ("first_mover", "sides", "win_rate", "attempts",
                                         "tally", "equal_turns") if k in r} for r in per_range]
    row["verdict"] = verdict(row, row["ranges"])
    row["games_per_range"] = len(ranges[0])
    # The games themselves, command for command: a row that repeats another is no result.
    row["fingerprint"] = hashlib.sha256("".join(
        r.get("digest", "") for r in pooled).encode()).hexdigest()[:16]
    return row


def figures(s: Scenario, report: dict[str, Any], results: list[dict[str, Any]]
            ) -> dict[str, Any]:
    """The figures of one report (a range, or the ranges pooled)."""
    n = report["games"]
    row = {
        "label": s.label, "kind": s.kind, "bots": list(s.bots), "options": s.options,
        **({"side_bots": dict(s.side_bots)} if s.side_bots else {}),
        "games": n, "first_mover": report["first_mover"],
        "sole_wins": sum(b["wins"] for b in report["bots"]),
        "shared": report["shared"], "no_winner": report["draws"],
        "unfinished": report["unfinished"],
        "win_rate": round(sum(b["wins"] for b in report["bots"]) / n, 4) if n else 0.0,
        "length": report["length"], "ends": report["ends"],
    }
    if "sides" in report:
        row["sides"] = report["sides"]
    tally = zone_bonus_counterfactual(results)
    if tally:
        row["tally"] = tally
    turns = equal_turns(results)
    if turns:
        row["equal_turns"] = turns
    if "attempts" in report:
        # Eila retries a lost chapter until it is won: the win rate is per attempt, and an
        # attempt the command cap stopped is neither won nor lost. With one seat there is
        # no first mover to speak of.
        a = report["attempts"]
        lo, hi = wilson(a["won"], a["ended"])
        del row["first_mover"]
        row["sole_wins"] = a["won"]
        row["win_rate"] = round(a["won"] / a["ended"], 4) if a["ended"] else 0.0
        row["attempts"] = {"won": a["won"], "ended": a["ended"],
                           "ci95": [round(lo, 4), round(hi, 4)],
                           "stopped_by_cap": a["stopped_by_cap"]}
    return row


def zone_bonus_counterfactual(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Shadow Council: the games the zone bonus point decided (its faction won, and without the
    point the survivors and then gold name the other faction or nobody)."""
    tallied = [r["tally"] for r in results if r["finished"] and "tally" in r]
    if not tallied:
        return {}
    by_bonus = Counter(t["winner"] for t in tallied if t["winner"] != t["without_bonus"])
    without = Counter(t["without_bonus"] for t in tallied)
    return {"games": len(tallied), "decided_by_bonus": dict(by_bonus),
            "won_without_bonus": dict(without),
            "won": dict(Counter(t["winner"] for t in tallied))}


BY_THE_BAG = "the bag cannot refill the sky"


def equal_turns(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Bubblee Pop: of the games that ran to the bag, the first mover's share of those one seat
    won, as played and with the scores taken when both sides had had as many turns."""
    games = [r for r in results if r["finished"] and r["end"] == BY_THE_BAG
             and r["first_mover_seat"] >= 0 and "even_turn_winners" in r]
    if not games:
        return {}
    out: dict[str, Any] = {"games": len(games)}
    for key, winners in (("as_played", "winner_seats"), ("at_equal_turns", "even_turn_winners")):
        decided = [r for r in games if len(r[winners]) == 1]
        won = sum(1 for r in decided if r[winners][0] == r["first_mover_seat"])
        lo, hi = wilson(won, len(decided))
        out[key] = {"decided_games": len(decided), "first_mover_won": won,
                    "win_rate": round(won / len(decided), 4) if decided else 0.0,
                    "ci95": [round(lo, 4), round(hi, 4)], "even_share": 0.5}
    return out


def verdict(row: dict[str, Any], ranges: list[dict[str, Any]]) -> dict[str, str]:
    """The claim each figure of the row allows, by the rule of three ranges."""
    out = {}
    if "first_mover" in row and row["first_mover"]["decided_games"]:
        out["first_mover"] = claim(row["first_mover"], [r["first_mover"] for r in ranges])
    for key, f in row.get("equal_turns", {}).items():
        if isinstance(f, dict) and f["decided_games"]:
            out[key] = claim(f, [r.get("equal_turns", {}).get(key, {}) for r in ranges])
    for side, f in row.get("sides", {}).items():
        if isinstance(f, dict):
            out[side] = claim(f, [r["sides"].get(side, {}) for r in ranges],
                              f["even_share"])
    return out


def claim(pooled: dict[str, Any], ranges: Sequence[dict[str, Any]],
          even: float | None = None) -> str:
    """"above" or "below" the even share when the pooled interval excludes it and every range
    lies on that side of its own even share (a first mover's depends on the games' winners);
    "even" when the pooled interval holds it; else "no claim"."""
    even = pooled["even_share"] if even is None else even
    lo, hi = pooled["ci95"]
    if lo <= even <= hi:
        return "even"
    side = "above" if lo > even else "below"

    def on_side(r: dict[str, Any]) -> bool:
        rate, share = r.get("win_rate"), r.get("even_share", even)
        return rate is not None and (rate > share if side == "above" else rate < share)

    if all(on_side(r) for r in ranges):
        return side
    return "no claim"


def flag_repeats(rows: list[dict[str, Any]]) -> None:
    """A row whose games are another's, command for command, says so instead of a result."""
    seen: dict[str, str] = {}
    for row in rows:
        earlier = seen.setdefault(row["fingerprint"], row["label"])
        if earlier != row["label"]:
            row["same_games_as"] = earlier


# An Eila game retries its chapter until it is won or the command cap stops it: for a bot
# that seldom wins, one game is hundreds of attempts and the whole 20,000 commands (half a
# minute). Its rows play a fiftieth of the games per range (at least 1) so that the report
# takes minutes; each row's interval shows how many attempts that gave.
CHAPTER_GAMES_SHARE = 50


def chapter_games(games: int) -> int:
    return max(1, games // CHAPTER_GAMES_SHARE)


def balance(game_name: str, games: int, workers: int = 1, seed: str = "balance",
            broker_url: str = "") -> dict[str, Any]:
    """`games` is the games per seed range of a row (three ranges a row)."""
    rows = [simulate(game_name, s, chapter_games(games) if s.kind == "chapter" else games,
                     workers, seed, broker_url) for s in scenarios(game_name)]
    flag_repeats(rows)
    return {"game": game_name, "games_per_range": games, "ranges": RANGES, "seed": seed,
            "seeds": [f"{seed}/{k}" for k in range(1, RANGES + 1)], "scenarios": rows}


def merge_rows(game_name: str, labels: Sequence[str], games: int | None, folder: str,
               workers: int = 1, seed: str = "balance", broker_url: str = "") -> dict[str, Any]:
    """The report already written in `folder`/balance/GAME.json, with only the rows named by
    `labels` played (anew, or for the first time, at `games` per range; by default a row
    played anew keeps its own, a new row takes the report's) and the others kept as they
    were, byte for byte in the JSON. The rows keep the order of scenarios(); a row the report
    has and scenarios() no longer names stays where it was. The seed must be the report's:
    the rows of a report share their deals."""
    path = os.path.join(folder, "balance", f"{game_name}.json")
    with open(path) as f:
        report: dict[str, Any] = json.load(f)
    own: dict[str, int] = {r["label"]: r["games_per_range"] for r in report["scenarios"]}
    if report["seed"] != seed:
        raise ValueError(f"{path} was played from seed {report['seed']!r}, not {seed!r}")
    known = {s.label: s for s in scenarios(game_name)}
    unknown = [label for label in labels if label not in known]
    if unknown:
        raise ValueError(f"no row {', '.join(map(repr, unknown))} in {game_name}; its rows: "
                         + "; ".join(known))

    def games_of(label: str) -> int:
        if games is None and label in own:
            return own[label]  # as the row was played (a chapter's games included)
        n = report["games_per_range"] if games is None else games
        return chapter_games(n) if known[label].kind == "chapter" else n

    played = {label: simulate(game_name, known[label], games_of(label), workers, seed,
                              broker_url) for label in dict.fromkeys(labels)}
    rows = [played.get(r["label"], r) for r in report["scenarios"]]
    order = list(known)
    for label, row in played.items():
        if any(r["label"] == label for r in rows):
            continue
        # A new row goes after the last row that scenarios() puts before it.
        at = max((i + 1 for i, r in enumerate(rows)
                  if r["label"] in known and order.index(r["label"]) < order.index(label)),
                 default=0)
        rows.insert(at, row)
    # A new row that repeats another says so; the rows kept are not touched.
    for label, row in played.items():
        row.pop("same_games_as", None)
        earlier = [r["label"] for r in rows if r["label"] != label
                   and r["fingerprint"] == row["fingerprint"]]
        if earlier:
            row["same_games_as"] = earlier[0]
    report["scenarios"] = rows
    return report


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _rate(f: dict[str, Any]) -> str:
    return f"{_pct(f['win_rate'])} ({_pct(f['ci95'][0])}-{_pct(f['ci95'][1])})"


def _per_range(ranges: list[dict[str, Any]], pick: Any) -> str:
    return " / ".join(_pct(pick(r)) for r in ranges)


def _labelled(report: dict[str, Any], r: dict[str, Any]) -> dict[str, Any]:
    """A row played at other games per range than its report (merged in by --rows) says so
    in its label."""
    if r.get("games_per_range", report["games_per_range"]) == report["games_per_range"]:
        return r
    n = r["games_per_range"]
    return {**r, "label": f"{r['label']} ({n} game{'s' if n != 1 else ''} a range)"}


def markdown(report: dict[str, Any]) -> str:
    game = gameset.game(report["game"])
    rows = [_labelled(report, r) for r in report["scenarios"] if r["kind"] != "chapter"]
    chapters = [r for r in report["scenarios"] if r["kind"] == "chapter"]
    per_range = report["games_per_range"] if rows else chapter_games(report["games_per_range"])
    lines = [f"### {game.title}", "",
             f"{per_range} game{'s' if per_range > 1 else ''} per seed range, "
             f"{report['ranges']} ranges per row (seeds "
             f"{', '.join(f'`{s}`' for s in report['seeds'])}); "
             f"![{game.title}](balance/{game.name}.png)", ""]
    if rows:
        lines += ["| row | first mover won, pooled (95%) | per range | even | claim | "
                  "shared | no winner | cap | mean length | most common end |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "same_games_as" in r:
            lines.append(f"| {r['label']} | the same games as *{r['same_games_as']}*, "
                         "command for command: no result | | | | | | | | |")
            continue
        fm = r["first_mover"]
        decided = fm["decided_games"]
        # The JSON keeps its keys sorted: the most common end is the largest count.
        end = max(r["ends"], key=lambda e: r["ends"][e], default="-")
        lines.append(
            f"| {r['label']} | {_rate(fm) if decided else '-'} | "
            f"{_per_range(r['ranges'], lambda x: x['first_mover']['win_rate']) if decided else '-'}"
            f" | {_pct(fm['even_share'])} | {r['verdict'].get('first_mover', '-')} | "
            f"{r['shared']} | {r['no_winner']} | {r['unfinished']} | {r['length']['mean']} | "
            f"{end} |")
    sided = [r for r in rows if "sides" in r and "same_games_as" not in r]
    if sided:
        lines += ["", "Where a side wins together: each side's share of the games one side "
                  "won (pooled, 95%), per range, against its even share.", "",
                  "| row | side | won (95%) | per range | even | claim |",
                  "|---|---|---|---|---|---|"]
    for r in sided:
        for side, f in r["sides"].items():
            if isinstance(f, dict):
                lines.append(
                    f"| {r['label']} | {side} | {f['won']} of {r['sides']['decided_games']}: "
                    f"{_rate(f)} | "
                    f"{_per_range(r['ranges'], lambda x, s=side: x['sides'][s]['win_rate'])} | "
                    f"{_pct(f['even_share'])} | {r['verdict'].get(side, '-')} |")
    turned = [r for r in rows if "equal_turns" in r and "same_games_as" not in r]
    if turned:
        lines += ["", "The games that ran to the bag, as played and scored when both players had "
                  "had as many turns (the first player's extra last turn taken away): the "
                  "first player's share of the games one player won (pooled, 95%), per range.",
                  "", "| row | games | as played | per range | claim | at equal turns | "
                  "per range | claim |", "|---|---|---|---|---|---|---|---|"]
    for r in turned:
        t = r["equal_turns"]
        cells = []
        for key in ("as_played", "at_equal_turns"):
            cells += [_rate(t[key]), _per_range(
                r["ranges"], lambda x, k=key: x.get("equal_turns", {}).get(k, {"win_rate": 0})[
                    "win_rate"]), r["verdict"].get(key, "-")]
        lines.append(f"| {r['label']} | {t['games']} | " + " | ".join(cells) + " |")
    tallied = [r for r in rows if "tally" in r and "same_games_as" not in r]
    if tallied:
        lines += ["", "The zone bonus point, taken away from the final tally of the same games "
                  "(survivors, then gold): the games it decided, by the faction it gave them.",
                  "", "| row | games | won (with the point) | won without it | decided by "
                  "the point |", "|---|---|---|---|---|"]
    for r in tallied:
        t = r["tally"]
        lines.append(f"| {r['label']} | {t['games']} | {_counts(t['won'])} | "
                     f"{_counts(t['won_without_bonus'])} | {_counts(t['decided_by_bonus'])} |")
    if chapters:
        lines += ["", "A game retries a lost chapter until it is won: the rate is per attempt; "
                  "an attempt the command cap stopped is neither won nor lost.", "",
                  "| chapter, mode, bot | games | attempts won | win rate per attempt (95% "
                  "interval) | per range | stopped by the cap | mean length |",
                  "|---|---|---|---|---|---|---|"]
    for r in chapters:
        a = r["attempts"]
        lines.append(f"| {r['label']} | {r['games']} | {a['won']} of {a['ended']} | "
                     f"{_pct(r['win_rate'])} ({_pct(a['ci95'][0])}-{_pct(a['ci95'][1])}) | "
                     f"{_per_range(r['ranges'], lambda x: x['win_rate'])} | "
                     f"{a['stopped_by_cap']} | "
                     f"{r['length']['mean'] if r['games'] > r['unfinished'] else '-'} |")
    return "\n".join(lines) + "\n"


def _counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k or 'nobody'} {v}" for k, v in sorted(c.items())) or "-"


def plot(report: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["scenarios"] if r["kind"] != "chapter"
            and r["first_mover"]["decided_games"] and "same_games_as" not in r]
    chapters = [r for r in report["scenarios"] if r["kind"] == "chapter"]
    shown = chapters or rows
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(shown) + 2))
    labels = [r["label"] for r in shown]
    if chapters:
        rates = [r["win_rate"] for r in chapters]
        errors = [[r["win_rate"] - r["attempts"]["ci95"][0] for r in chapters],
                  [r["attempts"]["ci95"][1] - r["win_rate"] for r in chapters]]
        ax.barh(labels, rates, xerr=errors, color="tab:green")
        ax.set_xlabel("chapter attempts won (share, 95% interval)")
    else:
        rates = [r["first_mover"]["win_rate"] for r in rows]
        errors = [[r["first_mover"]["win_rate"] - r["first_mover"]["ci95"][0] for r in rows],
                  [r["first_mover"]["ci95"][1] - r["first_mover"]["win_rate"] for r in rows]]
        ax.barh(labels, rates, xerr=errors, color="tab:blue", alpha=0.8,
                label="first mover's wins (95% interval)")
        ax.scatter([r["first_mover"]["even_share"] for r in rows], labels, color="black",
                   marker="|", s=300, zorder=3, label="even share")
        ax.set_xlabel("share of the games one seat won alone that the first mover won")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    ax.set_xlim(0, 1)
    ax.invert_yaxis()
    ax.set_title(gameset.game(report["game"]).title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write(reports: list[dict[str, Any]], docs: str = DOCS) -> None:
    folder = os.path.join(docs, "balance")
    os.makedirs(folder, exist_ok=True)
    for report in reports:
        with open(os.path.join(folder, f"{report['game']}.json"), "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
        plot(report, os.path.join(folder, f"{report['game']}.png"))
    figures = "\n".join(markdown(r) for r in saved(folder))
    write_figures(os.path.join(docs, "balance.md"), "Balance", BEGIN, END, figures)


def saved(folder: str) -> list[dict[str, Any]]:
    """The JSON reports of a folder, in the order of the games."""
    order = list(gameset.all_games())
    reports = [json.load(open(os.path.join(folder, name))) for name in os.listdir(folder)
               if name.endswith(".json")]
    return sorted(reports, key=lambda r: order.index(r["game"]) if r["game"] in order
                  else len(order))


def write_figures(page: str, title: str, begin: str, end: str, figures: str) -> None:
    """Write `figures` between the page's markers; the prose around them stays."""
    text = open(page).read() if os.path.exists(page) else f"# {title}\n\n{begin}\n{end}\n"
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    with open(page, "w") as f:
        f.write(f"{head}{begin}\n\n{figures}\n{end}{tail}")
