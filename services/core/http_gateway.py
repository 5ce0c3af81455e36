"""HTTP for browsers and curl: the Connect protocol and gRPC-Web, on the same services.

The gateway holds no game logic and no per-method code. It looks every method up in the
protobuf descriptors of the services the server registered, turns an HTTP request into a call
on the in-process gRPC server (over a private unix socket, so the call passes through exactly
the handlers, limits, auth and error mapping a gRPC client meets), and turns the answer back
into the HTTP framing the client spoke:

  - Connect unary: `application/json` or `application/proto` bodies; an error is an HTTP
    status and a JSON body {code, message, details: [{type, value, debug}]}.
  - Connect streaming: `application/connect+json` / `+proto`, enveloped messages then an
    end-of-stream JSON message carrying the error, if any.
  - gRPC-Web: `application/grpc-web(+proto)` and `application/grpc-web-text`, messages then a
    trailer frame with grpc-status, grpc-message and grpc-status-details-bin.

HTTP/1.1 has no full-duplex calls: a client-streaming or bidirectional method (Play) takes the
whole request body as the client's messages, then the stream goes on pushing (half duplex). A
browser therefore opens Play with `open` alone and sends its commands with unary Act.

Before any of that, a request must name a known content-type, come from an allowed `Origin`
when it names one (a web page on another site must not drive the API), carry tokens that can be
tokens, and send its body within the read timeout; else it is answered with an HTTP status
and a Connect error body saying why.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import json
import logging
import struct
from collections.abc import AsyncGenerator, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import grpc
from aiohttp import web
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2

from services.core.edge import EdgeLimits
from services.core.grpc_api import ADMIN_TOKEN, DOMAIN, HOLD_SECONDS, SEAT_TOKEN

log = logging.getLogger("arbiter")

# Request headers passed on as call metadata (the tokens); everything else stays at the edge.
FORWARDED = (SEAT_TOKEN, ADMIN_TOKEN)
# The HTTP client's address for the gRPC server's per-client limits: the chain a proxy in
# front sent (its last few entries), then the address of whoever connected here.
FORWARDED_FOR = "x-forwarded-for"
FORWARDED_HOPS = 8
MAX_BODY = 4 * 1024 * 1024  # gRPC's default largest message
# A message of a client stream (Play's open, or one command) is far smaller: a stream's body
# holds ARBITER_HTTP_STREAM_MESSAGES of these at most, and a longer one is refused unread.
MAX_STREAM_MESSAGE = 16 * 1024
UNARY_TYPES = ("application/json", "application/proto")
STREAM_TYPES = ("application/connect+json", "application/connect+proto")

# Connect's names of the gRPC codes, and the HTTP status of a unary error.
CONNECT_CODES: dict[grpc.StatusCode, tuple[str, int]] = {
    grpc.StatusCode.CANCELLED: ("canceled", 499),
    grpc.StatusCode.UNKNOWN: ("unknown", 500),
    grpc.StatusCode.INVALID_ARGUMENT: ("invalid_argument", 400),
    grpc.StatusCode.DEADLINE_EXCEEDED: ("deadline_exceeded", 504),
    grpc.StatusCode.NOT_FOUND: ("not_found", 404),
    grpc.StatusCode.ALREADY_EXISTS: ("already_exists", 409),
    grpc.StatusCode.PERMISSION_DENIED: ("permission_denied", 403),
    grpc.StatusCode.RESOURCE_EXHAUSTED: ("resource_exhausted", 429),
    grpc.StatusCode.FAILED_PRECONDITION: ("failed_precondition", 400),
    grpc.StatusCode.ABORTED: ("aborted", 409),
    grpc.StatusCode.OUT_OF_RANGE: ("out_of_range", 400),
    grpc.StatusCode.UNIMPLEMENTED: ("unimplemented", 501),
    grpc.StatusCode.INTERNAL: ("internal", 500),
    grpc.StatusCode.UNAVAILABLE: ("unavailable", 503),
    grpc.StatusCode.DATA_LOSS: ("data_loss", 500),
    grpc.StatusCode.UNAUTHENTICATED: ("unauthenticated", 401),
}


@dataclass(frozen=True)
class Method:
    path: str  # "/arbiter.bubblee.v1.Game/CreateGame"
    request: type[Message]
    response: type[Message]
    client_streaming: bool
    server_streaming: bool


@dataclass
class Failure(Exception):
    """How a call ended when it did not end well."""

    code: grpc.StatusCode
    message: str
    details: bytes = b""  # a serialized google.rpc.Status, when the server sent one


class Refused(Exception):
    """A request refused at the edge, before any call: an HTTP status, a Connect error body."""

    def __init__(self, status: int, code: grpc.StatusCode, reason: str, message: str,
                 unread: bool = False, held: bool = False) -> None:
        super().__init__(message)
        # unread: the body is left unread, so the connection closes; held: answered only after
        # HOLD_SECONDS, so that the client's sends wait on a full socket meanwhile.
        self.status, self.unread, self.held = status, unread, held
        self.failure = Failure(code, message, with_reason(code, reason, message))

    def response(self) -> web.Response:
        response = web.json_response(status_json(self.failure), status=self.status)
        if self.unread:  # close rather than read the rest of the body to keep the connection
            response.force_close()
        return response


def with_reason(code: grpc.StatusCode, reason: str, message: str) -> bytes:
    """A google.rpc.Status carrying an ErrorInfo with this reason, as the server's own."""
    status = status_pb2.Status(code=code.value[0], message=message)
    status.details.add().Pack(error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN))
    return status.SerializeToString()


