"""`arbiter serve` with the template game ("take the last counter") added to the registry, for
the per-move bench (loadtests/bench_moves.py): the same start-up, configuration (ARBITER_*) and
code path as a real server; only the game list differs.

    python -m loadtests.toy_server
"""

from __future__ import annotations

import sys

from services import games as registry
from services.cli import main as cli

if __name__ == "__main__":
    registry.GAME_MODULES["toy"] = "services.toy"
    sys.exit(cli.main(["serve", "--games", "toy"]))
