"""The ports' edge: how many connections the server holds, for how long, and from whom.

A client that opens connections and sends nothing, or sends a request a byte at a time, must
not use up the process's file descriptors: every connection then counts against a cap (per
address on the HTTP port, in all on both ports), both caps stay below the descriptor limit with
a reserve for Redis, files and the gateway's own socket, and idle or slow connections are
closed. A connection past a cap is answered at once and closed, and the log says so at most
once a minute, however many arrive.
"""

from __future__ import annotations

import asyncio
import logging
import re
import resource
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("arbiter")

MAX_CONNECTIONS = 10_000  # per port, at most, however high the descriptor limit


@dataclass(frozen=True)
class EdgeLimits:
    """The settings (README.md's table); 0 for a cap means: from the descriptor limit."""

    idle_seconds: float = 15.0  # HTTP: no complete request headers for this long: closed
    read_seconds: float = 10.0  # HTTP: a request's body must arrive within this
    http_per_client: int = 64  # HTTP connections at once from one address; 0: no cap
    http_total: int = 0
    grpc_total: int = 0
    grpc_idle_seconds: float = 300.0  # a gRPC connection with no call for this long: closed
    grpc_handshake_seconds: float = 10.0
    fd_reserve: int = 256  # descriptors kept for Redis, files and the gateway's socket
    stream_messages: int = 16  # messages in one HTTP stream request body (Play: `open`)
    origins: tuple[str, ...] = field(default=())  # Origins allowed besides the server's own

    @classmethod
    def from_env(cls, env: dict[str, str]) -> EdgeLimits:
        d = cls()
        origins = tuple(o.strip().rstrip("/") for o in env.get("ARBITER_HTTP_ORIGINS", "")
                        .split(",") if o.strip())
        return cls(
            idle_seconds=float(env.get("ARBITER_HTTP_IDLE_SECONDS", d.idle_seconds)),
            read_seconds=float(env.get("ARBITER_HTTP_READ_SECONDS", d.read_seconds)),
            http_per_client=int(env.get("ARBITER_HTTP_MAX_CONNECTIONS_PER_CLIENT",
                                        d.http_per_client)),
            http_total=int(env.get("ARBITER_HTTP_MAX_CONNECTIONS", d.http_total)),
            grpc_total=int(env.get("ARBITER_GRPC_MAX_CONNECTIONS", d.grpc_total)),
            grpc_idle_seconds=float(env.get("ARBITER_GRPC_IDLE_SECONDS", d.grpc_idle_seconds)),
            grpc_handshake_seconds=float(env.get("ARBITER_GRPC_HANDSHAKE_SECONDS",
                                                 d.grpc_handshake_seconds)),
            fd_reserve=int(env.get("ARBITER_FD_RESERVE", d.fd_reserve)),
            stream_messages=int(env.get("ARBITER_HTTP_STREAM_MESSAGES", d.stream_messages)),
            origins=origins)

    def per_port(self, asked: int) -> int:
        """A port's connection cap: what was asked, else half of the descriptors left after
        the reserve; never more than that half (the other port has the other half). Under a
        limit too low for the reserve, a quarter of the limit."""
        limit = raise_descriptor_limit()
        share = max((limit - self.fd_reserve) // 2, limit // 4, 1)
        return min(asked, share) if asked > 0 else min(share, MAX_CONNECTIONS)

    def grpc_options(self) -> list[tuple[str, int]]:
        return [("grpc.max_connection_idle_ms", int(self.grpc_idle_seconds * 1000)),
                ("grpc.server_handshake_timeout_ms", int(self.grpc_handshake_seconds * 1000)),
                ("grpc.max_allowed_incoming_connections", self.per_port(self.grpc_total))]


def raise_descriptor_limit() -> int:
    """Raise the soft limit of open files to the hard one (the default soft limit, often
    1,024, is what the kernel allows without asking); the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass  # keep the soft limit; the caps follow it
    return soft


class Sparse(logging.Filter):
    """Lets one record of a kind through per `seconds`, and says how many of that kind it held
    back: a flood of refusals or of "Too many open files" must not write a line per attempt.
    A record's kind is its message up to the first parenthesis, angle bracket or line break,
    digits left out: asyncio names the failing callback or socket (with its address) there."""

    def __init__(self, seconds: float = 60.0) -> None:
        super().__init__()
        self.seconds = seconds
        self.last: dict[str, float] = {}
        self.held: Counter[str] = Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = re.sub(r"\d", "", re.split(r"[(<\n]", str(record.msg), maxsplit=1)[0])
        now = time.monotonic()
        if now - self.last.get(kind, -self.seconds) < self.seconds:
            self.held[kind] += 1
            return False
        self.last[kind] = now
        if self.held[kind]:
            record.msg = f"{record.msg} ({self.held.pop(kind)} more like it in the last " \
                         f"{self.seconds:.0f} s)"
        return True


# Refusals and accept failures are logged through these, each at most once a minute.
refusals = logging.getLogger("arbiter.edge")
refusals.addFilter(Sparse())
# asyncio reports an accept() that fails for want of descriptors on every retry.
logging.getLogger("asyncio").addFilter(Sparse())


def _answer(status: str, reason: str) -> bytes:
    body = reason.encode() + b"\n"
    return (f"HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


class Connections:
    """The HTTP port's connections, counted per address and in all. `protocols` wraps
    aiohttp's protocol factory: a connection past a cap is answered and closed before
    aiohttp sees it."""

    def __init__(self, per_client: int, total: int) -> None:
        self.per_client, self.total = per_client, total
        self.by_address: Counter[str] = Counter()
        self.open = 0

    def protocols(self, make: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        return lambda: _Counted(self, make())

    def admit(self, address: str) -> bytes | None:
        """None, counting the connection in; else the answer that refuses it."""
        if self.total and self.open >= self.total:
            refusals.warning("HTTP: a connection was refused: %d are open, the limit "
                             "(ARBITER_HTTP_MAX_CONNECTIONS)", self.total)
            return _answer("503 Service Unavailable",
                           f"the server holds {self.total} connections, its limit; retry later")
        if self.per_client and self.by_address[address] >= self.per_client:
            refusals.warning("HTTP: a connection was refused: its address has %d open, the "
                             "limit (ARBITER_HTTP_MAX_CONNECTIONS_PER_CLIENT)", self.per_client)
            return _answer("429 Too Many Requests",
                           f"this address holds {self.per_client} connections, its limit; "
                           "close some or reuse them")
        self.by_address[address] += 1
        self.open += 1
        return None

    def release(self, address: str) -> None:
        self.open -= 1
        self.by_address[address] -= 1
        if self.by_address[address] <= 0:
            del self.by_address[address]


class _Counted(asyncio.Protocol):
    """aiohttp's protocol for one connection, counted while it is open."""

    def __init__(self, connections: Connections, inner: Any) -> None:
        self.connections, self.inner = connections, inner
        self.address: str | None = None  # set once admitted

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) else "unknown"
        refusal = self.connections.admit(address)
        if refusal is not None:
            assert isinstance(transport, asyncio.Transport)
            transport.write(refusal)
            transport.close()
            return
        self.address = address
        self.inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.address is not None:
            self.connections.release(self.address)
            self.address = None
            self.inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.address is not None:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.address is not None else None

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()
