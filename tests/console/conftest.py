"""Where the console tests' screenshots went, said at the end of the run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    shots = Path(os.environ.get("ARBITER_SCREENSHOTS", "var/screenshots"))
    if shots.is_dir() and any(shots.glob("*.png")):
        terminalreporter.write_line(f"console screenshots: {shots.resolve()}")
