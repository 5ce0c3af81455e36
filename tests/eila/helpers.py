"""Helpers for the Eila tests: start a chapter, put a card in the Present, act with set dice."""

from __future__ import annotations

from typing import Any

from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import Rng, Seat
from services.eila import GAME, rules
from services.eila.engine import ReplayDice
from services.eila.state import State


def start(chapter: int = 0, advanced: bool = False, box: tuple[str, ...] = (),
          single: bool = False, seed: int = 0) -> State:
    options = pb.Options(first_chapter=chapter, advanced=advanced, save_box=list(box),
                         single_chapter=single)
    events = GAME.setup(options, [Seat("eila")], Rng(b"test-%d" % seed, 0))
    return GAME.replay(events)


def present(state: State, card: str, **resources: int) -> State:
    """The same state with `card` in the Present (taken out of wherever it was)."""
    new = state.clone()
    p = new.play
    assert p is not None
    for pile in [p.upcoming, p.future, p.past, *p.decks.values()]:
        if card in pile:
            pile.remove(card)
    if p.present and p.present != card:
        p.upcoming.insert(0, p.present)
        p.known += 1
    p.present, p.phase, p.nested = card, "day", ""
    for r, n in resources.items():
        p.res[r] = n
    return new


def act(state: State, command: Any, draws: list[int] | None = None) -> State:
    """Apply a command as evolve does; with `draws`, the dice come out as given."""
    if draws is None:
        events = GAME.decide_now(state, 0, command, Rng(b"act", 1))
        for event in events:
            state = GAME.evolve(state, event)
        return state
    new = state.clone()
    rules.apply(new, command, ReplayDice(draws), [])
    return new


def choose(option: int) -> Any:
    return pb.Command(choose=pb.ChooseOption(option=option))


def submit(resource: int, count: int = 1) -> Any:
    return pb.Command(submit=pb.Submit(resource=resource, count=count))


END_NIGHT = pb.Command(end_night=pb.EndNight())
FIGHT = pb.Command(fight=pb.Fight())


def night(state: State, **resources: int) -> State:
    new = state.clone()
    p = new.play
    assert p is not None
    p.present, p.phase, p.upcoming, p.known, p.tonight = "", "night", [], 0, 0
    for r, n in resources.items():
        p.res[r] = n
    return new
