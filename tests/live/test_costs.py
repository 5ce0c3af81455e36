"""What one command costs the server in work on the game: loads (the game looked up or read),
store reads, decodes (an entry or an event parsed back from bytes) and folds (the rules'
evolve), counted per Act and per Play command over gRPC, with a Watch stream and each seat's
Play stream following the game."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from typing import Any

import grpc
import pytest
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.v1 import arbiter_pb2 as apb

from services import games as registry
from services.core import log as gamelog
from services.core.server import Config
from services.core.store import MemoryStore, Store
from services.process import build, shutdown
from tests.live.playing import free_port, method, play_stream

BUBBLEE = registry.game("bubblee")
MOVES = 6


def counting(store: Store, counts: Counter[str]) -> tuple[Any, Store]:
    """A bubblee whose evolve is counted, and a store whose reads are."""

    def evolve(state: Any, event: Any) -> Any:
        counts["folds"] += 1
        return BUBBLEE.evolve(state, event)

    read = store.read

    async def counted_read(game_id: str, after: int = 0, limit: int = 0) -> list[bytes]:
        counts["reads"] += 1
        return await read(game_id, after, limit)

    store.read = counted_read  # type: ignore[method-assign]
    return dataclasses.replace(BUBBLEE, evolve=evolve), store


def count_decodes(monkeypatch: pytest.MonkeyPatch, counts: Counter[str]) -> None:
    decode, game_event = gamelog.decode, gamelog.game_event

    def counted_decode(raw: Any) -> Any:
        counts["decodes"] += len(raw)
        return decode(raw)

    def counted_event(game: Any, entry: Any) -> Any:
        counts["decodes"] += 1
        return game_event(game, entry)

    monkeypatch.setattr(gamelog, "decode", counted_decode)
    monkeypatch.setattr(gamelog, "game_event", counted_event)


def counted(load: Any, counts: Counter[str]) -> Any:
    async def counted_load(*args: Any, **kwargs: Any) -> Any:
        counts["loads"] += 1
        return await load(*args, **kwargs)

    return counted_load


@pytest.mark.parametrize("path", ["Act", "Play"])
async def test_work_per_command(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    counts: Counter[str] = Counter()
    game, store = counting(MemoryStore(), counts)
    count_decodes(monkeypatch, counts)
    process = build(Config(grpc_addr=f"127.0.0.1:{free_port()}"), {"bubblee": game}, store)
    host = process.host
    load = host.load
    owners = [host, *([host.tables] if hasattr(host, "tables") else [])]
    for owner in owners:  # every way in to a game: the host's, and its tables'
        owner.load = counted(owner.load, counts)  # type: ignore[method-assign]
    await process.server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{process.port}") as channel:
        made = await method(channel, "bubblee", "CreateGame", apb.CreateGameResponse)(
            bpb.CreateGameRequest(seats=[apb.Seat(name="a"), apb.Seat(name="b")]))
        tokens = {t.seat: t.token for t in made.tokens}
        watch = channel.unary_stream("/arbiter.bubblee.v1.Game/Watch",
                                     request_serializer=apb.WatchRequest.SerializeToString,
                                     response_deserializer=bpb.Update.FromString)
        watching = watch(apb.WatchRequest(game_id=made.game_id, from_version=made.version))
        streams = {}
        for seat, token in tokens.items():
            streams[seat] = play_stream(channel, "bubblee", token)
            await streams[seat].write(bpb.PlayRequest(open=apb.PlayOpen(
                game_id=made.game_id, from_version=made.version)))
            await streams[seat].read()
        act = method(channel, "bubblee", "Act", bpb.ActResponse)
        per_move: list[Counter[str]] = []
        for _ in range(MOVES):
            table = await load(made.game_id)
            seat = BUBBLEE.to_act(table.state)[0]
            command = BUBBLEE.legal_actions(table.state, seat)[0]
            events_before = table.version
            counts.clear()
            if path == "Act":
                await act(bpb.ActRequest(game_id=made.game_id, command=command,
                                         expected_version=table.version),
                          metadata=[("x-seat-token", tokens[seat])])
            else:
                await streams[seat].write(bpb.PlayRequest(act=bpb.ActRequest(
                    command=command, expected_version=table.version)))
                while not (await streams[seat].read()).HasField("answer"):
                    pass
            for other in streams.values():  # every stream got the batch
                while True:
                    pushed = await asyncio.wait_for(other.read(), 5) if other is not \
                        streams[seat] or path == "Act" else None
                    if pushed is None or pushed.view.version == (await load(
                            made.game_id)).version:
                        break
            while (await watching.read()).version < (await load(made.game_id)).version:
                pass
            moved = (await load(made.game_id)).version - events_before
            counts["entries"] += moved
            per_move.append(Counter(counts))
        for call in streams.values():
            call.cancel()
        watching.cancel()
    await shutdown(process, 1)
    entries = sum(c["entries"] for c in per_move)
    total = sum(per_move, Counter())
    print(f"\n{path}: per command over {MOVES} commands ({entries / MOVES:.1f} entries each): "
          + ", ".join(f"{k} {total[k] / MOVES:.2f}" for k in ("loads", "reads", "decodes",
                                                                "folds")))
    for c in per_move:
        events = c["entries"]
        assert c["loads"] <= 1, c  # the table is looked up once
        assert c["reads"] == 0, c  # the embedded store holds nothing the table lacks
        assert c["decodes"] == 0, c  # the events the command made are handed over decoded
        assert c["folds"] <= events, c  # each event folded once, for every stream
