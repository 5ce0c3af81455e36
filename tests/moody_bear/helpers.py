"""Builders for Moody Bear Kingdom tests: a table set up by hand and commands applied to it."""

from __future__ import annotations

from collections.abc import Sequence

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import Rng, Seat
from services.moody_bear import GAME
from services.moody_bear.cards import BLUE, RED, SOLO, Card, Team
from services.moody_bear.state import TURN, State, evolve

DEFAULT_TEAMS: dict[int, tuple[Team, ...]] = {
    3: (RED, BLUE, SOLO),
    4: (RED, BLUE, RED, BLUE),
    5: (RED, BLUE, RED, BLUE, SOLO),
}


def table(
    players: int = 4,
    hands: Sequence[Sequence[Card]] | None = None,
    teams: Sequence[Team] | None = None,
    deck: Sequence[Card] = (),
    discard: Sequence[Card] = (),
    turn: int = 0,
    deadline: int = 0,
    duo_jewel: bool = False,
) -> State:
    """A game in progress at the start of `turn`'s turn, with exactly these cards."""
    hands = hands if hands is not None else [()] * players
    return State(
        players=players,
        duo_jewel=duo_jewel,
        deadline=deadline,
        teams=tuple(teams if teams is not None else DEFAULT_TEAMS[players]),
        hands=tuple(tuple(sorted(h)) for h in hands),
        deck=tuple(deck),
        discard=tuple(discard),
        turn=turn,
        phase=TURN,
        choices=(0,) * players,
        known=tuple(frozenset({s}) for s in range(players)),
    )


def act(state: State, seat: int | None, command: pb.Command, seed: int = 0
        ) -> tuple[State, list[pb.Event]]:
    events = GAME.decide(state, seat, command, Rng.for_test(seed))
    for e in events:
        state = evolve(state, e)
    return state, events


def kinds(events: Sequence[pb.Event]) -> list[str]:
    return [str(e.WhichOneof("kind")) for e in events]


def play(*cards: Card, target: int | None = None, direction: int = 0, named: Card = 0
         ) -> pb.Command:
    p = pb.Play(cards=cards, direction=direction, named=named)
    if target is not None:
        p.target = target
    return pb.Command(play=p)


DECLINE = pb.Command(decline=pb.Decline())
PLAY_CANCEL = pb.Command(cancel=pb.PlayCancel())
PLAY_MACE = pb.Command(mace=pb.PlayMace())
PASS_TURN = pb.Command(pass_turn=pb.PassTurn())
END_TURN = pb.Command(end_turn=pb.EndTurn())
REJECT = pb.Command(reject=pb.Reject())


def all_decline(state: State, seed: int = 0) -> tuple[State, list[pb.Event]]:
    """Every seat that may answer the open window passes."""
    events: list[pb.Event] = []
    while state.phase == pb.WINDOW and GAME.to_act(state):
        state, new = act(state, GAME.to_act(state)[0], DECLINE, seed)
        events += new
    return state, events


def new_game(players: int, seed: int = 0, **options: object) -> State:
    opts = pb.Options(**options)  # type: ignore[arg-type]
    seats = [Seat(f"p{i}") for i in range(players)]
    return GAME.replay(GAME.setup(opts, seats, Rng(b"seed-%d" % seed, 0)))


def setup_events(players: int, seed: int = 0, **options: object) -> list[pb.Event]:
    opts = pb.Options(**options)  # type: ignore[arg-type]
    seats = [Seat(f"p{i}") for i in range(players)]
    return GAME.setup(opts, seats, Rng(b"seed-%d" % seed, 0))


def play_game(players: int, seed: int, bots: Sequence[str], **options: object
              ) -> tuple[State, list[pb.Event]]:
    """A whole game played by the named bots, each from its seat's view; deterministic."""
    events = setup_events(players, seed, **options)
    state = GAME.replay(events)
    pick = Rng(b"bots-%d" % seed, 0)
    while GAME.outcome(state) is None:
        seat = pick.choice(list(GAME.to_act(state)))
        legal = GAME.legal_actions(state, seat)
        bot = GAME.bots[bots[seat]]
        command = bot(GAME.view(state, seat), legal, Rng(b"bot-%d" % seed, len(events)))
        new = GAME.decide(state, seat, command, Rng(b"seed-%d" % seed, len(events)))
        for e in new:
            state = evolve(state, e)
        events += new
    return state, events


def decline_window(state: State) -> tuple[State, list[pb.Event]]:
    """Every seat that may answer passes, until this window (by its id) closes."""
    events: list[pb.Event] = []
    window = state.window_id
    while state.phase == pb.WINDOW and state.window_id == window:
        state, new = act(state, GAME.to_act(state)[0], DECLINE)
        events += new
    return state, events
