"""What `arbiter serve` refuses to start with, TLS on the gRPC port, the plaintext health port,
and client-side round robin over two servers (what deploy/ relies on)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from arbiter.bubblee.v1 import bubblee_pb2, bubblee_pb2_grpc
from arbiter.v1 import arbiter_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services import games as registry
from services.core.server import (
    Config,
    ConfigError,
    check_admin_token,
    health_only_server,
    listens_beyond_loopback,
)
from services.core.store import MemoryStore
from services.process import build

GOOD_TOKEN = "3f9a1c77e0b24d5e8c61a0f2b9d43e17"
SERVE = [sys.executable, "-m", "services.cli.main", "serve"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- the admin token ----------------------------------------------------------------------


@pytest.mark.parametrize("token", [
    "change-me", "changeme", "admin", "secret", "password", "hunter2-hunter2",  # under 16
    "please-change-me-now", "<your-admin-token-here>", "PLACEHOLDER-PLACEHOLDER",
    "aaaaaaaaaaaaaaaaaaaaaaaa",
])
def test_a_placeholder_admin_token_is_refused_wherever_the_server_listens(token: str) -> None:
    for addr in ("127.0.0.1:50051", "0.0.0.0:50051"):
        with pytest.raises(ConfigError) as info:
            check_admin_token(token, addr)
        sentence = str(info.value)
        assert sentence.startswith("ARBITER_ADMIN_TOKEN ") and sentence.endswith(".")
        assert token not in sentence, "the token itself is never echoed (it may be real)"


@pytest.mark.parametrize("addr", ["0.0.0.0:50051", "[::]:50051", ":50051", "10.1.2.3:50051",
                                  "[2001:db8::1]:50051"])
def test_an_empty_admin_token_is_refused_beyond_loopback(addr: str) -> None:
    assert listens_beyond_loopback(addr)
    with pytest.raises(ConfigError, match="empty while the server listens beyond"):
        check_admin_token("", addr)
    check_admin_token(GOOD_TOKEN, addr)


@pytest.mark.parametrize("addr", ["127.0.0.1:50051", "localhost:50051", "[::1]:50051",
                                  "127.0.0.2:50051", "unix:/tmp/arbiter.sock"])
def test_an_empty_admin_token_is_fine_on_loopback(addr: str) -> None:
    assert not listens_beyond_loopback(addr)
    check_admin_token("", addr)


def run_serve(env: dict[str, str], timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(SERVE, env=env, capture_output=True, text=True, timeout=timeout)


def serve_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ARBITER_") or k == "ARBITER_TEST_REDIS_URL"}
    env.update(ARBITER_GRPC_ADDR=f"127.0.0.1:{free_port()}", ARBITER_GAMES="bubblee",
               ARBITER_METRICS_ADDR=f"127.0.0.1:{free_port()}", ARBITER_DATA_DIR=str(tmp_path))
    env.update(extra)
    return env


def one_sentence(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("arbiter serve: ")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("extra", [
    {"ARBITER_ADMIN_TOKEN": "change-me"},
    {"ARBITER_ADMIN_TOKEN": "", "ARBITER_GRPC_ADDR": "0.0.0.0:0"},
])
def test_the_server_process_refuses_to_start_with_one_sentence(tmp_path: Path,
                                                               extra: dict[str, str]) -> None:
    done = run_serve(serve_env(tmp_path, **extra))
    assert done.returncode == 2
    assert "ARBITER_ADMIN_TOKEN" in one_sentence(done.stderr)


# ---- TLS ----------------------------------------------------------------------------------


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(directory: Path, name: str) -> None:
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "1",
            "-subj", f"/CN={name}", cwd=directory)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throw-away CA, a server certificate it signed (localhost, 127.0.0.1), and another CA."""
    if not shutil.which("openssl"):
        pytest.skip("needs the openssl command to make test certificates")
    d = tmp_path_factory.mktemp("tls")
    make_ca(d, "ca")
    make_ca(d, "other-ca")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost", cwd=d)
    (d / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "1", "-extfile", "san.ext", cwd=d)
    return d


async def health_status(channel: grpc.aio.Channel, service: str = "") -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
    return reply.status


async def test_tls_serves_a_client_that_checks_the_certificate(certs: Path) -> None:
    config = Config(grpc_addr="127.0.0.1:0", tls_cert=str(certs / "server.pem"),
                    tls_key=str(certs / "server.key"))
    process = build(config, {"bubblee": registry.game("bubblee")}, MemoryStore())
    server, port = process.server, process.port
    await server.start()
    try:
        trusted = grpc.ssl_channel_credentials((certs / "ca.pem").read_bytes())
        async with grpc.aio.secure_channel(f"localhost:{port}", trusted) as channel:
            assert await health_status(channel) == health_pb2.HealthCheckResponse.SERVING
            game = await bubblee_pb2_grpc.GameStub(channel).CreateGame(
                bubblee_pb2.CreateGameRequest(seats=[arbiter_pb2.Seat(name="a"),
                                                     arbiter_pb2.Seat(name="b")]), timeout=10)
            assert game.game_id.startswith("bubblee-")

        wrong = grpc.ssl_channel_credentials((certs / "other-ca.pem").read_bytes())
        async with grpc.aio.secure_channel(f"localhost:{port}", wrong) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await health_status(channel)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE

        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await health_status(channel)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await server.stop(None)


