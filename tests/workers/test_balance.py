"""Simulation reports a designer can trust (issue: shared wins, first movers, bot names) and
the balance report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.cli.main import main as arbiter
from services.core.decider import Rng, Seat
from services.workers import balance, gameset
from services.workers.simulate import Plan, game_seed, play_one, side_wins, summarise, wilson


def row(index: int, winners: list[int], first: int, finished: bool = True) -> dict:
    return {"index": index, "finished": finished, "error": "", "winner_seats": winners,
            "winner_entries": winners, "first_mover_seat": first, "first_mover_entry": first,
            "end": "over", "commands": 10, "events": {}, "observed": {}, "seconds": 0.0}


def test_a_shared_win_is_not_a_win_for_each_bot() -> None:
    game = gameset.game("shadow_council")
    plan = Plan("shadow_council", 3, ["sleuth"] * 4)
    report = summarise(game, plan, [row(0, [0, 2], 1), row(1, [], 0), row(2, [3], 3)])
    assert [b["wins"] for b in report["bots"]] == [0, 0, 0, 1]
    assert [b["shared_wins"] for b in report["bots"]] == [1, 0, 1, 0]
    assert (report["shared"], report["draws"], report["finished"]) == (1, 1, 3)


def test_first_mover_advantage_follows_who_moved_first_not_seat_zero() -> None:
    game = gameset.game("bubblee")
    plan = Plan("bubblee", 4, ["greedy", "greedy"], rotate=False)
    # Seat 1 moved first in every game and won three of four: seat 0 won one.
    # A game both players share is won by every seat: no first mover stands out in it.
    report = summarise(game, plan, [row(i, [1 if i else 0], 1) for i in range(4)]
                       + [row(4, [0, 1], 1)])
    fm = report["first_mover"]
    assert (fm["decided_games"], fm["first_mover_won"]) == (4, 3)
    assert fm["win_rate"] == 0.75 and fm["even_share"] == 0.5


def test_where_seats_win_together_the_first_mover_counts_among_its_sides_winners() -> None:
    game = gameset.game("moody_bear")
    plan = Plan("moody_bear", 4, ["keeper"] * 5, rotate=False)
    # Seat 2 moved first: among a colour team's two winners once, the Solo's lone winner
    # once, beaten by the other colour once; a game nobody won is not decided.
    results = [row(0, [2, 4], 2), row(1, [2], 2), row(2, [0, 3], 2), row(3, [], 2)]
    fm = summarise(game, plan, results)["first_mover"]
    assert (fm["decided_games"], fm["first_mover_won"]) == (3, 2)
    # With no advantage it would win (2 + 1 + 2) / 3 winners of 5 seats: a third.
    assert fm["even_share"] == round(5 / 3 / 5, 4)


def test_the_first_mover_of_bubble_and_shadow_is_the_first_magician() -> None:
    game = gameset.game("bubble_shadow")
    for index in range(3):
        played = play_one(game, ["random"] * 3, "fm", index, max_commands=5)
        setup = game.setup(game.pb.Options(), [Seat("s", "ai", "random")] * 3,
                           Rng(game_seed("fm", index), 0))
        first = getattr(setup[0], setup[0].WhichOneof("kind"))
        assert played["first_mover_seat"] == first.first_magician


def test_simulate_help_names_every_games_bots(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        arbiter(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for game in gameset.all_games().values():
        assert f"{game.name}: {', '.join(sorted(game.bots))}" in text


def test_balance_writes_reports_plots_and_figures_and_keeps_the_prose(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "balance.md"
    page.write_text(f"# Balance\n\nProse a person wrote.\n\n{balance.BEGIN}\nold\n"
                    f"{balance.END}\n\nMore prose.\n")
    monkeypatch.setattr(balance, "VARIANTS",
                        {"bubblee": [("no powers", "no_powers: true", 0)]})
    monkeypatch.setattr(balance, "SEARCHED_SEATS", {})  # no search rows: a quick test
    assert arbiter(["balance", "bubblee", "--games", "3", "--local",
                    "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "balance" / "bubblee.json").read_text())
    labels = [s["label"] for s in report["scenarios"]]
    assert labels == ["2 seats, random", "2 seats, greedy", "no powers, 2 seats, greedy"]
    assert all(s["games"] == 3 * balance.RANGES for s in report["scenarios"])
    assert all(len(s["ranges"]) == balance.RANGES for s in report["scenarios"])
    assert (tmp_path / "balance" / "bubblee.png").read_bytes()[:4] == b"\x89PNG"
    text = page.read_text()
    assert "Prose a person wrote." in text and "More prose." in text and "old" not in text
    assert "| 2 seats, random |" in text


def test_balance_refuses_an_unknown_game() -> None:
    assert arbiter(["balance", "chess", "--games", "1"]) == 2


def test_balance_writes_only_where_it_is_told(capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing is written (docs/ least of all) unless --out DIR or --docs says where."""
    page = Path(balance.DOCS) / "balance.md"
    before = page.stat().st_mtime_ns
    assert arbiter(["balance", "bubblee", "--games", "1", "--local"]) == 2
    assert "--out DIR, or --docs" in capsys.readouterr().err
    assert arbiter(["balance", "bubblee", "--games", "1", "--local", "--docs", "--out",
                    "x"]) == 2
    assert page.stat().st_mtime_ns == before


