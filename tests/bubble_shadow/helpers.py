"""Shared helpers for the Bubble and Shadow tests: build states by hand and play games."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import GAME
from services.bubble_shadow import tokens as tk
from services.bubble_shadow.state import Player, Signed, State, evolve
from services.core.decider import Rng, Seat

T = pb


def seats(n: int) -> list[Seat]:
    return [Seat(f"p{i}") for i in range(n)]


def new_game(n: int = 3, seed: int = 0, **options: object) -> tuple[State, list[pb.Event]]:
    events = GAME.setup(pb.Options(**options), seats(n), Rng.for_test(seed))
    return GAME.replay(events), events


def act(state: State, seat: int, command: pb.Command, seed: int = 0) -> State:
    for event in GAME.decide_now(state, seat, command, Rng.for_test(seed)):
        state = evolve(state, event)
    return state


def tokens(**counts: int) -> tk.Tokens:
    return tk.make({pb.Token.Value(name.upper()): n for name, n in counts.items()})


def with_tokens(state: State, seat: int, front: tk.Tokens = tk.EMPTY,
                behind: tk.Tokens = tk.EMPTY) -> State:
    players = list(state.players)
    players[seat] = replace(players[seat], front=front, behind=behind)
    return replace(state, players=tuple(players))


Chooser = Callable[[State, int, list[pb.Command], Rng], pb.Command]


def play_game(n: int, seed: int, bots: list[str], **options: object) -> tuple[State, int]:
    """Play a whole game with the named bots; returns the final state and the steps taken."""
    state, events = new_game(n, seed, **options)
    steps = 0
    while GAME.outcome(state) is None:
        seat = GAME.to_act(state)[0]
        legal = GAME.legal_actions(state, seat)
        rng = Rng(b"play-%d" % seed, steps)
        command = GAME.bots[bots[seat]](GAME.view(state, seat), legal, rng)
        for event in GAME.decide_now(state, seat, command, rng):
            state = evolve(state, event)
        steps += 1
    return state, steps


# ---- Building tables by hand ------------------------------------------------------------

DUMMY = Signed(card=0, mortal=0, magician_price=(pb.MOON, 1), mortal_price=(pb.SILVER, 1))


def table(
    n: int = 3,
    magician: int = 0,
    hands: dict[int, tuple[int, ...]] | None = None,
    behind: dict[int, tk.Tokens] | None = None,
    front: dict[int, tk.Tokens] | None = None,
    pacts: dict[int, int] | None = None,
    public: tuple[int, ...] | None = None,
    **options: object,
) -> State:
    """A game at the PLAY stage with the hands, tokens and pact counts given (others empty)."""
    state, _ = new_game(n, **options)
    players = []
    for s in range(n):
        players.append(
            Player(
                hand=(hands or {}).get(s, ()),
                front=(front or {}).get(s, tk.EMPTY),
                behind=(behind or {}).get(s, tk.EMPTY),
                pacts=(DUMMY,) * (pacts or {}).get(s, 0),
            )
        )
    return replace(
        state,
        players=tuple(players),
        magician=magician,
        public=public if public is not None else state.public,
        faces_pending=(),
        crown_holder=-1,
    )


def play(card: int, mortal: int, slot: int | None = None, blank: tuple[int, int] | None = None,
         pay_order: list[tuple[int, bool]] | None = None) -> pb.Command:
    return pb.Command(
        play_pact=pb.PlayPact(
            card=card,
            mortal=mortal,
            public_slot=slot,
            blank_end=pb.Price(token=blank[0], quantity=blank[1]) if blank else None,
            pay_order=[pb.PaySource(token=t, behind=b) for t, b in pay_order or []],
        )
    )


def sign(end: int, pay_order: list[tuple[int, bool]] | None = None) -> pb.Command:
    return pb.Command(
        sign_pact=pb.SignPact(
            end=end, pay_order=[pb.PaySource(token=t, behind=b) for t, b in pay_order or []]
        )
    )


def decide_events(state: State, seat: int, command: pb.Command, seed: int = 0) -> list[pb.Event]:
    return GAME.decide_now(state, seat, command, Rng.for_test(seed))


def fold(state: State, events: list[pb.Event]) -> State:
    for event in events:
        state = evolve(state, event)
    return state


def kinds(events: list[pb.Event]) -> list[str]:
    return [str(e.WhichOneof("kind")) for e in events]


def last_turn(tokens_by_seat: dict[int, tk.Tokens], n: int = 3, **options: object) -> State:
    """Seat 0 is the Magician with 3 pacts, everyone else has 4: one pact ends the round.
    Seat 0 holds card 0 (1 Moon / 1 Silver); seats' tokens are all behind their screens."""
    return table(n, magician=0, hands={0: (0,)}, behind=tokens_by_seat,
                 pacts={s: 3 if s == 0 else 4 for s in range(n)}, **options)