def methods_of(services: Iterable[str]) -> dict[str, Method]:
    """Every method of these services, by HTTP path, from the descriptors already loaded."""
    pool = descriptor_pool.Default()
    found = {}
    for name in services:
        service = pool.FindServiceByName(name)
        for m in service.methods:
            path = f"/{service.full_name}/{m.name}"
            found[path] = Method(path, message_factory.GetMessageClass(m.input_type),
                                 message_factory.GetMessageClass(m.output_type),
                                 m.client_streaming, m.server_streaming)
    return found


# ---- framing ---------------------------------------------------------------------------------


def envelope(flags: int, payload: bytes) -> bytes:
    return struct.pack(">BI", flags, len(payload)) + payload


def unenvelope(body: bytes, most: int | None = None) -> list[tuple[int, bytes]]:
    """The (flags, payload) frames of an enveloped body; ValueError if it is cut short,
    TooMany as soon as it holds more than `most` frames."""
    frames: list[tuple[int, bytes]] = []
    at = 0
    while at < len(body):
        if most is not None and len(frames) >= most:
            raise TooMany(most)
        if len(body) - at < 5:
            raise ValueError("a message's 5-byte prefix is cut short")
        flags, size = struct.unpack_from(">BI", body, at)
        at += 5
        if len(body) - at < size:
            raise ValueError(f"a message announces {size} bytes and {len(body) - at} follow")
        frames.append((flags, body[at:at + size]))
        at += size
    return frames


class TooMany(Exception):
    def __init__(self, most: int) -> None:
        super().__init__(most)
        self.most = most


def parse_timeout(value: str) -> float | None:
    """gRPC's `grpc-timeout` ("250m", "3S") in seconds; None when absent or malformed."""
    units = {"H": 3600.0, "M": 60.0, "S": 1.0, "m": 1e-3, "u": 1e-6, "n": 1e-9}
    if len(value) < 2 or value[-1] not in units or not value[:-1].isdigit():
        return None
    return int(value[:-1]) * units[value[-1]]


class Codec:
    """A message as JSON or as protobuf binary."""

    def __init__(self, is_json: bool) -> None:
        self.is_json = is_json

    def decode(self, raw: bytes, kind: type[Message]) -> bytes:
        """The request in binary (what the gRPC server reads)."""
        if not self.is_json:
            return raw
        message = kind()
        try:
            json_format.Parse(raw.decode() if raw.strip() else "{}", message)
        except (json_format.ParseError, UnicodeDecodeError) as e:
            raise Failure(grpc.StatusCode.INVALID_ARGUMENT,
                          f"the body is not a valid {kind.DESCRIPTOR.full_name} in JSON: {e}"
                          ) from None
        return message.SerializeToString()

    def encode(self, raw: bytes, kind: type[Message]) -> bytes:
        if not self.is_json:
            return raw
        # Every field is written, zeros included: a seat 0 or an empty hand is there to read,
        # not left for the reader to infer from an absent key.
        return json_format.MessageToJson(kind.FromString(raw), indent=None,
                                         always_print_fields_with_no_presence=True).encode()


