"""gRPC: one generic adapter serves every game's `arbiter.<game>.v1.Game`, plus `arbiter.v1`.

Every game package has the same verbs and envelope messages (docs/adding-a-game.md), so the
handlers below are written once. Domain errors become status codes with google.rpc details:
ErrorInfo (a stable reason), BadRequest (the field), and for stale versions the current one.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import grpc
from arbiter.v1 import arbiter_pb2 as apb
from google.protobuf import any_pb2, duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc._cython import cygrpc  # type: ignore[attr-defined]
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from services.core import log as gamelog
from services.core.decider import Game, MalformedCommand, RuleError, Seat
from services.core.guard import (
    LIMITED,
    Limit,
    Network,
    Take,
    Undecodable,
    forwarded_chain,
    peer_address,
    real_client,
    seat_key,
    tolerant,
    trusted_peer,
)
from services.core.host import SERVER_COMMAND_IDS, Host
from services.core.metrics import METRICS
from services.core.offload import Busy
from services.core.reads import (
    Caller,
    ForkHidden,
    NotFound,
    PermissionDenied,
    StaleVersion,
    Unauthenticated,
)
from services.core.store import StoreUnavailable
from services.core.streams import Full, StreamSlots
from services.core.table import Ended, Reset, Subscriber, Table, seat_event

log = logging.getLogger("arbiter")
DOMAIN = "arbiter.dev"
SEAT_TOKEN = "x-seat-token"
ADMIN_TOKEN = "x-admin-token"
ADMIN_CLIENT = "identity:admin"  # the client the admin token is, wherever it calls from
MAX_COMMAND_ID = 128
MAX_GAME_ID = 128


class Rejected(Exception):
    """A request the adapter itself refuses (bad field, bad log)."""

    def __init__(self, code: grpc.StatusCode, reason: str, message: str, field: str = "",
                 metadata: dict[str, str] | None = None, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.field, self.metadata = field, metadata or {}
        self.retry_after = retry_after  # seconds; sent as google.rpc.RetryInfo


def _status_of(error: Exception) -> Rejected | None:
    """Map a domain error to the status a client can act on."""
    S = grpc.StatusCode
    if isinstance(error, Rejected):
        return error
    if isinstance(error, MalformedCommand):
        return Rejected(S.INVALID_ARGUMENT, error.code, error.message, error.field or "command")
    if isinstance(error, RuleError):
        return Rejected(S.FAILED_PRECONDITION, error.code, error.message)
    if isinstance(error, StaleVersion):
        return Rejected(S.ABORTED, "STALE_VERSION",
                        f"the game is at version {error.current_version}; read it and retry",
                        "expected_version", {"current_version": str(error.current_version)})
    if isinstance(error, NotFound):
        return Rejected(S.NOT_FOUND, "GAME_NOT_FOUND", str(error), "game_id")
    if isinstance(error, Unauthenticated):
        return Rejected(S.UNAUTHENTICATED, "SEAT_TOKEN_MISSING", str(error))
    if isinstance(error, ForkHidden):
        return Rejected(S.PERMISSION_DENIED, "FORK_OF_RUNNING_GAME", str(error))
    if isinstance(error, PermissionDenied):
        return Rejected(S.PERMISSION_DENIED, "SEAT_FORBIDDEN", str(error))
    if isinstance(error, (StoreUnavailable, RedisConnectionError, RedisTimeoutError)):
        return Rejected(S.UNAVAILABLE, "STORE_UNAVAILABLE",
                        "the event store cannot be reached; retry with the same command id")
    if isinstance(error, Reset):
        return Rejected(S.UNAVAILABLE, "STREAM_RESET", str(error))
    if isinstance(error, Ended):
        return Rejected(S.UNAVAILABLE, "STREAM_ENDED", str(error))
    if isinstance(error, Busy):
        return Rejected(S.RESOURCE_EXHAUSTED, "BUSY", str(error), retry_after=1.0)
    if isinstance(error, gamelog.BadLog):
        return Rejected(S.INVALID_ARGUMENT, "BAD_LOG", f"line {error.line}: {error.reason}",
                        "lines", {"line": str(error.line), "version": str(error.version)})
    return None


MAX_MESSAGE = 1000  # a status rides in metadata (16 KB at most), and may quote the request


def _status(r: Rejected) -> status_pb2.Status:
    """The google.rpc.Status of a refusal: ErrorInfo (the reason), BadRequest (the field)."""
    if len(r.message) > MAX_MESSAGE:
        r.message = r.message[:MAX_MESSAGE] + "..."
    details = [error_details_pb2.ErrorInfo(reason=r.reason, domain=DOMAIN, metadata=r.metadata)]
    if r.field:
        details.append(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=r.field, description=r.message)]))
    if r.retry_after > 0:
        delay = duration_pb2.Duration()
        delay.FromNanoseconds(int(r.retry_after * 1e9))
        details.append(error_details_pb2.RetryInfo(retry_delay=delay))
    status = status_pb2.Status(code=getattr(code_pb2, r.code.name), message=r.message)
    for d in details:
        packed = any_pb2.Any()
        packed.Pack(d)
        status.details.append(packed)
    return status


async def _abort(context: grpc.aio.ServicerContext, r: Rejected) -> None:
    status = _status(r)
    trailer = (("grpc-status-details-bin", status.SerializeToString()),)
    await context.abort(r.code, r.message, trailing_metadata=trailer)


def _refusal(error: Exception, what: str) -> Rejected:
    """The status a failed call ends with; a bug's detail goes to the log, never to the client
    (it may name internal addresses, or state the caller must not see)."""
    rejected = _status_of(error)
    if rejected is None:
        log.error("%s failed", what, exc_info=error)
        rejected = Rejected(grpc.StatusCode.INTERNAL, "INTERNAL",
                            "the server failed on this call; the error is in its log")
    return rejected


def _caller(context: grpc.aio.ServicerContext, seat: int | None) -> Caller:
    md = dict(context.invocation_metadata() or ())
    return Caller(token=str(md.get(SEAT_TOKEN, "")), admin_token=str(md.get(ADMIN_TOKEN, "")),
                  seat=seat)


def _opt_seat(request: Any) -> int | None:
    return request.seat if request.HasField("seat") else None


def _need_game_id(game_id: str) -> None:
    if not game_id:
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "MISSING_FIELD", "game_id is required",
                       "game_id")
    if len(game_id) > MAX_GAME_ID:
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "GAME_ID_TOO_LONG",
                       f"game_id is longer than {MAX_GAME_ID} characters", "game_id")


class InFlight:
    """Counts the RPCs being handled, in all and per client; past a limit, new ones are
    refused (RESOURCE_EXHAUSTED).

    Refusing early with a reason beats queueing until every caller times out. Calls and Watch
    streams are counted apart: idle watchers must not lock players out. A client's share keeps
    one client's slow or held calls (a command waiting for its turn) from filling the server's.
    """

    def __init__(self, limit: int, what: str = "calls", admission: Admission | None = None,
                 per_client: int = 0) -> None:
        self.limit, self.what, self.now, self.per_client = limit, what, 0, per_client
        self.clients: Counter[str] = Counter()
        # What a call must pass before its handler runs (a body that parsed, a rate limit).
        self.admission = admission or Admission(None)

    def enter(self, context: grpc.aio.ServicerContext) -> str:
        """Count the call in; the client it is counted for ("" without a share per client)."""
        if self.now >= self.limit:
            raise Rejected(grpc.StatusCode.RESOURCE_EXHAUSTED, "OVERLOADED",
                           f"the server is handling {self.now} {self.what}, its limit; "
                           "retry shortly")
        client = self.admission.client_of(context) if self.per_client else ""
        if client and self.clients[client] >= self.per_client:
            raise Rejected(grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_CALLS",
                           f"this client has {self.per_client} calls in flight, its share; "
                           "wait for their answers")
        self.now += 1
        if client:
            self.clients[client] += 1
        return client

    def leave(self, client: str) -> None:
        self.now -= 1
        if client:
            self.clients[client] -= 1
            if self.clients[client] <= 0:
                del self.clients[client]


class Admission:
    """What a call must pass before its handler runs (checked by grpc_api's `_Call`): a body
    that parsed, and its client's share: for the calls in LIMITED, `creations`; for each
    command (Act, Play's), `commands` per client and `seat_commands` per seat."""

    def __init__(self, creations: Limit | None, admin_token: str = "",
                 commands: Limit | None = None, seat_commands: Limit | None = None,
                 trusted_proxies: Sequence[Network] = (), gateway: str = "") -> None:
        self.creations, self.admin_token = creations, admin_token
        self.commands, self.seat_commands = commands, seat_commands
        self.trusted_proxies = tuple(trusted_proxies)
        self.gateway = gateway  # the HTTP gateway's socket ("unix:..."); empty: no gateway

    def _admin(self, md: dict[str, Any]) -> bool:
        given = str(md.get(ADMIN_TOKEN, ""))
        return bool(self.admin_token) and hmac.compare_digest(given.encode(),
                                                              self.admin_token.encode())

    def client_of(self, context: grpc.aio.ServicerContext) -> str:
        """Whose bucket a call draws from: the admin's identity for the admin token (its own
        bucket, wherever it calls from), else the client's address: the peer's, or behind a
        trusted proxy (the HTTP gateway's socket, ARBITER_TRUSTED_PROXIES) the address it
        forwarded. Other tokens are not identities here: anyone can send a made-up token, and
        a fresh one per call would otherwise mean a fresh bucket per call."""
        pairs = tuple(context.invocation_metadata() or ())
        md = dict(pairs)
        if self._admin(md):
            return ADMIN_CLIENT
        peer = context.peer()
        from_gateway = peer.startswith("unix:") and bool(self.gateway)
        if from_gateway or trusted_peer(peer, self.trusted_proxies):
            forwarded = real_client(forwarded_chain(pairs), self.trusted_proxies)
            if forwarded:
                return forwarded
        return peer_address(peer)

    async def check(self, service: str, method: str, request: Any,
                    context: grpc.aio.ServicerContext) -> None:
        """Raise the refusal of a call whose body did not parse or whose client is over its
        share."""
        refuse_undecodable(service, method, request)
        if self.creations is not None and method in LIMITED:
            limit, what = self.creations, (f"this client has used its share of "
                                           f"{', '.join(sorted(LIMITED))} calls")
            await _admit([(limit, what, await limit.take(self.client_of(context)))])

    async def command(self, context: grpc.aio.ServicerContext, game_id: str,
                      seat: int | None) -> None:
        """Wait for the command's turn within its client's and its seat's rates (a queue of
        ARBITER_COMMAND_QUEUE_SECONDS), or raise RESOURCE_EXHAUSTED past the queue."""
        asked: list[tuple[Limit, str, str]] = []
        if self.commands is not None:
            asked.append((self.commands, self.client_of(context),
                          "this client has used its share of commands"))
        if self.seat_commands is not None:
            md = dict(context.invocation_metadata() or ())
            key = seat_key(game_id, str(md.get(SEAT_TOKEN, "")), self._admin(md), seat)
            asked.append((self.seat_commands, key, "this seat has used its share of commands"))
        # On Redis: two round trips at once, not one after the other.
        taken = await asyncio.gather(*(limit.take(key) for limit, key, _ in asked))
        await _admit([(limit, what, t) for (limit, _, what), t in zip(asked, taken, strict=True)])


# How long a refusal by rate is held before it is answered, however soon a retry may pass: a
# client that calls in a loop is slowed down instead of spinning the server, since each
# refusal costs a whole call.
HOLD_SECONDS = 1.0


async def _admit(taken: list[tuple[Limit, str, Take]]) -> None:
    """Sleep until every token taken is due; or, when a bucket refused, hold the refusal and
    raise it."""
    refused = [(limit, what, t.wait) for limit, what, t in taken if not t.granted]
    if refused:
        limit, what, retry = max(refused, key=lambda r: r[2])
        await asyncio.sleep(HOLD_SECONDS)
        retry = max(retry - HOLD_SECONDS, 0.01)
        raise Rejected(grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED",
                       f"{what}; retry in {retry:.2f} s", metadata={"limit": limit.kind},
                       retry_after=retry)
    wait = max((t.wait for _, _, t in taken), default=0.0)
    if wait:
        await asyncio.sleep(wait)


def refuse_undecodable(service: str, method: str, request: Any) -> None:
    if isinstance(request, Undecodable):
        # One line, no traceback: a bad body is the client's fault, not the server's.
        log.warning("/%s/%s: the request is not a valid message (%d bytes, %s); answered "
                    "INVALID_ARGUMENT", service, method, request.size, request.error)
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "BAD_REQUEST_BODY",
                       f"the request is not a valid {method} request: {request.error}")


Unary = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
Outgoing = Callable[[Any, grpc.aio.ServicerContext, "_Call"], Awaitable[None]]
Session = Callable[[grpc.aio.ServicerContext, "_Call"], Awaitable[None]]


# A write the transport could not carry: the client hung up (gRPC may report the write's
# failure before `context.cancelled()` turns true, and ignores it itself in that case).
_WriteFailed: type[Exception] = cygrpc.ExecuteBatchError


class _Call:
    """One RPC as the server sees it: counted, limited, timed, and its errors mapped to
    status codes with details. Used as `async with _Call(...)` around a handler's body."""

    def __init__(self, labels: tuple[str, str, str], context: grpc.aio.ServicerContext,
                 in_flight: InFlight | None) -> None:
        self.labels, self.context, self.in_flight = labels, context, in_flight
        self.entered = False
        self.code = "OK"
        self.t0 = 0.0
        self.client = ""  # whose share of calls in flight this call holds

    async def __aenter__(self) -> _Call:
        METRICS.rpc_started(*self.labels).inc()
        METRICS.msg_received(*self.labels).inc()
        self.t0 = time.perf_counter()
        self.code = "OK"
        try:
            if self.in_flight is not None:  # (streams take their slot once they know the seat)
                self.client = self.in_flight.enter(self.context)
        except Rejected as refused:  # the caller aborts with it; count it here
            self.code = refused.code.name
            self._done()
            raise
        self.entered = True
        return self

    def _done(self) -> None:
        METRICS.rpc_handled(*self.labels, self.code).inc()
        METRICS.rpc_seconds(*self.labels).observe(time.perf_counter() - self.t0)

    def sent(self) -> None:
        METRICS.msg_sent(*self.labels).inc()

    async def __aexit__(self, kind: Any, error: BaseException | None, tb: Any) -> bool:
        if self.entered and self.in_flight is not None:
            self.in_flight.leave(self.client)
        try:
            if error is None:
                return False
            if isinstance(error, (GeneratorExit, asyncio.CancelledError, _WriteFailed)) or \
                    self.context.cancelled():  # the client hung up: whatever failed after
                self.code = "CANCELLED"
                return isinstance(error, Exception)  # nobody to answer
            if not isinstance(error, Exception) or isinstance(error, grpc.aio.AbortError):
                self.code = "UNKNOWN"  # the status is already set, or the process is ending
                return False
            rejected = _refusal(error, self.labels[2])
            self.code = rejected.code.name
            await _abort(self.context, rejected)  # raises: the status goes to the client
            return False
        finally:
            self._done()


def guarded_unary(service: str, method: str, fn: Unary, in_flight: InFlight) -> Unary:
    """`fn` as a unary method of this server: admitted (rate, in-flight limit) or refused
    with a reason, measured, and its errors answered as statuses with their reasons."""
    labels = ("unary", service, method)

    async def handler(request: Any, context: grpc.aio.ServicerContext) -> Any:
        call = _Call(labels, context, in_flight)
        try:
            async with call:
                await in_flight.admission.check(service, method, request, context)
                reply = await fn(request, context)
                call.sent()
                return reply
        except Rejected as refused:  # over the in-flight limit: nothing ran
            await _abort(context, refused)

    return handler


def _outgoing(service: str, method: str, fn: Outgoing) -> Any:
    """A server stream written through its context (Watch); its slot is taken inside."""
    labels = ("server_stream", service, method)

    async def handler(request: Any, context: grpc.aio.ServicerContext) -> None:
        call = _Call(labels, context, None)
        try:
            async with call:
                await fn(request, context, call)
        except Rejected as refused:
            await _abort(context, refused)

    return handler


def _session(service: str, method: str, fn: Session) -> Any:
    """A bidirectional stream read and written through its context (Play)."""
    labels = ("bidi_stream", service, method)

    async def handler(request_iterator: Any, context: grpc.aio.ServicerContext) -> None:
        call = _Call(labels, context, None)
        try:
            async with call:
                await fn(context, call)
        except Rejected as refused:
            await _abort(context, refused)

    return handler


# ---- a game's service ---------------------------------------------------------------------


@dataclass
class GameApi:
    """What a game's handlers are given: the host, the game, and the stream slots."""

    host: Host
    game: Game
    streams: StreamSlots
    admission: Admission  # names the client a stream's share is counted for

    @property
    def service(self) -> str:
        return f"arbiter.{self.game.name}.v1.Game"


async def create_game(api: GameApi, request: Any, context: grpc.aio.ServicerContext) -> Any:
    game = api.game
    game.check_seat_count(len(request.seats))  # before any work
    for i, s in enumerate(request.seats):
        if s.kind not in apb.SeatKind.values():
            raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_SEAT_KIND",
                           f"seat {i}: no seat kind {s.kind}; use HUMAN, AI or OPEN", "seats")
    seats = [Seat(s.name, "open") if s.kind == apb.OPEN else seat
             for s, seat in zip(request.seats, gamelog.seats_from_pb(request.seats),
                                strict=True)]
    made = await api.host.create(game.name, seats, request.options)
    return apb.CreateGameResponse(
        game_id=made.game_id, seed_commitment=made.commitment, version=made.version,
        tokens=[apb.SeatToken(seat=s, token=t) for s, t in sorted(made.tokens.items())],
        invitations=[apb.Invitation(seat=s, code=c) for s, c in sorted(made.invitations.items())])


