"""Prometheus series: go-grpc-prometheus names for the RPCs, arbiter_* for the rest.

Buckets start at 50 microseconds: deciding, evolving and appending are sub-millisecond.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)

from services.core.decider import Figure, Game
from services.core.startup import CannotStart

FAST_BUCKETS = (
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5, 1.0, 2.5, 5.0,
)


class Labelled:
    """A labelled series, called with its label values: `m(game, command).observe(x)`.

    Children are remembered: prometheus_client's own lookup is measurable on the Act path.
    """

    def __init__(self, metric: Any) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], Any] = {}

    def __call__(self, *labels: str) -> Any:
        child = self._children.get(labels)
        if child is None:
            child = self._children[labels] = self.metric.labels(*labels)
        return child

    labels = __call__


class Metrics:
    def __init__(self) -> None:
        rpc = ("grpc_type", "grpc_service", "grpc_method")
        self.rpc_started = Labelled(Counter(
            "grpc_server_started_total", "RPCs started on the server.", rpc))
        self.rpc_handled = Labelled(Counter(
            "grpc_server_handled_total", "RPCs completed on the server, by status code.",
            (*rpc, "grpc_code")))
        self.rpc_seconds = Labelled(Histogram(
            "grpc_server_handling_seconds", "Time to handle an RPC, by method.", rpc,
            buckets=FAST_BUCKETS))
        self.msg_received = Labelled(Counter(
            "grpc_server_msg_received_total", "Messages received by the server.", rpc))
        self.msg_sent = Labelled(Counter(
            "grpc_server_msg_sent_total", "Messages sent by the server.", rpc))
        self.command_seconds = Labelled(Histogram(
            "arbiter_command_seconds", "Act latency inside the server, by outcome.",
            ("game", "command", "outcome"), buckets=FAST_BUCKETS))
        self.decide_seconds = Labelled(Histogram(
            "arbiter_decide_seconds", "Time in the rules' decide.", ("game",),
            buckets=FAST_BUCKETS))
        self.evolve_seconds = Labelled(Histogram(
            "arbiter_evolve_seconds", "Time folding a batch into the state.", ("game",),
            buckets=FAST_BUCKETS))
        self.append_seconds = Labelled(Histogram(
            "arbiter_append_seconds", "Time of one atomic append to the store.", ("game",),
            buckets=FAST_BUCKETS))
        self.conflicts = Labelled(Counter(
            "arbiter_append_conflicts_total",
            "Appends refused because another server moved the game on first.", ("game",)))
        self.loads = Labelled(Counter(
            "arbiter_game_loads_total", "Games read into this process's cache (from a "
            "snapshot and its tail, or the whole log).", ("game",)))
        self.caught_up = Labelled(Counter(
            "arbiter_entries_caught_up_total", "Log entries this process folded into a cached "
            "game after another process (a replica, a worker) appended them.", ("game",)))
        self.events_appended = Labelled(Counter(
            "arbiter_events_appended_total", "Log entries appended.", ("game",)))
        self.ai_turn_seconds = Labelled(Histogram(
            "arbiter_ai_turn_seconds", "Time a bot takes to choose its command.", ("game",),
            buckets=FAST_BUCKETS))
        self.ai_tasks = Labelled(Counter(
            "arbiter_ai_tasks_total", "AI turns a Celery worker played (result played: one "
            "per turn, with the turns a task played after its own), and tasks that found "
            "nothing_to_do (a redelivery, or the game moved on) or were retried (the store "
            "was down).", ("result",)))
        self.deadlines = Labelled(Counter(
            "arbiter_deadlines_total", "Deadlines fired by a scheduler, by kind (ai: the "
            "rescue of a lost AI turn; idle; system: a game's own) and result: acted, nothing "
            "(it no longer applied) or failed (retried after its lease).", ("kind", "result")))
        self.projection_lag = Labelled(Gauge(
            "arbiter_projection_lag_entries", "Feed entries not yet acknowledged.",
            ("group", "partition")))
        self.simulation_games = Labelled(Counter(
            "arbiter_simulation_games_total", "Simulated games played.", ("game",)))
        self.simulation_seconds = Labelled(Histogram(
            "arbiter_simulation_game_seconds", "Time to simulate one game.", ("game",),
            buckets=FAST_BUCKETS))

        self._figures: dict[str, Labelled] = {}

    def declare(self, game: Game) -> None:
        for figure in game.figures.values():
            self._series(game.name, figure.series, figure.help, figure, figure.buckets)
            if figure.timed:
                self._series(game.name, figure.timed, figure.timed_help, figure, FAST_BUCKETS)

    def observe(self, game: Game, key: str, value: float, seconds: float) -> None:
        """A figure the game reports through its `observe` hook, as the game declared it."""
        figure = game.figures.get(key)
        if figure is None:
            return
        labels = tuple(value for _, value in figure.labels)
        self._series(game.name, figure.series, figure.help, figure, figure.buckets)(
            *labels).observe(value)
        if figure.timed and value > 0:
            self._series(game.name, figure.timed, figure.timed_help, figure, FAST_BUCKETS)(
                *labels).observe(seconds)

    def _series(self, game: str, series: str, help: str, figure: Figure,
                buckets: tuple[float, ...]) -> Labelled:
        name = f"arbiter_{game}_{series}"
        if name not in self._figures:
            self._figures[name] = Labelled(Histogram(
                name, help, tuple(label for label, _ in figure.labels), buckets=buckets))
        return self._figures[name]


METRICS = Metrics()


def serve_metrics(addr: str, registry: CollectorRegistry = REGISTRY) -> None:
    """Serve /metrics on `host:port` (an empty host: every interface) in a thread."""
    host, _, port = addr.rpartition(":")
    try:
        start_http_server(int(port), addr=host or "0.0.0.0", registry=registry)
    except (OSError, ValueError) as e:
        raise CannotStart(f"cannot serve /metrics on {addr!r} ({e}): set ARBITER_METRICS_ADDR "
                          "to a free host:port") from e
