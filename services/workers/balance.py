"""A balance report a designer can use: `arbiter balance GAME` (or `--all`).

For each game it runs simulations (on the Celery `sim` workers when ARBITER_BROKER_URL is set,
else in local processes) and reports:

- first-mover advantage between equal bots, by seat count: of the games one seat won alone,
  the share the first seat to act won, with its 95% interval, against the even share;
- the same with the random bot, which plays no better from any seat: an advantage it shows
  comes from the rules themselves, one that only the greedy bot shows comes from the bots;
- win rate, game length and how games end by seat count and by option variant;
- for Eila, each chapter's win rate per attempt by bot and mode (standard, advanced), and
  the attempts the command cap stopped; a game of one seat has no first mover.

Each game's report is written as JSON and a plot (PNG) into docs/balance/, and the figures
part of docs/balance.md is written anew (between its markers); the rest of that page is
prose and stays as it is.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from google.protobuf import text_format

from services.workers import gameset
from services.workers.simulate import Plan, progress_bar, run, wilson

DOCS = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
BEGIN, END = "<!-- figures: written by `make balance` -->", "<!-- /figures -->"


@dataclass(frozen=True)
class Scenario:
    """One simulation of the report: a seat count, bots, and options in text format."""

    label: str
    bots: tuple[str, ...]
    options: str = ""
    kind: str = "seats"  # seats | rules | variant | chapter


def scenarios(game_name: str) -> list[Scenario]:
    game = gameset.game(game_name)
    best = game.default_bot
    out: list[Scenario] = []
    counts = range(max(2, game.min_seats), game.max_seats + 1)
    for n in counts:
        out.append(Scenario(f"{n} seats, {best}", (best,) * n))
        out.append(Scenario(f"{n} seats, random", ("random",) * n, kind="rules"))
    typical = (best,) * (min(counts) + 1 if len(counts) > 1 else min(counts)) if counts else ()
    for label, options in VARIANTS.get(game_name, []):
        out.append(Scenario(f"{label}, {len(typical)} seats, {best}", typical, options,
                            kind="variant"))
    if game_name == "eila":
        for chapter in range(6):
            for mode in ("standard", "advanced"):
                for bot in ("greedy", "random_options"):
                    options = f"single_chapter: true first_chapter: {chapter}"
                    if mode == "advanced":
                        options += " advanced: true"
                    out.append(Scenario(f"chapter {chapter}, {mode}, {bot}", (bot,), options,
                                        kind="chapter"))
    return out


# The option variants a designer compares with the standard game (text format of Options).
VARIANTS: dict[str, list[tuple[str, str]]] = {
    "bubblee": [("no powers", "no_powers: true"), ("2 extra blacks", "extra_blacks: 2"),
                ("opponent lines grant powers", "opponent_lines_grant_powers: true")],
    "bubble_shadow": [("complacency", "complacency: true"),
                      ("all special tokens", "all_special_tokens: true")],
    "moody_bear": [("duo jewel", "duo_jewel: true"),
                   ("five-player structure", "five_player_structure: true")],
    "shadow_council": [("full deck", "full_deck: true")],
}


def simulate(game_name: str, s: Scenario, games: int, workers: int, seed: str,
             broker_url: str) -> dict[str, Any]:
    game = gameset.game(game_name)
    options = text_format.Parse(s.options, game.pb.Options()) if s.options else None
    plan = Plan(game_name, games, list(s.bots), seed=seed,
                options=options.SerializeToString() if options else b"", workers=workers)
    print(f"{game_name}: {s.label}", file=sys.stderr)
    report = run(plan, progress_bar(sys.stderr), broker_url)
    return row_of(s, report)


def row_of(s: Scenario, report: dict[str, Any]) -> dict[str, Any]:
    """A scenario's row of the report, from its simulation report."""
    n = report["games"]
    row = {
        "label": s.label, "kind": s.kind, "bots": list(s.bots), "options": s.options,
        "games": n, "first_mover": report["first_mover"],
        "sole_wins": sum(b["wins"] for b in report["bots"]),
        "shared": report["shared"], "no_winner": report["draws"],
        "unfinished": report["unfinished"],
        "win_rate": round(sum(b["wins"] for b in report["bots"]) / n, 4) if n else 0.0,
        "length": report["length"], "ends": report["ends"],
        "seconds": report["timing"]["seconds"],
    }
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


