"""Search bots never peek, for every game that hides something and every level.

At moments of a game played by the game's playout policy, the seat to act asks a search bot
for its command at a fixed seed and a playout cap (repeatable on any machine); then what the
seat cannot see is dealt anew (Game.redeal), and the bot, given the same seed, must choose the
same command. A bot that reads the true hidden cards instead of sampling them is caught: the
planted peeking search below must fail the same check.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from services.core import bots, search
from services.core.decider import Game, Rng, Seat
from tests.conformance import suite
from tests.conformance.playouts import policy

HIDING = [n for n in suite.NAMES if suite.game(n).redeal is not None]
PLAYOUTS = 6  # per choice: enough that the choice rests on the sampled worlds
MOMENTS = 3  # decisions checked per game and level
REDEALS = 2  # other worlds per decision

Chooser = Callable[[Game, Any, int, str, Rng], Any]


def capped(game: Game, state: Any, seat: int, name: str, rng: Rng) -> Any:
    return bots.choose_command(game, state, seat, name, rng, playouts=PLAYOUTS)


def moments(game: Game, seed: int) -> list[tuple[Any, int]]:
    """(state, seat to act) at decisions with a real choice, spread over one game."""
    seats = [Seat(f"p{i}") for i in range(game.seat_count)]
    events = game.setup(game.pb.Options(), seats, Rng(b"bot-leak-%d" % seed, 0))
    state = game.replay(events)
    rng, found, step = Rng(b"bot-leak-play", seed), [], 0
    while game.outcome(state) is None and step < 400:
        seat = rng.choice(list(game.to_act(state)))
        legal = game.legal_actions(state, seat)
        if len(legal) > 1 and step % 5 == 0:
            found.append((state, seat))
        command = policy(game)(game.view(state, seat), legal, rng)
        for event in game.decide(state, seat, command, Rng(b"bot-leak-%d" % seed, step + 1)):
            state = game.evolve(state, event)
        step += 1
    spread = max(1, len(found) // MOMENTS)
    return found[::spread][:MOMENTS]


def changed_choices(game: Game, level: str, choose: Chooser) -> tuple[int, int]:
    """(decisions compared, those where a re-deal of the unseen changed the choice)."""
    assert game.redeal is not None
    compared = changed = 0
    for state, seat in moments(game, seed=1):
        mine = choose(game, state, seat, level, Rng(b"bot-leak-choice", compared))
        for k in range(REDEALS):
            other = game.redeal(state, seat, Rng(b"bot-leak-other-%d" % k, compared))
            assert game.view(other, seat) == game.view(state, seat)
            theirs = choose(game, other, seat, level, Rng(b"bot-leak-choice", compared))
            changed += theirs != mine
        compared += 1
    return compared, changed


@pytest.mark.parametrize("level", list(bots.LEVELS))
@pytest.mark.parametrize("name", HIDING)
def test_a_search_bot_chooses_alike_in_worlds_its_seat_cannot_tell_apart(
        name: str, level: str) -> None:
    compared, changed = changed_choices(suite.game(name), level, capped)
    assert compared > 0, "no decision with a choice was reached"
    assert changed == 0, f"{changed} choices changed with what the seat cannot see"


def test_a_peeking_search_bot_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same check on a search that plays the true state out instead of sampled worlds
    chooses differently once the hidden cards change (in a game where they matter to play:
    not in every game, as the template's hidden stakes never change who wins)."""
    monkeypatch.setattr(search, "sample_world", lambda game, state, seat, rng: state)
    caught = []
    for name in HIDING:
        if changed_choices(suite.game(name), "hard", capped)[1]:
            caught.append(name)
            break
    assert caught, "the peeking search went unnoticed in every game"


def reads_the_hidden_state(game: Game, state: Any, seat: int, name: str, rng: Rng) -> Any:
    """A planted cheat: its choice is a function of the whole true state (pickled: a repr may
    leave fields out, as Eila's hides its decks')."""
    legal = game.legal_actions(state, seat)
    return legal[zlib.crc32(pickle.dumps(state)) % len(legal)]


@pytest.mark.parametrize("name", HIDING)
def test_a_bot_that_reads_hidden_cards_is_caught(name: str) -> None:
    game = suite.game(name)
    assert game.redeal is not None
    if all(game.redeal(state, seat, Rng(b"any", 0)) == state
           for state, seat in moments(game, seed=1)):
        pytest.skip(f"nothing is hidden at {game.title}'s default table")
    compared, changed = changed_choices(game, "hard", reads_the_hidden_state)
    assert compared > 0
    assert changed > 0, "a bot reading the hidden cards went unnoticed"
