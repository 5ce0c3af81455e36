"""The server's parts: its configuration, ports, TLS, health, HTTP gateway and /metrics.

Configuration comes from the environment (see `Config`); the defaults run everything in one
process with the embedded store, so `make run` needs nothing else. services/process.py builds
the process from these parts, the host and the workers.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
import re
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from prometheus_client import start_http_server

from services.core.edge import Connections, EdgeLimits
from services.core.host import Host
from services.core.store import MemoryStore, Store, StoreUnavailable

log = logging.getLogger("arbiter")


@dataclass
class Config:
    grpc_addr: str = "127.0.0.1:50051"
    # HTTP for browsers and curl (Connect, gRPC-Web, the console); empty: none. The
    # environment's default is 127.0.0.1:8080 (`http_explicit` says whether it was set).
    http_addr: str = ""
    http_explicit: bool = False
    metrics_addr: str = "127.0.0.1:9464"
    redis_url: str = ""  # empty: the embedded store
    broker_url: str = ""  # empty: AI turns run in process
    admin_token: str = ""
    data_dir: str = "var"  # the embedded store's append-only file lives here
    fsync: bool = True  # an append to the embedded store answers once its record is on disk
    games: list[str] = field(default_factory=list)  # empty: every game
    max_concurrent_rpcs: int = 2000
    # Calls (not streams) one client may have in flight; 0: no share. Off here, on from the
    # environment (CALLS_PER_CLIENT).
    calls_per_client: int = 0
    # Watch and Play streams at once. An idle stream holds no store connection: about 30 KB
    # of memory (loadtests/streams.py measured 10,000 on one process, none dropped).
    max_watches: int = 10_000  # spectators' streams (Watch, Play without a seat)
    max_plays: int = 10_000  # seats' streams, counted apart: spectators never take their place
    streams_per_client: int = 500
    watches_per_game: int = 1000  # spectators' streams of one game
    # One client's spectators' streams of one game: each is one more write per move, so a
    # client's share of a game's watchers bounds what its moves cost.
    client_watches_per_game: int = 16
    streams_per_seat: int = 8  # streams of one seat of one game
    stream_behind: int = 2000  # messages queued for a stream that does not read before it ends
    health_seconds: float = 1.0  # how often health pings the store (Redis)
    # Per client (peer address, or the admin identity): CreateGame, ImportLog, ForkGame and
    # Simulate draw from a bucket of `rate_burst` calls refilled at `rate_per_second`.
    rate_burst: float = 100
    rate_per_second: float = 5
    # Commands (Act, Play's) per client and per seat, as token buckets. Off here; the
    # environment's defaults turn them on (COMMAND_RATE...), as for http_addr.
    command_rate: float = 0
    command_burst: float = 0
    seat_command_rate: float = 0
    seat_command_burst: float = 0
    # How far ahead a client or a seat past its rate may queue commands (seconds): within
    # it a command waits for its turn, past it it is refused.
    command_queue_seconds: float = 1.0
    # With the store on Redis, keep those buckets there: one budget per client however many
    # replicas it calls. Off here (a test's server keeps its own), on from the environment.
    shared_limits: bool = False
    # Proxies whose x-forwarded-for (or forwarded) names the client (comma-separated CIDRs).
    trusted_proxies: str = ""
    # Processes that re-run whole logs and histories (verify, import, export, replay, fork;
    # 0: one thread, which shares the event loop's interpreter lock), and how many such calls
    # may wait for one before the next is refused.
    cpu_processes: int = 1
    cpu_queue: int = 16
    # Simulate: games per call (but the admin's), simulations at once, one client's share of
    # them, and the processes that play them without a broker.
    simulate_max_games: int = 1000
    simulate_at_once: int = 4
    simulate_per_client: int = 1
    simulate_processes: int = 1
    tls_cert: str = ""  # PEM files; both set: the gRPC port speaks TLS only
    tls_key: str = ""
    reuse_port: bool = False  # share the gRPC port with another process (SO_REUSEPORT)
    health_addr: str = ""  # a plaintext port serving only grpc.health.v1 (probes without TLS)
    max_connection_age_s: float = 0  # 0: none; else clients reconnect and re-resolve DNS
    lobby_seconds: float = 3600.0  # how long open seats wait for players before the game expires
    edge: EdgeLimits = field(default_factory=EdgeLimits)  # connections, timeouts, origins

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Config:
        env = dict(os.environ if env is None else env)
        c = cls()
        c.grpc_addr = env.get("ARBITER_GRPC_ADDR", c.grpc_addr)
        c.metrics_addr = env.get("ARBITER_METRICS_ADDR", c.metrics_addr)
        c.http_explicit = "ARBITER_HTTP_ADDR" in env
        c.http_addr = env.get("ARBITER_HTTP_ADDR", "127.0.0.1:8080")
        c.redis_url = env.get("ARBITER_REDIS_URL", "")
        c.broker_url = env.get("ARBITER_BROKER_URL", "")
        c.admin_token = env.get("ARBITER_ADMIN_TOKEN", "")
        c.data_dir = env.get("ARBITER_DATA_DIR", c.data_dir)
        c.fsync = env.get("ARBITER_FSYNC", "1") != "0"
        c.games = [g for g in env.get("ARBITER_GAMES", "").split(",") if g]
        c.max_concurrent_rpcs = int(env.get("ARBITER_MAX_CONCURRENT_RPCS", c.max_concurrent_rpcs))
        c.calls_per_client = int(env.get("ARBITER_CALLS_PER_CLIENT", CALLS_PER_CLIENT))
        c.max_watches = int(env.get("ARBITER_MAX_WATCHES", c.max_watches))
        c.max_plays = int(env.get("ARBITER_MAX_PLAYS", c.max_plays))
        c.streams_per_client = int(env.get("ARBITER_STREAMS_PER_CLIENT", c.streams_per_client))
        c.watches_per_game = int(env.get("ARBITER_WATCHES_PER_GAME", c.watches_per_game))
        c.client_watches_per_game = int(env.get("ARBITER_CLIENT_WATCHES_PER_GAME",
                                                c.client_watches_per_game))
        c.streams_per_seat = int(env.get("ARBITER_STREAMS_PER_SEAT", c.streams_per_seat))
        c.stream_behind = int(env.get("ARBITER_STREAM_BEHIND", c.stream_behind))
        c.rate_burst = float(env.get("ARBITER_RATE_BURST", c.rate_burst))
        c.rate_per_second = float(env.get("ARBITER_RATE_PER_SECOND", c.rate_per_second))
        c.command_rate = float(env.get("ARBITER_COMMAND_RATE", COMMAND_RATE))
        c.command_burst = float(env.get("ARBITER_COMMAND_BURST", COMMAND_BURST))
        c.seat_command_rate = float(env.get("ARBITER_SEAT_COMMAND_RATE", SEAT_COMMAND_RATE))
        c.seat_command_burst = float(env.get("ARBITER_SEAT_COMMAND_BURST", SEAT_COMMAND_BURST))
        c.command_queue_seconds = float(env.get("ARBITER_COMMAND_QUEUE_SECONDS",
                                                c.command_queue_seconds))
        c.trusted_proxies = env.get("ARBITER_TRUSTED_PROXIES", "")
        c.shared_limits = env.get("ARBITER_SHARED_LIMITS", "1") != "0"
        c.cpu_processes = int(env.get("ARBITER_CPU_PROCESSES", c.cpu_processes))
        c.cpu_queue = int(env.get("ARBITER_CPU_QUEUE", c.cpu_queue))
        c.simulate_max_games = int(env.get("ARBITER_SIMULATE_MAX_GAMES", c.simulate_max_games))
        c.simulate_at_once = int(env.get("ARBITER_SIMULATE_AT_ONCE", c.simulate_at_once))
        c.simulate_per_client = int(env.get("ARBITER_SIMULATE_PER_CLIENT",
                                            c.simulate_per_client))
        c.simulate_processes = int(env.get("ARBITER_SIMULATE_PROCESSES", c.simulate_processes))
        c.tls_cert = env.get("ARBITER_TLS_CERT", "")
        c.tls_key = env.get("ARBITER_TLS_KEY", "")
        c.reuse_port = env.get("ARBITER_GRPC_REUSE_PORT", "") == "1"
        c.health_addr = env.get("ARBITER_HEALTH_ADDR", "")
        c.max_connection_age_s = float(env.get("ARBITER_GRPC_MAX_CONNECTION_AGE", 0) or 0)
        c.lobby_seconds = float(env.get("ARBITER_LOBBY_SECONDS", c.lobby_seconds))
        c.edge = EdgeLimits.from_env(env)
        return c


# A person plays a command every few seconds; a script may play a whole game at full speed
# (a few hundred commands at once), then several games' seats from one address.
COMMAND_RATE, COMMAND_BURST = 50.0, 500.0  # per client
SEAT_COMMAND_RATE, SEAT_COMMAND_BURST = 20.0, 200.0  # per seat of a game
CALLS_PER_CLIENT = 200  # a client's calls in flight: a tenth of the server's


class ConfigError(Exception):
    """A configuration the server will not start with; the message is the sentence to show."""


MIN_ADMIN_TOKEN = 16
# Phrases that mark a token copied from an example rather than generated (compared lowercased,
# letters and digits only). Bare words ("admin", "secret", "password") are too short anyway.
PLACEHOLDER_WORDS = ("changeme", "changethis", "replaceme", "placeholder", "example",
                     "yourtoken", "yoursecret", "youradmintoken", "insertsecret")


def check_admin_token(token: str, grpc_addr: str, variable: str = "ARBITER_GRPC_ADDR"
                      ) -> None:
    """Refuse a token anyone could guess, and an exposed server without one. The sentences
    never repeat the token: it may be a real secret that is merely too short."""
    advice = (f"set it to a random value of at least {MIN_ADMIN_TOKEN} characters "
              "(e.g. the output of `openssl rand -hex 32`)")
    if not token:
        if listens_beyond_loopback(grpc_addr):
            raise ConfigError(f"ARBITER_ADMIN_TOKEN is empty while the server listens beyond "
                              f"this machine ({variable}={grpc_addr}); {advice}, or "
                              "listen on 127.0.0.1.")
        return
    if len(token) < MIN_ADMIN_TOKEN:
        raise ConfigError(f"ARBITER_ADMIN_TOKEN is shorter than {MIN_ADMIN_TOKEN} characters; "
                          f"{advice}.")
    letters = "".join(ch for ch in token.lower() if ch.isalnum())
    word = next((w for w in PLACEHOLDER_WORDS if w in letters), "")
    if word or len(set(token)) < 4:
        why = f"it contains {word!r}" if word else "it repeats a few characters"
        raise ConfigError(f"ARBITER_ADMIN_TOKEN looks like a placeholder ({why}); {advice}.")


def listens_beyond_loopback(addr: str) -> bool:
    """Whether a gRPC listen address reaches past this machine (0.0.0.0, ::, an interface's
    address, a name that resolves to one)."""
    if addr.startswith("unix:"):
        return False
    host = addr.rpartition(":")[0].strip("[]")
    if not host:
        return True  # ":50051" is every interface
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        return True  # cannot tell: assume the worst
    return not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in found)


def server_credentials(config: Config) -> grpc.ServerCredentials | None:
    """TLS credentials from ARBITER_TLS_CERT/ARBITER_TLS_KEY, or None for plaintext."""
    if not config.tls_cert and not config.tls_key:
        return None
    if not (config.tls_cert and config.tls_key):
        raise ConfigError("ARBITER_TLS_CERT and ARBITER_TLS_KEY go together: set both (PEM "
                          "files of the certificate chain and its private key) or neither.")
    pems = []
    for name, path in (("ARBITER_TLS_KEY", config.tls_key), ("ARBITER_TLS_CERT", config.tls_cert)):
        try:
            with open(path, "rb") as f:
                pems.append(f.read())
        except OSError as e:
            raise ConfigError(f"cannot read {name} ({path}): {e.strerror}.") from None
    return grpc.ssl_server_credentials([(pems[0], pems[1])])


def _bind_failure(what: str, addr: str, hint: str) -> ConfigError:
    """Why an address could not be bound, found by binding it once more without sharing."""
    host, _, port = addr.rpartition(":")
    reason = "the address cannot be bound"
    try:
        infos = socket.getaddrinfo(host.strip("[]") or None, int(port), type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
        family, _, _, _, sockaddr = infos[0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind(sockaddr)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            reason = "the port is already in use (another server?)"
        elif e.errno == errno.EADDRNOTAVAIL:
            reason = "the address is not one of this machine's"
        else:
            reason = e.strerror or str(e)
    except ValueError:
        reason = "it is not host:port"
    return ConfigError(f"cannot {what} on {addr}: {reason}{hint}.")


def listen(server: grpc.aio.Server, addr: str, credentials: grpc.ServerCredentials | None,
           hint: str = "") -> int:
    """Open the gRPC port, or say in a sentence why it cannot be opened."""
    try:
        if credentials is None:
            return server.add_insecure_port(addr)
        return server.add_secure_port(addr, credentials)
    except RuntimeError:
        raise _bind_failure("serve gRPC", addr, hint) from None


def open_store(config: Config) -> Store:
    if config.redis_url:
        from services.core.redis_store import RedisStore

        return RedisStore(config.redis_url)
    return MemoryStore(os.path.join(config.data_dir, "arbiter.aof") if config.data_dir else None,
                       fsync=config.fsync)


def in_process_ai(host: Host, game_id: str, version: int, seat: int) -> None:
    """Play an AI seat's turn on this event loop, right after the reply that led to it."""
    task = asyncio.get_running_loop().create_task(host.play_ai_turn(game_id, version, seat))
    _ai_tasks.add(task)
    task.add_done_callback(_ai_done)


