"""Build Shadow Council tables in a chosen situation and act on them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import Rng, Seat
from services.shadow_council import GAME, rules
from services.shadow_council.rules import card_pb, identity_pb, suit_pb
from services.shadow_council.state import ACTIONS, State

SIX = ("GENERAL", "MERCHANT", "PROPHET", "ASSASSIN", "ALCHEMIST", "SPY")


def table(
    n: int = 4,
    *,
    public: Sequence[str] | None = None,
    shadow: Sequence[str] | None = None,
    hands: Sequence[Sequence[str]] | None = None,
    gold: Sequence[int] | None = None,
    deck: Sequence[str] | None = None,
    ai: Sequence[bool] | None = None,
    event: str = "MARKET_BOOM",
    round: int = 1,
    phase: str = ACTIONS,
    current: int = 0,
    actions: int = 2,
    **more: Any,
) -> State:
    """A table in the middle of seat `current`'s turn (by default), fully specified."""
    default = SIX[:2] + SIX[3:5] if n == 4 else SIX[:n]  # 4 players: 2 Order + 2 Chaos
    public = tuple(public or default)
    shadow = tuple(shadow or public)
    in_play = tuple(i for i in SIX if i in public)
    state = State(
        ai=tuple(ai or (False,) * n),
        rounds=5,
        in_play=in_play,
        public=public,
        shadow=shadow,
        deck=tuple(deck if deck is not None else ["RALLY"] * 20),
        hands=tuple(tuple(h) for h in (hands or [["TAX"] * 3] * n)),
        gold=tuple(gold or (4,) * n),
        alive=(True,) * n,
        guarded=(False,) * n,
        skip_turn=(False,) * n,
        free_peek=(False,) * n,
        free_reflect=(False,) * n,
        guessed=(False,) * n,
        clues=((),) * n,
        round=round,
        event=event,
        phase=phase,
        current=current,
        actions=actions,
        turn_open=phase == ACTIONS,
        tick=10,
    )
    return replace(state, **more)


def command(**kind: Any) -> pb.Command:
    return pb.Command(**kind)


def play_cmd(
    card: str,
    target: int | None = None,
    second: int | None = None,
    guess: str | None = None,
    suit: str | None = None,
) -> pb.Command:
    msg = pb.PlayCard(card=card_pb(card))
    if target is not None:
        msg.target = target
    if second is not None:
        msg.second_target = second
    if guess is not None:
        msg.guess = identity_pb(guess)
    if suit is not None:
        msg.suit = suit_pb(suit)
    return pb.Command(play=msg)


def act(state: State, seat: int, cmd: pb.Command, seed: int = 0) -> tuple[State, list[pb.Event]]:
    events = GAME.decide_now(state, seat, cmd, Rng.for_test(seed))
    for event in events:
        state = GAME.evolve(state, event)
    return state, events


def play(state: State, seat: int, card: str, seed: int = 0, **kw: Any) -> State:
    return act(state, seat, play_cmd(card, **kw), seed)[0]


def kinds(events: Sequence[pb.Event]) -> list[str]:
    return [str(e.WhichOneof("kind")) for e in events]


def of_kind(events: Sequence[pb.Event], kind: str) -> list[Any]:
    return [getattr(e, kind) for e in events if e.WhichOneof("kind") == kind]


def start_round(state: State, event: str, round: int = 2,
                seed: int = 0) -> tuple[State, list[pb.Event]]:
    """Start `round` with `event` drawn, and play on until someone must choose."""
    out = rules.Resolution(state, Rng.for_test(seed))
    try:
        rules.begin_round(out, round, event)
        rules._advance(out)
    except rules._Finished:
        pass
    return out.state, out.events


def new_game(n: int = 4, seed: int = 0, ai: Sequence[bool] | None = None,
             rounds: int = 0) -> tuple[State, list[pb.Event]]:
    seats = [Seat(f"p{i}", "ai" if ai and ai[i] else "human") for i in range(n)]
    events = GAME.setup(pb.Options(rounds=rounds), seats, Rng.for_test(seed))
    return GAME.replay(events), events


def shadow_phase(state: State, seed: int = 0) -> tuple[State, list[pb.Event]]:
    """Run only the shadow phase on `state`."""
    out = rules.Resolution(state, Rng.for_test(seed))
    try:
        rules._shadow_phase(out)
    except rules._Finished:
        pass
    return out.state, out.events
