"""The Simulate RPC of arbiter.v1.Arbiter (a handler beside the shared service's others).

With ARBITER_BROKER_URL the games go to Celery workers on queue `sim`; without, they run in
a thread of the server, in one process (a server does not fork worker processes), one
simulation at a time. Either way a simulation stops soon after its call ends (cancelled or
past its deadline): nobody is left to read the report.
"""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from arbiter.v1 import arbiter_pb2 as apb

from services.core import grpc_api
from services.core.guard import tolerant
from services.core.host import Host
from services.workers import simulate

MAX_GAMES = 100_000
SERVICE = "arbiter.v1.Arbiter"
IN_PROCESS_CHUNK = 10  # games between two looks at whether the caller is still there


class Abandoned(Exception):
    """The call ended before the simulation did."""


def response_of(report: dict[str, Any]) -> apb.SimulateResponse:
    timing = report.get("timing", {})
    fm = report["first_mover"]
    return apb.SimulateResponse(
        games=report["games"], finished=report["finished"], draws=report["draws"],
        shared=report["shared"], unfinished=report["unfinished"],
        first_mover=apb.FirstMover(
            decided_games=fm["decided_games"], first_mover_won=fm["first_mover_won"],
            win_rate=fm["win_rate"], ci95_low=fm["ci95"][0], ci95_high=fm["ci95"][1],
            even_share=fm["even_share"]),
        bots=[apb.SimulatedBot(entry=b["entry"], bot=b["bot"], wins=b["wins"],
                               shared_wins=b["shared_wins"], win_rate=b["win_rate"],
                               ci95_low=b["ci95"][0], ci95_high=b["ci95"][1])
              for b in report["bots"]],
        average_length=report["length"]["mean"], seconds=timing.get("seconds", 0.0),
        games_per_second=timing.get("games_per_second", 0.0),
        report_json=json.dumps(report, sort_keys=True))


def simulate_handler(host: Host, in_flight: Any, broker_url: str = ""
                     ) -> grpc.GenericRpcHandler:
    running = threading.Event()  # an in-process simulation holds the server's thread
    pool = ThreadPoolExecutor(1, thread_name_prefix="simulate")

    async def run(request: apb.SimulateRequest, context: grpc.aio.ServicerContext
                  ) -> apb.SimulateResponse:
        def bad(message: str, field: str) -> grpc_api.Rejected:
            return grpc_api.Rejected(grpc.StatusCode.INVALID_ARGUMENT, "BAD_SIMULATION",
                                     message, field)

        if request.game not in host.games:
            raise bad(f"no game named {request.game!r} is served here", "game")
        if not 0 < request.games <= MAX_GAMES:
            raise bad(f"games must be between 1 and {MAX_GAMES}", "games")
        plan = simulate.Plan(
            game=request.game, games=request.games, bots=list(request.bots),
            seed=request.seed or "0", options=request.options,
            rotate=not request.fixed_seats,
            workers=max(1, request.workers) if broker_url else 1)
        try:
            simulate.check(plan)
        except simulate.BadPlan as e:
            raise bad(str(e), e.field) from e
        if not broker_url:
            if running.is_set():
                raise grpc_api.Rejected(
                    grpc.StatusCode.RESOURCE_EXHAUSTED, "SIMULATION_BUSY",
                    "without a broker this server runs one simulation at a time; retry when "
                    "it ends, or run Celery workers (ARBITER_BROKER_URL)")
            running.set()
            plan.chunk = IN_PROCESS_CHUNK
        stop = threading.Event()

        def still_wanted(done: int, total: int) -> None:
            if stop.is_set():
                raise Abandoned

        def work() -> dict[str, Any]:
            try:
                return simulate.run(plan, still_wanted, broker_url)
            finally:
                if not broker_url:
                    running.clear()

        # In process: the server's one simulation thread. With a broker: any thread, since
        # the games run on the Celery workers and several simulations may wait at once.
        started = None if broker_url else pool.submit(work)
        try:
            report = await (asyncio.wrap_future(started) if started else
                            asyncio.get_running_loop().run_in_executor(None, work))
        finally:
            stop.set()  # a cancelled call stops the games at the next chunk
            if started is not None and started.cancelled():
                running.clear()  # it never started, so `work` cannot clear it
        return response_of(report)

    handler = grpc.unary_unary_rpc_method_handler(
        grpc_api.guarded_unary(SERVICE, "Simulate", run, in_flight),
        request_deserializer=tolerant(apb.SimulateRequest.FromString),
        response_serializer=apb.SimulateResponse.SerializeToString)
    return grpc.method_handlers_generic_handler(SERVICE, {"Simulate": handler})
