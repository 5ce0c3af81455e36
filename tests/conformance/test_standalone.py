"""The repository stands alone: no tracked file names a document kept outside it (the design
notes, the project-wide rulings, the rulebooks' text files, or a folder beside the checkout).
Rulings cite a rulebook by its title and section instead, and docs/architecture.md states
the design. The names are assembled here, so that this file does not name them itself."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = re.compile("|".join([
    "DESIGN" + r"\.md",
    "RULINGS" + r"\.md",
    r"\brules/[a-z-]+(?:\.[a-z]+)?" + r"\.txt",
    r"\.\./" + "shared",
    "/work" + "/shared",
]))


def outside_names(text: str) -> list[str]:
    return OUTSIDE.findall(text)


def test_the_check_sees_each_kind_of_name() -> None:
    for name in ("DESIGN" + ".md", "see RULINGS" + ".md", "rules/shadow-council" + ".txt",
                 "rules/bubblee-pop.fr" + ".txt", "../" + "shared/x", "/work" + "/shared/"):
        assert outside_names(f"a line that names {name} here"), name
    assert not outside_names("docs/rulings/moody_bear.md and docs/architecture.md")


def test_no_tracked_file_names_a_file_outside_the_repository() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    found = []
    for name in filter(None, tracked):
        path = ROOT / name
        if not path.is_file():
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue  # binary
        for number, line in enumerate(text.splitlines(), 1):
            if outside_names(line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert not found, "files outside the repository are named:\n" + "\n".join(found)
