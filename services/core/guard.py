"""The parts of what a call passes before its handler runs (grpc_api's `Admission`): a body
that parses, and for the calls that create something, the caller's share of the server (a
token bucket per client)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


def tolerant(parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
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
