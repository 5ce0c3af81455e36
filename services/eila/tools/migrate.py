"""`arbiter eila migrate IN OUT`: a log from before events held facts, written as facts.

A legacy log replays only with the rules of its time (legacy.py). While this server's content
still has them, the log is verified, replayed, and each of its events written as the facts
that event changed (the hidden orders a legacy shuffle kept are forgotten, as today's events
never hold them); batches, commands and versions stay. The new log's first event holds the
whole campaign. It replays with any content or rules later; being facts, it cannot be judged
again by the rules of its time, so the legacy log it comes from is the one to keep for that;
ImportLog takes the new log as a replay-only game (legacy.MIGRATED says why).

`arbiter eila texts` stores today's content's texts in data/texts, so that the games played
with it keep showing them after a text edit (run it before editing a text).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from arbiter.eila.v1 import eila_pb2 as pb

from services.core import log as gamelog
from services.eila import GAME, engine, facts
from services.eila.data import DATA_DIR, TEXTS_DIR, archive_entry
from services.eila.state import State


def forgotten(state: State) -> State:
    out = state.clone()
    if out.play is not None:
        engine.forget_order(out.play)
    return out


def migrate(entries: list[Any]) -> list[Any]:
    """The log `entries` with each legacy event replaced by the facts it changed. Raises
    gamelog.BadLog when the log does not verify here (other rules: nothing is migrated)."""
    gamelog.verify(GAME, entries)
    out = []
    state: State | None = None
    for entry in entries:
        new = type(entry)()
        new.CopyFrom(entry)
        if entry.WhichOneof("body") == "event":
            event = gamelog.game_event(GAME, entry)
            after = GAME.fold(state, event)
            kind = event.WhichOneof("kind")
            if kind in ("started", "acted"):
                body = getattr(event, kind)
                before = forgotten(state) if state is not None else None
                new_play = before is None or before.play is None
                changed = pb.Changed(log=list(body.log))
                for part, value in facts.changes(before, forgotten(after), new_play):
                    changed.facts.add(part=part, value=value)
                new.event = pb.Event(changed=changed).SerializeToString()
            state = after
        out.append(new)
    return out


def run_migrate(source: str, target: str) -> int:
    lines = Path(source).read_text().splitlines()
    try:
        migrated = migrate(gamelog.from_json_lines(GAME, lines))
    except gamelog.BadLog as bad:
        print(f"{source}: not migrated: {bad}", file=sys.stderr)
        return 1
    Path(target).write_text("\n".join(gamelog.to_json_lines(GAME, migrated)) + "\n")
    print(f"{source}: {sum(e.WhichOneof('body') == 'event' for e in migrated)} events "
          f"written as facts to {target}")
    return 0


def run_texts() -> int:
    entry = archive_entry()
    path = DATA_DIR / TEXTS_DIR / f"{entry['version']}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(entry, indent=0, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"texts of content {entry['version']} (rules {entry['rules']}) stored in {path}")
    return 0
