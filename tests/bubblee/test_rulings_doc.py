"""docs/rulings/bubblee.md names a test for every decision: those tests exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_test_named_in_the_rulings_exists() -> None:
    doc = (ROOT / "docs" / "rulings" / "bubblee.md").read_text()
    named = set(re.findall(r"`(test_[a-z0-9_]+)`", doc))
    source = "".join(p.read_text() for p in (ROOT / "tests" / "bubblee").glob("test_*.py"))
    defined = set(re.findall(r"def (test_[a-z0-9_]+)", source))
    assert named, "the rulings name no test"
    assert named <= defined, f"named in the rulings but missing: {sorted(named - defined)}"