# An Eila game retries its chapter until it is won or the command cap stops it: for a bot
# that seldom wins, one game is hundreds of attempts and the whole 20,000 commands (half a
# minute). Its rows play a fiftieth of the games (at least 2) so that the report takes
# minutes; each row's interval shows how many attempts that gave.
CHAPTER_GAMES_SHARE = 50


def chapter_games(games: int) -> int:
    return max(2, games // CHAPTER_GAMES_SHARE)


def balance(game_name: str, games: int, workers: int = 1, seed: str = "balance",
            broker_url: str = "") -> dict[str, Any]:
    rows = [simulate(game_name, s, chapter_games(games) if s.kind == "chapter" else games,
                     workers, seed, broker_url) for s in scenarios(game_name)]
    return {"game": game_name, "games_per_scenario": games, "seed": seed, "scenarios": rows}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def markdown(report: dict[str, Any]) -> str:
    game = gameset.game(report["game"])
    rows = [r for r in report["scenarios"] if r["kind"] != "chapter"]
    chapters = [r for r in report["scenarios"] if r["kind"] == "chapter"]
    per_row = (f"{report['games_per_scenario']} games per row" if rows else
               f"{chapter_games(report['games_per_scenario'])} games per row")
    lines = [f"### {game.title}", "", f"{per_row}, seed `{report['seed']}`; "
             f"![{game.title}](balance/{game.name}.png)", ""]
    if rows:
        lines += ["| scenario | first mover won (95% interval) | even | decided | shared | "
                  "no winner | cap | mean length | most common end |",
                  "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fm = r["first_mover"]
        interval = (f"{_pct(fm['win_rate'])} ({_pct(fm['ci95'][0])}-{_pct(fm['ci95'][1])})"
                    if fm["decided_games"] else "-")
        # The JSON keeps its keys sorted: the most common end is the largest count.
        end = max(r["ends"], key=lambda e: r["ends"][e], default="-")
        lines.append(f"| {r['label']} | {interval} | {_pct(fm['even_share'])} | "
                     f"{fm['decided_games']} | {r['shared']} | {r['no_winner']} | "
                     f"{r['unfinished']} | {r['length']['mean']} | {end} |")
    if chapters:
        lines += ["A game retries a lost chapter until it is won: the rate is per attempt; "
                  "an attempt the command cap stopped is neither won nor lost.", "",
                  "| chapter, mode, bot | games | attempts won | win rate per attempt (95% "
                  "interval) | stopped by the cap | mean length |", "|---|---|---|---|---|---|"]
    for r in chapters:
        a = r["attempts"]
        lines.append(f"| {r['label']} | {r['games']} | {a['won']} of {a['ended']} | "
                     f"{_pct(r['win_rate'])} ({_pct(a['ci95'][0])}-{_pct(a['ci95'][1])}) | "
                     f"{a['stopped_by_cap']} | "
                     f"{r['length']['mean'] if r['games'] > r['unfinished'] else '-'} |")
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in report["scenarios"] if r["kind"] != "chapter"
            and r["first_mover"]["decided_games"]]
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
    page = os.path.join(docs, "balance.md")
    text = open(page).read() if os.path.exists(page) else f"# Balance\n\n{BEGIN}\n{END}\n"
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    figures = "\n".join(markdown(r) for r in sorted(
        (json.load(open(os.path.join(folder, name))) for name in sorted(os.listdir(folder))
         if name.endswith(".json")), key=lambda r: list(gameset.all_games()).index(r["game"])))
    with open(page, "w") as f:
        f.write(f"{head}{BEGIN}\n\n{figures}\n{END}{tail}")
