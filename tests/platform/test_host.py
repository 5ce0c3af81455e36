"""The host's command path and the log's verification, with Bubblee Pop as the game."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from typing import Any

import pytest
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core import log as gamelog
from services.core.decider import Game, MalformedCommand, Rng, Seat
from services.core.host import Caller, Host, StaleVersion
from services.core.metrics import METRICS
from services.core.server import in_process_ai
from services.core.store import MemoryStore, StoreUnavailable

GAME = registry.game("bubblee")
SEATS = [Seat("ann"), Seat("bob")]


def legal_for(loaded: Any) -> tuple[int, Any]:
    seat = list(GAME.to_act(loaded.state))[0]
    return seat, GAME.legal_actions(loaded.state, seat)[0]


async def test_a_server_behind_other_servers_accepts_a_command_they_made_legal() -> None:
    store = MemoryStore()
    a = Host(store, {GAME.name: GAME})
    b = Host(store, {GAME.name: GAME})
    made = await a.create(GAME.name, SEATS, GAME.pb.Options())
    game_id, tokens = made.game_id, made.tokens
    start = (await b.load(game_id)).version  # b caches the game at its start
    loaded = await a.load(game_id)
    first, _ = legal_for(loaded)
    for n in range(10):  # the first seat plays its turn out on a
        seat, command = legal_for(loaded)
        if seat != first:
            break
        await a.act(game_id, Caller(token=tokens[seat]), command, f"a{n}")
    # Now the other seat may act; b has not seen a's commands yet.
    caught_up, loads = METRICS.caught_up(GAME.name), METRICS.loads(GAME.name)
    before = (caught_up._value.get(), loads._value.get())
    result = await b.act(game_id, Caller(token=tokens[seat]), command, "second")
    assert result.version > loaded.version
    assert (await store.version(game_id)) == result.version
    # b folded what a appended (the price of two writers), without reading the game again.
    assert caught_up._value.get() - before[0] == loaded.version - start
    assert loads._value.get() == before[1]


async def test_a_cache_ahead_of_the_store_starts_again_from_the_store() -> None:
    # A Redis failover without WAIT can lose batches the old master acknowledged: the
    # server's cache then holds versions the store no longer has.
    store = MemoryStore()
    host = Host(store, {GAME.name: GAME})
    made = await host.create(GAME.name, SEATS, GAME.pb.Options())
    game_id, tokens, created = made.game_id, made.tokens, made.version
    after_failover = MemoryStore()
    meta = {k: v for k, v in (await store.meta(game_id)).items() if k != "version"}
    await after_failover.append(game_id, await store.read(game_id), 0, "", meta)
    seat, command = legal_for(await host.load(game_id))
    acked = await host.act(game_id, Caller(token=tokens[seat]), command, "lost")
    host.store = after_failover  # the promoted replica never got that command
    _, following = legal_for(await host.load(game_id))
    with pytest.raises(StaleVersion) as stale:
        await host.act(game_id, Caller(token=tokens[seat]), following, "next", acked.version)
    assert stale.value.current_version == created  # what the store has, not the cache
    assert (await host.load(game_id, fresh=True)).version == created
    # The client reads the game again and goes on: the lost command can be sent again.
    again = await host.act(game_id, Caller(token=tokens[seat]), command, "lost", created)
    assert again.version == acked.version
    assert await after_failover.version(game_id) == acked.version


async def test_a_command_id_another_seat_used_is_not_answered_with_its_result() -> None:
    host = Host(MemoryStore(), {GAME.name: GAME})
    made = await host.create(GAME.name, SEATS, GAME.pb.Options())
    game_id, tokens = made.game_id, made.tokens
    seat, command = legal_for(await host.load(game_id))
    first = await host.act(game_id, Caller(token=tokens[seat]), command, "same-id")
    other = 1 - seat
    loaded = await host.load(game_id)
    _, theirs = legal_for(loaded)
    with pytest.raises(MalformedCommand) as e:
        await host.act(game_id, Caller(token=tokens[other]), theirs, "same-id")
    assert e.value.code == "COMMAND_ID_TAKEN"
    # Nor when the id comes back through a stale expected version or a refused command.
    with pytest.raises(MalformedCommand):
        await host.act(game_id, Caller(token=tokens[other]), theirs, "same-id",
                       first.version - 1)
    assert (await host.load(game_id)).version == first.version


async def test_the_same_seat_repeating_a_command_id_gets_the_first_result() -> None:
    host = Host(MemoryStore(), {GAME.name: GAME})
    made = await host.create(GAME.name, SEATS, GAME.pb.Options())
    game_id, tokens = made.game_id, made.tokens
    seat, command = legal_for(await host.load(game_id))
    first = await host.act(game_id, Caller(token=tokens[seat]), command, "again")
    again = await host.act(game_id, Caller(token=tokens[seat]), command, "again")
    assert (again.version, again.events) == (first.version, first.events)


# ---- the embedded store's file ------------------------------------------------------------


class _FailingFile:
    """A file that writes half a line, then fails (a full disk)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(text[: len(text) // 2])
        self.inner.flush()
        raise OSError(28, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_a_failed_write_to_the_embedded_file_is_unavailable_and_leaves_no_torn_line(
        tmp_path: Any) -> None:
    path = str(tmp_path / "store.aof")
    store = MemoryStore(path)
    await store.append("g", [b"a"], 0, "c1")
    good = store._file
    store._file = _FailingFile(good)  # type: ignore[assignment]
    with pytest.raises(StoreUnavailable):
        await store.append("g", [b"b"], 1, "c2")
    assert await store.version("g") == 1
    await store.append("g", [b"c"], 1, "c3")  # the disk has room again
    await store.close()
    again = MemoryStore(path)
    assert await again.read("g") == [b"a", b"c"]
    assert await again.applied("g", "c2") is None
    await again.close()


async def test_every_redis_read_maps_a_lost_connection_to_unavailable() -> None:
    from services.core.redis_store import RedisStore
    from tools.redis_servers import start_standalone

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    # Whether the node is a cluster member is asked at start: unreachable, it says so.
    with pytest.raises(StoreUnavailable, match="cannot reach Redis"):
        RedisStore(f"redis://127.0.0.1:{port}/0")
    servers = start_standalone()
    store = RedisStore(servers.url)
    servers.stop()
    with pytest.raises(StoreUnavailable):
        await store.game_ids()
    with pytest.raises(StoreUnavailable):
        await store.read_feed(0, "", 10)
    await store.close()


# ---- verification -------------------------------------------------------------------------


async def finished_entries(game: Game = GAME) -> list[apb.LogEntry]:
    host = Host(MemoryStore(), {game.name: game}, ai_dispatch=in_process_ai)
    seats = [Seat("a", "ai", "random"), Seat("b", "ai", "random")]
    game_id = (await host.create(game.name, seats, game.pb.Options())).game_id
    for _ in range(20_000):
        if (await host.load(game_id)).finished:
            return (await host.history(game_id))[1]
        await asyncio.sleep(0)
    raise AssertionError("the AI seats did not finish the game")


def insert(entries: list[apb.LogEntry], at: int, extra: apb.LogEntry) -> list[apb.LogEntry]:
    """Insert `extra` inside the batch holding entry `at - 1`, renumbering what follows."""
    out = [apb.LogEntry() for _ in entries]
    for o, e in zip(out, entries, strict=True):
        o.CopyFrom(e)
    head = max(i for i in range(at) if out[i].batch_size)
    out[head].batch_size += 1
    out.insert(at, extra)
    for i, e in enumerate(out):
        e.version = i + 1
    return out


async def test_verify_refuses_an_end_of_game_hidden_inside_a_batch() -> None:
    entries = await finished_entries()
    at = max(i for i, e in enumerate(entries) if e.HasField("command")) + 1  # the last batch
    fake = apb.LogEntry(finished=apb.GameFinished(
        outcome=apb.Outcome(winners=[1], reason="forged"), seed=entries[-1].finished.seed))
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.verify(GAME, insert(entries, at, fake))
    assert bad.value.line == at + 1


async def test_verify_refuses_a_second_start_inside_the_log() -> None:
    entries = await finished_entries()
    at = max(i for i, e in enumerate(entries) if e.HasField("command")) + 1  # the last batch
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.verify(GAME, insert(entries, at, apb.LogEntry(started=entries[0].started)))
    assert bad.value.line == at + 1


async def test_verify_refuses_a_command_or_size_on_an_entry_inside_a_batch() -> None:
    entries = await finished_entries()
    inner = next(i for i, e in enumerate(entries)
                 if i and not e.batch_size and e.WhichOneof("body") == "event")
    for forge in ("command", "batch_size"):
        forged = [apb.LogEntry() for _ in entries]
        for o, e in zip(forged, entries, strict=True):
            o.CopyFrom(e)
        if forge == "command":
            forged[inner].command.CopyFrom(apb.CommandRecord(command_id="FORGED", seat=1))
        else:
            forged[inner].batch_size = 1
        with pytest.raises(gamelog.BadLog) as bad:
            gamelog.verify(GAME, forged)
        assert bad.value.line == inner + 1, forge


def test_a_deeply_nested_line_is_a_bad_log_not_a_crash() -> None:
    deep = ["[" * 100_000]
    with pytest.raises(gamelog.BadLog):
        gamelog.game_of_json_lines(deep)
    with pytest.raises(gamelog.BadLog):
        gamelog.from_json_lines(GAME, deep)


async def test_verify_refuses_a_command_from_a_seat_that_may_not_act() -> None:
    # A game whose decide trusts the host to check the seat (as the contract allows).
    trusting = dataclasses.replace(
        GAME, decide=lambda state, seat, command, rng: GAME.decide(
            state, list(GAME.to_act(state))[0], command, rng))
    entries = await finished_entries(trusting)
    assert gamelog.verify(trusting, entries).finished
    at = next(i for i, e in enumerate(entries) if e.HasField("command"))
    tampered = [apb.LogEntry() for _ in entries]
    for o, e in zip(tampered, entries, strict=True):
        o.CopyFrom(e)
    tampered[at].command.seat = 1 - tampered[at].command.seat
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.verify(trusting, tampered)
    assert bad.value.line == at + 1


async def test_a_fork_inside_a_command_s_batch_is_refused() -> None:
    host = Host(MemoryStore(), {GAME.name: GAME}, admin_token="admin")
    made = await host.create(GAME.name, SEATS, GAME.pb.Options())
    game_id, tokens = made.game_id, made.tokens
    rng = Rng.for_test(7)
    for n in range(300):  # play until some command caused more than one event
        loaded = await host.load(game_id)
        seat = list(GAME.to_act(loaded.state))[0]
        command = rng.choice(GAME.legal_actions(loaded.state, seat))
        result = await host.act(game_id, Caller(token=tokens[seat]), command, f"c{n}")
        if len(result.events) > 1:
            break
    else:
        raise AssertionError("no command caused two events")
    with pytest.raises(MalformedCommand) as e:
        await host.fork(game_id, result.version - 1)  # half of that command
    assert e.value.code == "BAD_VERSION"
    forked = (await host.fork(game_id, result.version)).game_id  # after it: fine
    assert (await host.load(forked)).state == (await host.load(game_id)).state


async def test_a_forked_log_is_checked_against_its_parent() -> None:
    from services.core.grpc_api import import_lines

    host = Host(MemoryStore(), {GAME.name: GAME}, ai_dispatch=in_process_ai)
    seats = [Seat("a", "ai", "random"), Seat("b", "ai", "random")]
    parent_id = (await host.create(GAME.name, seats, GAME.pb.Options())).game_id
    for _ in range(20_000):
        if (await host.load(parent_id)).finished:
            break
        await asyncio.sleep(0)
    _, parent = await host.history(parent_id)
    fork_at = gamelog.batches(parent)[3].last_version
    fork_id = (await host.fork(parent_id, fork_at)).game_id
    for _ in range(20_000):
        if (await host.load(fork_id)).finished:
            break
        await asyncio.sleep(0)
    _, entries = await host.history(fork_id)
    lines = gamelog.to_json_lines(GAME, entries)
    await import_lines(host, lines)  # the parent is here and public: it checks out
    # The same log without its parent, or with a first batch the parent never had, fails.
    with pytest.raises(gamelog.BadLog) as bad:
        await import_lines(Host(MemoryStore(), {GAME.name: GAME}), lines)
    assert bad.value.line == 1
    events = [i for i, e in enumerate(entries[:fork_at]) if e.WhichOneof("body") == "event"]
    forged = [apb.LogEntry() for _ in entries]
    for o, e in zip(forged, entries, strict=True):
        o.CopyFrom(e)
    forged[events[0]].event, forged[events[-1]].event = entries[events[-1]].event, \
        entries[events[0]].event
    with pytest.raises(gamelog.BadLog) as bad:
        await import_lines(host, gamelog.to_json_lines(GAME, forged))
    assert bad.value.line == events[0] + 1



class _DownStore(MemoryStore):
    down = False

    async def append(self, *args: Any, **kwargs: Any) -> Any:
        if self.down:
            raise StoreUnavailable("down")
        return await super().append(*args, **kwargs)


async def test_a_command_the_store_could_not_take_is_not_counted_as_ok() -> None:
    from prometheus_client import REGISTRY

    store = _DownStore()
    host = Host(store, {GAME.name: GAME})
    made = await host.create(GAME.name, SEATS, GAME.pb.Options())
    game_id, tokens = made.game_id, made.tokens
    seat, command = legal_for(await host.load(game_id))
    labels = {"game": GAME.name, "command": command.WhichOneof("kind"), "outcome": "ok"}
    before = REGISTRY.get_sample_value("arbiter_command_seconds_count", labels) or 0
    store.down = True
    with pytest.raises(StoreUnavailable):
        await host.act(game_id, Caller(token=tokens[seat]), command, "c1")
    assert (REGISTRY.get_sample_value("arbiter_command_seconds_count", labels) or 0) == before


class _SlowMetaStore(MemoryStore):
    async def meta(self, game_id: str) -> dict[str, str]:
        found = await super().meta(game_id)
        await asyncio.sleep(0.01)  # another server's import lands meanwhile
        return found


async def test_two_imports_of_one_log_at_once_both_get_a_game() -> None:
    from services.core.grpc_api import import_lines

    lines = gamelog.to_json_lines(GAME, await finished_entries())
    host = Host(_SlowMetaStore(), {GAME.name: GAME})
    (a, _), (b, _) = await asyncio.gather(import_lines(host, lines), import_lines(host, lines))
    assert a != b


async def test_a_finished_fork_of_a_running_game_keeps_its_log_private() -> None:
    import grpc

    from services.core.server import Config
    from services.process import build
    from tests.platform.test_grpc import ADMIN, Client, free_port, rejected
    from tests.platform.test_grpc import GAME as GAME_SVC

    config = Config(grpc_addr=f"127.0.0.1:{free_port()}", admin_token=ADMIN)
    process = build(config, {GAME.name: GAME}, MemoryStore())
    server, host, port = process.server, process.host, process.port
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            client = Client(channel)
            parent = await client.create()
            fork = await client.call("/arbiter.v1.Arbiter/ForkGame",
                                     apb.ForkGameRequest(game_id=parent.game_id),
                                     apb.CreateGameResponse, admin=True)
            tokens = {t.seat: t.token for t in fork.tokens}
            rng = Rng.for_test(3)
            for n in range(5000):  # play the fork to its end (the admin's while the parent runs)
                loaded = await host.load(fork.game_id)
                if loaded.finished:
                    break
                seat = list(GAME.to_act(loaded.state))[0]
                legal = await client.call(
                    GAME_SVC + "ListLegalActions",
                    apb.ListLegalActionsRequest(game_id=fork.game_id, seat=seat),
                    GAME.pb.LegalActions, admin=True)
                await client.call(GAME_SVC + "Act", GAME.pb.ActRequest(
                    game_id=fork.game_id, seat=seat, command=rng.choice(legal.commands),
                    command_id=f"c{n}"), GAME.pb.ActResponse, admin=True)
            assert (await host.load(fork.game_id)).finished
            export = ("/arbiter.v1.Arbiter/ExportLog", apb.ExportLogRequest(game_id=fork.game_id),
                      apb.ExportLogResponse)
            # Its first batch is the running parent's hidden state.
            await rejected(client.call(*export, token=tokens[0]),
                           grpc.StatusCode.PERMISSION_DENIED)
            assert (await client.call(*export, admin=True)).lines
    finally:
        await server.stop(None)


async def test_verify_names_the_line_where_a_missing_event_should_be() -> None:
    entries = await finished_entries()
    size = entries[0].batch_size
    tampered = [apb.LogEntry() for _ in entries]
    for o, e in zip(tampered, entries, strict=True):
        o.CopyFrom(e)
    del tampered[size - 1]  # the last setup event
    tampered[0].batch_size = size - 1
    for i, e in enumerate(tampered):
        e.version = i + 1
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.verify(GAME, tampered)
    assert (bad.value.line, bad.value.reason) == (size, "an event the command causes is missing")


def test_bubblee_cascades_are_recorded_by_cause() -> None:
    from arbiter.bubblee.v1 import bubblee_pb2 as bpb
    from prometheus_client import REGISTRY

    from services.core.metrics import METRICS

    game = registry.game("bubblee")
    assert game.observe is not None

    def count(metric: str, cause: str) -> float:
        return REGISTRY.get_sample_value(f"arbiter_bubblee_{metric}_count",
                                         {"cause": cause}) or 0.0

    for cause, label in ((bpb.CAUSE_DROP, "drop"), (bpb.CAUSE_POWER, "power")):
        depths, timed = count("cascade_depth", label), count("resolution_seconds", label)
        settled = bpb.Event(settled=bpb.Settled(cause=cause, waves=2))
        for key, value in game.observe(settled).items():
            METRICS.observe(game, key, value, 0.001)
        assert count("cascade_depth", label) == depths + 1
        assert count("resolution_seconds", label) == timed + 1


async def test_a_fork_of_a_fork_of_a_running_game_is_not_compared_with_its_hidden_prefix(
        ) -> None:
    # Comparing a submitted log with stored events answers "equal or not": an oracle for the
    # hidden events of any game whose log is not public yet.
    host = Host(MemoryStore(), {GAME.name: GAME}, admin_token="admin")
    made = await host.create(GAME.name, [Seat("a"), Seat("b")],
                             GAME.pb.Options())
    running, start = made.game_id, made.version

    async def play_out(game_id: str) -> None:
        rng = Rng.for_test(3)
        loaded = await host.load(game_id)
        while not loaded.finished:
            seat = GAME.to_act(loaded.state)[0]
            command = rng.choice(GAME.legal_actions(loaded.state, seat))
            await host.act(game_id, Caller(seat=seat, trusted=True), command)

    fork = (await host.fork(running, start)).game_id
    await play_out(fork)  # finished, but its first batch is the running game's
    forked_again = (await host.fork(fork, start)).game_id
    await play_out(forked_again)
    _, entries = await host.history(forked_again)
    assert not await host.log_is_public(await host.load(fork))
    assert await host.parent_events(GAME, entries[0].started) is None
    with pytest.raises(gamelog.BadLog):
        gamelog.verify(GAME, entries, None, await host.parent_events(GAME, entries[0].started))


async def test_bots_draw_from_the_games_secret_seed_not_from_public_values() -> None:
    from services.core.host import bot_rng

    host = Host(MemoryStore(), {GAME.name: GAME})
    game_id = (await host.create(GAME.name, [Seat("a"), Seat("b")], GAME.pb.Options())).game_id
    loaded = await host.load(game_id)
    other = dataclasses.replace(loaded, seed=bytes(32))  # same id and version, another seed
    def draws(x: Any) -> list[int]:
        rng = bot_rng(x, "bot", 7)
        return [rng.below(10**9) for _ in range(3)]

    assert draws(loaded) == draws(loaded)  # a redelivered turn plays the same command
    assert draws(other) != draws(loaded)


def test_the_embedded_stores_file_is_readable_by_its_owner_only(tmp_path: Any) -> None:
    import os
    import stat

    path = tmp_path / "var" / "arbiter.aof"
    MemoryStore(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


async def test_a_long_fork_chain_is_not_public_and_costs_no_recursion() -> None:
    from services.core.reads import MAX_FORK_DEPTH

    host = Host(MemoryStore(), {GAME.name: GAME}, admin_token="admin")
    made = await host.create(GAME.name, [Seat("a"), Seat("b")],
                             GAME.pb.Options())
    game_id, start = made.game_id, made.version
    loaded = await host.load(game_id)
    loaded.finished = True  # every game of the chain over: only the depth can refuse it
    for _ in range(MAX_FORK_DEPTH + 1):
        game_id = (await host.fork(game_id, start)).game_id
        (await host.load(game_id)).finished = True
    assert not await host.log_is_public(await host.load(game_id))


def test_a_retried_command_is_the_same_whatever_order_its_unknown_fields_come_in() -> None:
    from services.core.host import _same_command

    known = GAME.pb.Command(drop=GAME.pb.Drop()).SerializeToString()
    field_200, field_201 = b"\xc0\x0c\x01", b"\xc8\x0c\x02"  # fields a newer client knows
    first = known + field_200 + field_201
    again = GAME.pb.Command.FromString(known + field_201 + field_200)
    assert again.SerializeToString() != first
    assert _same_command(again, first)
    assert not _same_command(GAME.pb.Command(drop=GAME.pb.Drop(a=GAME.pb.SkyCell(column=1))),
                             first)


async def test_a_catch_up_during_an_append_leaves_the_held_game_where_the_store_is() -> None:
    # A GetView takes no lock: while an Act's append is on its way, its catch-up can fold the
    # batch and another server's next one. The Act must not move the held game back.
    store = MemoryStore()
    a, b = Host(store, {GAME.name: GAME}), Host(store, {GAME.name: GAME})
    created = await a.create(GAME.name, SEATS, GAME.pb.Options())
    game_id, tokens = created.game_id, created.tokens
    held = await a.load(game_id)
    seat, command = legal_for(held)
    real_append = store.append

    async def append_then_others_move(*args: Any, **kwargs: Any) -> Any:
        done = await real_append(*args, **kwargs)
        store.append = real_append  # type: ignore[method-assign]
        there = await b.load(game_id, fresh=True)
        next_seat, next_command = legal_for(there)
        await b.act(game_id, Caller(token=tokens[next_seat]), next_command, "b-next")
        await a.load(game_id, fresh=True)  # a GetView on server a, meanwhile
        return done

    store.append = append_then_others_move  # type: ignore[method-assign]
    result = await a.act(game_id, Caller(token=tokens[seat]), command, "a-first")
    assert held.version == await store.version(game_id) > result.version
    versions = [n.version for n in held.said.noted]
    assert versions == sorted(set(versions))
