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


def test_every_store_layer_has_its_promises_and_every_contract_test_is_named() -> None:
    """Each layer Protocol of store.py has a promise under "The store's layers", and every
    test of a layer's contract file (tests/store/test_<layer>.py) is named in the doc."""
    text = DOC.read_text()
    section = text[text.index("## The store's layers"):text.index("## Not promised")]
    store = ast.parse((ROOT / "services/core/store.py").read_text())
    layers = [c.name for c in store.body if isinstance(c, ast.ClassDef)
              and any(getattr(b, "id", "") == "Protocol" for b in c.bases)
              # The unions of the layers, and what `Doorbells.doorbell` returns.
              and c.name not in ("Store", "StoreOnRedis", "Doorbell")]
    assert {"EventStream", "GameMetadata", "PartitionFeeds", "GameListing", "Doorbells"
            } <= set(layers)
    named = set(TEST.findall(text))
    unnamed = []
    for layer in layers:
        assert f"- **`{layer}`" in section, f"the store layer {layer} has no promise"
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", layer).lower()
        path = f"tests/store/test_{snake}.py"
        if not (ROOT / path).exists():
            continue  # a layer checked elsewhere (its promise names those tests)
        tree = ast.parse((ROOT / path).read_text())
        unnamed += [f"{path}::{n.name}" for n in tree.body
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and n.name.startswith("test_") and (path, n.name) not in named]
    assert unnamed == []
