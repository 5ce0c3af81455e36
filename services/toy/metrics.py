"""Take the last counter's figures, for the statistics (`arbiter stats toy`)."""

from __future__ import annotations

from typing import Any


def observe(event: Any) -> dict[str, float]:
    """The figures of an event, for the statistics: how many counters a seat took."""
    return {"take": float(event.took.count)} if event.WhichOneof("kind") == "took" else {}
