"""The embedded store's file: checksummed records, a torn last record dropped with a word,
any other damage refused with the file, the byte offset and what is wrong (the file left as
it is), `arbiter store check`, old files without checksums, and one process per file."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.core.store import MemoryStore, StoreDamaged, StoreLocked, check_file
from tests.platform.serving import wait_for_port
from tools.redis_servers import free_port


async def written(path: Path, batches: int = 6) -> list[int]:
    """A file of `batches` appends to two games; the byte offset where each record starts."""
    store = MemoryStore(str(path))
    for i in range(batches):
        game = f"g{i % 2}"
        await store.append(game, [b"e%d" % i], i // 2, f"c{i}", {"game": "x"})
    await store.close()
    data = path.read_bytes()
    return [0] + [i + 1 for i, b in enumerate(data) if b == ord("\n")][:-1]


def arbiter(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.cli.main", *args], text=True,
                          capture_output=True, timeout=60, env=env)


async def test_records_carry_a_checksum_and_a_changed_byte_in_a_middle_record_is_refused(
        tmp_path: Path) -> None:
    path = tmp_path / "arbiter.aof"
    starts = await written(path)
    assert all(line.startswith(b"C2 ") for line in path.read_bytes().splitlines())
    data = bytearray(path.read_bytes())
    # A digit of an entry's hex changed: still valid JSON and hex, only the checksum sees it.
    at = data.index(b'"entries": ["', starts[2]) + len('"entries": ["') + 1
    data[at] = ord("0") if data[at] != ord("0") else ord("1")
    path.write_bytes(bytes(data))
    with pytest.raises(StoreDamaged) as damaged:
        MemoryStore(str(path))
    assert damaged.value.offset == starts[2]
    assert str(path) in str(damaged.value) and "checksum" in str(damaged.value)
    assert path.read_bytes() == bytes(data), "a damaged file is never rewritten"


async def test_garbage_inside_a_middle_record_names_the_file_and_the_offset(
        tmp_path: Path) -> None:
    path = tmp_path / "arbiter.aof"
    starts = await written(path)
    data = bytearray(path.read_bytes())
    data[starts[3] + 20: starts[3] + 24] = b"\xff\xfe\x00\x01"
    path.write_bytes(bytes(data))
    with pytest.raises(StoreDamaged) as damaged:
        MemoryStore(str(path))
    assert damaged.value.offset == starts[3]
    assert path.read_bytes() == bytes(data)


async def test_a_whole_last_record_with_a_bad_checksum_is_damage_not_a_torn_write(
        tmp_path: Path) -> None:
    path = tmp_path / "arbiter.aof"
    starts = await written(path)
    data = bytearray(path.read_bytes())
    data[starts[-1] + 3] = ord("f") if data[starts[-1] + 3] != ord("f") else ord("e")
    path.write_bytes(bytes(data))
    with pytest.raises(StoreDamaged) as damaged:
        MemoryStore(str(path))
    assert damaged.value.offset == starts[-1]


async def test_a_file_cut_in_the_middle_keeps_what_is_whole_and_says_what_it_dropped(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "arbiter.aof"
    starts = await written(path)
    data = path.read_bytes()
    cut = (starts[3] + starts[4]) // 2  # inside the fourth record
    path.write_bytes(data[:cut])
    with caplog.at_level(logging.WARNING, logger="arbiter"):
        store = MemoryStore(str(path))
    assert await store.read("g0") == [b"e0", b"e2"] and await store.read("g1") == [b"e1"]
    await store.close()
    dropped = [r.getMessage() for r in caplog.records if "torn last record" in r.getMessage()]
    assert dropped and f"byte {starts[3]}" in dropped[0]
    assert f"{cut - starts[3]} bytes" in dropped[0]
    assert path.read_bytes() == data[:starts[3]]


async def test_a_file_from_before_checksums_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "arbiter.aof"
    old = [{"game": "g", "command_id": "", "meta": {"game": "x"}, "entries": [b"a".hex()]},
           {"game": "g", "command_id": "c2", "meta": {}, "entries": [b"b".hex(), b"c".hex()]}]
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    store = MemoryStore(str(path))
    assert await store.read("g") == [b"a", b"b", b"c"]
    assert await store.applied("g", "c2") == (2, 3)
    await store.append("g", [b"d"], 3, "c3")  # new records are chained after old ones
    await store.close()
    lines = path.read_bytes().splitlines()
    assert lines[0].startswith(b"{") and lines[-1].startswith(b"C2 ")
    assert check_file(str(path)).records == 3


async def test_store_check_reports_without_starting_a_server_or_changing_the_file(
        tmp_path: Path) -> None:
    path = tmp_path / "arbiter.aof"
    starts = await written(path)
    ok = arbiter("store", "check", str(path))
    assert ok.returncode == 0 and "6 records of 2 games" in ok.stdout, ok.stderr
    data = path.read_bytes()
    path.write_bytes(data + b"C1 0000")  # a torn last record
    torn = arbiter("store", "check", str(path))
    assert torn.returncode == 0 and f"torn last record at byte {len(data)}" in torn.stdout
    assert path.read_bytes() == data + b"C1 0000", "check never changes the file"
    damaged = bytearray(data)
    damaged[starts[1] + 15] ^= 0x01
    path.write_bytes(bytes(damaged))
    bad = arbiter("store", "check", str(path))
    assert bad.returncode == 1 and f"byte {starts[1]}" in bad.stderr and str(path) in bad.stderr
    assert "Traceback" not in bad.stderr
    assert path.read_bytes() == bytes(damaged)


def test_a_second_server_on_the_same_data_dir_refuses_to_start_with_a_sentence(
        tmp_path: Path) -> None:
    def env() -> dict[str, str]:
        e = dict(os.environ, ARBITER_GRPC_ADDR=f"127.0.0.1:{free_port()}",
                 ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}", ARBITER_DATA_DIR=str(tmp_path),
                 ARBITER_GAMES="bubblee")
        e.pop("ARBITER_REDIS_URL", None)
        return e

    first_env = env()
    first = subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"], env=first_env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port = int(first_env["ARBITER_GRPC_ADDR"].rpartition(":")[2])
        if not wait_for_port(port):
            pytest.fail("the first server did not start")
        second = arbiter("serve", env=env())
        assert second.returncode == 1
        assert "another Arbiter process already uses the store" in second.stderr
        assert str(tmp_path) in second.stderr and "Traceback" not in second.stderr
        assert first.poll() is None, "the first server runs on"
    finally:
        first.terminate()
        first.wait(timeout=10)
    # Once the first has stopped, the lock is free again.
    with pytest.raises(StoreLocked):
        held = MemoryStore(str(tmp_path / "arbiter.aof"))
        MemoryStore(str(tmp_path / "arbiter.aof"))
    del held


def test_acknowledged_commands_survive_a_kill_9_of_the_server(tmp_path: Path) -> None:
    """Every append is written and flushed to the file before the call answers: a server
    killed at once (no shutdown) loses no acknowledged command."""
    import signal

    import grpc
    from arbiter.bubblee.v1 import bubblee_pb2 as bpb
    from arbiter.v1 import arbiter_pb2 as apb

    def start() -> tuple[subprocess.Popen[bytes], grpc.Channel]:
        port = free_port()
        env = dict(os.environ, ARBITER_GRPC_ADDR=f"127.0.0.1:{port}",
                   ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}",
                   ARBITER_DATA_DIR=str(tmp_path), ARBITER_GAMES="bubblee")
        env.pop("ARBITER_REDIS_URL", None)
        process = subprocess.Popen([sys.executable, "-m", "services.cli.main", "serve"],
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=60)
        return process, channel

    def rpc(channel: grpc.Channel, method: str, reply: type) -> object:
        return channel.unary_unary(f"/arbiter.bubblee.v1.Game/{method}",
                                   request_serializer=lambda m: m.SerializeToString(),
                                   response_deserializer=reply.FromString)

    server, channel = start()
    try:
        created = rpc(channel, "CreateGame", apb.CreateGameResponse)(bpb.CreateGameRequest(
            seats=[apb.Seat(name="a"), apb.Seat(name="b")]), timeout=30)
        tokens = {t.seat: t.token for t in created.tokens}
        acknowledged = created.version
        for n in range(10):
            view = rpc(channel, "GetView", bpb.View)(
                apb.GetViewRequest(game_id=created.game_id), timeout=30)
            if view.HasField("outcome"):
                break
            me = (("x-seat-token", tokens[view.to_act[0]]),)
            legal = rpc(channel, "ListLegalActions", bpb.LegalActions)(
                apb.ListLegalActionsRequest(game_id=created.game_id), metadata=me, timeout=30)
            acknowledged = rpc(channel, "Act", bpb.ActResponse)(bpb.ActRequest(
                game_id=created.game_id, command=legal.commands[0], command_id=f"c{n}"),
                metadata=me, timeout=30).version
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
        channel.close()
        server, channel = start()
        view = rpc(channel, "GetView", bpb.View)(apb.GetViewRequest(game_id=created.game_id),
                                                 timeout=30)
        assert view.version == acknowledged > created.version
    finally:
        channel.close()
        server.kill()
        server.wait(timeout=10)


async def test_a_last_line_that_is_not_the_start_of_a_record_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "arbiter.aof"
    await written(path)
    data = path.read_bytes()
    path.write_bytes(data + b"\x00\x00garbage")
    with pytest.raises(StoreDamaged) as damaged:
        MemoryStore(str(path))
    assert damaged.value.offset == len(data)
    assert path.read_bytes() == data + b"\x00\x00garbage"
    for torn in (b"C", b"C1", b"C1 0a", b'{"game": "g'):
        path.write_bytes(data + torn)
        assert check_file(str(path)).torn_bytes == len(torn)


async def test_embedded_store_survives_a_restart(tmp_path) -> None:
    path = str(tmp_path / "games.aof")
    s = MemoryStore(path)
    await s.append("g1", [b"a", b"b"], 0, "c1", {"game": "x"})
    await s.append("g1", [b"c"], 2, "c2")
    await s.close()
    reopened = MemoryStore(path)
    assert await reopened.read("g1") == [b"a", b"b", b"c"]
    assert (await reopened.append("g1", [b"z"], 3, "c2")).duplicate
    assert (await reopened.meta("g1"))["game"] == "x"


async def test_embedded_store_drops_a_torn_last_write(tmp_path) -> None:
    path = tmp_path / "games.aof"
    s = MemoryStore(str(path))
    await s.append("g1", [b"a"], 0)
    await s.close()
    with open(path, "a") as f:
        f.write('{"game": "g1", "entr')  # the process died mid-write
    reopened = MemoryStore(str(path))
    assert await reopened.read("g1") == [b"a"]
    await reopened.append("g1", [b"b"], 1)
    await reopened.close()
    assert await MemoryStore(str(path)).read("g1") == [b"a", b"b"]


# ---- records out of their place: removed, repeated, moved --------------------------------------


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


async def refused_at(path: Path, lines: list[bytes], at: int) -> str:
    """Write `lines`; both a start and `arbiter store check` refuse the file at line `at`,
    naming its byte offset; the file is left as it is. What is wrong, in words."""
    path.write_bytes(b"".join(lines))
    offset = sum(len(line) for line in lines[:at])
    with pytest.raises(StoreDamaged) as damaged:
        MemoryStore(str(path))
    assert damaged.value.offset == offset, damaged.value
    checked = arbiter("store", "check", str(path))
    assert checked.returncode == 1 and f"byte {offset}" in checked.stderr, checked.stderr
    assert "Traceback" not in checked.stderr
    assert path.read_bytes() == b"".join(lines), "a damaged file is never rewritten"
    return damaged.value.what


async def test_a_removed_record_is_refused_at_start_and_by_store_check(tmp_path: Path) -> None:
    path = tmp_path / "arbiter.aof"
    await written(path)
    lines = lines_of(path)
    # The third record (g0's second batch) removed: the next one, g1's, is in its game's
    # order, but it names a predecessor that is no longer before it.
    what = await refused_at(path, lines[:2] + lines[3:], 2)
    assert "does not follow the one before it" in what
    # The third and fourth removed: g0 jumps from version 1 to 3.
    what = await refused_at(path, lines[:2] + lines[4:], 2)
    assert "g0" in what and "version 3" in what and "missing" in what
    # The first record removed: the second names a predecessor the file does not have.
    what = await refused_at(path, lines[1:], 0)
    assert "does not follow the one before it" in what


async def test_a_repeated_record_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "arbiter.aof"
    await written(path)
    lines = lines_of(path)
    what = await refused_at(path, lines[:3] + [lines[2]] + lines[3:], 3)
    assert "g0" in what and "repeated or moved" in what


async def test_a_swapped_pair_is_refused_whether_of_one_game_or_of_two(tmp_path: Path) -> None:
    path = tmp_path / "arbiter.aof"
    await written(path)
    lines = lines_of(path)
    # g0's second and third batches swapped: the third comes before the second.
    what = await refused_at(path, lines[:2] + [lines[4], lines[3], lines[2]] + lines[5:], 2)
    assert "g0" in what and "missing" in what
    # Two games' records swapped: each game's versions still go on; the chain does not.
    what = await refused_at(path, lines[:2] + [lines[3], lines[2]] + lines[4:], 2)
    assert "does not follow the one before it" in what


async def test_an_older_record_after_chained_ones_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "arbiter.aof"
    await written(path)
    lines = lines_of(path)
    old = json.dumps({"game": "g9", "command_id": "", "meta": {}, "entries": ["00"]}) + "\n"
    what = await refused_at(path, lines + [old.encode()], len(lines))
    assert "unchained record" in what


async def test_a_file_of_the_first_checksummed_format_loads_and_goes_on_chained(
        tmp_path: Path) -> None:
    import zlib

    path = tmp_path / "arbiter.aof"
    bodies = [json.dumps({"game": "g", "command_id": f"c{i}", "meta": {}, "entries": [f"0{i}"]})
              for i in range(3)]
    path.write_bytes(b"".join(b"C1 %08x %s\n" % (zlib.crc32(b.encode()), b.encode())
                              for b in bodies))
    store = MemoryStore(str(path))
    assert await store.read("g") == [b"\x00", b"\x01", b"\x02"]
    await store.append("g", [b"\x03"], 3, "c3")
    await store.append("g", [b"\x04"], 4, "c4")
    await store.close()
    assert check_file(str(path)).records == 5
    checked = arbiter("store", "check", str(path))
    assert checked.returncode == 0 and "the first 3 records are of an earlier format" in \
        checked.stdout, checked.stderr
    lines = lines_of(path)
    assert lines[2].startswith(b"C1 ") and lines[3].startswith(b"C2 ")
    assert json.loads(lines[3].split(b" ", 2)[2])["prev"] == lines[2][3:11].decode()
    # The new records are checked: the last one removed from between is seen.
    path.write_bytes(b"".join(lines[:3] + lines[4:]))
    with pytest.raises(StoreDamaged):
        MemoryStore(str(path))


# ---- ARBITER_FSYNC ---------------------------------------------------------------------------


async def test_with_fsync_an_append_answers_only_once_the_file_is_on_disk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "arbiter.aof"
    store = MemoryStore(str(path), fsync=True)
    on_disk = [0]  # the file's size at the last fsync
    calls = [0]
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        size = os.fstat(fd).st_size
        real_fsync(fd)
        on_disk[0] = max(on_disk[0], size)
        calls[0] += 1

    monkeypatch.setattr(os, "fsync", fsync)
    for v in range(3):
        await store.append("g", [b"x"], v, f"c{v}")
        assert on_disk[0] == path.stat().st_size
    assert calls[0] == 3

    # Concurrent appends share fsyncs (a group commit), and each waits for one that covers it.
    calls[0] = 0

    async def one(game: str) -> None:
        await store.append(game, [b"y"], 0, "c")
        data = path.read_bytes()
        end = data.index(b"\n", data.index(f'"game": "{game}"'.encode())) + 1
        assert on_disk[0] >= end, "answered before its record was on disk"

    sizes_before = path.stat().st_size
    await asyncio.gather(*(one(f"h{i}") for i in range(20)))
    assert on_disk[0] == path.stat().st_size > sizes_before
    assert 1 <= calls[0] < 20
    await store.close()


async def test_a_failed_fsync_makes_the_store_unavailable_even_for_a_retry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from services.core.store import StoreUnavailable

    store = MemoryStore(str(tmp_path / "arbiter.aof"), fsync=True)
    await store.append("g", [b"a"], 0, "c0")

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(StoreUnavailable, match="fsync"):
        await store.append("g", [b"b"], 1, "c1")
    # The retry of the same command must not be answered as done: it may not be on disk.
    with pytest.raises(StoreUnavailable, match="restart the server"):
        await store.append("g", [b"b"], 1, "c1")
    await store.close()