_ai_tasks: set[asyncio.Task[Any]] = set()


def _ai_done(task: asyncio.Task[Any]) -> None:
    _ai_tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("AI turn failed", exc_info=task.exception())


# Health service names beside "" and each game's service. Liveness says the process runs and
# its event loop turns (the answer comes from that loop), nothing about Redis: restarting a
# server cures neither a hung master nor a lost network. Readiness says what the server can
# serve: SERVING while at least one of the store's masters answers, since each game lives on
# one master and the others' games are served meanwhile; every replica sees the same masters,
# so sending no traffic to one would not help the games of a hung master.
LIVENESS = "liveness"
READINESS = "readiness"


async def masters_answering(store: Any) -> tuple[int, int]:
    """How many of the store's masters answer a ping now, of how many (plain Redis: one).
    Each master is asked apart, so a hung one costs only its own answer."""
    if not getattr(store, "cluster", False):
        return (1 if await store.ping() else 0), 1
    from services.core.redis_store import unavailable

    async def answers(node: Any) -> bool:
        try:
            with unavailable():
                # Bounded here too: the client's own timeout covers each try, not its retries.
                await asyncio.wait_for(store.redis.ping(target_nodes=node), 2 * store.timeout)
        except (StoreUnavailable, TimeoutError):
            return False
        return True

    try:
        with unavailable():  # the client learns its nodes at its first use (once)
            await asyncio.wait_for(store.redis.initialize(), 2 * store.timeout)
    except (StoreUnavailable, TimeoutError):
        return 0, 1  # no node answers, so no master does
    primaries = store.redis.get_primaries()
    answered = await asyncio.gather(*(answers(node) for node in primaries))
    return sum(answered), len(primaries)


