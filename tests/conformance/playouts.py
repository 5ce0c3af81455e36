"""Each game's tables (its default options, then its variants) played to the end by the game's
playout policy (`Game.playout`): what the coverage and OpenSpiel-style checks
(test_playouts.py) and the golden logs (tests/golden/) share."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.core.decider import Bot, Game, Rng, RuleError, Seat, Variant
from tests.conformance import suite

MAX_COMMANDS = 20_000
# One due deadline in this many is let pass (its command sent as the server, seat None), so
# that the rules a timeout closes are played too.
DEADLINE_ODDS = 4


def tables(name: str) -> list[Variant]:
    """The game's default table, then the variants it supplies."""
    game = suite.game(name)
    return [Variant("default", game.seat_count, game.pb.Options()),
            *(game.variants() if game.variants else [])]


def slug(variant: Variant) -> str:
    """A variant's name as a file name: "4 players, Duo Jewel" -> "4-players-duo-jewel"."""
    return re.sub(r"[^a-z0-9]+", "-", variant.name.lower()).strip("-")


def random_command(view: Any, legal: list[Any], rng: Rng) -> Any:
    return rng.choice(legal)


def policy(game: Game) -> Bot:
    return game.playout or random_command


def next_command(game: Game, state: Any, rng: Rng) -> tuple[int | None, Any]:
    """Who acts next and with what: a seat to act and the playout's choice, or, now and then,
    the server's command for a deadline that has passed."""
    due = game.deadlines(state) if game.deadlines else []
    if due and rng.chance(1, DEADLINE_ODDS):
        return None, due[0][1]
    seat = rng.choice(list(game.to_act(state)))
    return seat, policy(game)(game.view(state, seat), game.legal_actions(state, seat), rng)


def decide_legal(game: Game, state: Any, seat: int | None, command: Any, rng: Rng,
                 where: str) -> list[Any]:
    """decide_now on a command the rules themselves offered (a legal command, or a due
    deadline's): a refusal breaks the contract, and is reported in its words, not as the
    rules' traceback."""
    try:
        return game.decide_now(state, seat, command, rng)
    except RuleError as refused:
        who = "the server's deadline command" if seat is None else f"seat {seat}'s legal command"
        raise AssertionError(
            f"{game.name}, {where}: {who} {command.WhichOneof('kind')} is refused "
            f"({refused.code}: {refused.message}): every command legal_actions lists (and "
            "every command deadlines gives) must be accepted by decide") from None


@dataclass
class Playout:
    events: list[Any] = field(default_factory=list)
    commands: list[tuple[int | None, Any]] = field(default_factory=list)
    state: Any = None


def play(game: Game, variant: Variant, seed: int,
         check: Callable[[Game, Variant, Any, int], None] | None = None) -> Playout:
    """The playout of one table from one seed, on the rules alone; `check(game, variant,
    state, version)` is called on every state a command is sent from, and on the last."""
    out = Playout()
    chooser = Rng(b"playout-choices-%d" % seed, 0)
    seats = [Seat(f"p{i}") for i in range(variant.seats)]
    out.events = game.setup(variant.options, seats, Rng(b"playout-%d" % seed, 0))
    out.state = game.replay(out.events)
    for _ in range(MAX_COMMANDS):
        if check:
            check(game, variant, out.state, len(out.events))
        if game.outcome(out.state) is not None:
            return out
        seat, command = next_command(game, out.state, chooser)
        new = decide_legal(game, out.state, seat, command,
                           Rng(b"playout-%d" % seed, len(out.events)),
                           f"{variant.name}, seed {seed}, version {len(out.events)}")
        for event in new:
            out.state = game.evolve(out.state, event)
        out.commands.append((seat, command))
        out.events += new
    raise AssertionError(f"{game.name}, {variant.name}, seed {seed}: no end after "
                         f"{MAX_COMMANDS} commands")