async def load_table(api: GameApi, game_id: str, context: grpc.aio.ServicerContext,
                     fresh: bool = False) -> Table:
    """The game's table, which must be one of this service's: another game's id is not found
    here (its rules would judge a command meant for these). A fork of a running game is the
    admin's alone."""
    _need_game_id(game_id)
    table = await api.host.tables.load(game_id, fresh)
    if table.game is not api.game:
        raise NotFound(f"game {game_id!r} is a {table.game.name} game, not {api.game.name}; "
                       f"use arbiter.{table.game.name}.v1.Game")
    await api.host.check_visible(table, _caller(context, None))
    return table


def check_command(request: Any) -> int | None:
    """Act's own checks of a request; its expected version (None: unset)."""
    _need_game_id(request.game_id)
    if len(request.command_id) > MAX_COMMAND_ID:
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "COMMAND_ID_TOO_LONG",
                       f"command_id is longer than {MAX_COMMAND_ID} characters", "command_id")
    if request.command_id.startswith(SERVER_COMMAND_IDS):
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "COMMAND_ID_RESERVED",
                       f"command ids starting with {', '.join(SERVER_COMMAND_IDS)} are the "
                       "server's own (bots and deadlines); choose another", "command_id")
    return request.expected_version if request.HasField("expected_version") else None