def test_tls_needs_both_files_and_readable_ones(certs: Path) -> None:
    games = {"bubblee": registry.game("bubblee")}
    with pytest.raises(ConfigError, match="go together"):
        build(Config(grpc_addr="127.0.0.1:0", tls_cert=str(certs / "server.pem")), games,
              MemoryStore())
    with pytest.raises(ConfigError, match=r"cannot read ARBITER_TLS_KEY \(.*missing.key\)"):
        build(Config(grpc_addr="127.0.0.1:0", tls_cert=str(certs / "server.pem"),
                     tls_key=str(certs / "missing.key")), games, MemoryStore())


async def test_the_health_port_is_plaintext_and_serves_health_only(certs: Path) -> None:
    from grpc_health.v1 import health

    servicer = health.aio.HealthServicer()
    config = Config(grpc_addr="127.0.0.1:0", tls_cert=str(certs / "server.pem"),
                    tls_key=str(certs / "server.key"), health_addr=f"127.0.0.1:{free_port()}")
    process = build(config, {"bubblee": registry.game("bubblee")}, MemoryStore(),
                    health_servicer=servicer)
    server = process.server
    probes = health_only_server(config, servicer)
    await server.start()
    await probes.start()
    try:
        async with grpc.aio.insecure_channel(config.health_addr) as channel:
            assert await health_status(channel) == health_pb2.HealthCheckResponse.SERVING
            assert await health_status(channel, "arbiter.bubblee.v1.Game") == (
                health_pb2.HealthCheckResponse.SERVING)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await bubblee_pb2_grpc.GameStub(channel).CreateGame(
                    bubblee_pb2.CreateGameRequest(), timeout=10)
            assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        await probes.stop(None)
        await server.stop(None)


# ---- ports in use -------------------------------------------------------------------------


