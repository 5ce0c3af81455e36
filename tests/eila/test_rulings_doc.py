"""docs/rulings/eila.md: every ruling names its tests, and every test it names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

HERE = Path(__file__).parent
DOC = HERE.parents[1] / "docs" / "rulings" / "eila.md"


def rulings() -> list[str]:
    return re.split(r"\n(?=\d+a?\. \*\*)", DOC.read_text())[1:]


def functions_in_the_tests() -> set[str]:
    names = set()
    for path in HERE.glob("test_*.py"):
        tree = ast.parse(path.read_text())
        names |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return names


def test_every_ruling_names_a_test() -> None:
    found = rulings()
    assert len(found) >= 36
    for ruling in found:
        assert re.search(r"`test_\w+", ruling), ruling.splitlines()[0]


def test_every_test_named_by_the_rulings_exists() -> None:
    known = functions_in_the_tests()
    named = re.findall(r"`(test_\w+)`", DOC.read_text())  # `test_x.py` and `test_*x*` aside
    assert len(named) > 60
    missing = sorted(set(named) - known)
    assert not missing, f"named in docs/rulings/eila.md but missing from tests/eila: {missing}"
