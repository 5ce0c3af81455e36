"""Observations for metrics and statistics: the depth of each cascade."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.core.decider import Figure


def _cascades(cause: str) -> Figure:
    return Figure(
        "cascade_depth", "Line-resolution waves set off by one drop or one power, by cause.",
        (0, 1, 2, 3, 4, 5, 6, 8, 10, 15), (("cause", cause),), timed="resolution_seconds",
        timed_help="Time to decide a command whose resolution removed lines (its whole "
        "decide: the drop or power, every wave and the gravity after each), by cause.")


# In Prometheus: arbiter_bubblee_cascade_depth{cause} and arbiter_bubblee_resolution_seconds.
FIGURES = {"cascade_depth": _cascades("drop"), "power_cascade_depth": _cascades("power")}


def observe(event: pb.Event) -> dict[str, float]:
    """{"cascade_depth": waves} for the event that ends a drop's resolution (the number of
    waves of lines it removed, 0 when none); {"power_cascade_depth": waves} after a power."""
    if event.WhichOneof("kind") != "settled":
        return {}
    if event.settled.cause == pb.CAUSE_DROP:
        return {"cascade_depth": float(event.settled.waves)}
    return {"power_cascade_depth": float(event.settled.waves)}
