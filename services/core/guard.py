"""The parts of what a call passes before its handler runs (grpc_api's `Admission`): a body
that parses, the client it comes from (behind trusted proxies: the address they forwarded),
and its share of the server: token buckets per client for the calls that create something,
and per client and per seat for commands (Act, and each command of a Play stream).

With the store on Redis the buckets live there, so that every replica draws from one budget
per client; a Redis that fails is not a reason to refuse or admit everything, so each process
then falls back to buckets of its own for a while (LOCAL_SECONDS).
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import unquote

log = logging.getLogger("arbiter")

# The calls that make the server hold more (a game, a log, a simulation's CPU).
LIMITED = frozenset({"CreateGame", "ImportLog", "ForkGame", "Simulate"})
MAX_CLIENTS = 100_000  # buckets kept; the least recently seen client is forgotten first


class Take(NamedTuple):
    granted: bool  # a token is the caller's (after `wait`)
    wait: float  # granted: seconds until the token is due; else: until a retry may pass


class TokenBuckets:
    """`burst` calls at once per client, refilled at `per_second`. With `queue` seconds, a
    call past the burst may also reserve a later token (the bucket goes into debt up to
    `queue * per_second`) and is told how long to wait for it: a client over its rate is
    slowed to it instead of refused, as long as its queue is not full. A forgotten client comes
    back with a full bucket, so MAX_CLIENTS bounds memory, not fairness."""

    def __init__(self, burst: float, per_second: float, queue: float = 0.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.burst, self.per_second, self.queue, self.clock = burst, per_second, queue, clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, when

    def take(self, client: str) -> Take:
        """A token, and how long to wait for it (0: go now); or none (the queue is full), and
        how long until the client may try again."""
        now = self.clock()
        tokens, then = self._buckets.pop(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.per_second)
        floor = 1 - self.queue * self.per_second  # the fewest tokens a reservation needs
        granted = tokens >= floor
        if granted:
            tokens -= 1
        wait = max(0.0, -tokens) / self.per_second if granted else \
            (floor - tokens) / self.per_second
        self._buckets[client] = (tokens, now)
        while len(self._buckets) > MAX_CLIENTS:
            self._buckets.popitem(last=False)
        return Take(granted, wait)


# A bucket in Redis: a hash of (tokens, when) on Redis's own clock, so that replicas whose
# clocks differ still agree, kept only while it is not full again.
TAKE = """
local burst, rate, queue = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local held = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(held[1]) or burst
local at = tonumber(held[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local floor = 1 - queue * rate
local granted, wait = 0, 0
if tokens >= floor then
  tokens = tokens - 1
  granted, wait = 1, math.max(0, -tokens) / rate
else
  wait = (floor - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 1000)
return {granted, tostring(wait)}
"""
LOCAL_SECONDS = 5.0  # after a Redis failure, how long buckets stay in this process


class Limit:
    """One kind of bucket (creations, a client's commands, a seat's commands): in Redis when
    given one, else (and while Redis fails) in this process."""

    def __init__(self, kind: str, burst: float, per_second: float, redis: Any = None,
                 queue: float = 0.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.kind, self.burst, self.per_second, self.queue = kind, burst, per_second, queue
        self.local = TokenBuckets(burst, per_second, queue, clock)
        self.redis, self.clock = redis, clock
        self._take = redis.register_script(TAKE) if redis is not None else None
        self._local_until = 0.0

    async def take(self, key: str) -> Take:
        """As TokenBuckets.take."""
        if self._take is not None and self.clock() >= self._local_until:
            try:
                granted, wait = await self._take(keys=[f"arbiter:rate:{self.kind}:{key}"],
                                                 args=[self.burst, self.per_second, self.queue])
                return Take(bool(granted), float(wait))
            except Exception as e:  # noqa: BLE001 - any Redis failure: timeout, refused, moved
                self._local_until = self.clock() + LOCAL_SECONDS
                log.warning("rate limits (%s): Redis failed (%s); this process keeps its own "
                            "buckets for %.0f s", self.kind, type(e).__name__, LOCAL_SECONDS)
        return self.local.take(key)


def limit(kind: str, burst: float, per_second: float, redis: Any = None, queue: float = 0.0
          ) -> Limit | None:
    """A Limit, or None for a limit turned off (a burst or a rate of 0)."""
    return Limit(kind, burst, per_second, redis, queue) \
        if burst > 0 and per_second > 0 else None


def seat_key(game_id: str, token: str, admin: bool, seat: int | None) -> str:
    """Whose command budget a command draws from within its game: its seat token's (hashed:
    keys may be seen in Redis), or the admin's seat."""
    who = f"admin:{seat}" if admin else hashlib.sha256(token.encode()).hexdigest()[:24]
    return f"{game_id[:128]}:{who}"  # (the id is checked after the rate: bound the key)


# ---- the real client behind trusted proxies ----------------------------------------------

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def networks(text: str) -> tuple[Network, ...]:
    """ARBITER_TRUSTED_PROXIES: comma-separated addresses or CIDRs. ValueError names the bad
    one."""
    out = []
    for item in (i.strip() for i in text.split(",")):
        if item:
            try:
                out.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(f"ARBITER_TRUSTED_PROXIES: {item!r} is not an address or a "
                                 "CIDR (e.g. 10.0.0.0/8)") from None
    return tuple(out)


# Pure functions of a string, asked on every call: a connection's peer repeats, so a bounded
# cache saves parsing it with ipaddress each time (a client churning addresses only evicts).
@functools.lru_cache(maxsize=4096)
def address_key(address: str) -> str | None:
    """'ipv4:1.2.3.4' or 'ipv6:[::1]' (as peer_address gives) from an address as proxies
    write it (with or without a port, IPv6 in brackets or not); None if it is not one."""
    text = unquote(address).strip().strip('"')
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:  # an IPv4 address and a port
        text = text.partition(":")[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return f"ipv4:{ip}" if ip.version == 4 else f"ipv6:[{ip}]"


def forwarded_chain(metadata: Iterable[tuple[str, Any]]) -> list[str]:
    """The addresses a request passed through, the client first: every x-forwarded-for
    value in order, else the `for=` of every `forwarded` element."""
    pairs = [(k.lower(), str(v)) for k, v in metadata]
    chain = [a for k, v in pairs if k == "x-forwarded-for" for a in v.split(",")]
    if not chain:
        for k, v in pairs:
            if k == "forwarded":
                for element in v.split(","):
                    for param in element.split(";"):
                        name, _, value = param.strip().partition("=")
                        if name.lower() == "for":
                            chain.append(value)
    return [a.strip() for a in chain if a.strip()]


def real_client(chain: Sequence[str], trusted: Sequence[Network]) -> str | None:
    """The client behind the proxies: the last address of the chain that is not a trusted
    proxy (each proxy appends the address it was called from, so what lies left of an
    untrusted one is whatever the client wrote). None if the chain says nothing usable."""
    for address in reversed(chain):
        key = address_key(address)
        if key is None:
            return None  # a proxy we trust wrote no address: believe nothing further left
        ip = ipaddress.ip_address(key.partition(":")[2].strip("[]"))
        if not any(ip in net for net in trusted):
            return key
    return address_key(chain[0]) if chain else None


@functools.lru_cache(maxsize=4096)
def trusted_peer(peer: str, trusted: tuple[Network, ...]) -> bool:
    key = address_key(peer.partition(":")[2]) if peer.startswith(("ipv4:", "ipv6:")) else None
    if key is None:
        return False
    ip = ipaddress.ip_address(key.partition(":")[2].strip("[]"))
    return any(ip in net for net in trusted)


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
