"""The least an Act can cost in our stack: a grpc.aio server whose one method runs the bare
append script through redis-py and does nothing else (no rules, no cache, no metrics).

    python -m loadtests.stack_server <port> <redis url>

The request is the client's number (decimal bytes); each client appends to its own key.
`make bench` measures Act against it, beside the bare append from the client itself.
"""

from __future__ import annotations

import asyncio
import os
import sys

import grpc
import redis.asyncio as aioredis

from services.core.redis_store import APPEND

SERVICE, METHOD = "arbiter.bench.Stack", "Append"
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

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        SERVICE, {METHOD: grpc.unary_unary_rpc_method_handler(handle)}),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]), sys.argv[2]))