async def act(api: GameApi, request: Any, context: grpc.aio.ServicerContext) -> Any:
    await api.admission.command(context, request.game_id, _opt_seat(request))
    expected = check_command(request)
    table = await load_table(api, request.game_id, context)
    result = await api.host.act_at(table, _caller(context, _opt_seat(request)),
                                   request.command, request.command_id, expected)
    events = [shown for e in result.events
              if (shown := seat_event(api.game, e, e.version, result.seat)) is not None]
    view = result.table.view(result.seat, result.state, result.state_version)
    return api.game.pb.ActResponse(version=result.version, events=events, view=view)


async def get_view(api: GameApi, request: apb.GetViewRequest,
                   context: grpc.aio.ServicerContext) -> Any:
    table = await load_table(api, request.game_id, context, fresh=True)
    return table.view(api.host.seat_of(table, _caller(context, _opt_seat(request)), False))


async def legal(api: GameApi, request: apb.ListLegalActionsRequest,
                context: grpc.aio.ServicerContext) -> Any:
    table = await load_table(api, request.game_id, context, fresh=True)
    seat = api.host.seat_of(table, _caller(context, _opt_seat(request)), acting=True)
    return table.legal_actions(seat)


@contextlib.contextmanager
def stream_slot(api: GameApi, context: grpc.aio.ServicerContext, game_id: str,
                seat: int | None) -> Iterator[None]:
    """Hold a stream's slot while it runs; RESOURCE_EXHAUSTED with the reason if none is free."""
    try:
        with api.streams.slot(api.admission.client_of(context), game_id, seat):
            yield
    except Full as full:
        raise _no_slot(full) from None


