"""Every chapter, not only chapter 0 that the shared conformance suite reaches: replaying the
log gives the state, deciding changes nothing, and the state never holds an order nobody has
seen (the mine, the pocket watch, quizzes, offers included)."""

from __future__ import annotations

import copy

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import Rng, Seat
from services.eila import GAME


@pytest.mark.parametrize("chapter", range(6))
def test_replay_purity_and_nothing_hidden_in_every_chapter(chapter: int) -> None:
    box = ["I16", "S01", "S12", "I05"]  # a pocket watch, a spell and the green die
    options = pb.Options(first_chapter=chapter, save_box=box, single_chapter=True,
                         advanced=chapter % 2 == 1)
    events = GAME.setup(options, [Seat("eila")], Rng(b"replay-%d" % chapter, 0))
    state = GAME.replay(events)
    phases = set()
    for version in range(1, 400):
        if GAME.outcome(state) is not None or state.phase != "playing":
            break
        p = state.play
        assert p is not None
        end = len(p.upcoming) - (1 if p.bottom else 0)
        assert p.upcoming[p.known:end] == sorted(p.upcoming[p.known:end])
        assert p.mine is None or all(up or not tile for tile, up in zip(
            p.mine.tiles, p.mine.faceup, strict=True))
        phases.add(state.play.phase)  # type: ignore[union-attr]
        legal = GAME.legal_actions(state, 0)
        bot = "greedy" if version % 3 else "random_options"
        command = GAME.bots[bot](GAME.view(state, 0), legal, Rng(b"bot", version))
        before = copy.deepcopy(state)
        new = GAME.decide_now(state, 0, command, Rng(b"replay-%d" % chapter, version))
        assert state == before
        for event in new:
            state = GAME.evolve(state, event)
        events += new
    assert GAME.replay(events) == state
    assert {"day", "night"} <= phases  # the chapter was really played, nights included