def test_the_simulate_rpc_reports_shared_wins_and_the_first_mover_apart() -> None:
    from services.workers.grpc_sim import response_of

    game = gameset.game("shadow_council")
    report = summarise(game, Plan("shadow_council", 3, ["sleuth"] * 4),
                       [row(0, [0, 2], 1), row(1, [1], 1), row(2, [], 0, finished=False)])
    reply = response_of(report)
    assert (reply.shared, reply.unfinished, reply.draws) == (1, 1, 0)
    assert [b.wins for b in reply.bots] == [0, 1, 0, 0]
    assert [b.shared_wins for b in reply.bots] == [1, 0, 1, 0]
    # The first mover (seat 1) is not among the faction that won game 0, and won game 1.
    assert (reply.first_mover.decided_games, reply.first_mover.first_mover_won) == (2, 1)
    assert reply.first_mover.even_share == (2 + 1) / 2 / 4


def eila_games() -> list[dict]:
    """Two games of chapter 1, retried until won: 2 attempts won of 5 that ended, and the
    second game's third attempt won (all three tried on a chapter)."""
    def game(index: int, lost: int) -> dict:
        played = row(index, [0], 0)
        played["attempts"] = {"won": 1, "lost": lost, "cut": 0, "cut_chapter": -1,
                              "by_chapter": {"1": [1, lost]}}
        return played

    return [game(0, 1), game(1, 2)]


def eila_report() -> dict:
    report = summarise(gameset.game("eila"), Plan("eila", 2, ["greedy"]), eila_games())
    report["timing"] = {"seconds": 0.1, "games_per_second": 20.0}
    return report


def test_an_eila_chapter_row_is_per_attempt_not_per_game() -> None:
    scenario = balance.Scenario("chapter 1, standard, greedy", ("greedy",),
                                "single_chapter: true first_chapter: 1", kind="chapter")
    r = balance.row_of(gameset.game("eila"), scenario, [eila_games()])
    assert r["attempts"]["won"] == 2 and r["attempts"]["ended"] == 5
    assert r["win_rate"] == 0.4 and r["sole_wins"] == 2  # not 2 games won of 2
    assert r["attempts"]["ci95"][0] < 0.4 < r["attempts"]["ci95"][1]
    text = balance.markdown({"game": "eila", "games_per_range": 2, "ranges": 1,
                             "seeds": ["s"], "scenarios": [r]})
    assert "| chapter 1, standard, greedy | 2 | 2 of 5 | 40.0% (" in text
    assert "first mover" not in text and "100.0%" not in text


