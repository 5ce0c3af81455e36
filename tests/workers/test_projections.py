"""Projections: summaries, the game list, statistics and snapshots, built from the feeds."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from arbiter.v1 import arbiter_pb2 as apb

from services.core.decider import Game
from services.core.host import Host
from services.core.store import MemoryStore, Store
from services.workers.projections import InProcessProjections, Projector, snapshot_source
from services.workers.readmodel import MemoryReadModel, Update, fingerprint
from tests.workers.conftest import TOY, play_random


async def test_a_finished_game_is_summarised_with_its_result(any_store: Store) -> None:
    games = {"toy": TOY}
    host, rm = Host(any_store, games), MemoryReadModel()
    game_id = await play_random(host, TOY, names=["ann", "bob"])
    projector = Projector(any_store, rm, games)
    assert await projector.project(game_id) == "ok"
    [summary], after = await rm.page("toy", "finished", "ann", None, 10)
    loaded = await host.load(game_id)
    assert after is None and summary.game_id == game_id and summary.status == apb.FINISHED
    assert summary.version == loaded.version and list(summary.to_act) == []
    assert list(summary.outcome.winners) == list(TOY.outcome(loaded.state).winners)
    assert [s.name for s in summary.seats] == ["ann", "bob"]


async def test_projecting_again_changes_nothing() -> None:
    store, games = MemoryStore(), {"toy": TOY}
    host, rm = Host(store, games), MemoryReadModel()
    game_id = await play_random(host, TOY)
    assert await Projector(store, rm, games).project(game_id) == "ok"
    before = await rm.dump()
    # A second projector (another worker, a redelivery) finds nothing left to count.
    assert await Projector(store, rm, games).project(game_id) == "current"
    assert await rm.dump() == before


async def test_a_stale_write_is_ignored_and_a_gap_is_refused() -> None:
    rm = MemoryReadModel()
    summary = apb.GameSummary(game_id="g", game="toy").SerializeToString()
    u = Update("g", "toy", 0, 5, 1, "active", ["a"], summary, {"started": 1})
    assert await rm.apply(u) == ("ok", 5)
    assert await rm.apply(u) == ("stale", 5)
    u2 = Update("g", "toy", 3, 8, 1, "active", ["a"], summary, {"started": 1})
    assert await rm.apply(u2) == ("gap", 5)
    assert (await rm.stats("toy"))["started"] == 1


async def test_statistics_count_results_lengths_event_kinds_and_observations() -> None:
    store, games = MemoryStore(), {"toy": TOY}
    host, rm = Host(store, games), MemoryReadModel()
    projections = InProcessProjections(store, rm, games)
    for seed in range(6):
        await play_random(host, TOY, seed=seed)
        await projections.catch_up()
    stats = await rm.stats("toy")
    assert stats["started"] == 6 and stats["finished"] == 6
    assert stats["lineup|default|human,human|games"] == 6
    wins = sum(v for k, v in stats.items() if k.startswith("lineup|") and "|win:" in k)
    assert wins == 6
    takes = sum(v for k, v in stats.items() if k.startswith("obs:take:"))
    assert takes == stats["event:took"] == stats["length_sum"]
    assert sum(v for k, v in stats.items() if k.startswith("length:")) == 6


async def test_the_game_list_filters_by_game_status_and_seat_and_pages() -> None:
    store, games = MemoryStore(), {"toy": TOY}
    host, rm = Host(store, games), MemoryReadModel()
    projections = InProcessProjections(store, rm, games)
    done = [await play_random(host, TOY, seed=s, names=["ann", f"x{s}"]) for s in range(3)]
    running = [await play_random(host, TOY, seed=s, stop_at=3, names=["bob", "ann"])
               for s in range(2)]
    await projections.catch_up()
    page, after = await rm.page("", "", "", None, 100)
    assert len(page) == 5 and after is None
    page, after = await rm.page("toy", "active", "", None, 100)
    assert {s.game_id for s in page} == set(running) and after is None
    page, after = await rm.page("", "finished", "ann", None, 2)
    assert len(page) == 2 and after == (page[-1].created_unix_ms, page[-1].game_id)
    rest, last = await rm.page("", "finished", "ann", after, 2)
    assert len(rest) == 1 and last is None
    assert {s.game_id for s in page + rest} == set(done)
    page, _ = await rm.page("", "", "bob", None, 10)
    assert len(page) == 2 and all(s.status == apb.ACTIVE for s in page)


async def test_snapshots_are_taken_every_n_versions_and_hold_the_state() -> None:
    store, games = MemoryStore(), {"toy": TOY}
    host, rm = Host(store, games), MemoryReadModel()
    game_id = await play_random(host, TOY, options=TOY.pb.Options(pile=40))
    await Projector(store, rm, games, snapshot_every=5).project(game_id)
    snap = await rm.snapshot(game_id)
    loaded = await host.load(game_id)
    assert snap is not None and snap.fingerprint == fingerprint(TOY)
    assert loaded.version - 5 <= snap.version <= loaded.version
    data = pickle.loads(snap.state)
    entries = await store.read(game_id)
    from services.core import log as gamelog

    events = [gamelog.game_event(TOY, e) for e in gamelog.decode(entries[: snap.version])
              if e.WhichOneof("body") == "event"]
    assert data["state"] == TOY.replay(events)


async def test_a_snapshot_load_equals_a_full_replay(any_store: Store) -> None:
    games: dict[str, Game] = {"toy": TOY}
    host, rm = Host(any_store, games, admin_token="adm"), MemoryReadModel()
    game_id = await play_random(host, TOY, stop_at=25, options=TOY.pb.Options(pile=90))
    await Projector(any_store, rm, games, snapshot_every=10).project(game_id)
    await play_random_more(host, game_id, 6)
    snap = await rm.snapshot(game_id)
    assert snap is not None and 10 <= snap.version < (await any_store.version(game_id))
    fresh = Host(any_store, games, snapshot_source=snapshot_source(rm))
    from_snapshot = await fresh.load(game_id)
    full = await Host(any_store, games).load(game_id)
    assert from_snapshot.state == full.state and from_snapshot.version == full.version
    assert from_snapshot.finished == full.finished


async def play_random_more(host: Host, game_id: str, n: int) -> None:
    from services.core.decider import Rng
    from services.core.host import Caller

    loaded = await host.load(game_id, fresh=True)
    rng = Rng.for_test(99)
    for _ in range(n):
        if loaded.finished:
            return
        seat = loaded.game.to_act(loaded.state)[0]
        command = rng.choice(loaded.game.legal_actions(loaded.state, seat))
        await host.act(game_id, Caller(admin_token="adm", seat=seat), command, "", None)
        loaded = await host.load(game_id, fresh=True)


def test_a_snapshot_fingerprint_changes_with_what_the_state_depends_on(tmp_path: Path) -> None:
    # Rules read their data (cards, levels, chapters): new data must not reuse old snapshots.
    import importlib.util
    import sys
    import types

    from services.workers.readmodel import _fingerprint

    folder = tmp_path / "cardgame"
    (folder / "data").mkdir(parents=True)
    (folder / "rules.py").write_text("def evolve(state, event):\n    return state\n")
    spec = importlib.util.spec_from_file_location("cardgame_rules", folder / "rules.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["cardgame_rules"] = module
    spec.loader.exec_module(module)
    game = types.SimpleNamespace(name="cardgame", evolve=module.evolve, state_depends_on=())
    try:
        prints = []
        for cards in ('{"a": 1}', '{"a": 2}'):
            (folder / "data" / "cards.json").write_text(cards)
            prints.append(_fingerprint(game))  # type: ignore[arg-type]
        assert prints[0] != prints[1]
        # A game that names what its state depends on: the solver is not in it.
        (folder / "solver.py").write_text("DEPTH = 1\n")
        (folder / "board.py").write_text("SIZE = 6\n")
        declared = types.SimpleNamespace(name="cardgame", evolve=module.evolve,
                                         state_depends_on=(str(folder / "board.py"),
                                                           str(folder / "data")))
        before = _fingerprint(declared)  # type: ignore[arg-type]
        (folder / "solver.py").write_text("DEPTH = 2\n")
        assert _fingerprint(declared) == before  # type: ignore[arg-type]
        assert _fingerprint(game) != prints[1]  # type: ignore[arg-type]
        for edit in (folder / "board.py", folder / "data" / "cards.json", folder / "rules.py"):
            edit.write_text(edit.read_text() + "\n")
            assert _fingerprint(declared) != before, edit  # type: ignore[arg-type]
            before = _fingerprint(declared)  # type: ignore[arg-type]
        declared.state_depends_on = (str(folder / "bord.py"),)
        with pytest.raises(FileNotFoundError):  # a misspelt dependency is not skipped
            _fingerprint(declared)  # type: ignore[arg-type]
    finally:
        del sys.modules["cardgame_rules"]


async def test_the_embedded_projections_cost_nothing_when_no_feed_entry_is_new() -> None:
    """ListGames catches up first: with nothing new it must not visit the 256 feeds."""
    store, games = MemoryStore(), {"toy": TOY}
    host, rm = Host(store, games), MemoryReadModel()
    projections = InProcessProjections(store, rm, games)
    await play_random(host, TOY, seed=1)
    await projections.catch_up()
    reads = []
    read_feed = store.read_feed

    async def counting(partition: int, after: str, count: int) -> list:
        reads.append(partition)
        return await read_feed(partition, after, count)

    store.read_feed = counting  # type: ignore[method-assign]
    assert await projections.catch_up() == 0 and reads == []
    game_id = await play_random(host, TOY, seed=2)
    assert await projections.catch_up() > 0 and reads
    assert game_id in [s.game_id for s in (await rm.page("toy", "", "", None, 10))[0]]
