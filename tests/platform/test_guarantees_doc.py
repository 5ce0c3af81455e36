"""docs/guarantees.md: every promise names a test, and every test it names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "guarantees.md"
TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def promises(text: str) -> list[str]:
    """Each bullet of the sections before "Not promised", whole (with its wrapped lines)."""
    text = text[:text.index("## Not promised")]
    return [b for b in re.split(r"\n(?=- \*\*)", text) if b.startswith("- **")]


def test_every_promise_names_a_test_that_exists() -> None:
    text = DOC.read_text()
    bullets = promises(text)
    assert len(bullets) >= 20
    for bullet in bullets:
        assert TEST.search(bullet), f"a promise names no test: {bullet[:80]}"
    named = TEST.findall(text)
    missing = []
    for path, name in named:
        source = ROOT / path
        tree = ast.parse(source.read_text()) if source.exists() else ast.Module(body=[])
        defined = {n.name for n in tree.body
                   if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if name not in defined:
            missing.append(f"{path}::{name}")
    assert missing == []
