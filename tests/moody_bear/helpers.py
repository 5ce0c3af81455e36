"""Builders for Moody Bear Kingdom tests: a table set up by hand and commands applied to it."""

from __future__ import annotations

from collections.abc import Sequence

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import Rng, Seat
from services.core.host import Caller, Host
from services.core.store import MemoryStore
from services.core.table import Table as GameTable
from services.moody_bear import GAME
from services.moody_bear.cards import BLUE, RED, SOLO, Card, Team
from services.moody_bear.rules import deadline as pending_deadline
from services.moody_bear.state import TURN, State, evolve
from services.workers.deadlines import DeadlineQueue, MemoryDeadlines, Scheduler
from services.workers.projections import InProcessProjections
from services.workers.readmodel import MemoryReadModel

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
        seen_top=(0,) * players,
    )


def act(state: State, seat: int | None, command: pb.Command, seed: int = 0
        ) -> tuple[State, list[pb.Event]]:
    events = GAME.decide_now(state, seat, command, Rng.for_test(seed))
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
        new = GAME.decide_now(state, seat, command, Rng(b"seed-%d" % seed, len(events)))
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


class Clock:
    """The scheduler's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Table:
    """Games with a response deadline on a host, with its projections and the platform's
    deadline scheduler, as a server runs them."""

    def __init__(self, deadline: int = 20, players: int = 3,
                 queue: DeadlineQueue | None = None) -> None:
        self.deadline, self.players = deadline, players
        self.store, self.clock = MemoryStore(), Clock()
        self.host = Host(self.store, {GAME.name: GAME})
        self.scheduler = Scheduler(queue or MemoryDeadlines(), self.host, clock=self.clock)
        self.projections = InProcessProjections(self.store, MemoryReadModel(), self.host.games)
        self.projections.projector.listeners.append(self.scheduler.schedule_for)

    async def play_until_a_window(self, answers: int = 1) -> tuple[str, GameTable]:
        """Random legal play until a response window waits for at least `answers` seats;
        its deadline is scheduled at the clock's time.

        Each game gets a fresh secret seed, so a game may end before any window opens
        (a Dark Swallow, a proclaim): then deal another."""
        options = GAME.pb.Options(response_deadline_seconds=self.deadline)
        rng = Rng.for_test(11)
        for _ in range(20):
            game_id = (await self.host.create(
                GAME.name, [Seat(f"p{i}") for i in range(self.players)], options)).game_id
            for step in range(500):
                loaded = await self.host.load(game_id)
                if loaded.finished:
                    break
                if (pending_deadline(loaded.state) is not None
                        and len(GAME.to_act(loaded.state)) >= answers):
                    await self.projections.catch_up()
                    return game_id, loaded
                seat = rng.choice(list(GAME.to_act(loaded.state)))
                command = rng.choice(GAME.legal_actions(loaded.state, seat))
                await self.host.act(game_id, Caller(seat=seat, trusted=True), command,
                                    f"c{step}")
        raise AssertionError("no response window opened in 20 games")

    async def decline(self, game_id: str, seat: int) -> None:
        """`seat` passes in the open window; the projections (and so the scheduler) see it."""
        await self.host.act(game_id, Caller(seat=seat, trusted=True), DECLINE, "")
        await self.projections.catch_up()
