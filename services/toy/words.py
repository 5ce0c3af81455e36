"""Take the last counter in words: an event as a seat is told it."""

from __future__ import annotations

from typing import Any

from services.core.happened import does, who


def describe(event: Any, seat: int | None) -> str | None:
    kind = event.WhichOneof("kind")
    if kind == "opened":
        starts = does(event.opened.first, seat, "start", "starts")
        return f"{event.opened.pile} counters; {starts}"
    if kind == "took":
        took = event.took
        count = "1 counter" if took.count == 1 else f"{took.count} counters"
        late = " (time ran out)" if took.forced else ""
        return f"{who(took.seat, seat)} took {count}{late}"
    return None
