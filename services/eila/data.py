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


# What the rules never read: story and flavour texts, and the names shown for things. An
# ending's text is the value under "endings"; everything else is the value of one of these keys.
TEXT_KEYS = frozenset({"text", "title", "name", "question", "clue", "authored", "note",
                       "enemy", "face"})
TEXTS_DIR = "texts"  # each content version's texts, for the stored games played with it


def content_files() -> dict[str, Json]:
    return {name: json.loads((DATA_DIR / name).read_text())
            for name in CONTENT_FILES if (DATA_DIR / name).exists()}


def _is_text(key: str, value: Any, under: str) -> bool:
    return isinstance(value, str) and (key in TEXT_KEYS or under == "endings")


def texts_of(value: Any, path: str = "", under: str = "") -> dict[str, str]:
    """Every text of `value` by its path ("chapter0.json/cards/0/options/1/text")."""
    out: dict[str, str] = {}
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, item in items:
        where = f"{path}/{key}" if path else str(key)
        if isinstance(value, dict) and _is_text(str(key), item, under):
            out[where] = item
        else:
            out.update(texts_of(item, where, str(key)))
    return out


def without_texts(value: Any, under: str = "") -> Any:
    if isinstance(value, dict):
        return {k: without_texts(v, k) for k, v in value.items() if not _is_text(k, v, under)}
    if isinstance(value, list):
        return [without_texts(v) for v in value]
    return value


def rules_digest(files: dict[str, Json]) -> str:
    """sha256 (first 16 hex digits) of what the rules read of the content: its effects,
    requirements, goals, dice and conversions, without its texts. A text edit keeps it."""
    plain = json.dumps(without_texts(files), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(plain.encode()).hexdigest()[:16]


def with_texts(files: dict[str, Json], texts: dict[str, str]) -> dict[str, Json]:
    """A copy of `files` with the texts at their paths (those that are still there)."""
    out: Json = json.loads(json.dumps(files))
    for where, text in texts.items():
        *parents, last = where.split("/")
        node: Any = out
        try:
            for key in parents:
                node = node[int(key)] if isinstance(node, list) else node[key]
            if isinstance(node, dict) and last in node:
                node[last] = text
        except (KeyError, IndexError, ValueError, TypeError):
            continue
    return out


def archived(version: str) -> Json | None:
    """The archive of content `version` (its texts and its rules' digest), found by either
    name it has in events: the facts' (Opened) or the legacy one (CampaignStarted)."""
    for path in sorted((DATA_DIR / TEXTS_DIR).glob("*.json")):
        entry: Json = json.loads(path.read_text())
        if version in (entry["version"], entry["legacy"]):
            return entry
    return None


def archive_entry() -> Json:
    """Today's content as an archive entry (`arbiter eila texts` writes it)."""
    files = content_files()
    return {"version": content_digest(), "legacy": content_digest(LEGACY_PREFIX),
            "rules": rules_digest(files), "texts": texts_of(files)}


LEGACY_PREFIX = b"rules 3\0"  # the legacy logs' fingerprint: rules version 3, then the files


@cache
def current_rules() -> str:
    return rules_digest(content_files())


@cache
def texts_index(version: str) -> Index | None:
    """The index a game played with content `version` is shown and judged with: today's
    rules with that version's texts. None when its rules are not today's or it is unknown."""
    if version in ("", content_version(), content_digest(LEGACY_PREFIX)):
        return default_index()
    entry = archived(version)
    if entry is None or entry["rules"] != current_rules():
        return None
    files = with_texts(content_files(), entry["texts"])
    return build_index(Content(files.get("common.json", {}), files.get("habits.json", {}),
                               files.get("advanced.json", {}),
                               {n: files[f"chapter{n}.json"] for n in CHAPTERS
                                if f"chapter{n}.json" in files}))


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


def reload() -> None:
    """Forget what was read of the content files (tests point DATA_DIR elsewhere)."""
    for cached in (default_index, content_version, current_rules, texts_index):
        cached.cache_clear()