def check_stream_slot(api: GameApi, context: grpc.aio.ServicerContext, game_id: str,
                      seat: int | None) -> None:
    """Refuse now a stream that would find no slot (before reading anything for it)."""
    try:
        api.streams.check(api.admission.client_of(context), game_id, seat)
    except Full as full:
        raise _no_slot(full) from None


def _no_slot(full: Full) -> Rejected:
    return Rejected(grpc.StatusCode.RESOURCE_EXHAUSTED, full.reason, full.message)


async def watch(api: GameApi, request: apb.WatchRequest, context: grpc.aio.ServicerContext,
                call: _Call) -> None:
    refuse_undecodable(api.service, "Watch", request)
    caller = _caller(context, _opt_seat(request))
    if not caller.token and not caller.admin_token:
        # Surely a spectator: its share is checked before the game is read, so that a flood
        # of refused Watch calls costs no store read.
        check_stream_slot(api, context, request.game_id, None)
    table = await load_table(api, request.game_id, context, fresh=True)
    seat = api.host.seat_of(table, caller, acting=False)
    with stream_slot(api, context, table.game_id, seat):
        sub = await api.host.tables.subscribe(table, seat, False, request.from_version)
        try:
            # Headers now: a client waiting for them knows the stream is following the game.
            await context.send_initial_metadata(())
            await send_until_over(context, call, sub, asyncio.Lock())
        finally:
            api.host.tables.unsubscribe(table, sub)