async def watch_store(store: Any, servicer: health.aio.HealthServicer, names: list[str],
                      every: float) -> None:
    """Readiness follows the store: `names` are SERVING while at least one of its masters
    answers a ping, NOT_SERVING while none does. A master that stops answering (or answers
    again) is logged. Ends when the store closes."""
    serving, last = True, (1, 1)
    while not store.closed:
        answering, total = await masters_answering(store)
        if store.closed:
            break
        if (answering, total) != last and 0 < answering < total:
            log.warning("%d of %d Redis masters do not answer: their games answer "
                        "UNAVAILABLE, the others' are served (readiness stays SERVING)",
                        total - answering, total)
        if answering == total and last[0] < last[1] and serving:
            log.warning("every Redis master answers again")
        last = (answering, total)
        if (answering > 0) != serving:
            serving = answering > 0
            status = health_pb2.HealthCheckResponse.SERVING if serving else \
                health_pb2.HealthCheckResponse.NOT_SERVING
            for n in names:
                await servicer.set(n, status)
            if serving:
                log.warning("the event store answers again: serving")
            else:
                log.error("the event store does not answer: readiness is NOT_SERVING")
        await asyncio.sleep(every)


def grpc_options(config: Config) -> list[tuple[str, Any]]:
    # gRPC turns SO_REUSEPORT on by default, which let a second server share the port silently.
    options: list[tuple[str, Any]] = [("grpc.so_reuseport", int(config.reuse_port))]
    if config.max_connection_age_s > 0:
        options.append(("grpc.max_connection_age_ms", int(config.max_connection_age_s * 1000)))
    return options + config.edge.grpc_options()


