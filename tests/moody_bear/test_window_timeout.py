"""A response window closes on its timeout through the platform's one deadline scheduler."""

from __future__ import annotations

from services import games as registry
from services.core import log as gamelog
from services.core.decider import Rng, Seat
from services.core.host import Caller, Host, Loaded
from services.core.store import MemoryStore
from services.moody_bear import rules
from services.workers.deadlines import MemoryDeadlines, Scheduler
from services.workers.projections import InProcessProjections
from services.workers.readmodel import MemoryReadModel


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Table:
    """A 3-player game with a 20 s response deadline, its scheduler and its projections."""

    def __init__(self) -> None:
        self.game = registry.game("moody_bear")
        self.store, self.clock = MemoryStore(), Clock()
        self.host = Host(self.store, {self.game.name: self.game})
        self.scheduler = Scheduler(MemoryDeadlines(), self.host, clock=self.clock)
        self.projections = InProcessProjections(self.store, MemoryReadModel(), self.host.games)
        self.projections.projector.listeners.append(self.scheduler.schedule_for)

    async def play_until_a_window(self, answers: int = 1) -> tuple[str, Loaded]:
        """Random legal play until a response window waits for at least `answers` seats.

        Each game gets a fresh secret seed, so a game may end before any window opens
        (a Dark Swallow, a proclaim): then deal another."""
        game = self.game
        options = game.pb.Options(response_deadline_seconds=20)
        rng = Rng.for_test(11)
        for _ in range(20):
            game_id, _, _, _ = await self.host.create(
                game.name, [Seat(f"p{i}") for i in range(3)], options)
            for step in range(500):
                loaded = await self.host.load(game_id)
                if loaded.finished:
                    break
                if (rules.deadline(loaded.state) is not None
                        and len(game.to_act(loaded.state)) >= answers):
                    await self.projections.catch_up()
                    return game_id, loaded
                seat = rng.choice(list(game.to_act(loaded.state)))
                command = rng.choice(game.legal_actions(loaded.state, seat))
                await self.host.act(game_id, Caller(seat=seat, trusted=True), command,
                                    f"c{step}")
        raise AssertionError("no response window opened in 20 games")


async def test_an_open_window_closes_when_its_deadline_passes() -> None:
    table = Table()
    game, store, clock, scheduler = table.game, table.store, table.clock, table.scheduler
    game_id, loaded = await table.play_until_a_window()
    window_version = loaded.version
    clock.now += 19
    assert await scheduler.tick() == 0, "nothing fires before the deadline"
    clock.now += 2
    assert await scheduler.tick() == 1
    entries = gamelog.decode(await store.read(game_id))
    record = entries[window_version].command
    assert record.system
    closed = game.pb.Command.FromString(record.command).close_window.window_id
    assert closed == loaded.state.window_id
    after = await table.host.load(game_id)
    still_open = rules.deadline(after.state)
    assert still_open is None or still_open[1].close_window.window_id != closed
    assert gamelog.verify(game, entries, after.seed) is not None


async def test_each_answer_restarts_the_response_deadline() -> None:
    """The scheduler arms a deadline per version and fires it only if the game is still at
    that version, so every answer (a pass or a Cancel) restarts the window's clock: the
    deadline is the longest the window waits with no answer (docs/rulings, ruling 23)."""
    table = Table()
    game, host, clock, scheduler = table.game, table.host, table.clock, table.scheduler
    projections = table.projections
    game_id, loaded = await table.play_until_a_window(answers=2)
    window = loaded.state.window_id
    clock.now += 15
    answerer = game.to_act(loaded.state)[0]
    decline = game.pb.Command(decline=game.pb.Decline())
    await host.act(game_id, Caller(seat=answerer, trusted=True), decline, "answer")
    await projections.catch_up()
    clock.now += 6
    assert await scheduler.tick() == 0, "21 s after the opening, 6 s after the last answer"
    assert (await host.load(game_id)).state.window_id == window
    clock.now += 15
    assert await scheduler.tick() == 1
    after = await host.load(game_id)
    assert after.state.window_id != window or after.state.phase != game.pb.WINDOW
