"""The least an Act can cost in our stack: a grpc.aio server whose methods run the bare append
script through redis-py and do nothing else (no rules, no cache, no metrics): `Append` per
unary call (what Act costs at least), `AppendStream` per message of a bidirectional stream
(what a command over Play costs at least).

    python -m loadtests.stack_server <port> <redis url>

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
PAYLOAD = [b"x" * 60] * 4  # a typical Act batch: four small entries


async def serve(port: int, redis_url: str) -> None:
    append = aioredis.Redis.from_url(redis_url).register_script(APPEND)
    versions: dict[bytes, int] = {}

    async def handle(client: bytes, context: grpc.aio.ServicerContext) -> bytes:
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

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        SERVICE, {METHOD: grpc.unary_unary_rpc_method_handler(handle),
                  STREAM_METHOD: grpc.stream_stream_rpc_method_handler(handle_stream)}),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]), sys.argv[2]))
