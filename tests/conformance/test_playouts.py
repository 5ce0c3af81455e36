"""Every game's playouts reach its rules, and every state they pass keeps the platform's
contract (as OpenSpiel's shared API test does for its games), checked here once for all:

- the playouts of a game (each of its tables, `Game.suite.playout_seeds` seeds each, by
  `Game.playout`) send every kind of command and cause every kind of event of its protobuf,
  except those the game names in `Game.suite` with the reason; a kind that stops being
  reached fails, and so does a kind named there that is reached after all;
- in every state a playout passes, a seat that is not to act has no legal command; once the
  game is over nobody is to act and no seat has a legal command;
- every command listed as legal is accepted by the rules (these two on the first CHECKED
  seeds of each table, and more until LEAST_STATES states are checked).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from services.core.decider import Game, Rng, RuleError, Variant
from tests.conformance import suite
from tests.conformance.playouts import play, tables

GAMES = suite.NAMES
# Each table plays `Game.suite.playout_seeds` seeds (enough that each kind is reached several
# times, so that a rules change moving the random draws does not lose one by chance); the kinds
# a game's playouts never reach are named in `Game.suite` too, with the test that covers them.

# The contract is checked in every state of the first CHECKED seeds of each table (it decides
# every legal command of every state: most of the time this file takes), and of further seeds
# until at least LEAST_STATES states are checked.
CHECKED = 4
LEAST_STATES = 100


def kinds(message: Any) -> set[str]:
    return {f.name for f in message.DESCRIPTOR.oneofs_by_name["kind"].fields}


class Contract:
    """Collects what breaks the contract in the states a playout passes."""

    def __init__(self) -> None:
        self.broken: list[str] = []
        self.states = 0

    def __call__(self, game: Game, variant: Variant, state: Any, version: int) -> None:
        self.states += 1
        at = f"{variant.name}, version {version}"
        acting = set(game.to_act(state))
        over = game.outcome(state) is not None
        if over and acting:
            self.broken.append(f"{at}: the game is over but seats {sorted(acting)} are to act")
        for seat in range(variant.seats):
            legal = game.legal_actions(state, seat)
            if seat not in acting or over:
                if legal:
                    self.broken.append(f"{at}: seat {seat} is not to act but has "
                                       f"{len(legal)} legal commands")
                continue
            for command in legal:
                try:
                    game.decide_now(state, seat, command, Rng(b"every-legal", version))
                except RuleError as e:
                    self.broken.append(f"{at}: seat {seat}'s legal command "
                                       f"{command.WhichOneof('kind')} is refused: {e.code} "
                                       f"{e.message}")


@cache
def reached(name: str) -> tuple[frozenset[str], frozenset[str], tuple[str, ...], int]:
    """The kinds of command and event the game's playouts reach, what broke the contract,
    and how many states were checked."""
    game = suite.game(name)
    commands: set[str] = set()
    events: set[str] = set()
    contract = Contract()
    for variant in tables(name):
        for seed in range(game.suite.playout_seeds):
            check = seed < CHECKED or contract.states < LEAST_STATES
            played = play(game, variant, seed, contract if check else None)
            commands |= {c.WhichOneof("kind") for _, c in played.commands}
            events |= {e.WhichOneof("kind") for e in played.events}
    return frozenset(commands), frozenset(events), tuple(contract.broken), contract.states


@pytest.mark.parametrize("name", GAMES)
def test_playouts_send_every_kind_of_command(name: str) -> None:
    commands, _, _, _ = reached(name)
    game = suite.game(name)
    check_coverage(name, "command", kinds(game.pb.Command), commands,
                   game.suite.unreached_commands)


@pytest.mark.parametrize("name", GAMES)
def test_playouts_cause_every_kind_of_event(name: str) -> None:
    _, events, _, _ = reached(name)
    game = suite.game(name)
    check_coverage(name, "event", kinds(game.pb.Event), events, game.suite.unreached_events)


def check_coverage(name: str, what: str, every: set[str], got: frozenset[str],
                   unreached: dict[str, str]) -> None:
    assert set(unreached) <= every, f"{name}: no {what} kinds {sorted(set(unreached) - every)}"
    missing = every - got - set(unreached)
    assert not missing, (f"{name}: the playouts no longer reach the {what} kinds "
                         f"{sorted(missing)}; make Game.playout reach them again")
    late = set(unreached) & got
    assert not late, f"{name}: the {what} kinds {sorted(late)} are reached after all"


@pytest.mark.parametrize("name", GAMES)
def test_only_seats_to_act_have_legal_commands_and_each_is_accepted(name: str) -> None:
    _, _, broken, states = reached(name)
    assert states >= LEAST_STATES, (
        f"{name}: its playouts pass only {states} states; raise Game.suite.playout_seeds")
    assert not broken, f"{name}: {len(broken)} breaches, the first: {broken[:5]}"
