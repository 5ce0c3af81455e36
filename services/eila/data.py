"""Loading the authored content (services/eila/data/*.json) into an index of cards."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).parent / "data"
TANGIBLE = ("food", "coin", "stone")
INTANGIBLE = ("knowledge", "energy", "fear")
RESOURCES = TANGIBLE + INTANGIBLE
SLOTS = 8  # storage spaces per kind (tangible, intangible)
DAYS = 7
CHAPTERS = (0, 1, 2, 3, 4, 5)

Json = dict[str, Any]


@dataclass(frozen=True)
class Content:
    """All authored data: the common decks and every chapter file, as loaded JSON."""

    common: Json
    habits: Json
    advanced: Json
    chapters: dict[int, Json]

    def chapter(self, number: int) -> Json:
        return self.chapters[number]

    def items(self) -> dict[str, Json]:
        return {i["id"]: i for i in self.common["items"]}

    def supports(self) -> dict[str, Json]:
        return {s["id"]: s for s in self.common["supports"]}

    def habit_cards(self) -> dict[str, Json]:
        return {h["id"]: h for h in self.habits["habits"]}

    def advanced_cards(self) -> dict[str, Json]:
        return {c["id"]: c for c in self.advanced.get("cards", [])}


def _read(name: str) -> Json:
    assert name in CONTENT_FILES, f"{name} is not listed as content"
    path = DATA_DIR / name
    if not path.exists():
        return {}
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def load_content() -> Content:
    chapters = {}
    for n in CHAPTERS:
        data = _read(f"chapter{n}.json")
        if data:
            chapters[n] = data
    return Content(_read("common.json"), _read("habits.json"), _read("advanced.json"), chapters)


@dataclass(frozen=True)
class Index:
    """Fast look-ups over one Content: every card by id, items, supports."""

    content: Content
    cards: dict[str, Json]  # event cards of every chapter + habits
    advanced: dict[str, Json]
    items: dict[str, Json]
    supports: dict[str, Json]
    extra: dict[str, Json]  # quizzes, mine tiles, locations, contracts, privileges by id

    def card(self, card_id: str, advanced: bool = False) -> Json:
        if advanced and card_id in self.advanced:
            return self.advanced[card_id]
        return self.cards.get(card_id) or self.extra[card_id]

    def name(self, ref: str) -> str:
        """A readable name for a card, item or support id."""
        if ref in self.items:
            return f"{self.items[ref]['name']} ({ref})"
        if ref in self.supports:
            return f"{self.supports[ref]['name']} ({ref})"
        card = self.cards.get(ref) or self.extra.get(ref)
        if card:
            return f"{card.get('title', card.get('name', ref))} ({ref})"
        return ref


def build_index(content: Content) -> Index:
    cards: dict[str, Json] = {}
    extra: dict[str, Json] = {}
    for chapter in content.chapters.values():
        for card in chapter.get("cards", []):
            cards[card["id"]] = card
        for key in ("quizzes", "tiles", "locations", "location_events", "contracts", "privileges"):
            for thing in chapter.get(key, []):
                extra[thing["id"]] = thing
    for habit in content.habits.get("habits", []):
        cards[habit["id"]] = habit
    return Index(
        content,
        cards,
        content.advanced_cards(),
        content.items(),
        content.supports(),
        extra,
    )


# The files the rules read (schema.json is the validator's, not the rules').
CONTENT_FILES = ("common.json", "habits.json", "advanced.json",
                 *(f"chapter{n}.json" for n in CHAPTERS))


def content_digest(prefix: bytes = b"") -> str:
    """sha256 (first 16 hex digits) of `prefix` and every content file the rules read."""
    digest = hashlib.sha256(prefix)
    for name in sorted(CONTENT_FILES):
        path = DATA_DIR / name
        if path.exists():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@cache
def content_version() -> str:
    """The content a game is played with, named in its opening event.

    Events hold facts, so a game replays whatever the content says later; re-running its
    commands (log verification) is where a change shows, and this names the content the
    commands were judged by. The rules' source is left out on purpose: a refactoring that plays
    the same would otherwise fail every verification, while a change of how the rules play
    shows precisely, at the first event it changes."""
    return content_digest()


@cache
def default_index() -> Index:
    return build_index(load_content())
