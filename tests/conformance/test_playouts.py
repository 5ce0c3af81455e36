"""Every game's playouts reach its rules, and every state they pass keeps the platform's
contract (as OpenSpiel's shared API test does for its games), checked here once for all:

- the playouts of a game (each of its tables, `Game.suite.playout_seeds` seeds each, by
  `Game.playout`) send every kind of command and cause every kind of event of its protobuf,
  except those the game names in `Game.suite` with the reason; a kind that stops being
  reached fails, and so does a kind named there that is reached after all;
- in every state a playout passes, a seat that is not to act has no legal command; once the
  game is over nobody is to act and no seat has a legal command;
- every command listed as legal is accepted by the rules, and the server words it for a
  player (LegalActions.words: one per command, none empty, no label twice in one list)
  (these on the first CHECKED seeds of each table, and more until LEAST_STATES states are
  checked).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from services.core.decider import Game, Rng, RuleError, Variant
from services.core.table import legal_actions
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
        self.unworded: list[str] = []  # lists whose words break LegalActions.words' contract
        self.worded = 0  # commands listed with words of their own
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
            self.check_words(game, state, seat, version, at)
            for command in legal:
                try:
                    game.decide_now(state, seat, command, Rng(b"every-legal", version))
                except RuleError as e:
                    self.broken.append(f"{at}: seat {seat}'s legal command "
                                       f"{command.WhichOneof('kind')} is refused: {e.code} "
                                       f"{e.message}")


    def check_words(self, game: Game, state: Any, seat: int, version: int, at: str) -> None:
        listed = legal_actions(game, state, False, seat, version)
        labels = [w.label for w in listed.words]
        where = f"{at}, seat {seat}"
        if len(labels) != len(listed.commands):
            self.unworded.append(f"{where}: {len(listed.commands)} commands but "
                                 f"{len(labels)} words")
        elif not all(label.strip() and w.group.strip() for label, w in zip(labels, listed.words,
                                                                           strict=True)):
            self.unworded.append(f"{where}: a command without a label or a group: {labels}")
        elif len(set(labels)) != len(labels):
            twice = sorted({label for label in labels if labels.count(label) > 1})
            self.unworded.append(f"{where}: two commands read alike: {twice}")
        else:
            self.worded += len(labels)


@cache
def reached(name: str) -> tuple[frozenset[str], frozenset[str], Contract, int]:
    """The kinds of command and event the game's playouts reach, the contract's findings,
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
    return frozenset(commands), frozenset(events), contract, contract.states


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
    _, _, contract, states = reached(name)
    assert states >= LEAST_STATES, (
        f"{name}: its playouts pass only {states} states; raise Game.suite.playout_seeds")
    broken = contract.broken
    assert not broken, f"{name}: {len(broken)} breaches, the first: {broken[:5]}"


@pytest.mark.parametrize("name", GAMES)
def test_every_listed_command_is_worded_for_a_player(name: str) -> None:
    _, _, contract, _ = reached(name)
    wrong = contract.unworded
    assert not wrong, (f"{name}: {len(wrong)} lists of legal commands are not worded one by "
                       f"one (Game.describe_command); the first: {wrong[:3]}")
    assert contract.worded > 0
