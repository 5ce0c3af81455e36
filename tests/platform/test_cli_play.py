"""`arbiter play GAME` in the terminal: every game and Bubblee's solo levels against the bots,
with scripted input, what happened in words, short menus, the result in words, and quiet exits
on Ctrl-D and Ctrl-C."""

from __future__ import annotations

import builtins
import io
import re

import pytest

from services import games as registry
from services.cli import commands
from services.cli.main import main
from tests.conformance import suite


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
