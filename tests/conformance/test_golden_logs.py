"""The golden logs (tests/golden/<game>/<variant>.jsonl): one finished game per game and per
table, written by an earlier version of the code (tests/golden/write.py) and committed. Each
is read, re-run against its revealed seed and verified as VerifyLog does, on every run: a
change of the rules, of the events or of the log format that stops a stored game replaying
fails here. A log is never rewritten to make this pass; a new table gets a new log."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.core import log as gamelog
from tests.conformance import suite
from tests.conformance.playouts import slug, tables

FOLDER = Path(__file__).resolve().parents[1] / "golden"
TABLES = [(name, variant) for name in suite.NAMES for variant in tables(name)]
LOGS = sorted(FOLDER.glob("*/*.jsonl"))


def test_every_game_and_option_set_has_a_golden_log() -> None:
    want = {FOLDER / name / f"{slug(v)}.jsonl" for name, v in TABLES}
    missing = sorted(str(p.relative_to(FOLDER)) for p in want - set(LOGS))
    assert not missing, f"no golden log for {missing}: write it with python -m tests.golden.write"
    # A log whose table is gone still has to replay; it is just no longer a table's.
    assert len(want) == len(TABLES), "two tables of a game have one file name"


@pytest.mark.parametrize("path", LOGS, ids=[f"{p.parent.name}/{p.stem}" for p in LOGS])
def test_a_golden_log_replays_and_verifies(path: Path) -> None:
    lines = path.read_text().splitlines()
    gamelog.check_sizes(lines)
    name = gamelog.game_of_json_lines(lines)
    assert name == path.parent.name, f"{path.name} holds a game of {name}"
    game = suite.game(name)
    entries = gamelog.from_json_lines(game, lines)
    verified = gamelog.verify(game, entries)
    assert verified.finished and verified.entries == len(lines)
    # Re-applying the recorded events (what loading a stored game does) gives the same game.
    events = [gamelog.game_event(game, e) for e in entries if e.WhichOneof("body") == "event"]
    state = game.replay(events)
    assert state == verified.state
    assert game.outcome(state) is not None
    for viewer in [None, *range(len(entries[0].started.seats))]:
        game.view(state, viewer)
    # The log is written back the same: the export format has not moved.
    assert gamelog.to_json_lines(game, entries) == lines
    # The table it stands for, where it still is one, is the table it was played at.
    started = entries[0].started
    for table_game, variant in TABLES:
        if table_game == name and slug(variant) == path.stem:
            assert game.pb.Options.FromString(started.options) == variant.options
            assert len(started.seats) == variant.seats
