"""The view's `may` (the kinds of command a seat may send) is told from the state without
building the commands: it must name exactly the kinds of legal_actions, in their order."""

from __future__ import annotations

import pytest

from services import games as registry
from services.core.decider import Rng, Seat
from services.moody_bear.moves import legal_actions, may


@pytest.mark.parametrize("seats", [3, 4, 5])
def test_may_names_the_kinds_of_the_legal_commands_at_every_step(seats: int) -> None:
    game = registry.game("moody_bear")
    checked = 0
    for g in range(6):
        players = [Seat(f"p{i}", "ai") for i in range(seats)]
        state = game.replay(game.setup(game.pb.Options(), players, Rng(b"may-%d" % g, 0)))
        rng, step = Rng(b"may-bots-%d" % g, 0), 0
        while game.outcome(state) is None and step < 400:
            for seat in range(seats):  # seats not to act too: they may send nothing
                kinds = [c.WhichOneof("kind") for c in legal_actions(state, seat)]
                assert may(state, seat) == list(dict.fromkeys(kinds)), (g, step, seat)
                checked += 1
            actor = game.to_act(state)[0]
            command = rng.choice(game.legal_actions(state, actor))
            for event in game.decide_now(state, actor, command, Rng(b"may-d-%d" % g, step)):
                state = game.evolve(state, event)
            step += 1
    assert checked > 500  # whole games, every seat at every step
