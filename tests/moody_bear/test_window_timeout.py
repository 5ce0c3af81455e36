"""A response window closes on its timeout through the platform's one deadline scheduler."""

from __future__ import annotations

from services import games as registry
from services.core import log as gamelog
from services.core.decider import Rng, Seat
from services.core.host import Caller, Host
from services.core.store import MemoryStore
from services.moody_bear import rules
from services.workers.deadlines import MemoryDeadlines, Scheduler
from services.workers.projections import InProcessProjections
from services.workers.readmodel import MemoryReadModel


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_an_open_window_closes_when_its_deadline_passes() -> None:
    game = registry.game("moody_bear")
    store, clock = MemoryStore(), Clock()
    host = Host(store, {game.name: game})
    scheduler = Scheduler(MemoryDeadlines(), host, clock=clock)
    projections = InProcessProjections(store, MemoryReadModel(), host.games)
    projections.projector.listeners.append(scheduler.schedule_for)
    options = game.pb.Options(response_deadline_seconds=20)
    game_id, _, _, _ = await host.create(game.name, [Seat(f"p{i}") for i in range(3)], options)
    rng = Rng.for_test(11)
    # Play until an item opens a response window.
    for step in range(500):
        loaded = await host.load(game_id)
        if rules.deadline(loaded.state) is not None:
            break
        seat = rng.choice(list(game.to_act(loaded.state)))
        command = rng.choice(game.legal_actions(loaded.state, seat))
        await host.act(game_id, Caller(seat=seat, trusted=True), command, f"c{step}")
    else:
        raise AssertionError("no response window opened")
    window_version = loaded.version
    await projections.catch_up()
    clock.now += 19
    assert await scheduler.tick() == 0, "nothing fires before the deadline"
    clock.now += 2
    assert await scheduler.tick() == 1
    entries = gamelog.decode(await store.read(game_id))
    record = entries[window_version].command
    assert record.system
    closed = game.pb.Command.FromString(record.command).close_window.window_id
    assert closed == loaded.state.window_id
    after = await host.load(game_id)
    still_open = rules.deadline(after.state)
    assert still_open is None or still_open[1].close_window.window_id != closed
    assert gamelog.verify(game, entries, after.seed) is not None


async def test_each_answer_restarts_the_response_deadline() -> None:
    """The scheduler arms a deadline per version and fires it only if the game is still at
    that version, so every answer (a pass or a Cancel) restarts the window's clock: the
    deadline is the longest the window waits with no answer (docs/rulings, ruling 23)."""
    game = registry.game("moody_bear")
    store, clock = MemoryStore(), Clock()
    host = Host(store, {game.name: game})
    scheduler = Scheduler(MemoryDeadlines(), host, clock=clock)
    projections = InProcessProjections(store, MemoryReadModel(), host.games)
    projections.projector.listeners.append(scheduler.schedule_for)
    options = game.pb.Options(response_deadline_seconds=20)
    game_id, _, _, _ = await host.create(game.name, [Seat(f"p{i}") for i in range(3)], options)
    rng = Rng.for_test(11)
    for step in range(500):
        loaded = await host.load(game_id)
        if rules.deadline(loaded.state) is not None and len(game.to_act(loaded.state)) > 1:
            break
        seat = rng.choice(list(game.to_act(loaded.state)))
        command = rng.choice(game.legal_actions(loaded.state, seat))
        await host.act(game_id, Caller(seat=seat, trusted=True), command, f"c{step}")
    else:
        raise AssertionError("no response window with two answers to wait for opened")
    window = loaded.state.window_id
    await projections.catch_up()
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
