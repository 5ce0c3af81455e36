"""The commands Bubble and Shadow's search weighs (Game.search_commands)."""

from __future__ import annotations

import math

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import GAME
from services.bubble_shadow.bots import GREEDY_PAY_ORDER, greedy_bot, search_commands
from services.bubble_shadow.state import State
from services.core.decider import Rng
from services.core.search import Budget, search
from tests.bubble_shadow.helpers import act, new_game


def _positions(seed: int) -> list[tuple[State, int]]:
    """(state, seat to act) at every command of a 2-player game the greedy bot plays."""
    state, _ = new_game(2, seed)
    found, step = [], 0
    while GAME.outcome(state) is None:
        seat = GAME.to_act(state)[0]
        found.append((state, seat))
        rng = Rng(b"positions-%d" % seed, step)
        state = act(state, seat, greedy_bot(GAME.view(state, seat),
                                            GAME.legal_actions(state, seat), rng), step)
        step += 1
    return found


def _without_pay_order(cmd: pb.Command) -> pb.Command:
    out = pb.Command()
    out.CopyFrom(cmd)
    kind = out.WhichOneof("kind")
    if kind in ("play_pact", "sign_pact"):
        out_kind = getattr(out, kind)
        del out_kind.pay_order[:]
    return out


def test_search_commands_are_the_legal_ones_with_the_greedy_pay_order() -> None:
    kinds = set()
    for state, seat in _positions(3):
        legal = GAME.legal_actions(state, seat)
        weighed = search_commands(state, seat)
        assert [_without_pay_order(c) for c in weighed] == legal
        for cmd in weighed:
            kind = cmd.WhichOneof("kind")
            kinds.add(kind)
            if kind in ("play_pact", "sign_pact"):
                assert list(getattr(cmd, kind).pay_order) == GREEDY_PAY_ORDER
        # The greedy bot's choice is one of them: the search's first candidate.
        assert greedy_bot(GAME.view(state, seat), legal, Rng(b"g", 0)) in weighed
    assert {"play_pact", "sign_pact"} <= kinds


def test_the_search_sends_its_pacts_with_the_greedy_pay_order() -> None:
    plays = [(s, seat) for s, seat in _positions(5) if s.stage == pb.STAGE_PLAY
             and len(GAME.legal_actions(s, seat)) > 1][:4]
    assert plays
    for k, (state, seat) in enumerate(plays):
        chosen = search(GAME, state, seat, Rng(b"search", k), Budget(math.inf, 24), 4)
        assert chosen in search_commands(state, seat)
        assert list(chosen.play_pact.pay_order) == GREEDY_PAY_ORDER
