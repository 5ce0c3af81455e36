"""docs/rulings/moody_bear.md: every ruling names tests, and every named test exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

HERE = Path(__file__).parent
DOC = HERE.parents[1] / "docs" / "rulings" / "moody_bear.md"


def named_tests(text: str) -> list[tuple[str, str]]:
    """(file, test) for each test the doc names: `test_x.py::test_y`, or a bare `test_y`,
    which belongs to the file named last before it (as in "the two async tests of
    `test_window_timeout.py` (`test_a`, `test_b`)")."""
    named = []
    current = ""
    for filename, test, bare in re.findall(
        r"`(?:(test_\w+\.py)(?:::(test_\w+))?|(test_\w+))`", text
    ):
        current = filename or current
        if test or bare:
            assert current, f"{bare} is named before any test file"
            named.append((current, test or bare))
    return named


def functions_in(filename: str) -> set[str]:
    tree = ast.parse((HERE / filename).read_text())
    # Async tests (the platform's scheduler, gRPC) count too.
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_test_named_by_the_rulings_exists() -> None:
    named = named_tests(DOC.read_text())
    assert len(named) > 30
    for filename, test in named:
        assert test in functions_in(filename), (
            f"{filename}::{test} is named in the rulings but missing"
        )


def test_async_tests_named_by_the_rulings_are_checked() -> None:
    named = named_tests(DOC.read_text())
    assert ("test_window_timeout.py", "test_an_open_window_closes_when_its_deadline_passes") \
        in named
    assert "test_an_open_window_closes_when_its_deadline_passes" in functions_in(
        "test_window_timeout.py")


def test_every_ruling_names_a_test() -> None:
    rulings = re.split(r"\n\*\*\d+\. ", DOC.read_text())[1:]
    assert len(rulings) >= 30
    for ruling in rulings:
        assert "::test_" in ruling, ruling.splitlines()[0]
