"""The ladder: the rating fit, the comparisons a game gives, and `arbiter ladder`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from services.cli.main import main as arbiter
from services.workers import ladder


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARBITER_EXTRA_GAMES", "toy=services.toy")


def test_elo_of_three_wins_in_four_is_400_log10_3_apart() -> None:
    games = [("a", "b", 1.0)] * 3 + [("b", "a", 1.0)]
    rated = ladder.fit(games, ["a", "b"], prior=0)
    gap = 400 * math.log10(3)  # 3 to 1 odds: 190.8 points
    assert rated == {"a": round(1500 + gap / 2, 1), "b": round(1500 - gap / 2, 1)}


def test_a_consistent_chain_of_results_rates_evenly_spaced() -> None:
    """a beats b 3 to 1, b beats c 3 to 1, a beats c 9 to 1: Bradley-Terry fits it exactly."""
    games = ([("a", "b", 1.0)] * 3 + [("b", "a", 1.0)] + [("b", "c", 1.0)] * 3
             + [("c", "b", 1.0)] + [("a", "c", 1.0)] * 9 + [("c", "a", 1.0)])
    rated = ladder.fit(games, ["a", "b", "c"], prior=0)
    gap = 400 * math.log10(3)
    assert rated["a"] - rated["b"] == pytest.approx(gap, abs=0.2)
    assert rated["b"] - rated["c"] == pytest.approx(gap, abs=0.2)
    assert rated["b"] == pytest.approx(1500, abs=0.1)


def test_a_clean_sweep_rates_finitely_with_the_prior() -> None:
    rated = ladder.fit([("a", "b", 1.0)] * 10, ["a", "b"])  # 10.5 to 0.5: 21 to 1
    assert rated["a"] - rated["b"] == pytest.approx(400 * math.log10(21), abs=0.2)


def result(winners: list[int], finished: bool = True) -> dict:
    return {"index": 0, "finished": finished, "winner_entries": winners, "error": ""}


def test_a_game_compares_winners_with_losers_of_other_bots_only() -> None:
    bots = ("hard", "keeper", "keeper", "keeper", "keeper")
    # The lone bot wins with a team-mate: it beats the three losing keepers; the winning
    # keeper beats nobody of another bot. Each comparison weighs 1/4.
    assert ladder.comparisons(result([0, 2]), bots) == [("hard", "keeper", 0.25)] * 3
    assert sorted(ladder.comparisons(result([1, 3]), bots)) == [("keeper", "hard", 0.25)] * 2
    assert ladder.comparisons(result([]), bots) == []  # nobody won: nobody compared
    assert ladder.comparisons(result([0], finished=False), bots) == []


def test_every_bot_and_level_enters_by_default() -> None:
    from services.workers import gameset

    assert ladder.entrants(gameset.game("bubblee")) == ["random", "greedy", "easy", "medium",
                                                        "hard"]


def test_the_pairings_rotate_every_bot_through_a_field_of_each_other() -> None:
    assert ladder.pairings(["r", "g", "h"], 2) == [("r", "g"), ("r", "h"), ("g", "h")]
    assert ladder.pairings(["r", "g"], 4) == [("r", "g", "g", "g"), ("g", "r", "r", "r")]
    # At more seats the fields can be the cheap bots only: each bot alone against each.
    assert ladder.pairings(["r", "g", "h"], 3, ["r", "g"]) == [
        ("r", "g", "g"), ("g", "r", "r"), ("h", "r", "r"), ("h", "g", "g")]


def test_the_ladder_puts_the_perfect_bot_above_random(toy: None) -> None:
    report = ladder.ladder("toy", 40, ["random", "perfect"], quiet=True)
    best, worst = report["ratings"]
    assert (best["bot"], worst["bot"]) == ("perfect", "random")
    assert best["ci95"][0] > worst["ci95"][1]  # the intervals do not overlap
    (h,) = report["head_to_head"]
    assert (h["a"], h["b"]) == ("random", "perfect") and h["ci95"][1] < 0.5


def test_the_ladder_json_and_page(toy: None, tmp_path: Path) -> None:
    out = tmp_path / "toy.json"
    assert arbiter(["ladder", "toy", "--bots", "random,perfect", "--games", "6", "--local",
                    "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert {"game", "seats", "seed", "games_per_pairing", "bots", "ratings", "head_to_head",
            "seconds"} <= set(report)
    assert [r["bot"] for r in report["ratings"]] == ["perfect", "random"]
    for r in report["ratings"]:
        assert set(r) == {"bot", "elo", "ci95", "games"} and r["games"] == 6
        assert r["ci95"][0] <= r["elo"] <= r["ci95"][1]
    (h,) = report["head_to_head"]
    assert h["a_won"] + h["b_won"] + h["shared"] + h["no_winner"] + h["unfinished"] == 6
    (tmp_path / "ladder.md").write_text(f"# Ladder\n\nProse.\n\n{ladder.BEGIN}\nold\n"
                                        f"{ladder.END}\nMore prose.\n")
    ladder.write(report, docs=str(tmp_path))
    page = (tmp_path / "ladder.md").read_text()
    assert "### Take the last counter" in page and "old" not in page
    assert "Prose." in page and "More prose." in page
    assert "| perfect |" in page and (tmp_path / "ladder" / "toy.json").exists()


def test_a_multi_seat_ladder_rates_against_the_fair_share_and_by_team() -> None:
    report = ladder.ladder("moody_bear", 6, ["random", "keeper"], seats=5, quiet=True)
    assert [h["bots"] for h in report["head_to_head"]] == [
        ["random"] + ["keeper"] * 4, ["keeper"] + ["random"] * 4]
    for h in report["head_to_head"]:
        assert 0 < h["fair_share"] < 1
        sides = h["a_by_side"]
        assert set(sides) <= {"red", "blue", "solo"}
        assert sum(s["games"] for s in sides.values()) == h["finished"]
        assert sum(s["won"] for s in sides.values()) == h["a_won"]


@pytest.mark.parametrize("argv, says", [
    (["ladder", "eila", "--games", "1", "--local"], "played alone"),
    (["ladder", "bubblee", "--bots", "random,chess", "--games", "1", "--local"],
     "no bot named chess"),
    (["ladder", "bubblee", "--bots", "random", "--games", "1", "--local"], "two different"),
    (["ladder", "moody_bear", "--seats", "7", "--games", "1", "--local"], "not 7"),
    (["ladder", "chess", "--local"], "unknown game"),
    (["ladder", "moody_bear", "--bots", "random,keeper", "--fields", "easy", "--local"],
     "a field must be one of the bots rated"),
])
def test_a_ladder_that_cannot_be_played_says_why(
        argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert arbiter(argv) == 2
    assert says in capsys.readouterr().err
