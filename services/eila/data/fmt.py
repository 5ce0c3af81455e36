"""Re-format an authored chapter file: one card per block, one option per line."""

from __future__ import annotations

import json
import sys
from typing import Any

LISTS = ("cards", "location_events", "locations", "contracts", "privileges", "quizzes", "tiles")


def dump_card(card: dict[str, Any]) -> str:
    if "options" not in card:
        return "    " + json.dumps(card)
    head = {k: v for k, v in card.items() if k != "options"}
    options = ",\n".join("       " + json.dumps(o) for o in card["options"])
    return "    " + json.dumps(head)[:-1] + ',\n     "options": [\n' + options + "]}"


def dump(data: dict[str, Any]) -> str:
    parts = []
    for key, value in data.items():
        if key in LISTS:
            body = ",\n".join(dump_card(c) for c in value)
            parts.append(f"  {json.dumps(key)}: [\n{body}\n  ]")
        else:
            parts.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


if __name__ == "__main__":
    for path in sys.argv[1:]:
        with open(path) as f:
            data = json.load(f)
        with open(path, "w") as f:
            f.write(dump(data))
