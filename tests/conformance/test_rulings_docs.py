"""docs/rulings/<game>.md, for every game: each ruling names the tests that pin it, and every
test it names exists in tests/<game>/ (in the file it names, when it names one).

A ruling is a numbered item (`12. **...**` or `**12. ...**`) or a row of a table whose first
cell is its id (`| T3 |`), up to the next one or the next heading. A test is named as
`test_name`, `test_file.py::test_name`, or a whole file, `test_file.py`; a bare name after a
file named alone in the same ruling belongs to that file ("the two tests of `test_x.py`
(`test_a`, `test_b`)").
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conformance import suite

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs" / "rulings").glob("*.md"))
START = re.compile(r"^(?:\d+a?\. \*\*|\*\*\d+\. |\| [A-Z]+\d+ \|)")
# Any test named in the text, in backquotes or not; `test_x.py` names a file, not a test.
NAMED = re.compile(r"\b(test_[a-z0-9_]+)\b(?!\.py)")
REF = re.compile(r"`(?:(test_\w+\.py)(?:::(test_\w+))?|(test_\w+))`")


@dataclass
class Ruling:
    title: str
    text: str


def rulings(doc: Path) -> list[Ruling]:
    found: list[Ruling] = []
    lines: list[str] | None = None
    for line in doc.read_text().splitlines():
        if START.match(line):
            lines = [line]
            found.append(Ruling(line[:80], ""))
        elif line.startswith("#"):
            lines = None
        elif lines is not None:
            lines.append(line)
        if lines is not None:
            found[-1].text = "\n".join(lines)
    return found


def functions_by_file(folder: Path) -> dict[str, set[str]]:
    """The test functions (async too) of each test file: module level, or in a class."""
    out = {}
    for path in folder.glob("test_*.py"):
        tree = ast.parse(path.read_text())
        nodes = list(tree.body)
        nodes += [n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body]
        out[path.name] = {n.name for n in nodes
                          if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    return out


def references(ruling: Ruling) -> list[tuple[str, str]]:
    """(file or "", test or "") for each backquoted reference, bare names bound to the file
    named alone before them in the ruling."""
    out, alone = [], ""
    for filename, test, bare in REF.findall(ruling.text):
        if filename and not test:
            alone = filename
            out.append((filename, ""))
        elif filename:
            out.append((filename, test))
        else:
            out.append((alone, bare))
    return out


@pytest.mark.parametrize("name", suite.NAMES)
def test_every_game_has_its_rulings_and_its_tests(name: str) -> None:
    assert (ROOT / "docs" / "rulings" / f"{name}.md").is_file(), f"no docs/rulings/{name}.md"
    assert list((ROOT / "tests" / name).glob("test_*.py")), f"no tests/{name}/test_*.py"


@pytest.mark.parametrize("doc", DOCS, ids=[d.stem for d in DOCS])
def test_every_ruling_names_tests_that_exist(doc: Path) -> None:
    game = doc.stem
    folder = ROOT / "tests" / game
    assert folder.is_dir(), f"{doc.name} is about a game without tests/{game}/"
    files = functions_by_file(folder)
    everywhere = set().union(*files.values())
    found = rulings(doc)
    # At least as many rulings and named tests as the game declares: a doc whose layout the
    # reader above no longer understands finds fewer.
    least_rulings, least_named = suite.game(game).suite.rulings
    assert len(found) >= least_rulings, f"{doc.name}: {len(found)} rulings found"
    named = set(NAMED.findall(doc.read_text()))
    assert len(named) >= least_named, f"{doc.name}: {len(named)} tests named"
    missing = sorted(named - everywhere)
    assert not missing, f"named in {doc.name} but missing from tests/{game}/: {missing}"
    for ruling in found:
        refs = references(ruling)
        assert NAMED.search(ruling.text) or any(f and not t for f, t in refs), (
            f"{doc.name}: this ruling names no test: {ruling.title}")
        for filename, test in refs:
            if filename:
                assert filename in files, f"{doc.name}: no tests/{game}/{filename}"
            if filename and test:
                assert test in files[filename], (
                    f"{doc.name}: {test} is not in {filename} ({ruling.title})")


def test_the_reader_sees_async_tests_and_the_files_they_are_named_in() -> None:
    """A ruling that names an async test after its file alone is read as that file's."""
    doc = ROOT / "docs" / "rulings" / "moody_bear.md"
    refs = [r for ruling in rulings(doc) for r in references(ruling)]
    named = ("test_window_timeout.py", "test_an_open_window_closes_when_its_deadline_passes")
    assert named in refs
    assert named[1] in functions_by_file(ROOT / "tests" / "moody_bear")[named[0]]
    assert rulings(doc)[0].title.startswith("**1. ")
