"""Observations for metrics and statistics: the depth of each cascade."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2 as pb


def observe(event: pb.Event) -> dict[str, float]:
    """{"cascade_depth": waves} for the event that ends a drop's resolution (the number of
    waves of lines it removed, 0 when none); {"power_cascade_depth": waves} after a power."""
    if event.WhichOneof("kind") != "settled":
        return {}
    if event.settled.cause == pb.CAUSE_DROP:
        return {"cascade_depth": float(event.settled.waves)}
    return {"power_cascade_depth": float(event.settled.waves)}