def test_a_solo_game_prints_no_first_mover_line() -> None:
    from services.workers.simulate import render

    text = render(eila_report())
    assert "2 won of 5 attempts" in text
    assert "first to move" not in text
    two_seats = summarise(gameset.game("bubblee"), Plan("bubblee", 1, ["greedy"] * 2),
                          [row(0, [1], 1)])
    assert "the first to move won 1 of 1" in render(two_seats)  # with two seats it does


def test_the_most_common_end_is_the_largest_count_not_the_first_key() -> None:
    games = [row(0, [1], 1), row(1, [0], 1), row(2, [0], 0)]
    ends = ["a planet is full", *["the bag cannot refill the sky"] * 2]
    for played, end in zip(games, ends, strict=True):
        played["end"] = end  # the JSON keeps its keys sorted: "a planet..." comes first
    r = balance.row_of(gameset.game("bubblee"),
                       balance.Scenario("2 seats, greedy", ("greedy",) * 2), [games])
    text = balance.markdown({"game": "bubblee", "games_per_range": 3, "ranges": 1,
                             "seeds": ["s"], "scenarios": [r]})
    assert text.rstrip().endswith("| the bag cannot refill the sky |")


def figure(won: int, decided: int, even: float = 0.5) -> dict:
    lo, hi = wilson(won, decided)
    return {"win_rate": won / decided, "ci95": [lo, hi], "even_share": even,
            "decided_games": decided, "first_mover_won": won}


@pytest.mark.parametrize("ranges, expected", [
    ([(70, 100), (65, 100), (72, 100)], "above"),
    ([(30, 100), (35, 100), (28, 100)], "below"),
    ([(52, 100), (47, 100), (55, 100)], "even"),
    ([(80, 100), (80, 100), (45, 100)], "no claim"),  # one range on the other side
])
def test_a_claim_needs_the_pooled_interval_and_every_range_to_agree(
        ranges: list[tuple[int, int]], expected: str) -> None:
    pooled = figure(sum(w for w, _ in ranges), sum(d for _, d in ranges))
    assert balance.claim(pooled, [figure(w, d) for w, d in ranges]) == expected


def test_each_range_is_weighed_against_its_own_even_share() -> None:
    # A first mover's even share follows who won: 40% pooled, 45% in a range of colour wins.
    pooled = figure(30, 50, 0.4)  # 60% (46-72%): above 40%
    ranges = [{"win_rate": 0.6, "even_share": 0.35}, {"win_rate": 0.62, "even_share": 0.4},
              {"win_rate": 0.43, "even_share": 0.45}]
    assert balance.claim(pooled, ranges) == "no claim"  # 43% is above 40% but below 45%
    ranges[2]["win_rate"] = 0.5
    assert balance.claim(pooled, ranges) == "above"


def test_a_row_that_replays_another_rows_games_is_flagged_not_printed() -> None:
    def played(label: str, bots: tuple[str, ...], options: str = "") -> dict:
        return balance.simulate("bubblee", balance.Scenario(label, bots, options), 2, 1, "rep",
                                "")

    rows = [played("standard", ("random",) * 2),
            played("opponent lines", ("random",) * 2, "opponent_lines_grant_powers: true"),
            played("greedy", ("greedy",) * 2)]
    balance.flag_repeats(rows)
    # Random bots never reach a power on the other planet here: the option changes nothing.
    assert rows[1]["same_games_as"] == "standard"
    assert "same_games_as" not in rows[0] and "same_games_as" not in rows[2]
    text = balance.markdown({"game": "bubblee", "games_per_range": 2, "ranges": 3,
                             "seeds": ["rep/1", "rep/2", "rep/3"], "scenarios": rows})
    assert "| opponent lines | the same games as *standard*, command for command" in text


def sided(winners: list[int], sides: list[str]) -> dict:
    return {**row(0, winners, 0), "winner_seats": winners, "sides": sides}


