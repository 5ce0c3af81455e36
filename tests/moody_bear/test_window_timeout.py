"""A response window closes on its timeout through the platform's one deadline scheduler."""

from __future__ import annotations

from services.core import log as gamelog
from services.moody_bear import GAME, rules
from tests.moody_bear.helpers import Table


async def test_an_open_window_closes_when_its_deadline_passes() -> None:
    table = Table()
    store, clock, scheduler = table.store, table.clock, table.scheduler
    game_id, loaded = await table.play_until_a_window()
    window_version = loaded.version
    clock.now += 19
    assert await scheduler.tick() == 0, "nothing fires before the deadline"
    clock.now += 2
    assert await scheduler.tick() == 1
    entries = gamelog.decode(await store.read(game_id))
    record = entries[window_version].command
    assert record.system
    closed = GAME.pb.Command.FromString(record.command).close_window.window_id
    assert closed == loaded.state.window_id
    after = await table.host.load(game_id)
    still_open = rules.deadline(after.state)
    assert still_open is None or still_open[1].close_window.window_id != closed
    assert gamelog.verify(GAME, entries, after.seed) is not None


async def test_an_answer_does_not_restart_the_response_deadline() -> None:
    """The deadline belongs to the window (its id), not to the game's version: a window
    stays open `response_deadline_seconds` in all, however late the answers come
    (docs/rulings, ruling 23)."""
    table = Table()
    clock, scheduler = table.clock, table.scheduler
    game_id, loaded = await table.play_until_a_window(answers=2)
    window = loaded.state.window_id
    clock.now += 15
    await table.decline(game_id, GAME.to_act(loaded.state)[0])
    assert (await table.host.load(game_id)).state.window_id == window
    clock.now += 4
    assert await scheduler.tick() == 0, "19 s after the opening"
    clock.now += 1
    assert await scheduler.tick() == 1, "20 s after the opening, 5 s after the answer"
    after = await table.host.load(game_id)
    assert after.state.window_id != window or after.state.phase != GAME.pb.WINDOW
