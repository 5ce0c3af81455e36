"""A beam-search solver for solo levels: proves a level winnable by finding a winning line.

It is a tool, not a bot: it plays on the full state with the real rules (solo draws are a
function of the level, so the future is known). Each step expands one whole turn (the
placements, an optional swap, the drop, then the powers) from every state of the beam and
keeps the best `beam` states by the greedy bot's judgement of the table.

It also measures how hard a level is to win (`difficulty`, ruling O9).

    python -m services.bubblee.tools.solver [beam] [--write]
        tries every level and prints what it finds; --write stores the winning lines in
        data/solutions.json, which the tests replay to prove every level winnable.
    python -m services.bubblee.tools.solver --difficulty
        measures every level and prints its "difficulty" entry for data/levels.json.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

from arbiter.bubblee.v1 import bubblee_pb2 as pb
from google.protobuf import json_format

from services.bubblee import GAME, bots, rules
from services.bubblee.levels import Difficulty, all_levels
from services.bubblee.state import State, evolve, target_remaining
from services.bubblee.tools import arena
from services.core.decider import Rng, RuleError, Seat

Line = tuple[pb.Command, ...]


def _after(state: State, command: pb.Command) -> tuple[State, bool] | None:
    """The state after a command, and whether the turn (or the game) ended with it."""
    try:
        events = GAME.decide_now(state, state.turn, command, Rng(b"solver", 0))
    except RuleError:
        return None
    ended = False
    for ev in events:
        state = evolve(state, ev)
        ended = ended or ev.WhichOneof("kind") in ("turn_ended", "game_over")
    return state, ended


def _value(state: State) -> float:
    return bots._standing(state, 0)


def _turns(
    state: State, line: Line, drops: int, powers: int
) -> Iterator[tuple[State, Line]]:
    """Every way (after pruning) to play the current turn to its end."""
    legal = rules.legal_actions(state, 0)
    if state.phase == pb.PHASE_PLACE:
        children = legal
    elif state.phase == pb.PHASE_ACTION:
        children = _best_actions(state, legal, drops)
    else:
        children = _best_powers(state, legal, powers)
    for command in children:
        result = _after(state, command)
        if result is None:
            continue
        after, ended = result
        if ended:
            yield after, (*line, command)
        else:
            yield from _turns(after, (*line, command), drops, powers)


def _best_actions(state: State, legal: list[pb.Command], keep: int) -> list[pb.Command]:
    """The drops (and swaps leading to drops) the greedy judgement likes most."""
    scored: list[tuple[float, int, pb.Command]] = []
    for command in legal:
        kind = command.WhichOneof("kind")
        if kind == "drop":
            a = command.drop.a.row * 5 + command.drop.a.column
            b = command.drop.b.row * 5 + command.drop.b.column
            value = bots.drop_value(state, 0, state.sky, a, b)
        else:
            result = _after(state, command)
            if result is None or result[0].outcome is not None:
                continue
            after = result[0]
            value = max(
                (v for a, b in rules._drop_pairs(0)
                 if (v := bots.drop_value(after, 0, after.sky, a, b)) is not None),
                default=None,
            )
        if value is not None:
            scored.append((value, len(scored), command))
    scored.sort(reverse=True)
    return [c for _, _, c in scored[:keep]]


def _best_powers(state: State, legal: list[pb.Command], keep: int) -> list[pb.Command]:
    scored: list[tuple[float, int, pb.Command]] = []
    for command in legal:
        result = _after(state, command)
        if result is not None:
            scored.append((_value(result[0]), len(scored), command))
    scored.sort(reverse=True)
    return [c for _, _, c in scored[:keep]]


def solve(
    number: int, beam: int = 6, drops: int = 6, powers: int = 4, max_turns: int = 60
) -> Line | None:
    """A winning line of commands for solo level `number`, or None if none was found."""
    state = GAME.replay(
        rules.setup(pb.Options(solo_level=number), [Seat("solo")], Rng(b"solver", 0))[:1]
    )
    frontier: list[tuple[State, Line]] = [(state, ())]
    for _ in range(max_turns):
        found: dict[State, Line] = {}
        for start, line in frontier:
            for after, turn in _turns(start, (), drops, powers):
                if after.outcome is not None:
                    if after.outcome.winners == (0,):
                        return line + turn
                    continue
                found.setdefault(after, line + turn)
        if not found:
            return None
        ranked = sorted(found.items(), key=lambda item: _value(item[0]), reverse=True)
        frontier = [(s, line) for s, line in ranked[:beam]]
    return None


def replay_line(number: int, line: Line) -> State:
    """Play a line through the real rules (any seed: solo draws are the level's)."""
    events = rules.setup(pb.Options(solo_level=number), [Seat("solo")], Rng(b"check", 0))
    state = GAME.replay(events)
    for version, command in enumerate(line, start=1):
        for ev in GAME.decide_now(state, 0, command, Rng(b"check", version)):
            state = evolve(state, ev)
    return state


SOLUTIONS_FILE = Path(__file__).parents[1] / "data" / "solutions.json"


def load_solutions() -> dict[int, Line]:
    """The stored winning line of each level (a certificate that it is winnable)."""
    data = json.loads(SOLUTIONS_FILE.read_text())
    return {
        int(number): tuple(json_format.ParseDict(c, pb.Command()) for c in commands)
        for number, commands in data["solutions"].items()
    }


def write_solutions(lines: dict[int, Line]) -> None:
    """One level per line, its commands as compact JSON (json_format of Command)."""
    note = (
        "Winning lines found by services/bubblee/tools/solver.py, one per solo level: "
        "tests/bubblee/test_solo.py replays each through the rules to prove the level winnable."
    )
    rows = [
        f'  "{number}": '
        + json.dumps([json_format.MessageToDict(c) for c in line], separators=(",", ":"))
        for number, line in sorted(lines.items())
    ]
    text = '{\n"note": ' + json.dumps(note) + ',\n"solutions": {\n' + ",\n".join(rows)
    SOLUTIONS_FILE.write_text(text + "\n}\n}\n")


MEASURE_GAMES = 200  # enough for the order to hold where the intervals say it does (O9)
SLIP = (1, 20)  # the careless player's chance, per command, of playing any legal command


def careless_greedy(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    """The greedy bot with slips: a fallible player, so that win counts spread over levels
    instead of being all or nothing (the greedy bot alone plays each level one way)."""
    if rng.chance(*SLIP):
        return rng.choice(legal)
    return bots.greedy_bot(view, legal, rng)


def difficulty(number: int) -> Difficulty:
    """How hard solo level `number` is to win: the careless greedy player's games with bot
    seeds 0 to MEASURE_GAMES - 1 (the draws are the level's, so the figures are fixed)."""
    wins = left = 0
    for seed in range(MEASURE_GAMES):
        outcome, state = arena.play([careless_greedy], seed, pb.Options(solo_level=number))
        wins += outcome.winners == (0,)
        left += target_remaining(state)
    return Difficulty(wins, left)


def main() -> None:
    """Solve every level; with --write, store the winning lines (keeping the old ones of
    levels it cannot solve this time). With --difficulty, measure every level instead."""
    if "--difficulty" in sys.argv:
        for lvl in all_levels():
            entry = json.dumps(difficulty(lvl.number)._asdict())
            print(f'level {lvl.number:2} {lvl.name:22} "difficulty": {entry}', flush=True)
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    beam = int(args[0]) if args else 16
    found = load_solutions() if SOLUTIONS_FILE.exists() else {}
    for lvl in all_levels():
        line = solve(lvl.number, beam=beam, drops=9, powers=6)
        verdict = f"won in {len(line)} commands" if line else "no win found"
        print(f"level {lvl.number:2} {lvl.name:22} {verdict}", flush=True)
        if line:
            found[lvl.number] = line
    if "--write" in sys.argv:
        write_solutions(found)


if __name__ == "__main__":
    main()