@pytest.fixture
def first_server(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = serve_env(tmp_path / "first")
    process = subprocess.Popen(SERVE, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(env["ARBITER_GRPC_ADDR"], process)
        yield env
    finally:
        process.terminate()
        process.wait(timeout=10)


def wait_listening(addr: str, process: subprocess.Popen[str]) -> None:
    host, _, port = addr.rpartition(":")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        try:
            socket.create_connection((host, int(port)), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {addr}")


def test_a_second_server_on_a_grpc_port_in_use_refuses_to_start(
        tmp_path: Path, first_server: dict[str, str]) -> None:
    second = serve_env(tmp_path / "second", ARBITER_GRPC_ADDR=first_server["ARBITER_GRPC_ADDR"])
    done = run_serve(second)
    assert done.returncode == 2
    sentence = one_sentence(done.stderr)
    assert f"cannot serve gRPC on {first_server['ARBITER_GRPC_ADDR']}" in sentence
    assert "already in use" in sentence and "ARBITER_GRPC_REUSE_PORT=1" in sentence


def test_a_second_server_on_a_metrics_port_in_use_refuses_to_start(
        tmp_path: Path, first_server: dict[str, str]) -> None:
    second = serve_env(tmp_path / "second",
                       ARBITER_METRICS_ADDR=first_server["ARBITER_METRICS_ADDR"])
    done = run_serve(second)
    assert done.returncode == 2
    sentence = one_sentence(done.stderr)
    assert f"cannot serve /metrics on {first_server['ARBITER_METRICS_ADDR']}" in sentence
    assert "already in use" in sentence


def test_sharing_a_grpc_port_works_when_both_servers_ask_for_it(tmp_path: Path) -> None:
    first = serve_env(tmp_path / "first", ARBITER_GRPC_REUSE_PORT="1")
    second = serve_env(tmp_path / "second", ARBITER_GRPC_REUSE_PORT="1",
                       ARBITER_GRPC_ADDR=first["ARBITER_GRPC_ADDR"])
    processes = []
    try:
        for env in (first, second):
            processes.append(subprocess.Popen(SERVE, env=env, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.PIPE, text=True))
            # The metrics port opens after the gRPC port is bound: both are up.
            wait_listening(env["ARBITER_METRICS_ADDR"], processes[-1])
        assert all(p.poll() is None for p in processes)
    finally:
        for p in processes:
            p.terminate()
            p.wait(timeout=10)


# ---- client-side round robin (the headless Service of deploy/k8s) -------------------------

ROUND_ROBIN = '{"loadBalancingConfig": [{"round_robin": {}}]}'


async def test_client_round_robin_spreads_calls_over_every_server() -> None:
    """Two servers with stores of their own: a game is known only where it was created."""
    bubblee = {"bubblee": registry.game("bubblee")}
    servers = [build(Config(grpc_addr="127.0.0.1:0"), bubblee, MemoryStore()) for _ in "ab"]
    for built in servers:
        await built.server.start()
    ports = [built.port for built in servers]
    target = "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in ports)
    request = bubblee_pb2.CreateGameRequest(seats=[arbiter_pb2.Seat(name="a"),
                                                   arbiter_pb2.Seat(name="b")])

    async def created_on(options: list[tuple[str, str]]) -> list[int]:
        async with grpc.aio.insecure_channel(target, options=options) as channel:
            await channel.channel_ready()
            stub = bubblee_pb2_grpc.GameStub(channel)
            ids = [(await stub.CreateGame(request, timeout=10)).game_id for _ in range(10)]
        counts = []
        for port in ports:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as direct:
                stub = bubblee_pb2_grpc.GameStub(direct)
                known = 0
                for game_id in ids:
                    try:
                        await stub.GetView(arbiter_pb2.GetViewRequest(game_id=game_id),
                                           timeout=10)
                        known += 1
                    except grpc.aio.AioRpcError as e:
                        assert e.code() == grpc.StatusCode.NOT_FOUND
                counts.append(known)
        return counts

    try:
        # gRPC's default (pick_first) pins every call to one server; round robin does not.
        assert sorted(await created_on([])) == [0, 10]
        spread = await created_on([("grpc.service_config", ROUND_ROBIN)])
        assert sum(spread) == 10 and min(spread) >= 3, spread
    finally:
        for built in servers:
            await built.server.stop(None)


async def test_connections_are_closed_after_their_max_age_but_streams_finish() -> None:
    """ARBITER_GRPC_MAX_CONNECTION_AGE: the client's connection is closed (so it resolves the
    name again), a Watch-like stream opened before goes on, new calls still succeed."""
    from grpc_health.v1 import health

    servicer = health.aio.HealthServicer()
    config = Config(grpc_addr="127.0.0.1:0", max_connection_age_s=0.5)
    process = build(config, {"bubblee": registry.game("bubblee")}, MemoryStore(),
                    health_servicer=servicer)
    server, port = process.server, process.port
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            stream = stub.Watch(health_pb2.HealthCheckRequest(service="probe"))
            await servicer.set("probe", health_pb2.HealthCheckResponse.SERVING)
            assert (await stream.read()).status == health_pb2.HealthCheckResponse.SERVING
            states = set()
            for _ in range(40):  # 2 s: the connection reaches its age and is closed
                states.add(channel.get_state())
                await asyncio.sleep(0.05)
            assert grpc.ChannelConnectivity.IDLE in states or (
                grpc.ChannelConnectivity.CONNECTING in states), states
            await servicer.set("probe", health_pb2.HealthCheckResponse.NOT_SERVING)
            assert (await stream.read()).status == health_pb2.HealthCheckResponse.NOT_SERVING
            assert await health_status(channel) == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(None)


async def test_the_cli_reaches_a_tls_server_with_the_ca_in_arbiter_tls_ca(certs: Path) -> None:
    game = registry.game("bubblee")
    config = Config(grpc_addr="127.0.0.1:0", admin_token=GOOD_TOKEN,
                    tls_cert=str(certs / "server.pem"), tls_key=str(certs / "server.key"))
    process = build(config, {"bubblee": game}, MemoryStore())
    server, host, port = process.server, process.host, process.port
    await server.start()
    try:
        from services.core.decider import Seat

        game_id = (await host.create("bubblee", [Seat("a"), Seat("b")],
                                     game.pb.Options())).game_id
        env = {**os.environ, "ARBITER_GRPC_ADDR": f"localhost:{port}",
               "ARBITER_ADMIN_TOKEN": GOOD_TOKEN}

        async def export(**extra: str) -> tuple[int, str, str]:
            run = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "services.cli.main", "export", game_id,
                env={**env, **extra}, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            out, err = await run.communicate()
            return run.returncode or 0, out.decode(), err.decode()

        code, out, err = await export(ARBITER_TLS_CA=str(certs / "ca.pem"))
        assert code == 0 and game_id in out, err
        code, _, err = await export()  # plaintext against a TLS port
        assert code != 0 and "UNAVAILABLE" in err
        code, _, err = await export(ARBITER_TLS_CA=str(certs / "other-ca.pem"))
        assert code != 0 and "UNAVAILABLE" in err
    finally:
        await server.stop(None)


def test_sigterm_drains_and_stops_the_server_cleanly(tmp_path: Path) -> None:
    """A rolling update sends SIGTERM: the server stops taking calls, finishes, and exits 0."""
    env = serve_env(tmp_path)
    process = subprocess.Popen(SERVE, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(env["ARBITER_METRICS_ADDR"], process)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert "stopping: calls in progress have" in stderr and "arbiter stopped" in stderr
    assert "Traceback" not in stderr
