"""The pact cards, read from the authored data file (data/pacts.json).

The rulebook does not print its card list: the file is ours (a project ruling, ruling 1 of
docs/rulings/bubble_shadow.md), marked as authored and easy to replace. A card is a pair of
ends; a Blank Pact has one printed end and its Magician names the other when playing it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

Price = tuple[int, int]  # (token: MOON, SILVER or BUBBLE, quantity 1-3)

PRICES = (pb.MOON, pb.SILVER, pb.BUBBLE)
DATA_FILE = Path(__file__).parent / "data" / "pacts.json"


@dataclass(frozen=True)
class Card:
    id: int
    ends: tuple[Price, ...]  # two ends; a Blank Pact lists its one printed end
    blank: bool = False


@cache
def all_cards() -> dict[int, Card]:
    data = json.loads(DATA_FILE.read_text())
    cards: dict[int, Card] = {}
    for entry in data["regular"] + data["special"]:
        ends = tuple((pb.Token.Value(name), int(qty)) for name, qty in entry["ends"])
        cards[entry["id"]] = Card(entry["id"], ends, bool(entry.get("blank", False)))
    return cards


@cache
def regular_ids() -> tuple[int, ...]:
    return tuple(sorted(c.id for c in all_cards().values() if not c.blank))


@cache
def special_ids() -> tuple[int, ...]:
    return tuple(sorted(c.id for c in all_cards().values() if c.blank))


def card(card_id: int) -> Card:
    return all_cards()[card_id]


def card_pb(card_id: int) -> pb.PactCard:
    c = card(card_id)
    return pb.PactCard(
        id=c.id, blank=c.blank, ends=[pb.Price(token=t, quantity=q) for t, q in c.ends]
    )