@dataclass(frozen=True)
class HttpTarget:
    """Where the HTTP gateway reaches the gRPC server (a socket only this user can open), the
    services it may call, and the folder that holds the socket."""

    address: str
    services: list[str]
    folder: str


SOCKET_FOLDER = re.compile(r"arbiter-http-(\d+)-\w+")


def private_socket_folder() -> str:
    """A new folder only this user can open, for the gateway's socket, named after this
    process; first, the folders that killed processes of this user left behind are removed."""
    base = tempfile.gettempdir()
    for name in os.listdir(base):
        found = SOCKET_FOLDER.fullmatch(name)
        path = os.path.join(base, name)
        try:
            if not found or os.stat(path).st_uid != os.getuid():
                continue
            os.kill(int(found[1]), 0)
        except ProcessLookupError:  # its process is gone
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass  # alive, or not ours to judge
    return tempfile.mkdtemp(prefix=f"arbiter-http-{os.getpid()}-")


class HttpServer:
    """The HTTP port: the gateway's routes and the console, on aiohttp."""

    def __init__(self, runner: Any, gateway: Any, folder: str, port: int,
                 listener: asyncio.AbstractServer, connections: Connections) -> None:
        self.runner, self.gateway, self.folder, self.port = runner, gateway, folder, port
        self.listener, self.connections = listener, connections

    async def stop(self) -> None:
        self.listener.close()
        await self.runner.cleanup()
        await self.gateway.close()
        shutil.rmtree(self.folder, ignore_errors=True)