async def play(api: GameApi, context: grpc.aio.ServicerContext, call: _Call) -> None:
    first = await context.read()
    refuse_undecodable(api.service, "Play", first)
    if first is grpc.aio.EOF or first.WhichOneof("kind") != "open":
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "OPEN_FIRST", "a Play stream's "
                       "first message is `open` (the game and your version)", "open")
    opened = first.open
    table = await load_table(api, opened.game_id, context, fresh=True)
    caller = _caller(context, opened.seat if opened.HasField("seat") else None)
    seat = api.host.seat_of(table, caller, acting=False)
    with stream_slot(api, context, table.game_id, seat):
        sub = await api.host.tables.subscribe(table, seat, True, opened.from_version)
        busy = asyncio.Lock()  # held while one of the client's commands runs
        reader = asyncio.get_running_loop().create_task(
            read_commands(api, context, call, table, caller, sub, busy))
        try:
            await send_until_over(context, call, sub, busy)
        finally:
            reader.cancel()
            api.host.tables.unsubscribe(table, sub)


async def play_command(api: GameApi, context: grpc.aio.ServicerContext, table: Table,
                       caller: Caller, request: Any) -> tuple[int, bytes]:
    """(version, PlayResponse holding only the answer) for one command of a Play stream."""
    # Every message counts against the rates, the ones refused below too.
    acting = not isinstance(request, Undecodable) and request.WhichOneof("kind") == "act"
    seat = request.act.seat if acting and request.act.HasField("seat") else caller.seat
    await api.admission.command(context, table.game_id, seat)
    refuse_undecodable(api.service, "Play", request)
    if not acting:
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "ALREADY_OPEN",
                       "a Play stream is opened once; send `act` messages", "open")
    act = request.act
    if not act.game_id:
        act.game_id = table.game_id
    elif act.game_id != table.game_id:
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "OTHER_GAME", "this stream "
                       f"plays {table.game_id!r}; open another for another game", "game_id")
    expected = check_command(act)
    if table.gone:  # reset under the stream (which is ending): the game as the store has it
        table = await api.host.tables.load(table.game_id)
    result = await api.host.act_at(table, Caller(caller.token, caller.admin_token, seat),
                                   act.command, act.command_id, expected)
    return result.version, api.game.pb.PlayResponse(answer=apb.PlayAnswer(
        command_id=act.command_id, version=result.version)).SerializeToString()


