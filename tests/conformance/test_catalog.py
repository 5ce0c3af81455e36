"""Every game's catalog (Arbiter.GetCatalog) names what its views name by id: every value of
an enum it catalogues at all, and every `id` a view holds, seen in the views of every seat and
of a spectator along the game's playouts; each entry has a name and a text."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor

from services.core.decider import Game
from tests.conformance import suite
from tests.conformance.playouts import play, tables

GAMES = suite.NAMES


def named_ids(message: Any) -> set[tuple[str, str]]:
    """(enum type or "id", value) of every set enum value and `id` field in a message."""
    out: set[tuple[str, str]] = set()
    for fd, value in message.ListFields():
        values = value if fd.is_repeated else [value]
        if fd.message_type is not None:
            if not fd.message_type.GetOptions().map_entry:
                for item in values:
                    out |= named_ids(item)
        elif fd.enum_type is not None:
            out |= {(fd.enum_type.full_name, fd.enum_type.values_by_number[v].name)
                    for v in values if v}
        elif fd.name == "id" and fd.type == FieldDescriptor.TYPE_STRING:
            out |= {("id", v) for v in values if v}
    return out


@cache
def seen_in_views(name: str) -> frozenset[tuple[str, str]]:
    game = suite.game(name)
    seen: set[tuple[str, str]] = set()
    for variant in tables(name):
        for seed in range(2):
            events = play(game, variant, seed).events
            state = game.start(events[0])
            for event in events[1:]:
                state = game.evolve(state, event)
                for seat in [*range(variant.seats), None]:
                    seen |= named_ids(game.view(state, seat))
    return frozenset(seen)


def catalogued_enums(game: Game, ids: set[str]) -> list[EnumDescriptor]:
    every = game.pb.DESCRIPTOR.enum_types_by_name.values()
    return [e for e in every if any(v.name in ids for v in e.values)]


@pytest.mark.parametrize("name", GAMES)
def test_every_id_a_view_names_is_in_the_catalog(name: str) -> None:
    game = suite.game(name)
    assert game.catalog is not None, f"{name} has no catalog (Game.catalog)"
    entries = game.catalog()
    ids = {e.id for e in entries}
    assert len(ids) == len(entries), f"{name}: an id is catalogued twice"
    blank = [e.id for e in entries if not (e.kind.strip() and e.name.strip() and e.text.strip())]
    assert not blank, f"{name}: entries without a kind, a name or a text: {blank[:5]}"
    enums = catalogued_enums(game, ids)
    for enum in enums:  # an enum catalogued at all is catalogued whole
        missing = [v.name for v in enum.values if v.number and v.name not in ids]
        assert not missing, f"{name}: {enum.name} values missing from the catalog: {missing}"
    covered = {e.full_name for e in enums} | {"id"}
    seen = seen_in_views(name)
    unknown = sorted(v for kind, v in seen if kind in covered and v not in ids)
    assert not unknown, f"{name}: views name ids the catalog lacks: {unknown[:10]}"
    if seen:  # a game whose views name things by id catalogues some of them
        assert any(kind in covered for kind, _ in seen), f"{name}: its catalog covers no id " \
            "its views name"
