"""Take the last counter: what a seat sees. The pile and what each seat has taken are public;
a seat's stake is its own secret until the game is over, so it is left out of the other
seat's view and of a spectator's (`view_hidden` names it there), cleared from the Dealt
events they are shown (`redact`), and dealt anew by the leak tests (`redeal`)."""

from __future__ import annotations

from typing import Any

from services.core.decider import Rng
from services.core.frozen import replace
from services.toy.schema import pb
from services.toy.state import STAKES, State


def show(state: State, seat: int | None) -> Any:
    """The game's own fields of a View; the platform fills seat, to_act, outcome and hidden."""
    view = pb.View(pile=state.pile)
    for place, (stake, taken) in enumerate(zip(state.stakes, state.taken, strict=True)):
        player = view.players.add(taken=taken)
        if place == seat or state.winner is not None:
            player.stake = stake
    return view


def view_hidden(view: Any) -> list[str]:
    """The paths `show` left unset because the view's seat may not see them."""
    return [f"players[{place}].stake" for place, player in enumerate(view.players)
            if not player.HasField("stake")]


def redact(event: Any, seat: int | None) -> Any:
    """The event as `seat` may see it: another seat's Dealt without its stake. (Return None
    for an event the seat may not even know happened.)"""
    if event.WhichOneof("kind") != "dealt" or event.dealt.seat == seat:
        return event
    shown = pb.Event()
    shown.CopyFrom(event)
    shown.dealt.ClearField("stake")
    return shown


def redeal(state: State, seat: int, rng: Rng) -> State:
    """The same game with every stake `seat` cannot see (the other seats' dealt ones) dealt
    anew: for the leak tests, which check that nothing the seat is shown or told changes."""
    if state.winner is not None:
        return state  # every stake is shown
    stakes = tuple(stake if place == seat or not stake else rng.choice(STAKES)
                   for place, stake in enumerate(state.stakes))
    return replace(state, stakes=stakes)