async def read_commands(api: GameApi, context: grpc.aio.ServicerContext, call: _Call,
                        table: Table, caller: Caller, sub: Subscriber, busy: asyncio.Lock
                        ) -> None:
    """A Play stream's commands, one at a time, each answered on the stream; none once the
    stream is over (a client that does not read is ended, not fed)."""
    while sub.ended is None:
        try:
            request = await context.read()
        except (grpc.aio.AioRpcError, grpc.RpcError, asyncio.InvalidStateError):
            return  # the stream is over
        if request is grpc.aio.EOF or sub.ended is not None:
            return  # the client sends no more; the stream goes on pushing
        METRICS.msg_received(*call.labels).inc()
        async with busy:
            try:
                version, answer = await play_command(api, context, table, caller, request)
            except Exception as error:  # answered on the stream, which goes on
                refused = _refusal(error, "Play")
                version, answer = 0, api.game.pb.PlayResponse(answer=apb.PlayAnswer(
                    command_id="" if isinstance(request, Undecodable) else
                    request.act.command_id, error=_status(refused))).SerializeToString()
            sub.answer(version, answer)


async def send_until_over(context: grpc.aio.ServicerContext, call: _Call, sub: Subscriber,
                          busy: asyncio.Lock) -> None:
    """Write what the stream's mailbox holds until the stream is over; if the server ends it
    (its client stopped reading) while a write waits for the client, the write is given up
    and the stream ends with the reason."""
    writer = asyncio.get_running_loop().create_task(_send(context, call, sub, busy))
    ended = asyncio.get_running_loop().create_task(sub.over.wait())
    try:
        await asyncio.wait((writer, ended), return_when=asyncio.FIRST_COMPLETED)
    finally:
        ended.cancel()
        if not writer.done():
            writer.cancel()
    if writer.done() and not writer.cancelled():
        writer.result()  # its error, if it failed (Ended included)
    elif sub.ended is not None:
        raise sub.ended


async def _send(context: grpc.aio.ServicerContext, call: _Call, sub: Subscriber,
                busy: asyncio.Lock) -> None:
    while True:
        items = await sub.next()
        if not items:
            async with busy:  # a command under way still gets its answer
                items = await sub.next()
            if not items:
                return
        pending = b""
        for message, is_answer in items:
            if is_answer and pending:
                pending += message  # one message: the batch and its answer
                continue
            if pending:
                await context.write(pending)
                call.sent()
            pending = message
        await context.write(pending)
        call.sent()


def game_service(host: Host, game: Game, in_flight: InFlight, streams: StreamSlots
                 ) -> tuple[str, grpc.GenericRpcHandler]:
    api = GameApi(host, game, streams, in_flight.admission)
    pb, service = game.pb, api.service
    handlers = _unary_handlers(service, in_flight, {
        "CreateGame": (partial(create_game, api), pb.CreateGameRequest, apb.CreateGameResponse),
        "Act": (partial(act, api), pb.ActRequest, pb.ActResponse),
        "GetView": (partial(get_view, api), apb.GetViewRequest, pb.View),
        "ListLegalActions": (partial(legal, api), apb.ListLegalActionsRequest, pb.LegalActions),
    })
    handlers.update({
        # Both streams send messages serialized once for every stream of a seat.
        "Watch": grpc.unary_stream_rpc_method_handler(
            _outgoing(service, "Watch", partial(watch, api)),
            request_deserializer=tolerant(apb.WatchRequest.FromString)),
        "Play": grpc.stream_stream_rpc_method_handler(
            _session(service, "Play", partial(play, api)),
            request_deserializer=tolerant(pb.PlayRequest.FromString)),
    })
    return service, grpc.method_handlers_generic_handler(service, handlers)


def _unary_handlers(service: str, in_flight: InFlight,
                    methods: dict[str, tuple[Unary, Any, Any]]) -> dict[str, Any]:
    """Each method's handler, from its function, request type and response type."""
    return {name: grpc.unary_unary_rpc_method_handler(
        guarded_unary(service, name, fn, in_flight),
        request_deserializer=tolerant(request.FromString),
        response_serializer=response.SerializeToString)
        for name, (fn, request, response) in methods.items()}


# ---- arbiter.v1 ---------------------------------------------------------------------------


# A page token is where the next page starts: the creation time (ms) and id of the last game
# of the page (the list is newest first), as base64 of JSON. Opaque to clients.
MAX_PAGE_TOKEN = 1024
PageCursor = tuple[int, str]


def _page_token(after: PageCursor | None) -> str:
    if after is None:
        return ""
    return base64.urlsafe_b64encode(json.dumps(list(after)).encode()).decode()


def _page_cursor(token: str) -> PageCursor | None:
    if not token:
        return None
    try:
        if len(token) > MAX_PAGE_TOKEN:
            raise ValueError("too long")
        created, game_id = json.loads(base64.urlsafe_b64decode(token.encode()))
        if not (type(created) is int and 0 <= created < 10**15
                and isinstance(game_id, str) and game_id):
            raise ValueError("not a cursor")
    except (ValueError, TypeError):  # (binascii.Error and JSONDecodeError are ValueErrors)
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "BAD_PAGE_TOKEN",
                       "page_token was not returned by ListGames", "page_token") from None
    return created, game_id


# (request, where the page starts, page size) -> (the page, where the next one starts)
ListGames = Callable[[apb.ListGamesRequest, PageCursor | None, int],
                     Awaitable[tuple[list[apb.GameSummary], PageCursor | None]]]