def test_side_win_rates_count_each_game_once_for_the_side_that_won() -> None:
    five = ["red", "red", "blue", "blue", "solo"]
    wins = side_wins([sided([4], five), sided([0, 1], five), sided([2, 3], five),
                              sided([4], five), sided([], five)])
    assert wins["decided_games"] == 4 and wins["games"] == 5
    assert (wins["solo"]["won"], wins["red"]["won"], wins["blue"]["won"]) == (2, 1, 1)
    assert wins["solo"]["win_rate"] == 0.5 and wins["solo"]["even_share"] == round(1 / 3, 4)
    assert side_wins([sided([0], ["x", "x", "x"])]) == {}  # one side: no teams


def test_the_zone_bonus_counterfactual_names_the_games_the_point_decided() -> None:
    def tallied(winner: str, without: str) -> dict:
        return {**row(0, [0], 0), "tally": {"winner": winner, "without_bonus": without,
                                            "bonus": "order"}}

    t = balance.zone_bonus_counterfactual([tallied("order", "chaos"), tallied("order", ""),
                                           tallied("order", "order"), tallied("chaos", "chaos")])
    assert t["decided_by_bonus"] == {"order": 2}
    assert t["won"] == {"order": 3, "chaos": 1}
    assert t["won_without_bonus"] == {"chaos": 2, "": 1, "order": 1}


def test_the_table_adds_a_search_level_where_a_claim_rests() -> None:
    game = gameset.game("bubble_shadow")
    assert balance.tiers(game, 2) == ["random", "greedy", *balance.SEARCH_LEVELS]
    assert balance.tiers(game, 5) == ["random", "greedy"]
    labels = [s.label for s in balance.scenarios("moody_bear") if s.kind == "seats"]
    assert labels == ["3 seats, random", "3 seats, keeper", "5 seats, random", "5 seats, keeper",
                      "5 seats, easy", "5 seats, hard"]


def test_equal_turns_rescore_only_the_games_that_ran_to_the_bag() -> None:
    def bag(winners: list[int], even: list[int], end: str = balance.BY_THE_BAG) -> dict:
        return {**row(0, winners, 0), "winner_seats": winners, "end": end,
                "even_turn_winners": even}

    t = balance.equal_turns([bag([0], [0]), bag([0], [1]), bag([0], [0, 1]), bag([1], [1]),
                             bag([0], [1], end="no legal drop")])
    assert t["games"] == 4  # the full planet is no game of the bag
    assert (t["as_played"]["first_mover_won"], t["as_played"]["decided_games"]) == (3, 4)
    assert (t["at_equal_turns"]["first_mover_won"], t["at_equal_turns"]["decided_games"]) == (
        1, 3)  # a tie at equal turns is no one's


def test_a_bubblee_game_that_ran_to_the_bag_knows_its_scores_at_equal_turns() -> None:
    game = gameset.game("bubblee")
    for index in range(6):
        played = play_one(game, ["greedy", "greedy"], "even", index)
        if played["end"] == balance.BY_THE_BAG:
            assert played["even_turn_winners"] and set(played["even_turn_winners"]) <= {0, 1}
            return
    pytest.fail("no game of six ran to the bag")


