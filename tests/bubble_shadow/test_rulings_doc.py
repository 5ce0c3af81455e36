"""docs/rulings/bubble_shadow.md names the tests that pin each ruling: every one of them exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_test_named_in_the_rulings_exists() -> None:
    doc = (ROOT / "docs" / "rulings" / "bubble_shadow.md").read_text()
    named = set(re.findall(r"\b(test_[a-z0-9_]+)\b(?!\.py)", doc))
    source = "".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    defined = set(re.findall(r"def (test_[a-z0-9_]+)", source))
    assert named, "the rulings name no test"
    assert named <= defined, f"named in the rulings but missing: {sorted(named - defined)}"