async def with_lobby(host: Host, summary: apb.GameSummary) -> apb.GameSummary:
    """A game created with open seats: who joined, what is still open, and whether it
    waits or expired (the read model sees only the log, and joins are not in it)."""
    if summary.status != apb.ACTIVE or all(s.kind != apb.OPEN for s in summary.seats):
        return summary
    try:
        still_open, expired, names = await host.lobby_status(summary.game_id)
    except NotFound:
        return summary
    for seat, name in names.items():
        summary.seats[seat].kind = apb.HUMAN
        summary.seats[seat].name = name
    if still_open:
        summary.open_seats[:] = still_open
        summary.status = apb.EXPIRED if expired else apb.WAITING
        del summary.to_act[:]
    return summary


async def list_games_page(host: Host, list_games: ListGames, request_in: apb.ListGamesRequest,
                          context: grpc.aio.ServicerContext) -> apb.ListGamesResponse:
    request = request_in
    if request.game and request.game not in host.games:
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_GAME",
                       f"no game named {request.game!r}", "game")
    if request.status not in apb.GameStatus.values():
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_STATUS",
                       f"no game status {request.status}", "status")
    size = request.page_size or 50
    if not 0 < size <= 500:
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "BAD_PAGE_SIZE",
                       "page_size must be between 1 and 500", "page_size")
    wanted = request.status
    if wanted in (apb.WAITING, apb.EXPIRED):
        # The read model knows these as active games; the lobby's state is the host's.
        request = apb.ListGamesRequest()
        request.CopyFrom(request_in)
        request.status = apb.ACTIVE
    page, after = await list_games(request, _page_cursor(request.page_token), size)
    page = [g for g in [await with_lobby(host, g) for g in page]
            if wanted == apb.GAME_STATUS_UNSPECIFIED or g.status == wanted]
    if not host.is_admin(_caller(context, None)):
        # Forks of running games are the admin's: left out (a page may come out short).
        page = [g for g in page if not g.forked_from
                or not await host.ancestor_running(g.forked_from)]
    return apb.ListGamesResponse(games=page, next_page_token=_page_token(after))


async def whole_log_allowed(host: Host, loaded: Table, context: grpc.aio.ServicerContext
                            ) -> None:
    """A running game's log holds every hand and hidden card: only the admin may have it
    (or fork the game, which hands out every seat). Once over, it is public (a fork: once
    its parent is over too)."""
    if not host.is_admin(_caller(context, None)) and not await host.log_is_public(loaded):
        raise PermissionDenied("the log of a running game holds hidden information; it is "
                               "public once the game is over (or to the admin token)")


async def export_log(host: Host, request: apb.ExportLogRequest,
                     context: grpc.aio.ServicerContext) -> apb.ExportLogResponse:
    _need_game_id(request.game_id)
    loaded, entries = await host.history(request.game_id)
    await whole_log_allowed(host, loaded, context)
    lines = await host.cpu.run(gamelog.to_json_lines, loaded.game, entries)
    return apb.ExportLogResponse(lines=lines)


async def import_log(host: Host, request: apb.ImportLogRequest,
                     context: grpc.aio.ServicerContext) -> apb.ImportLogResponse:
    game_id, version, replay_only = await import_game(host, list(request.lines))
    return apb.ImportLogResponse(game_id=game_id, version=version, replay_only=replay_only)


async def verify_log(host: Host, request: apb.VerifyLogRequest,
                     context: grpc.aio.ServicerContext) -> apb.VerifyLogResponse:
    try:
        if request.WhichOneof("source") == "game_id":
            _need_game_id(request.game_id)
            loaded, entries = await host.history(request.game_id)
            await host.check_visible(loaded, _caller(context, None))
            # The server holds the seed of a running game: it can verify it privately.
            seed = loaded.seed if host.is_admin(_caller(context, None)) else None
            parent = await host.parent_events(loaded.game, entries[0].started, True)
            await host.cpu.run(gamelog.verify, loaded.game, entries, seed, parent)
        else:
            lines = list(request.log.lines)
            gamelog.check_sizes(lines)
            game = _game_of_lines(host, lines)
            entries = await host.cpu.run(gamelog.from_json_lines, game, lines)
            parent = await host.parent_events(game, entries[0].started)
            await host.cpu.run(gamelog.verify, game, entries, None, parent)
    except gamelog.BadLog as bad:
        return apb.VerifyLogResponse(ok=False, first_bad_version=bad.version,
                                     first_bad_line=bad.line, reason=bad.reason)
    return apb.VerifyLogResponse(ok=True, entries=len(entries))


async def replay_game(host: Host, request: apb.ReplayRequest,
                      context: grpc.aio.ServicerContext) -> apb.ReplayResponse:
    _need_game_id(request.game_id)
    await host.check_visible(await host.load(request.game_id), _caller(context, None))
    loaded, state, version, noted = await host.replay_with_journal(request.game_id,
                                                                  request.version)
    seat = host.seat_of(loaded, _caller(context, _opt_seat(request)), acting=False)
    packed = any_pb2.Any()
    packed.Pack(host.view_of(loaded, seat, state, version, noted))
    return apb.ReplayResponse(version=version, view=packed)


