"""Eila's events as facts: the parts of the campaign a command changed, with their new values.

decide runs the rules once on a copy of the state and compares it with the state it was given:
each part that differs becomes a fact (`play.res` for the storage, `play.present` for the card
revealed, `play.combat` for the dice rolled, `play.mine` for a tile turned over, `history` for a
chapter's result...; `play` whole when a chapter is set up), holding the part's new value as
JSON. evolve sets those parts and nothing else: it reads no content and runs no rule, so a game
replays the same whatever the content files or the rules say later.

Nothing hidden is in a fact: the state holds no order that no one has seen (engine.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, fields, is_dataclass
from typing import Any

from arbiter.eila.v1 import eila_pb2 as pb

from services.eila.engine import Combat, Mine, Play, State

PLAY_PARTS = tuple(f.name for f in fields(Play))
# The campaign's own parts; its log is the events' public account, not a fact.
CAMPAIGN_PARTS = tuple(f.name for f in fields(State) if f.name not in ("play", "log"))


def _json(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


def _fact(part: str, value: Any) -> Any:
    # Insertion order is kept (no sort_keys): the effects of an option run in their order.
    return pb.Fact(part=part, value=json.dumps(_json(value), separators=(",", ":")))


def changes(before: State | None, after: State, new_play: bool) -> list[Any]:
    """The facts that turn `before` into `after`; `new_play`: a chapter was set up."""
    out = [_fact(name, getattr(after, name)) for name in CAMPAIGN_PARTS
           if before is None or getattr(before, name) != getattr(after, name)]
    if after.play is None:
        return out
    if new_play or before is None or before.play is None:
        out.append(_fact("play", after.play))
        return out
    old, new = before.play, after.play
    out += [_fact(f"play.{name}", getattr(new, name)) for name in PLAY_PARTS
            if getattr(old, name) != getattr(new, name)]
    return out


def _combat(value: Any) -> Combat | None:
    return None if value is None else Combat(**value)


def _mine(value: Any) -> Mine | None:
    return None if value is None else Mine(**value)


def _play(value: Any) -> Play:
    play = Play(**value)
    play.combat, play.mine = _combat(value["combat"]), _mine(value["mine"])
    return play


CAMPAIGN_TYPES = {
    "history": lambda v: [tuple(h) for h in v],
    "winners": lambda v: None if v is None else tuple(v),
    "play": _play,
}
PLAY_TYPES = {"combat": _combat, "mine": _mine}


def apply(state: State, facts: Iterable[Any]) -> None:
    """Set each part a fact names to its value (on a copy: `state` is changed)."""
    for fact in facts:
        value = json.loads(fact.value)
        if fact.part.startswith("play."):
            name = fact.part[len("play."):]
            if name not in PLAY_PARTS or state.play is None:
                raise ValueError(f"a fact about no part of the table: {fact.part}")
            setattr(state.play, name, PLAY_TYPES.get(name, _same)(value))
        elif fact.part in CAMPAIGN_PARTS or fact.part == "play":
            setattr(state, fact.part, CAMPAIGN_TYPES.get(fact.part, _same)(value))
        else:
            raise ValueError(f"a fact about no part of the campaign: {fact.part}")


def _same(value: Any) -> Any:
    return value