def test_rows_plays_only_the_rows_named_and_keeps_the_others_byte_for_byte(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--rows` merges the rows it names into the report already written: a row played anew
    replaces its old self, a new row takes its place in the table, and every other row of the
    JSON, every other game's JSON and the prose stay as they were."""
    page = tmp_path / "balance.md"
    page.write_text(f"# Balance\n\nProse.\n\n{balance.BEGIN}\nold\n{balance.END}\n")
    monkeypatch.setattr(balance, "VARIANTS",
                        {"bubblee": [("no powers", "no_powers: true", 0)]})
    monkeypatch.setattr(balance, "SEARCHED_SEATS", {})
    assert arbiter(["balance", "bubblee", "--games", "2", "--local",
                    "--out", str(tmp_path)]) == 0
    other = tmp_path / "balance" / "moody_bear.json"
    other.write_text(json.dumps({"game": "moody_bear", "games_per_range": 1, "ranges": 3,
                                 "seed": "balance", "seeds": ["balance/1"], "scenarios": []}))
    before = json.loads((tmp_path / "balance" / "bubblee.json").read_text())
    kept = {r["label"]: json.dumps(r, indent=1, sort_keys=True) for r in before["scenarios"]}
    # The greedy row is played anew (from 2 games a range to 3); "2 seats, medium" is new.
    monkeypatch.setattr(balance, "SEARCH_LEVELS", ("medium",))
    monkeypatch.setattr(balance, "SEARCHED_SEATS", {"bubblee": (2,)})
    monkeypatch.setattr(balance, "simulate", lambda game, s, games, *_: {
        "label": s.label, "kind": s.kind, "games_per_range": games, "fingerprint": s.label,
        "played": True})
    monkeypatch.setattr(balance, "write", lambda reports, folder: written.extend(reports))
    written: list[dict] = []
    assert arbiter(["balance", "bubblee", "--local", "--out", str(tmp_path),
                    "--rows", "2 seats, medium", "2 seats, greedy", "--games", "3"]) == 0
    (merged,) = written
    assert [r["label"] for r in merged["scenarios"]] == [
        "2 seats, random", "2 seats, greedy", "2 seats, medium", "no powers, 2 seats, greedy"]
    rows = {r["label"]: r for r in merged["scenarios"]}
    assert rows["2 seats, greedy"]["played"] and rows["2 seats, medium"]["games_per_range"] == 3
    for label in ("2 seats, random", "no powers, 2 seats, greedy"):
        assert json.dumps(rows[label], indent=1, sort_keys=True) == kept[label]
    assert {k: v for k, v in merged.items() if k != "scenarios"} == {
        k: v for k, v in before.items() if k != "scenarios"}
    # A row the game has not, or another seed than the report's, is refused, nothing played.
    assert arbiter(["balance", "bubblee", "--local", "--out", str(tmp_path),
                    "--rows", "9 seats, hard"]) == 2
    assert arbiter(["balance", "bubblee", "--local", "--out", str(tmp_path), "--seed", "x",
                    "--rows", "2 seats, greedy"]) == 2
    assert len(written) == 1


def test_rows_writes_the_merged_report_and_the_figures_from_every_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real write: the merged game's JSON keeps its other rows byte for byte, the other
    games' JSON files are not rewritten, and a row at other games per range says so."""
    page = tmp_path / "balance.md"
    page.write_text(f"# Balance\n\n{balance.BEGIN}\n{balance.END}\n")
    monkeypatch.setattr(balance, "VARIANTS", {})
    monkeypatch.setattr(balance, "SEARCHED_SEATS", {})
    for game in ("bubblee", "bubble_shadow"):
        assert arbiter(["balance", game, "--games", "2", "--local",
                        "--out", str(tmp_path)]) == 0
    folder = tmp_path / "balance"
    other = (folder / "bubble_shadow.json").read_bytes()
    before = (folder / "bubblee.json").read_text()
    assert arbiter(["balance", "bubblee", "--games", "1", "--local", "--out", str(tmp_path),
                    "--rows", "2 seats, random"]) == 0
    assert (folder / "bubble_shadow.json").read_bytes() == other
    after = (folder / "bubblee.json").read_text()
    old, new = json.loads(before), json.loads(after)
    assert new["scenarios"][0]["games_per_range"] == 1
    assert new["scenarios"][1:] == old["scenarios"][1:]
    # Byte for byte: the old file with its first row swapped for the new one is the new file.
    assert json.dumps(old, indent=1, sort_keys=True) == before
    assert json.dumps({**old, "scenarios": [new["scenarios"][0], *old["scenarios"][1:]]},
                      indent=1, sort_keys=True) == after
    text = page.read_text()
    assert "| 2 seats, random (1 game a range) |" in text and "### Bubble and Shadow" in text
    # Played again without --games, a row keeps its own games per range, not the report's 2.
    assert arbiter(["balance", "bubblee", "--local", "--out", str(tmp_path),
                    "--rows", "2 seats, random"]) == 0
    again = json.loads((folder / "bubblee.json").read_text())
    assert (again["games_per_range"], again["scenarios"][0]["games_per_range"]) == (2, 1)
