"""Core stands alone: the workers and the process that wires them in sit above it."""

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "services" / "core"


def test_core_imports_neither_the_workers_nor_the_composition_root() -> None:
    for path in sorted(CORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(("services.workers", "services.process")), \
                    f"{path.name} imports {name}"
