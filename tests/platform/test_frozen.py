"""services.core.frozen.replace: the games' fast `dataclasses.replace`."""

from __future__ import annotations

import dataclasses
import functools

import pytest

from services import games as registry
from services.core.decider import Rng, Seat
from services.core.frozen import replace


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


def test_it_gives_what_dataclasses_replace_gives() -> None:
    p = Point(1, 2, ("a",))
    for changes in ({}, {"x": 5}, {"y": 7, "tags": ("b", "c")}):
        fast, slow = replace(p, **changes), dataclasses.replace(p, **changes)
        assert fast == slow and type(fast) is Point and fast is not p
    assert p == Point(1, 2, ("a",))  # the original is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        replace(p, x=3).x = 4  # type: ignore[misc]


def test_it_refuses_a_name_that_is_not_a_field() -> None:
    with pytest.raises(TypeError, match="no field z"):
        replace(Point(1), z=3)


@dataclasses.dataclass
class Mutable:
    x: int


@dataclasses.dataclass(frozen=True)
class Checked:
    x: int

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("negative")


@dataclasses.dataclass(frozen=True)
class Cached:
    x: int

    @functools.cached_property
    def double(self) -> int:
        return 2 * self.x


@pytest.mark.parametrize("obj", [Mutable(1), Checked(1), Cached(1)])
def test_it_refuses_classes_whose_dict_may_hold_more_than_fields(obj: object) -> None:
    # A mutable instance may carry extra attributes, a cached property a stale value, and
    # __post_init__ checks that only __init__ runs: dataclasses.replace is the one for them.
    with pytest.raises(TypeError, match="use dataclasses.replace"):
        replace(obj, x=2)


@pytest.mark.parametrize("name", ["bubble_shadow", "moody_bear", "shadow_council"])
def test_a_games_state_replaced_equals_the_slow_way(name: str) -> None:
    game = registry.game(name)
    seats = [Seat(f"p{i}", "ai") for i in range(game.seat_count)]
    state = game.replay(game.setup(game.pb.Options(), seats, Rng(b"frozen", 0)))
    field = dataclasses.fields(state)[0].name
    value = getattr(state, field)
    assert replace(state, **{field: value}) == dataclasses.replace(state, **{field: value})
