"""docs/rulings/moody_bear.md: every ruling names tests, and every named test exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

HERE = Path(__file__).parent
DOC = HERE.parents[1] / "docs" / "rulings" / "moody_bear.md"


def test_every_test_named_by_the_rulings_exists() -> None:
    text = DOC.read_text()
    named = re.findall(r"`(test_\w+\.py)::(test_\w+)`", text)
    assert len(named) > 30
    for filename, test in named:
        tree = ast.parse((HERE / filename).read_text())
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert test in functions, f"{filename}::{test} is named in the rulings but missing"


def test_every_ruling_names_a_test() -> None:
    rulings = re.split(r"\n\*\*\d+\. ", DOC.read_text())[1:]
    assert len(rulings) >= 30
    for ruling in rulings:
        assert "::test_" in ruling, ruling.splitlines()[0]
