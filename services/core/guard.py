"""What every call passes before its handler runs: a request body that parses, and for the
calls that create something, the caller's share of the server (a token bucket per client).

It is a server interceptor, so it covers every service alike (each game's, arbiter.v1 and
Simulate) without each handler repeating it.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc

from services.core.grpc_api import ADMIN_TOKEN, Rejected, _abort
from services.core.metrics import METRICS

log = logging.getLogger("arbiter")

# The calls that make the server hold more (a game, a log, a simulation's CPU).
LIMITED = frozenset({"CreateGame", "ImportLog", "ForkGame", "Simulate"})
MAX_CLIENTS = 100_000  # buckets kept; the least recently seen client is forgotten first


class TokenBuckets:
    """`burst` calls at once per client, refilled at `per_second`. A forgotten client comes
    back with a full bucket, so MAX_CLIENTS bounds memory, not fairness."""

    def __init__(self, burst: float, per_second: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.burst, self.per_second, self.clock = burst, per_second, clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, when

    def take(self, client: str) -> float:
        """0 if the client may go on (one token taken), else the seconds until it may."""
        now = self.clock()
        tokens, then = self._buckets.pop(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.per_second)
        wait = 0.0
        if tokens >= 1:
            tokens -= 1
        else:
            wait = (1 - tokens) / self.per_second
        self._buckets[client] = (tokens, now)
        while len(self._buckets) > MAX_CLIENTS:
            self._buckets.popitem(last=False)
        return wait


@dataclass(frozen=True)
class Undecodable:
    """A request body that is not the method's message."""

    error: str
    size: int


def _tolerant(parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def parse_or_mark(raw: bytes) -> Any:
        try:
            return parse(raw)
        except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError, and others
            return Undecodable(f"{type(e).__name__}: {str(e)[:200]}", len(raw))

    return parse_or_mark


def peer_address(peer: str) -> str:
    """The client's address without its port ("ipv4:10.0.0.1:5123" -> "ipv4:10.0.0.1"):
    one client opens many connections."""
    if peer.startswith(("ipv4:", "ipv6:")):
        return peer.rpartition(":")[0]
    return peer


class Guard(grpc.aio.ServerInterceptor):
    def __init__(self, buckets: TokenBuckets | None, admin_token: str = "") -> None:
        self.buckets, self.admin_token = buckets, admin_token

    def client_of(self, context: grpc.aio.ServicerContext) -> str:
        """Whose bucket a call draws from: the admin's identity for the admin token (its own
        bucket, wherever it calls from), else the peer's address. Other tokens are not
        identities here: anyone can send a made-up token, and a fresh one per call would
        otherwise mean a fresh bucket per call."""
        given = str(dict(context.invocation_metadata() or ()).get(ADMIN_TOKEN, ""))
        if self.admin_token and hmac.compare_digest(given.encode(), self.admin_token.encode()):
            return "identity:admin"
        return peer_address(context.peer())

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(details)
        if handler is None or handler.request_streaming or handler.request_deserializer is None:
            return handler
        method = str(details.method)  # "/package.Service/Method"
        service, _, name = method[1:].rpartition("/")
        limited = self.buckets is not None and name in LIMITED
        labels = ("server_stream" if handler.response_streaming else "unary", service, name)

        async def refusal(request: Any, context: grpc.aio.ServicerContext) -> Rejected | None:
            if isinstance(request, Undecodable):
                # One line, no traceback: a bad body is the client's fault, not the server's.
                log.warning("%s: the request is not a valid message (%d bytes, %s); answered "
                            "INVALID_ARGUMENT", method, request.size, request.error)
                return Rejected(grpc.StatusCode.INVALID_ARGUMENT, "BAD_REQUEST_BODY",
                                f"the request is not a valid {name} request: {request.error}")
            if limited:
                assert self.buckets is not None
                wait = self.buckets.take(self.client_of(context))
                if wait:
                    return Rejected(
                        grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED",
                        f"this client has used its share of {', '.join(sorted(LIMITED))} "
                        f"calls; retry in {wait:.1f} s", retry_after=wait)
            return None

        async def refuse(context: grpc.aio.ServicerContext, refused: Rejected) -> None:
            METRICS.rpc_started(*labels).inc()
            METRICS.rpc_handled(*labels, refused.code.name).inc()
            await _abort(context, refused)

        parse = _tolerant(handler.request_deserializer)
        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                refused = await refusal(request, context)
                if refused is not None:
                    await refuse(context, refused)
                return await inner(request, context)

            return handler._replace(request_deserializer=parse, unary_unary=unary)
        inner_stream = handler.unary_stream

        async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            refused = await refusal(request, context)
            if refused is not None:
                await refuse(context, refused)
            replies = inner_stream(request, context)
            if not hasattr(replies, "__aiter__"):
                await replies  # a handler that writes through its context (health's Watch)
                return
            async for reply in replies:
                yield reply

        return handler._replace(request_deserializer=parse, unary_stream=stream)
