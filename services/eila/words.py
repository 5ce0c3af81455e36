"""Eila and Something Shiny: an event in words."""

from __future__ import annotations

from typing import Any


def describe(event: Any, seat: int | None) -> str | None:
    """An event in words: the public log lines it wrote (the draws stay hidden)."""
    kind = event.WhichOneof("kind")
    if kind is None:
        return None
    body = getattr(event, kind)
    lines = [line for line in getattr(body, "log", ()) if line]
    if lines:
        return "; ".join(lines)
    if kind in ("started", "opened"):  # the opening event has no log lines of its own
        return "the campaign begins"
    command = body.command.WhichOneof("kind") if hasattr(body, "command") else None
    return f"you chose to {command.replace('_', ' ')}" if command else "you acted"
