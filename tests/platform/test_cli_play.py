"""`arbiter play GAME` in the terminal: every game and Bubblee's solo levels against the bots,
with scripted input, what happened in words, short menus, the result in words, and quiet exits
on Ctrl-D and Ctrl-C."""

from __future__ import annotations

import builtins
import io
import re
from pathlib import Path

import pytest

from services import games as registry
from services.cli import commands
from services.cli.main import main
from tests.conformance import suite


@pytest.fixture(autouse=True)
def kept_games_here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`arbiter play` keeps its games in a folder of the test's own."""
    monkeypatch.setenv("ARBITER_PLAY_DIR", str(tmp_path / "play"))


def play(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str,
         stdin: str) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(["play", *args, "--no-colour"])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return code, out.out


def menus(out: str) -> list[int]:
    """The number of choices each prompt offered."""
    sizes, count = [], 0
    for line in out.splitlines():
        if re.match(r"  \d+\. ", line):
            count += 1
        elif count:
            sizes.append(count)
            count = 0
    return sizes


@pytest.mark.parametrize("name", suite.NAMES)
def test_every_game_is_played_in_the_terminal_with_words(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str) -> None:
    # The template too, registered for this run only (the server does not offer it).
    monkeypatch.setitem(registry.GAME_MODULES, suite.TEMPLATE, "services.toy")
    # Always the first choice, until the game ends or the input does (a clean Ctrl-D).
    code, out = play(monkeypatch, capsys, name, stdin="0\n" * 300)
    assert code == 0
    assert "what happened:" in out and "  - " in out
    assert "your move>" in out
    assert "Game over. " in out or out.rstrip().endswith("bye")
    assert "refused" not in out
    # Long lists are grouped by kind first, then shown a page at a time.
    assert max(menus(out)) <= commands.MENU + 1, menus(out)
    if name == "eila":
        assert "== Chapter 0: " in out  # the title and the prologue open the chapter


def test_a_duel_ends_with_the_result_in_words(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out = play(monkeypatch, capsys, "bubblee", "--bot", "random", stdin="0\n" * 3000)
    assert code == 0
    result = out[out.index("Game over. "):]
    assert re.match(r"Game over\. (You won|Nobody won|bot|\w+ 1 \(seat 1\) won)", result), result
    assert "what kind of move>" in out  # the action phase's many moves are grouped


def test_a_solo_level_is_played(monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out = play(monkeypatch, capsys, "bubblee", "--level", "1", stdin="0\n" * 40)
    assert code == 0 and "solo" in out and "target planet" in out


def test_ctrl_d_leaves_quietly(monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    code, out = play(monkeypatch, capsys, "moody_bear", stdin="")
    assert code == 0 and out.rstrip().endswith("bye")


def test_ctrl_c_leaves_quietly(monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(prompt: str = "") -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(builtins, "input", interrupted)
    code, out = play(monkeypatch, capsys, "shadow_council", stdin="")
    assert code == 0 and out.rstrip().endswith("bye")


def test_a_wrong_choice_asks_again(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out = play(monkeypatch, capsys, "bubblee", stdin="99\nx\nq\n")
    assert code == 0 and "pick a number from 0 to" in out and out.rstrip().endswith("bye")


def test_question_mark_and_help_say_how_to_play(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out = play(monkeypatch, capsys, "moody_bear", stdin="?\nq\n")
    assert code == 0 and "?          this help" in out and "--resume" in out
    assert out.count("your move>") + out.count("what kind of move>") == 2  # asked again
    with pytest.raises(SystemExit) as done:
        main(["play", "--help"])
    shown = capsys.readouterr().out
    assert done.value.code == 0 and "KEY=VALUE" in shown and "? " in shown
    for option in ("solo_level", "first_chapter", "advanced", "habit_order", "full_deck",
                   "duo_jewel", "complacency"):
        assert option in shown, option


def test_the_games_options_are_taken_and_bad_ones_explained(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = play(monkeypatch, capsys, "eila", "--option", "first_chapter=2",
                     "--option", "advanced=true", stdin="q\n")
    assert code == 0 and "== Chapter 2: " in out and "== Chapter 0" not in out
    code, out = play(monkeypatch, capsys, "bubblee", "--option", "solo_level=2", stdin="q\n")
    assert code == 0 and "solo" in out and "target planet" in out
    code, out = play(monkeypatch, capsys, "bubblee", "--option", "colour=red", stdin="")
    assert code == 2 and "no_powers (true/false)" in out and "solo_level (number)" in out
    code, out = play(monkeypatch, capsys, "bubblee", "--option", "no_powers=maybe", stdin="")
    assert code == 2 and "no_powers is true or false" in out
    options = commands.parse_options(registry.game("eila"), ["habit_order=H02, H01"])
    assert list(options.habit_order) == ["H02", "H01"]
    shadow = registry.game("bubble_shadow")
    options = commands.parse_options(shadow, ["special_tokens.apples=2",
                                              "special_tokens.crown=yes"])
    assert (options.special_tokens.apples, options.special_tokens.crown) == (2, True)
    with pytest.raises(ValueError, match="special_tokens.apples \\(number\\)"):
        commands.parse_options(shadow, ["special_tokens=2"])


def test_quit_keeps_the_game_and_resume_goes_on_to_its_end(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = play(monkeypatch, capsys, "bubblee", "--bot", "random", stdin="0\n" * 4 + "q\n")
    assert code == 0 and "`arbiter play bubblee --resume` goes on with it" in out
    last_board = out[out.rindex("grd "):]
    code, out = play(monkeypatch, capsys, "bubblee", "--resume", stdin="q\n")
    assert code == 0 and re.search(r"resumed at version [1-9]\d*", out), out
    assert last_board.split("\n")[0] in out  # the same table as when it was left
    code, out = play(monkeypatch, capsys, "bubblee", "--resume", stdin="0\n" * 3000)
    assert code == 0 and "Game over. " in out
    code, out = play(monkeypatch, capsys, "bubblee", "--resume", stdin="")
    assert code == 2 and "no kept game of Bubblee Pop" in out


def test_colour_only_on_a_terminal_and_never_with_no_color(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("q\n"))
    assert main(["play", "bubblee"]) == 0  # no --no-colour, but not a terminal either
    assert "\x1b[" not in capsys.readouterr().out
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert commands.colour_wanted(False) and not commands.colour_wanted(True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not commands.colour_wanted(False)