async def fork_game(host: Host, request: apb.ForkGameRequest,
                    context: grpc.aio.ServicerContext) -> apb.CreateGameResponse:
    _need_game_id(request.game_id)
    await whole_log_allowed(host, await host.load(request.game_id, fresh=True), context)
    made = await host.fork(request.game_id, request.version)
    return apb.CreateGameResponse(
        game_id=made.game_id, seed_commitment=made.commitment, version=made.version,
        tokens=[apb.SeatToken(seat=s, token=t) for s, t in sorted(made.tokens.items())])


async def ping(host: Host, request: apb.PingRequest,
               context: grpc.aio.ServicerContext) -> apb.PingResponse:
    return apb.PingResponse()


async def join_game(host: Host, request: apb.JoinGameRequest,
                    context: grpc.aio.ServicerContext) -> apb.JoinGameResponse:
    joined = await host.join(request.code, request.name)
    return apb.JoinGameResponse(
        game_id=joined.game_id, game=joined.game, seat=joined.seat,
        token=joined.token, open_seats=joined.open_seats, version=joined.version)


CATALOGS: dict[str, apb.Catalog] = {}  # by game name, built on first asking


def catalog_of(game: Game) -> apb.Catalog:
    """A game's catalog, built once; its content version is a digest of every entry, so it
    changes whenever a name or a text does."""
    if game.name not in CATALOGS:
        CATALOGS[game.name] = _catalog(game)
    return CATALOGS[game.name]


def _catalog(game: Game) -> apb.Catalog:
    catalog = apb.Catalog(game=game.name, entries=[
        apb.CatalogEntry(id=e.id, kind=e.kind, name=e.name, text=e.text)
        for e in (game.catalog() if game.catalog is not None else [])])
    digest = hashlib.sha256(catalog.SerializeToString(deterministic=True)).hexdigest()
    catalog.content_version = digest[:16]
    return catalog


async def get_catalog(host: Host, request: apb.GetCatalogRequest,
                      context: grpc.aio.ServicerContext) -> apb.Catalog:
    if request.game not in host.games:
        raise Rejected(grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_GAME",
                       f"no game named {request.game!r} is served here", "game")
    return catalog_of(host.games[request.game])


def arbiter_service(host: Host, list_games: ListGames, in_flight: InFlight
                    ) -> tuple[str, grpc.GenericRpcHandler]:
    service = "arbiter.v1.Arbiter"
    handlers = _unary_handlers(service, in_flight, {
        "ListGames": (partial(list_games_page, host, list_games), apb.ListGamesRequest,
                      apb.ListGamesResponse),
        "ExportLog": (partial(export_log, host), apb.ExportLogRequest, apb.ExportLogResponse),
        "ImportLog": (partial(import_log, host), apb.ImportLogRequest, apb.ImportLogResponse),
        "VerifyLog": (partial(verify_log, host), apb.VerifyLogRequest, apb.VerifyLogResponse),
        "Replay": (partial(replay_game, host), apb.ReplayRequest, apb.ReplayResponse),
        "ForkGame": (partial(fork_game, host), apb.ForkGameRequest, apb.CreateGameResponse),
        "Ping": (partial(ping, host), apb.PingRequest, apb.PingResponse),
        "JoinGame": (partial(join_game, host), apb.JoinGameRequest, apb.JoinGameResponse),
        "GetCatalog": (partial(get_catalog, host), apb.GetCatalogRequest, apb.Catalog),
    })
    return service, grpc.method_handlers_generic_handler(service, handlers)


def _game_of_lines(host: Host, lines: list[str]) -> Game:
    name = gamelog.game_of_json_lines(lines)
    if name not in host.games:
        raise gamelog.BadLog(1, 1, f"no game named {name!r} is served here")
    return host.games[name]


async def import_lines(host: Host, lines: list[str]) -> tuple[str, int]:
    game_id, version, _ = await import_game(host, lines)
    return game_id, version


async def import_game(host: Host, lines: list[str]) -> tuple[str, int, bool]:
    """Import a finished game's log after re-running all of it; BadLog names the first bad line.
    A log the game can only replay (gamelog.ReplayOnly) is checked by replaying it and stored
    marked replay-only: the last value answered."""
    gamelog.check_sizes(lines)
    game = _game_of_lines(host, lines)
    entries = await host.cpu.run(gamelog.from_json_lines, game, lines)
    parent = await host.parent_events(game, entries[0].started)
    replay_only = False
    try:
        verified = await host.cpu.run(gamelog.verify, game, entries, None, parent)
    except gamelog.ReplayOnly:
        verified = await host.cpu.run(gamelog.replay_only, game, entries)
        replay_only = True
    if not verified.finished:
        raise gamelog.BadLog(len(lines), len(lines), "only finished games can be imported")
    made = await host.import_entries(game, entries, replay_only)
    return made.game_id, made.version, replay_only
