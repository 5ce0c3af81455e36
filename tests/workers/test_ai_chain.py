"""An AI worker's task plays the AI turns that follow its own (up to ARBITER_AI_INLINE_TURNS)
and queues only the rest; a redelivered task plays the AI turn a dead worker left waiting.

The task's code path (services/workers/tasks.py `play_turns`) without a broker: the worker's
host is given a store in memory and a queue that records what would go to Celery.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from services.core import log as gamelog
from services.core.decider import Seat
from services.core.host import Caller, Host
from services.core.store import MemoryStore
from services.workers import tasks
from tests.workers.conftest import TOY

Turn = tuple[str, int, int]


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Turn]]:
    """A worker host on a store in memory; what it would queue on Celery lands in the list."""
    out: list[Turn] = []

    def queue(host: Host, game_id: str, version: int, seat: int) -> None:
        out.append((game_id, version, seat))

    host = Host(MemoryStore(), {"toy": TOY}, ai_dispatch=tasks._follow_or_queue(queue))
    monkeypatch.setattr(tasks, "_host", host)
    monkeypatch.setattr(tasks, "INLINE_TURNS", 3)
    yield out


def ai_commands(entries: list) -> list[str]:  # type: ignore[type-arg]
    return [e.command.command_id for e in entries if e.HasField("command")]


async def test_the_turns_that_follow_are_played_in_the_task_and_the_rest_queued(
        queued: list[Turn]) -> None:
    host = tasks.worker_host()
    made = await host.create("toy", [Seat("a", "ai"), Seat("b", "ai")], TOY.pb.Options(pile=15))
    assert len(queued) == 1  # creating the game queued its first AI turn, as a server does
    first = queued.pop()

    assert await tasks.play_turns(*first) == 3
    entries = gamelog.decode(await host.store.read(made.game_id))
    assert len(ai_commands(entries)) == 3
    # The fourth turn, past the budget, is a task of its own, at the version the third left.
    assert len(queued) == 1
    game_id, version, seat = queued[0]
    assert (game_id, version) == (made.game_id, entries[-1].version)
    assert seat in TOY.to_act((await host.load(game_id)).state)


async def test_a_turn_after_a_human_command_is_played_once(queued: list[Turn]) -> None:
    host = tasks.worker_host()
    made = await host.create("toy", [Seat("me"), Seat("bot", "ai")], TOY.pb.Options(pile=15))
    loaded = await host.load(made.game_id)
    if TOY.to_act(loaded.state) == [0]:
        await host.act(made.game_id, Caller(token=made.tokens[0]), TOY.pb.Command(take=1),
                       "me-1", loaded.version)
    turn = queued.pop()
    assert await tasks.play_turns(*turn) == 1  # then the human's turn: nothing follows
    assert queued == []
    assert await tasks.play_turns(*turn) == 0  # delivered twice: nothing happens twice


async def test_a_redelivered_task_plays_the_ai_turn_left_waiting(queued: list[Turn]) -> None:
    host = tasks.worker_host()
    made = await host.create("toy", [Seat("a", "ai"), Seat("b", "ai")], TOY.pb.Options(pile=15))
    first = queued.pop()
    # A worker played the first turn and died before the next one: its task comes again.
    await host.play_ai_turn(*first)
    queued.clear()
    version = (await host.load(made.game_id)).version

    assert await tasks.play_turns(*first) == 0  # not redelivered: a duplicate, nothing to do
    assert (await host.load(made.game_id)).version == version
    assert await tasks.play_turns(*first, redelivered=True) == 3
    assert (await host.load(made.game_id)).version == version + 3
