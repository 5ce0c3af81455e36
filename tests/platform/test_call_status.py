"""How a call's end is counted when its client is gone: CANCELLED, whatever failed after, and
never INTERNAL (nobody is left to answer, and nothing on the server went wrong)."""

from __future__ import annotations

import asyncio

import pytest
from grpc._cython import cygrpc
from prometheus_client import REGISTRY

from services.core.grpc_api import _Call

LABELS = ("bidi_stream", "test.CallStatus", "Play")


class Context:
    """A call's context as gRPC may show it just after the client hung up: the failed
    write reported, `cancelled()` not yet true."""

    def __init__(self, cancelled: bool = False) -> None:
        self._cancelled = cancelled

    def cancelled(self) -> bool:
        return self._cancelled


def handled(code: str) -> float:
    value = REGISTRY.get_sample_value("grpc_server_handled_total", {
        "grpc_type": LABELS[0], "grpc_service": LABELS[1], "grpc_method": LABELS[2],
        "grpc_code": code})
    return value or 0.0


async def ended_by(error: BaseException, context: Context) -> str:
    call = _Call(LABELS, context, None)  # type: ignore[arg-type]
    async with call:
        raise error
    return call.code


@pytest.mark.parametrize("error", [
    cygrpc.ExecuteBatchError("Failed \"execute_batch\": (<grpc._cython.cygrpc."
                             "SendMessageOperation object>,)"),
    RuntimeError("a write after the client left"),
])
async def test_a_failed_write_to_a_client_that_hung_up_is_cancelled(error: Exception) -> None:
    """The transport's failed write is the hang-up itself, before gRPC says so; any other
    error counts as CANCELLED once gRPC says the client left."""
    context = Context(cancelled=not isinstance(error, cygrpc.ExecuteBatchError))
    before = handled("CANCELLED"), handled("INTERNAL")
    assert await ended_by(error, context) == "CANCELLED"
    assert (handled("CANCELLED"), handled("INTERNAL")) == (before[0] + 1, before[1])


async def test_a_cancelled_task_is_counted_cancelled_and_still_ends() -> None:
    before = handled("CANCELLED")
    with pytest.raises(asyncio.CancelledError):
        await ended_by(asyncio.CancelledError(), Context())
    assert handled("CANCELLED") == before + 1