def status_json(failure: Failure) -> dict[str, Any]:
    """A Connect error: the code's name, the message, and each google.rpc detail with its
    type, its bytes (base64) and, for people reading curl output, its JSON form."""
    name = CONNECT_CODES.get(failure.code, ("unknown", 500))[0]
    body: dict[str, Any] = {"code": name, "message": failure.message}
    if failure.details:
        details = []
        for d in status_pb2.Status.FromString(failure.details).details:
            entry: dict[str, Any] = {
                "type": d.type_url.rpartition("/")[2],
                "value": base64.b64encode(d.value).decode().rstrip("=")}
            try:
                entry["debug"] = _detail_dict(d)
            except (TypeError, KeyError, json_format.Error):
                pass  # a detail of a type this server does not know: its bytes still go
            details.append(entry)
        body["details"] = details
    return body


def _detail_dict(packed: Any) -> dict[str, Any]:
    unpacked = json_format.MessageToDict(packed)
    unpacked.pop("@type", None)
    return unpacked


# ---- the gateway -----------------------------------------------------------------------------


class Gateway:
    """HTTP in front of a gRPC server reached at `target` (a unix socket of this process)."""

    def __init__(self, target: str, services: Iterable[str],
                 limits: EdgeLimits | None = None, loopback_only: bool = False) -> None:
        self.methods = methods_of(services)
        self.channel = grpc.aio.insecure_channel(target)
        self.limits = limits or EdgeLimits()
        # Listening on loopback only, a request naming another host came through a name
        # that an attacker's DNS pointed here (DNS rebinding): its page would be "same origin".
        self.loopback_only = loopback_only
        self.hosts = {urlsplit(o).hostname for o in self.limits.origins}

    async def close(self) -> None:
        await self.channel.close()

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/{service}/{method}", self.handle)]

    def _metadata(self, request: web.Request) -> tuple[tuple[str, str], ...]:
        md = []
        for name in FORWARDED:
            value = request.headers.get(name)
            if value is None:
                continue
            if not value.isascii() or not value.isprintable() or " " in value:
                # gRPC metadata cannot carry it, and no token has such a character.
                raise Refused(401, grpc.StatusCode.UNAUTHENTICATED, "BAD_TOKEN_HEADER",
                              f"the {name} header is not a token: it holds a space, a tab, "
                              "a control character or a byte outside ASCII")
            md.append((name, value))
        md.append((FORWARDED_FOR, forwarded_for(request)))
        return tuple(md)

    def _check_origin(self, request: web.Request) -> None:
        """A browser names the page's origin: it must be this server's own, or listed."""
        try:
            host = urlsplit(f"//{request.host}").hostname or ""
        except ValueError:  # a Host that is no host name ("[x")
            host = ""
        if self.loopback_only and host not in self.hosts and not _loopback_name(host):
            raise Refused(403, grpc.StatusCode.PERMISSION_DENIED, "HOST_NOT_ALLOWED",
                          f"this server listens on this machine only, and the request names "
                          f"the host {host!r}: use 127.0.0.1 or localhost, or list the origin "
                          "in ARBITER_HTTP_ORIGINS")
        origin = request.headers.get("origin")
        if origin is None or origin.rstrip("/") in self.limits.origins:
            return
        if urlsplit(origin).netloc.lower() == request.host.lower():
            return
        raise Refused(403, grpc.StatusCode.PERMISSION_DENIED, "ORIGIN_NOT_ALLOWED",
                      f"requests from the origin {origin!r} are refused: it is not this "
                      f"server's ({request.host}) and ARBITER_HTTP_ORIGINS does not list it")

    async def handle(self, request: web.Request) -> web.StreamResponse:
        path = f"/{request.match_info['service']}/{request.match_info['method']}"
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        method = self.methods.get(path)
        try:
            self._check_origin(request)
            if not (ctype.startswith("application/grpc-web") or ctype in STREAM_TYPES
                    or ctype in UNARY_TYPES):
                raise Refused(415, grpc.StatusCode.INVALID_ARGUMENT, "CONTENT_TYPE",
                              f"unsupported content-type {ctype or '(none)'!r}: use "
                              "application/json, application/proto, "
                              "application/connect+json, application/connect+proto or "
                              "application/grpc-web")
            metadata = self._metadata(request)
            body = await self._read(request, self._largest_body(method))
        except Refused as refused:
            if refused.held:
                await asyncio.sleep(HOLD_SECONDS)
            return refused.response()
        if ctype.startswith("application/grpc-web"):
            return await self._grpc_web(request, method, path, ctype, body, metadata)
        if ctype in STREAM_TYPES:
            return await self._connect_stream(request, method, path, ctype, body, metadata)
        return await self._connect_unary(request, method, path, ctype == "application/json",
                                         body, metadata)

    def _largest_body(self, method: Method | None) -> int:
        if method is not None and method.client_streaming:
            return self.limits.stream_messages * (5 + MAX_STREAM_MESSAGE)
        return MAX_BODY

    async def _read(self, request: web.Request, largest: int) -> bytes:
        """The whole body, within the read timeout and the size bound."""
        if (request.content_length or 0) > largest:
            raise self._too_large(largest)
        chunks, size = [], 0
        try:
            async with asyncio.timeout(self.limits.read_seconds):
                while chunk := await request.content.read(65536):
                    size += len(chunk)
                    if size > largest:
                        raise self._too_large(largest)
                    chunks.append(chunk)
        except TimeoutError:
            raise Refused(408, grpc.StatusCode.DEADLINE_EXCEEDED, "BODY_TOO_SLOW",
                          f"the body did not arrive within {self.limits.read_seconds:g} s "
                          "(ARBITER_HTTP_READ_SECONDS)", unread=True) from None
        return b"".join(chunks)

    def _too_large(self, largest: int) -> Refused:
        return Refused(413, grpc.StatusCode.RESOURCE_EXHAUSTED, "BODY_TOO_LARGE",
                       f"the body is larger than {largest} bytes, this call's bound",
                       unread=True, held=True)

    def _frames(self, body: bytes) -> list[tuple[int, bytes]]:
        try:
            return unenvelope(body, self.limits.stream_messages)
        except TooMany as e:
            message = (f"the body holds more than {e.most} messages "
                       "(ARBITER_HTTP_STREAM_MESSAGES); none was run")
            raise Failure(grpc.StatusCode.RESOURCE_EXHAUSTED, message,
                          with_reason(grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_MESSAGES",
                                      message)) from None
        except ValueError as e:
            raise Failure(grpc.StatusCode.INVALID_ARGUMENT, str(e)) from None

    def _unknown(self, path: str) -> Failure:
        return Failure(grpc.StatusCode.UNIMPLEMENTED, f"no method {path} is served here")

    # -- the call itself, on the gRPC server

    async def _call(self, method: Method, messages: list[bytes],
                    metadata: tuple[tuple[str, str], ...], timeout: float | None
                    ) -> AsyncGenerator[bytes, None]:
        """The response messages (binary); raises Failure for a status other than OK."""
        try:
            if method.client_streaming:
                call: Any = self.channel.stream_stream(method.path)(
                    iter(messages), metadata=metadata, timeout=timeout)
                async for reply in call:
                    yield reply
            elif method.server_streaming:
                if len(messages) != 1:
                    raise Failure(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"{method.path} takes one request message, not "
                                  f"{len(messages)}")
                call = self.channel.unary_stream(method.path)(
                    messages[0], metadata=metadata, timeout=timeout)
                async for reply in call:
                    yield reply
            else:
                if len(messages) != 1:
                    raise Failure(grpc.StatusCode.INVALID_ARGUMENT,
                                  f"{method.path} takes one request message, not "
                                  f"{len(messages)}")
                yield await self.channel.unary_unary(method.path)(
                    messages[0], metadata=metadata, timeout=timeout)
        except grpc.aio.AioRpcError as e:
            trailers = dict(e.trailing_metadata() or ())
            details = trailers.get("grpc-status-details-bin", b"")
            raise Failure(e.code(), e.details() or "",
                          details if isinstance(details, bytes) else b"") from None

    # -- Connect

    async def _connect_unary(self, request: web.Request, method: Method | None, path: str,
                             is_json: bool, raw: bytes,
                             metadata: tuple[tuple[str, str], ...]) -> web.Response:
        codec = Codec(is_json)
        ctype = "application/json" if is_json else "application/proto"
        try:
            if method is None:
                raise self._unknown(path)
            if method.client_streaming or method.server_streaming:
                raise Failure(grpc.StatusCode.UNIMPLEMENTED,
                              f"{path} is a streaming method: call it with content-type "
                              "application/connect+json or application/connect+proto")
            body = codec.decode(raw, method.request)
            timeout = _connect_timeout(request)
            replies = [r async for r in self._call(method, [body], metadata, timeout)]
            return web.Response(body=codec.encode(replies[0], method.response),
                                content_type=ctype)
        except Failure as f:
            status = CONNECT_CODES.get(f.code, ("unknown", 500))[1]
            return web.json_response(status_json(f), status=status)

    async def _connect_stream(self, request: web.Request, method: Method | None, path: str,
                              ctype: str, body: bytes, metadata: tuple[tuple[str, str], ...]
                              ) -> web.StreamResponse:
        codec = Codec(ctype.endswith("json"))
        response = web.StreamResponse(status=200, headers={"content-type": ctype})
        prepared = False
        end: dict[str, Any] = {}
        try:
            if method is None:
                raise self._unknown(path)
            messages = [codec.decode(p, method.request) for _, p in self._frames(body)]
            # Closed at once when the client leaves: that cancels the gRPC call.
            async with aclosing(self._call(method, messages, metadata,
                                           _connect_timeout(request))) as replies:
                async for reply in replies:
                    if not prepared:
                        await response.prepare(request)
                        prepared = True
                    await response.write(envelope(0, codec.encode(reply, method.response)))
        except Failure as f:
            end = {"error": status_json(f)}
        except ConnectionResetError:
            return response  # the client left; the call was cancelled with the generator
        if not prepared:
            await response.prepare(request)
        await response.write(envelope(2, json.dumps(end).encode()))
        await response.write_eof()
        return response

    # -- gRPC-Web

    async def _grpc_web(self, request: web.Request, method: Method | None, path: str,
                        ctype: str, body: bytes, metadata: tuple[tuple[str, str], ...]
                        ) -> web.StreamResponse:
        text = ctype.startswith("application/grpc-web-text")
        if ctype not in ("application/grpc-web", "application/grpc-web+proto",
                         "application/grpc-web-text", "application/grpc-web-text+proto"):
            return web.Response(status=415, text="gRPC-Web is served in protobuf binary only\n")
        response = web.StreamResponse(status=200, headers={"content-type": ctype})
        prepared = False

        async def send(chunk: bytes) -> None:
            nonlocal prepared
            if not prepared:
                await response.prepare(request)
                prepared = True
            await response.write(base64.b64encode(chunk) if text else chunk)

        trailers = {"grpc-status": "0", "grpc-message": ""}
        try:
            if method is None:
                raise self._unknown(path)
            try:
                raw = base64.b64decode(body) if text else body
            except ValueError as e:
                raise Failure(grpc.StatusCode.INVALID_ARGUMENT, f"the body is not base64: {e}"
                              ) from None
            frames = self._frames(raw)
            timeout = parse_timeout(request.headers.get("grpc-timeout", ""))
            async with aclosing(self._call(method, [p for _, p in frames],
                                           metadata, timeout)) as replies:
                async for reply in replies:
                    await send(envelope(0, reply))
        except Failure as f:
            trailers = {"grpc-status": str(f.code.value[0]), "grpc-message": f.message}
            if f.details:
                trailers["grpc-status-details-bin"] = \
                    base64.b64encode(f.details).decode().rstrip("=")
        except ConnectionResetError:
            return response
        block = "".join(f"{k}: {_percent(v) if k == 'grpc-message' else v}\r\n"
                        for k, v in trailers.items())
        await send(envelope(0x80, block.encode()))
        await response.write_eof()
        return response


def forwarded_for(request: web.Request) -> str:
    """The incoming x-forwarded-for chain's last addresses (anything else in it dropped),
    then the connecting peer: the gRPC side trusts entries right to left as far as its
    configured proxies go."""
    chain = []
    for entry in request.headers.get(FORWARDED_FOR, "").split(","):
        try:
            chain.append(str(ipaddress.ip_address(entry.strip())))
        except ValueError:
            continue
    return ", ".join([*chain[-FORWARDED_HOPS:], request.remote or "unknown"])


def _loopback_name(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _connect_timeout(request: web.Request) -> float | None:
    value = request.headers.get("connect-timeout-ms", "")
    return int(value) / 1000 if value.isdigit() and len(value) <= 10 else None


def _percent(message: str) -> str:
    """grpc-message is percent-encoded (gRPC's own rule for non-printable bytes)."""
    out = []
    for b in message.encode():
        out.append(chr(b) if 0x20 <= b <= 0x7E and b != 0x25 else f"%{b:02X}")
    return "".join(out)

