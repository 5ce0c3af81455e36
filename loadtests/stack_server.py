"""The least an Act can cost in our stack: a grpc.aio server whose methods run the bare append
script through redis-py and do nothing else (no rules, no cache, no metrics): `Append` per
unary call (what Act costs at least), `AppendStream` per message of a bidirectional stream
(what a command over Play costs at least), and `Play`, a move with Play's own traffic: each
seat of a game holds a stream, a command on one is appended, then one message goes to every
seat's stream, written by a sender task as Arbiter's Play writes its pushes (what a Play move
costs at least, rules, views and checks aside).

    python -m loadtests.stack_server <port> [<redis url>]    (no url: no append at all)

The request is the client's number (decimal bytes); each client appends to its own key.
`make bench` measures Act against it, beside the bare append from the client itself.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator

import grpc
import redis.asyncio as aioredis

from services.core.redis_store import APPEND

SERVICE, METHOD, STREAM_METHOD = "arbiter.bench.Stack", "Append", "AppendStream"
NOOP_METHOD = "Noop"  # answers at once, store or not: the least call the stack answers
PLAY_METHOD = "Play"  # first message "<game> <seat>", then one message per command
PAYLOAD = [b"x" * 60] * 4  # a typical Act batch: four small entries


async def serve(port: int, redis_url: str) -> None:
    append = aioredis.Redis.from_url(redis_url).register_script(APPEND) if redis_url else None
    versions: dict[bytes, int] = {}

    async def handle(client: bytes, context: grpc.aio.ServicerContext) -> bytes:
        if append is None:  # no store: what gRPC alone costs
            return b""
        key = f"bench-stack-{os.getpid()}-{client.decode()}"
        version = versions.get(client, 0)
        keys = [f"{{{key}}}:log", f"{{{key}}}:cmd", f"{{{key}}}:meta", f"{{{key}}}:feed"]
        await append(keys=keys, args=[version, f"c{version}", key, len(PAYLOAD), *PAYLOAD])
        versions[client] = version + len(PAYLOAD)
        return b""

    async def handle_stream(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
                            ) -> AsyncIterator[bytes]:
        async for client in requests:
            yield await handle(b"s" + client, context)

    async def noop(_: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return b""

    seats: dict[bytes, dict[bytes, asyncio.Queue[bytes | None]]] = {}

    async def play(_: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> None:
        game, _, seat = (await context.read()).partition(b" ")
        pushes: asyncio.Queue[bytes | None] = asyncio.Queue()
        seats.setdefault(game, {})[seat] = pushes

        async def send() -> None:
            while (message := await pushes.get()) is not None:
                await context.write(message)

        sender = asyncio.create_task(send())
        while (request := await context.read()) is not grpc.aio.EOF:
            await handle(b"p" + game, context)
            for queue in seats[game].values():
                queue.put_nowait(request)  # the push (to the mover: with its answer)
        pushes.put_nowait(None)
        await sender

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        SERVICE, {METHOD: grpc.unary_unary_rpc_method_handler(handle),
                  NOOP_METHOD: grpc.unary_unary_rpc_method_handler(noop),
                  STREAM_METHOD: grpc.stream_stream_rpc_method_handler(handle_stream),
                  PLAY_METHOD: grpc.stream_stream_rpc_method_handler(play)}),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else ""))