async def start_http(config: Config, target: HttpTarget | None) -> HttpServer | None:
    """Serve HTTP on config.http_addr, calling the gRPC server at `target` (after its start).
    A port in use stops the server when ARBITER_HTTP_ADDR was set; at the default address
    the server goes on without HTTP, with a warning."""
    if target is None:
        return None
    from aiohttp import web

    from services.console import console_routes
    from services.core.http_gateway import Gateway

    folder = target.folder
    gateway = Gateway(target.address, target.services, config.edge,
                      loopback_only=not listens_beyond_loopback(config.http_addr))
    app = web.Application(client_max_size=MAX_HTTP_BODY)
    app.add_routes(console_routes())
    app.add_routes(gateway.routes())
    # A browser that leaves cancels its handler, and so its Watch or Play call. aiohttp's
    # keep-alive timeout also closes a connection whose request headers are not complete
    # that long after it opened or after its last answer (slow headers included).
    runner = web.AppRunner(app, access_log=None, handle_signals=False,
                           handler_cancellation=True, keepalive_timeout=config.edge.idle_seconds)
    await runner.setup()
    connections = Connections(config.edge.http_per_client,
                              config.edge.per_port(config.edge.http_total))
    addr = config.http_addr
    bind_host, _, port = addr.rpartition(":")
    try:
        # Not aiohttp's TCPSite: every connection is counted before aiohttp sees it.
        assert runner.server is not None
        listener = await asyncio.get_running_loop().create_server(
            connections.protocols(runner.server), bind_host.strip("[]") or None, int(port),
            reuse_port=config.reuse_port or None)  # as the gRPC port
    except (OSError, ValueError):
        await runner.cleanup()
        await gateway.close()
        shutil.rmtree(folder, ignore_errors=True)
        failure = _bind_failure("serve HTTP", addr, "; set ARBITER_HTTP_ADDR to a free one, "
                                "or to an empty value for no HTTP")
        if config.http_explicit:
            raise failure from None
        log.warning("%s The server goes on without HTTP.", failure)
        return None
    bound = listener.sockets[0].getsockname()[1] if listener.sockets else int(port)
    return HttpServer(runner, gateway, folder, bound, listener, connections)


MAX_HTTP_BODY = 4 * 1024 * 1024


def health_only_server(config: Config, servicer: health.aio.HealthServicer) -> grpc.aio.Server:
    """Plaintext grpc.health.v1 alone, for probes that cannot speak TLS (the kubelet's)."""
    server = grpc.aio.server(options=grpc_options(Config(reuse_port=config.reuse_port)))
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    listen(server, config.health_addr, None)
    return server


def start_metrics(addr: str) -> None:
    host, _, port = addr.rpartition(":")
    try:
        start_http_server(int(port), addr=host.strip("[]") or "0.0.0.0")
    except (OSError, ValueError):
        raise _bind_failure("serve /metrics", addr, "; set ARBITER_METRICS_ADDR to a free one"
                            ) from None


SHUTDOWN_GRACE_S = 5  # Acts take milliseconds; well within the 30 s Kubernetes gives
