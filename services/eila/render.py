"""Eila's campaign as plain text for the terminal (`arbiter play`, `arbiter replay`):
everything in words and numbers, nothing told by colour alone."""

from __future__ import annotations

from typing import Any


def render(view: Any, colour: bool = True) -> str:
    lines = [f"chapter {view.chapter}: {view.chapter_title}; day {view.day}, HP {view.hp}/"
             f"{view.max_hp}, {view.phase}"]
    if view.storage:
        lines.append("storage: " + (", ".join(f"{n} {r}" for r, n in sorted(view.storage.items())
                                              if n) or "empty"))
    if view.goal.text:
        lines.append(f"goal: {view.goal.text}")
    for kind, held in (("items", view.item_cards), ("support cards", view.support_cards),
                       ("habits", view.habit_cards)):
        if held:
            lines.append(f"{kind}: " + "; ".join(
                f"{c.title}" + (f" ({c.text})" if c.text else "") for c in held))
    if view.HasField("combat"):
        c = view.combat
        lines.append(f"combat with {c.enemy} ({c.enemy_value}): your total {c.total}")
    if view.present.id:
        lines.append(f"now: {view.present.title}: {view.present.text}")
        for o in view.present.options:
            why = "" if o.available else f" [not available: {o.why_not}]"
            lines.append(f"  {o.label}. {o.text}{why}")
    if view.ending:
        lines.append(view.ending)
    return "\n".join(lines)
