"""Take the last counter in words: an event as a seat is told it (from what `redact` leaves
it), a command as a seat reads it in a menu (`arbiter play`, LegalActions.words), and the
catalog of what the table shows (Arbiter.GetCatalog)."""

from __future__ import annotations

from typing import Any

from services.core.decider import CatalogEntry
from services.core.happened import does, plural, who
from services.toy.view import redact


def describe(event: Any, seat: int | None) -> str | None:
    shown = redact(event, seat)
    if shown is None:
        return None
    kind = shown.WhichOneof("kind")
    if kind == "opened":
        starts = does(shown.opened.first, seat, "start", "starts")
        return f"{plural(shown.opened.pile, 'counter')}; {starts}"
    if kind == "dealt":
        if shown.dealt.seat == seat:
            return f"your secret stake is {shown.dealt.stake}"
        return f"{who(shown.dealt.seat, seat)} was dealt a secret stake"
    if kind == "took":
        took = shown.took
        late = " (time ran out)" if took.forced else ""
        return f"{who(took.seat, seat)} took {plural(took.count, 'counter')}{late}"
    return None


def describe_command(command: Any, view: Any = None) -> str:
    """A command in words. The commands are scalars in a oneof (`take: 2`), which the
    platform's fallback (the kind and the message's fields) cannot word."""
    if command.WhichOneof("kind") == "timeout":
        return "time the turn out"
    return f"take {plural(command.take, 'counter')}"


def catalog() -> list[CatalogEntry]:
    """What the table shows, with its rules (a game whose views name cards or tokens by id
    lists each of them here)."""
    return [
        CatalogEntry("PILE", "zone", "the pile", "Take 1 to 3 counters from it on your turn; "
                     "whoever takes the last one wins and scores their stake."),
        CatalogEntry("STAKE", "token", "stake", "Dealt secretly to each seat, from 1 to 3; "
                     "shown to the others once the game is over."),
    ]
