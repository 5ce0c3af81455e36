"""deploy/haproxy.cfg, the router that sends every call about one game to the same replica:
HAProxy checks the file as it is, then the load test's own start_router runs it (with this
machine's addresses) in front of two servers that each keep games of their own. `make test`
installs Debian's haproxy where it can; without it these tests are skipped with the reason."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import grpc
import pytest
import yaml
from arbiter.bubblee.v1 import bubblee_pb2, bubblee_pb2_grpc
from arbiter.v1 import arbiter_pb2, arbiter_pb2_grpc

from loadtests.loadtest import ROUTER_CONFIG, Topology, start_router, wait_serving
from services import games as registry
from services.core.server import Config
from services.core.store import MemoryStore
from services.process import build

ROOT = Path(__file__).resolve().parents[2]
HAPROXY = shutil.which("haproxy")
needs_haproxy = pytest.mark.skipif(HAPROXY is None, reason="no haproxy here (make test "
                                   "installs Debian's package where it may)")


def test_compose_runs_the_file_in_front_of_its_servers() -> None:
    services = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())["services"]
    assert "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in services["router"]["volumes"]
    servers = [line.split()[3] for line in Path(ROUTER_CONFIG).read_text().splitlines()
               if line.split()[:1] == ["server-template"]]
    assert servers == ["arbiter:50051"] and "arbiter" in services


@needs_haproxy
def test_haproxy_accepts_the_deployed_file() -> None:
    checked = subprocess.run([str(HAPROXY), "-c", "-f", ROUTER_CONFIG], capture_output=True,
                             text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@needs_haproxy
async def test_a_games_calls_reach_one_server_and_the_others_are_spread(tmp_path: Path
                                                                         ) -> None:
    bubblee = {"bubblee": registry.game("bubblee")}
    # (One client below follows one game on 150 streams: past a client's default share.)
    servers = [build(Config(grpc_addr="127.0.0.1:0", client_watches_per_game=200), bubblee,
                     MemoryStore()) for _ in "ab"]
    for built in servers:
        await built.server.start()
    top = Topology(ports=[built.port for built in servers])
    try:
        start_router(top, str(tmp_path))
        await wait_serving([top.router_port], seconds=20)  # health, through the router
        request = bubblee_pb2.CreateGameRequest(seats=[arbiter_pb2.Seat(name="a"),
                                                       arbiter_pb2.Seat(name="b")])
        # Games that only the first server knows (each server has a store of its own).
        async with grpc.aio.insecure_channel(f"127.0.0.1:{servers[0].port}") as direct:
            stub = bubblee_pb2_grpc.GameStub(direct)
            ids = [(await stub.CreateGame(request, timeout=10)).game_id for _ in range(16)]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{top.router_port}") as routed:
            stub = bubblee_pb2_grpc.GameStub(routed)

            async def found(game_id: str, metadata: tuple[tuple[str, str], ...]) -> bool:
                try:
                    await stub.GetView(arbiter_pb2.GetViewRequest(game_id=game_id),
                                       metadata=metadata, timeout=10)
                    return True
                except grpc.aio.AioRpcError as e:
                    assert e.code() == grpc.StatusCode.NOT_FOUND, e
                    return False

            answers = {g: [await found(g, (("x-game-id", g),)) for _ in range(4)] for g in ids}
            # Every call about one game reached the same server, and games go to both.
            assert all(len(set(a)) == 1 for a in answers.values()), answers
            assert {a[0] for a in answers.values()} == {True, False}, answers
            # Without the header (CreateGame, ListGames) the calls take the servers in turn.
            assert {await found(ids[0], ()) for _ in range(6)} == {True, False}
            # A client following many games keeps a stream open for each (HTTP/2 allows
            # 100 at once by default) and still makes calls beside them.
            home = next(g for g, a in answers.items() if a[0])
            streams = [stub.Watch(arbiter_pb2.WatchRequest(game_id=home),
                                  metadata=(("x-game-id", home),)) for _ in range(150)]
            try:
                for stream in streams:
                    await asyncio.wait_for(stream.read(), 10)
                assert await asyncio.wait_for(found(home, (("x-game-id", home),)), 10)
            finally:
                for stream in streams:
                    stream.cancel()
    finally:
        top.stop()
        for built in servers:
            await built.server.stop(None)


@needs_haproxy
async def test_the_router_names_the_caller_and_a_client_cannot_name_itself(tmp_path: Path
                                                                          ) -> None:
    """The servers trust the router's x-forwarded-for (ARBITER_TRUSTED_PROXIES); the router
    sets it to the address the call came from, so a client that writes a new address in it
    on every call still draws from one bucket: its third CreateGame is refused."""
    config = Config(grpc_addr="127.0.0.1:0", trusted_proxies="127.0.0.1/32", rate_burst=2,
                    rate_per_second=0.001)
    built = build(config, {"bubblee": registry.game("bubblee")}, MemoryStore())
    await built.server.start()
    top = Topology(ports=[built.port])
    try:
        start_router(top, str(tmp_path))
        await wait_serving([top.router_port], seconds=20)
        request = bubblee_pb2.CreateGameRequest(seats=[arbiter_pb2.Seat(name="a"),
                                                       arbiter_pb2.Seat(name="b")])
        async with grpc.aio.insecure_channel(f"127.0.0.1:{top.router_port}") as routed:
            stub = bubblee_pb2_grpc.GameStub(routed)
            for i in range(2):
                await stub.CreateGame(request, metadata=(("x-forwarded-for", f"192.0.2.{i}"),),
                                      timeout=10)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.CreateGame(request, metadata=(("x-forwarded-for", "192.0.2.9"),),
                                      timeout=10)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        top.stop()
        await built.server.stop(None)


@needs_haproxy
async def test_a_source_opening_calls_too_fast_is_answered_by_the_router_alone(
        tmp_path: Path) -> None:
    """Past the router's calls a second per address, a call is answered RESOURCE_EXHAUSTED
    by HAProxy and never reaches a server (which would spend a Ping's CPU on each), while a
    client from another address is served."""
    from loadtests.abuse import Relay

    built = build(Config(grpc_addr="127.0.0.1:0"), {"bubblee": registry.game("bubblee")},
                  MemoryStore())
    await built.server.start()
    top = Topology(ports=[built.port])
    relay = Relay(("127.0.0.1", 0), "127.0.0.2")
    try:
        start_router(top, str(tmp_path))
        await wait_serving([top.router_port], seconds=20)
        relay.target = ("127.0.0.1", top.router_port)
        hostile_port = await relay.start()  # the flood comes from 127.0.0.2
        async with grpc.aio.insecure_channel(f"127.0.0.1:{hostile_port}") as hostile, \
                grpc.aio.insecure_channel(f"127.0.0.1:{top.router_port}") as polite:
            ping = arbiter_pb2_grpc.ArbiterStub(hostile).Ping
            served_before = _pings_served()

            async def code() -> tuple[grpc.StatusCode, str]:
                try:
                    await ping(arbiter_pb2.PingRequest(), timeout=10)
                    return grpc.StatusCode.OK, ""
                except grpc.aio.AioRpcError as e:
                    return e.code(), e.details() or ""

            answers = await asyncio.gather(*(code() for _ in range(1500)))
            refused = [d for c, d in answers if c == grpc.StatusCode.RESOURCE_EXHAUSTED]
            assert refused and all("router" in d for d in refused), set(answers)
            assert {c for c, _ in answers} <= {grpc.StatusCode.OK,
                                               grpc.StatusCode.RESOURCE_EXHAUSTED}
            served = _pings_served() - served_before
            assert served == len(answers) - len(refused), "the refused never reached it"
            await arbiter_pb2_grpc.ArbiterStub(polite).Ping(arbiter_pb2.PingRequest(),
                                                            timeout=10)
    finally:
        await relay.close()
        top.stop()
        await built.server.stop(None)


def _pings_served() -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value("grpc_server_handled_total", {
        "grpc_type": "unary", "grpc_service": "arbiter.v1.Arbiter", "grpc_method": "Ping",
        "grpc_code": "OK"}) or 0.0


@needs_haproxy
async def test_a_source_past_its_connections_is_refused_at_the_router(tmp_path: Path) -> None:
    """grpcio cannot count connections by address; the router holds 64 per address: of 70
    from one address it keeps 64 and closes the rest, and another address still connects."""
    built = build(Config(grpc_addr="127.0.0.1:0"), {"bubblee": registry.game("bubblee")},
                  MemoryStore())
    await built.server.start()
    top = Topology(ports=[built.port])
    held = []
    try:
        start_router(top, str(tmp_path))
        await wait_serving([top.router_port], seconds=20)

        async def open_from(source: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await asyncio.open_connection("127.0.0.1", top.router_port,
                                                 local_addr=(source, 0))

        for _ in range(70):
            try:
                held.append(await open_from("127.0.0.2"))
            except ConnectionResetError:  # refused while connecting
                continue

        async def closed(reader: asyncio.StreamReader) -> bool:
            try:
                return await asyncio.wait_for(reader.read(1), 0.1) == b""
            except ConnectionResetError:
                return True
            except TimeoutError:
                return False

        # However the router took them in, it keeps 64 and closes the rest.
        for _ in range(100):
            still_open = [r for r, _ in held if not r.at_eof() and not await closed(r)]
            if len(still_open) <= 64:
                break
        assert len(still_open) == 64, len(still_open)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{top.router_port}") as other:
            await arbiter_pb2_grpc.ArbiterStub(other).Ping(arbiter_pb2.PingRequest(),
                                                           timeout=10)
    finally:
        for _, writer in held:
            writer.close()
        top.stop()
        await built.server.stop(None)
