"""Eila's events as facts: the parts of the campaign a command changed, with their new values.

decide runs the rules once on a copy of the state and compares it with the state it was given:
each part that differs becomes a fact (`play.res` for the storage, `play.present` for the card
revealed, `play.combat` for the dice rolled, `play.mine` for a tile turned over, `history` for a
chapter's result...; `play` whole when a chapter is set up), holding the part's new value as
JSON. evolve sets those parts and nothing else: it reads no content and runs no rule, so a game
replays the same whatever the content files or the rules say later.

No fact holds an order that no one has seen: the state holds none (engine.py). What is in the
decks waiting to be fetched (red, blue, habit, quiz cards) is left out of what the player is
shown (`shown`), as the view leaves it out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import Any

from services.eila.state import Combat, Mine, Play, State

PLAY_PARTS = tuple(f.name for f in fields(Play))
# The campaign's own parts; its log is the events' public account, not a fact.
CAMPAIGN_PARTS = tuple(f.name for f in fields(State) if f.name not in ("play", "log"))
# Insertion order is kept (no sort_keys): the effects of an option run in their order.
_json = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


def _encode(value: Any) -> str:
    """A part's value as JSON (json writes tuples as lists)."""
    if value.__class__ is int:  # most facts are counts: the quick way
        return str(value)
    if isinstance(value, (Combat, Mine)):
        return _json(_plain(value))
    if isinstance(value, Play):
        return _json({**value.__dict__, "combat": _plain(value.combat),
                      "mine": _plain(value.mine)})
    return _json(value)


def _plain(value: Combat | Mine | None) -> Any:
    if value is None:
        return None
    late = getattr(value, "LATE", {})
    return {k: v for k, v in value.__dict__.items() if k not in late or v != late[k]}


def changes(before: State | None, after: State, new_play: bool) -> list[tuple[str, str]]:
    """The facts (part, new value as JSON) that turn `before` into `after`; `new_play`: a
    chapter was set up."""
    old = before.__dict__ if before is not None else {}
    now = after.__dict__
    out = [(name, _encode(now[name])) for name in CAMPAIGN_PARTS
           if name not in old or old[name] != now[name]]
    if after.play is None:
        return out
    if new_play or before is None or before.play is None:
        out.append(("play", _encode(after.play)))
        return out
    was = before.play.__dict__
    out += [(f"play.{name}", _encode(value)) for name, value in after.play.__dict__.items()
            if was[name] != value]
    return out


def _combat(value: Any) -> Combat | None:
    return None if value is None else Combat(**value)


def _mine(value: Any) -> Mine | None:
    return None if value is None else Mine(**value)


def _play(value: Any) -> Play:
    play = Play(**value)
    play.combat, play.mine = _combat(value["combat"]), _mine(value["mine"])
    return play


def _same(value: Any) -> Any:
    return value


# Each part a fact may name: (of the table?, the attribute, how its value is read back).
PARTS: dict[str, tuple[bool, str, Callable[[Any], Any]]] = {
    **{name: (False, name, _same) for name in CAMPAIGN_PARTS},
    "history": (False, "history", lambda v: [tuple(h) for h in v]),
    "winners": (False, "winners", lambda v: None if v is None else tuple(v)),
    "play": (False, "play", _play),
    **{f"play.{name}": (True, name, _same) for name in PLAY_PARTS},
    "play.combat": (True, "combat", _combat),
    "play.mine": (True, "mine", _mine),
}


def apply(state: State, facts: Iterable[Any]) -> State:
    """The state after the facts. The parts they do not name are shared with `state`, not
    copied: states are values that nothing changes in place (decide changes a deep copy)."""
    new = State(**state.__dict__)
    if new.play is not None:
        new.play = Play(**new.play.__dict__)
    for fact in facts:
        if fact.part not in PARTS:
            raise ValueError(f"a fact about no part of the campaign: {fact.part}")
        of_table, name, read = PARTS[fact.part]
        if of_table and new.play is None:
            raise ValueError(f"a fact about the table when no chapter is played: {fact.part}")
        setattr(new.play if of_table else new, name, read(json.loads(fact.value)))
    return new


# The cards waiting in their decks: the view never shows them, nor does the event feed.
UNSEEN = ("decks", "quiz_decks")


def shown(changed: Any) -> list[str]:
    """`changed` (a copy) as the player is shown it: without the decks' contents. Returns the
    paths of what it hides (Event.hidden): a list that depends on the parts named alone,
    never on their values, so that every process names the same paths."""
    kept = [f for f in changed.facts if f.part.removeprefix("play.") not in UNSEEN]
    removed = len(kept) != len(changed.facts)
    del changed.facts[:]
    changed.facts.extend(kept)
    tables = []
    for i, fact in enumerate(changed.facts):
        if fact.part == "play":
            table = json.loads(fact.value)
            for name in UNSEEN:
                table[name] = {}
            fact.value = _json(table)
            tables.append(f"changed.facts[{i}].value")
    return ["changed.facts"] if removed else tables
