"""The Simulate RPC of arbiter.v1.Arbiter (a handler beside the shared service's others).

With ARBITER_BROKER_URL the games go to Celery workers on queue `sim`; without, they run in a
small pool of processes of the server's own (not on the event loop, nor in a thread sharing
its interpreter lock), a chunk of games at a time, so that simulations running at once take
turns. A call may ask for at most `max_games` games (the admin: MAX_GAMES); without a broker
a server runs at most `at_once` simulations and one client at most `per_client` of them, so
no client's simulations refuse everyone else's. Either way a simulation stops soon after its
call ends (cancelled or past its deadline): nobody is left to read the report.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import grpc
from arbiter.v1 import arbiter_pb2 as apb

from services.core import grpc_api, offload
from services.core.guard import tolerant
from services.core.host import Host
from services.core.metrics import METRICS
from services.workers import gameset, simulate

MAX_GAMES = 100_000  # per call, for the admin
SERVICE = "arbiter.v1.Arbiter"
IN_PROCESS_CHUNK = 10  # games between two looks at whether the caller is still there


@dataclass(frozen=True)
class Limits:
    max_games: int = 1000  # games per call, but for the admin (ARBITER_SIMULATE_MAX_GAMES)
    at_once: int = 4  # simulations running at once (ARBITER_SIMULATE_AT_ONCE)
    per_client: int = 1  # of which one client's (ARBITER_SIMULATE_PER_CLIENT)
    processes: int = 1  # in-process games: the pool's processes (ARBITER_SIMULATE_PROCESSES)


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


async def play_in_pool(plan: simulate.Plan, processes: int) -> dict[str, Any]:
    """The plan's games in the server's simulation processes, one chunk after another (a
    cancelled call stops at the chunk under way)."""
    game = simulate.check(plan)
    pool = offload.process_pool(processes, "simulate", warm=gameset.all_games)
    loop = asyncio.get_running_loop()
    t0 = time.perf_counter()
    results: list[dict[str, Any]] = []
    for chunk in plan.chunks():
        rows = await loop.run_in_executor(pool, simulate.play_chunk, plan.game, plan.bots,
                                          plan.seed, chunk, plan.options, plan.rotate)
        results.extend(rows)
        # Counted here: the pool's processes have metrics of their own, which no one reads.
        METRICS.simulation_games.labels(plan.game).inc(len(rows))
        for row in rows:
            METRICS.simulation_seconds.labels(plan.game).observe(row["seconds"])
    return simulate.finish(game, plan, results, time.perf_counter() - t0, False)


def simulate_handler(host: Host, in_flight: Any, broker_url: str = "",
                     limits: Limits = Limits()) -> grpc.GenericRpcHandler:
    running: Counter[str] = Counter()  # simulations under way, by client

    async def run(request: apb.SimulateRequest, context: grpc.aio.ServicerContext
                  ) -> apb.SimulateResponse:
        def bad(message: str, field: str) -> grpc_api.Rejected:
            return grpc_api.Rejected(grpc.StatusCode.INVALID_ARGUMENT, "BAD_SIMULATION",
                                     message, field)

        def busy(reason: str, message: str) -> grpc_api.Rejected:
            return grpc_api.Rejected(grpc.StatusCode.RESOURCE_EXHAUSTED, reason, message,
                                     retry_after=1.0 if reason == "SIMULATION_BUSY" else 0.0)

        if request.game not in host.games:
            raise bad(f"no game named {request.game!r} is served here", "game")
        if not 0 < request.games <= MAX_GAMES:
            raise bad(f"games must be between 1 and {MAX_GAMES}", "games")
        client = in_flight.admission.client_of(context)
        if request.games > limits.max_games and client != grpc_api.ADMIN_CLIENT:
            raise busy("SIMULATION_TOO_BIG", f"a simulation of more than {limits.max_games} "
                       "games needs the admin token; ask for fewer games per call")
        plan = simulate.Plan(
            game=request.game, games=request.games, bots=list(request.bots),
            seed=request.seed or "0", options=request.options,
            rotate=not request.fixed_seats,
            workers=max(1, request.workers) if broker_url else 1)
        try:
            simulate.check(plan)
        except simulate.BadPlan as e:
            raise bad(str(e), e.field) from e
        if broker_url:  # the games queue for the Celery workers, whose number bounds them
            return response_of(await on_celery(plan, broker_url))
        if running[client] >= limits.per_client:
            raise busy("SIMULATION_BUSY", f"this client already runs {running[client]} "
                       "simulation(s), its share; retry when one ends")
        if sum(running.values()) >= limits.at_once:
            raise busy("SIMULATION_BUSY", f"the server runs {limits.at_once} simulations, its "
                       "limit; retry when one ends, or run Celery workers (ARBITER_BROKER_URL)")
        running[client] += 1
        try:
            plan.chunk = IN_PROCESS_CHUNK
            report = await play_in_pool(plan, limits.processes)
        finally:
            running[client] -= 1
            if not running[client]:
                del running[client]
        return response_of(report)

    handler = grpc.unary_unary_rpc_method_handler(
        grpc_api.guarded_unary(SERVICE, "Simulate", run, in_flight),
        request_deserializer=tolerant(apb.SimulateRequest.FromString),
        response_serializer=apb.SimulateResponse.SerializeToString)
    return grpc.method_handlers_generic_handler(SERVICE, {"Simulate": handler})


async def on_celery(plan: simulate.Plan, broker_url: str) -> dict[str, Any]:
    """The plan on the Celery workers, waited for in a thread (the games run elsewhere)."""
    stop = threading.Event()

    def still_wanted(done: int, total: int) -> None:
        if stop.is_set():
            raise Abandoned

    try:
        return await asyncio.get_running_loop().run_in_executor(
            None, simulate.run, plan, still_wanted, broker_url)
    finally:
        stop.set()  # a cancelled call stops waiting at the next chunk
