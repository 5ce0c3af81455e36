"""The workers' `arbiter` subcommands.

    arbiter replay --rebuild                 drop every read model and rebuild it from the streams
    arbiter simulate <game> --games N --bots A,B [--side SIDE=BOT] [--workers K] [--seed S]
                     [--json]
    arbiter balance <game>|--all --out DIR|--docs   the balance report (docs/ with --docs)
    arbiter balance <game> --docs --rows LABEL...  play only those rows, merged into the report
    arbiter ladder <game> [--bots A,B,..] --out FILE|--docs   every bot against the others, Elo
    arbiter stats <game>                     the statistics read model of a game
    arbiter workers projections|deadlines    run a projection consumer / the deadline scheduler
    arbiter workers ai|sim [-c K]            run a Celery worker on queue `ai` or `sim`
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import glob
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from typing import Any

from services.core.metrics import serve_metrics
from services.core.startup import CannotStart
from services.core.store import MemoryStore, Store
from services.workers import gameset

log = logging.getLogger("arbiter.workers")


def add_parsers(sub: Any) -> None:
    sim = sub.add_parser(
        "simulate", help="play bots against each other and report win rates",
        epilog="bots per game: " + "; ".join(
            f"{g.name}: {', '.join(sorted(g.bots))}" for g in gameset.all_games().values()))
    sim.add_argument("game")
    sim.add_argument("--games", type=int, default=1000)
    sim.add_argument("--bots", required=True, help="one bot per seat, comma-separated")
    sim.add_argument("--workers", type=int, default=1, help="processes (or Celery tasks)")
    sim.add_argument("--seed", default="0", help="the same seed gives the same report")
    sim.add_argument("--options", default="", help="the game's Options, in text format")
    sim.add_argument("--fixed-seats", action="store_true", help="do not rotate the seats")
    sim.add_argument("--side", action="append", default=[], metavar="SIDE=BOT",
                     help="play every seat the deal puts on SIDE with BOT (Moody Bear's "
                     "red, blue, solo; Shadow Council's order, chaos): solo=passive")
    sim.add_argument("--local", action="store_true",
                     help="play here even when ARBITER_BROKER_URL is set")
    sim.add_argument("--json", action="store_true", help="print the report as JSON")

    bal = sub.add_parser("balance", help="a balance report: first-mover advantage, win rates "
                         "by seat count and options, lengths, endings (docs/balance.md)")
    bal.add_argument("game", nargs="?", default="", help="a game, or none with --all")
    bal.add_argument("--all", action="store_true", help="every game")
    bal.add_argument("--games", type=int, default=None,
                     help="games per seed range of a row (three ranges a row; default 30; "
                     "with --rows a row's own, or the report's for a new row)")
    bal.add_argument("--workers", type=int, default=1, help="processes (or Celery tasks)")
    bal.add_argument("--seed", default="balance")
    bal.add_argument("--local", action="store_true",
                     help="play here even when ARBITER_BROKER_URL is set")
    bal.add_argument("--out", default="", metavar="DIR",
                     help="the folder to write balance.md and balance/ into")
    bal.add_argument("--docs", action="store_true",
                     help="write into the project's docs/ (docs/balance.md, docs/balance/)")
    bal.add_argument("--rows", nargs="+", default=[], metavar="LABEL",
                     help="play only these rows (their labels, e.g. '2 seats, hard') and merge "
                     "them into the game's report already in the folder; the other rows are "
                     "kept as they are and the figures are written anew from the reports")

    lad = sub.add_parser("ladder", help="every bot against the others (seats rotated, many "
                         "seeds): Elo ratings with intervals, head-to-head rates (docs/ladder.md)")
    lad.add_argument("game")
    lad.add_argument("--bots", default="", help="the bots to rate, comma-separated (default: all)")
    lad.add_argument("--fields", default="",
                     help="at more than 2 seats, the bots that fill the other seats "
                          "(default: the game's heuristic bots)")
    lad.add_argument("--seats", type=int, default=0,
                     help="seats per game (default: the game's standard count, at least 2)")
    lad.add_argument("--games", type=int, default=100, help="games per pairing")
    lad.add_argument("--workers", type=int, default=1, help="processes (or Celery tasks)")
    lad.add_argument("--seed", default="ladder")
    lad.add_argument("--local", action="store_true",
                     help="play here even when ARBITER_BROKER_URL is set")
    lad.add_argument("--out", default="", metavar="FILE", help="write the ladder as JSON here")
    lad.add_argument("--docs", action="store_true",
                     help="write docs/ladder/GAME.json and docs/ladder.md")

    stats = sub.add_parser("stats", help="a game's statistics from the read model")
    stats.add_argument("game")

    workers = sub.add_parser("workers", help="run a worker (projections, deadlines, ai, sim)")
    workers.add_argument("kind", choices=["projections", "deadlines", "ai", "sim"])
    workers.add_argument("-c", "--concurrency", type=int, default=0,
                         help="Celery worker processes (default: one per core)")


def _open(url: str = "") -> tuple[Store, Any]:
    """The event store and the read model the environment names (Redis or the embedded)."""
    from services.workers.readmodel import MemoryReadModel, RedisReadModel

    url = url or os.environ.get("ARBITER_REDIS_URL", "")
    if url:
        from services.core.redis_store import RedisStore

        store = RedisStore(url)
        return store, RedisReadModel(store.workers_redis())
    data_dir = os.environ.get("ARBITER_DATA_DIR", "var")
    # Read-only: a server may be running on the file (and holds its lock).
    return MemoryStore(os.path.join(data_dir, "arbiter.aof"), read_only=True), MemoryReadModel()


# ---- rebuild -----------------------------------------------------------------------------


async def rebuild(args: argparse.Namespace) -> int:
    from services.workers.projections import SNAPSHOT_EVERY
    from services.workers.projections import rebuild as rebuild_all

    store, rm = _open()
    games = gameset.all_games()
    t0 = time.perf_counter()
    done = await rebuild_all(store, rm, games, SNAPSHOT_EVERY)
    seconds = time.perf_counter() - t0
    print(f"rebuilt the read models of {done} games in {seconds:.2f} s"
          + ("" if os.environ.get("ARBITER_REDIS_URL") else
             " (embedded store: the server rebuilds its in-memory read models at start)"))
    await store.close()
    return 0


# ---- simulate ----------------------------------------------------------------------------


def simulate(args: argparse.Namespace) -> int:
    from google.protobuf import text_format

    from services.workers.simulate import Plan, progress_bar, render, run

    try:
        game = gameset.game(args.game)
    except KeyError:
        print(f"unknown game {args.game!r}", file=sys.stderr)
        return 2
    options = text_format.Parse(args.options, game.pb.Options()) if args.options else None
    sides = dict(side.partition("=")[::2] for side in args.side)
    if any(not side or not bot for side, bot in sides.items()):
        print("give each --side as SIDE=BOT, e.g. --side solo=passive", file=sys.stderr)
        return 2
    plan = Plan(args.game, args.games, [b.strip() for b in args.bots.split(",") if b.strip()],
                seed=args.seed, options=options.SerializeToString() if options else b"",
                rotate=not args.fixed_seats, workers=max(1, args.workers), side_bots=sides)
    if args.local:
        broker = ""
    else:
        from services.workers.celery_app import check_env

        broker = check_env()  # a broker that cannot work: a sentence, not a hang
    try:
        report = run(plan, progress=None if args.json else progress_bar(sys.stderr),
                     broker_url=broker)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else render(report))
    return 0


# ---- balance -----------------------------------------------------------------------------


def balance(args: argparse.Namespace) -> int:
    from services.workers import balance as report

    names = list(gameset.all_games()) if args.all else [args.game]
    unknown = [n for n in names if n not in gameset.all_games()]
    if not names or unknown or (args.all and args.game):
        print("name one game (" + ", ".join(gameset.all_games()) + ") or give --all",
              file=sys.stderr)
        return 2
    if bool(args.out) == args.docs:  # the tracked docs are written only when asked for
        print("name where to write: --out DIR, or --docs for the project's docs/",
              file=sys.stderr)
        return 2
    folder = report.DOCS if args.docs else args.out
    from services.workers.celery_app import check_env

    broker = "" if args.local else check_env()
    if args.rows:
        if args.all:
            print("--rows names rows of one game, not --all", file=sys.stderr)
            return 2
        try:
            reports = [report.merge_rows(args.game, args.rows, args.games, folder,
                                         max(1, args.workers), args.seed, broker)]
        except (OSError, ValueError) as e:
            print(e, file=sys.stderr)
            return 2
    else:
        games = 30 if args.games is None else args.games
        reports = [report.balance(n, games, max(1, args.workers), args.seed, broker)
                   for n in names]
    report.write(reports, folder)
    print(f"wrote {', '.join(names)} into {os.path.abspath(folder)}")
    return 0


# ---- ladder ------------------------------------------------------------------------------


def ladder(args: argparse.Namespace) -> int:
    from services.workers import ladder as lad
    from services.workers.simulate import BadPlan

    if args.game not in gameset.all_games():
        print(f"unknown game {args.game!r}: name one of {', '.join(gameset.all_games())}",
              file=sys.stderr)
        return 2
    from services.workers.celery_app import check_env

    broker = "" if args.local else check_env()
    try:
        report = lad.ladder(args.game, args.games, [b.strip() for b in args.bots.split(",")
                                                    if b.strip()],
                            args.seats, max(1, args.workers), args.seed, broker,
                            fields=[f.strip() for f in args.fields.split(",") if f.strip()])
    except (lad.BadLadder, BadPlan) as e:
        print(f"arbiter ladder: {e}", file=sys.stderr)
        return 2
    lad.write(report, args.out, lad.DOCS if args.docs else "")
    print(lad.render(report))
    return 0


# ---- stats -------------------------------------------------------------------------------


async def stats(args: argparse.Namespace) -> int:
    from services.workers.projections import rebuild as rebuild_all

    store, rm = _open()
    if isinstance(store, MemoryStore):  # the embedded store: project its file here
        await rebuild_all(store, rm, gameset.all_games(), 0)
    counters = await rm.stats(args.game)
    await store.close()
    if not counters:
        print(f"no statistics for {args.game} yet")
        return 0
    print("\n".join(stats_lines(args.game, counters)))
    return 0


def _seat_kind(label: str) -> str:
    """A seat label of the read model in words: "human", "ai:greedy" -> "bot greedy"."""
    return f"bot {label[3:]}" if label.startswith("ai:") else label


def _share(part: float, whole: float) -> str:
    return f"{part:g} of {whole:g} ({100 * part / whole:.0f}%)" if whole else f"{part:g}"


def stats_lines(game: str, counters: dict[str, float]) -> list[str]:
    """The statistics read model in sentences (its keys are described in projections.py)."""
    finished = counters.get("finished", 0)
    lines = [f"{game}: {counters.get('started', 0):g} games started, {finished:g} finished"]
    if finished:
        lines.append(f"  average length: {counters.get('length_sum', 0) / finished:.1f} "
                     "commands")
    kinds = sorted({k.split("|")[1] for k in counters if k.startswith("seat|")})
    if kinds:
        lines.append("  wins by kind of seat:")
        for k in kinds:
            won = _share(counters.get(f"seat|{k}|wins", 0), counters.get(f"seat|{k}|played", 0))
            lines.append(f"    {_seat_kind(k)}: won {won} seats played")
    lineups = sorted({k.rsplit("|", 1)[0] for k in counters if k.startswith("lineup|")})
    if lineups:
        lines.append("  results by options and seats:")
    for lineup in lineups:
        _, options, seats = lineup.split("|", 2)
        games = counters.get(f"{lineup}|games", 0)
        who = ", ".join(f"seat {i} {_seat_kind(s)}" for i, s in enumerate(seats.split(",")))
        options = "default options" if options == "default" else f"options {options}"
        results = [f"seat {i} won {_share(counters.get(f'{lineup}|win:{i}', 0), games)}"
                   for i in range(len(seats.split(",")))]
        if counters.get(f"{lineup}|draws"):
            results.append(f"nobody won {_share(counters[f'{lineup}|draws'], games)}")
        lines.append(f"    {who}; {options}: {games:g} games; " + "; ".join(results))
    events = sorted((k[6:], v) for k, v in counters.items() if k.startswith("event:"))
    if events:
        lines.append("  events: " + ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in events))
    figures: dict[str, list[tuple[float, float]]] = {}
    for key, times in counters.items():
        if key.startswith("obs:"):
            name, _, value = key[4:].rpartition(":")
            figures.setdefault(name, []).append((float(value), times))
    for name, seen in sorted(figures.items()):
        values = ", ".join(f"{v:g} ({n:g} times)" for v, n in sorted(seen))
        lines.append(f"  {name.replace('_', ' ')}: {values}")
    return lines


# ---- workers -----------------------------------------------------------------------------


# Where each worker serves /metrics unless ARBITER_METRICS_ADDR says otherwise (the server's
# default is 127.0.0.1:9464): one port per kind, so one of each runs on a host as it is.
METRICS_ADDRS = {"projections": "127.0.0.1:9465", "deadlines": "127.0.0.1:9466",
                 "ai": "127.0.0.1:9467", "sim": "127.0.0.1:9468"}


def workers(args: argparse.Namespace) -> int:
    from services.workers.celery_app import check_env

    kind = args.kind
    if kind in {"ai", "sim"} and not os.environ.get("ARBITER_BROKER_URL"):
        print(f"arbiter workers {kind} needs ARBITER_BROKER_URL, the broker the server sends "
              "its tasks to", file=sys.stderr)
        return 2
    if kind != "sim" and not os.environ.get("ARBITER_REDIS_URL"):
        print(f"arbiter workers {kind} needs ARBITER_REDIS_URL (the event store); the embedded "
              "server runs its workers in process", file=sys.stderr)
        return 2
    check_env(results=kind == "sim")  # only simulations send results back
    addr = os.environ.get("ARBITER_METRICS_ADDR") or METRICS_ADDRS[kind]
    if kind in {"ai", "sim"}:
        return _celery_worker(kind, args.concurrency, addr)
    serve_metrics(addr)
    return asyncio.run(_run_async_worker(kind))


def _celery_worker(kind: str, concurrency: int, metrics_addr: str) -> int:
    """A Celery worker on queue `kind` whose /metrics adds up all its pool processes.

    Celery runs tasks in forked pool processes, each with its own counters. prometheus_client's
    multi-process mode has each of them write its series to files in PROMETHEUS_MULTIPROC_DIR,
    and this (parent) process serves their sum. The mode is chosen when prometheus_client is
    imported, which this command has already done: so it starts itself again with the
    directory set (a fresh one unless given), before anything is imported.
    """
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
    argv = ["-c", str(concurrency)] if concurrency else []
    if not directory:
        directory = tempfile.mkdtemp(prefix=f"arbiter-{kind}-metrics-")
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": directory,
               "ARBITER_METRICS_TMPDIR": directory}
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, "-m", "services.cli.main", "workers", kind,
                                   *argv], env)
    from celery.signals import worker_shutdown
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    from services.workers.celery_app import make_app

    os.makedirs(directory, exist_ok=True)
    for stale in glob.glob(os.path.join(directory, "*.db")):  # counts of an earlier run
        os.remove(stale)
    if os.environ.get("ARBITER_METRICS_TMPDIR") == directory:
        main_pid = os.getpid()

        def remove_directory() -> None:
            if os.getpid() == main_pid:  # not in a pool process that happens to exit this way
                shutil.rmtree(directory, ignore_errors=True)

        atexit.register(remove_directory)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, directory)
    serve_metrics(metrics_addr, registry)
    # The pid in the node name: several workers of a kind may run on one host.
    celery_argv = ["worker", "-Q", kind, "--prefetch-multiplier", "1", "-l", "info",
                   "-n", f"{kind}-{os.getpid()}@%h", *argv]
    app = make_app(results=kind == "sim")  # AI turns have no result
    if kind == "ai":
        # Two lines per AI turn (received, succeeded) were a sixth of a turn's worker CPU
        # (loadtests/bench_workers.py); a failed task still logs, at ERROR.
        for name in ("celery.app.trace", "celery.worker.strategy"):
            logging.getLogger(name).setLevel(logging.WARNING)
    # worker_main drops the worker's exit status: the worker hands it to this signal.
    statuses: list[int] = []

    def stopped(sender: Any, **_: Any) -> None:
        statuses.append(int(getattr(sender, "exitcode", 0) or 0))

    worker_shutdown.connect(stopped, weak=False)
    try:
        app.worker_main(celery_argv)
    except Exception as e:  # noqa: BLE001 - whatever stopped Celery: one sentence, not 0
        raise CannotStart(f"the Celery worker stopped: {type(e).__name__}: {e}") from None
    status = statuses[-1] if statuses else 0
    if status:
        print(f"arbiter workers {kind}: the Celery worker stopped with status {status} (its "
              "log above says why: a broker it cannot use?)", file=sys.__stderr__)
    return status


async def _run_async_worker(kind: str) -> int:
    from services.core.host import Host
    from services.core.reads import AiDispatch
    from services.core.redis_store import RedisStore
    from services.workers.deadlines import RedisDeadlines, Scheduler
    from services.workers.projections import ProjectionWorker
    from services.workers.readmodel import RedisReadModel

    # Projections and deadlines apart from the server share their state on Redis.
    store = RedisStore(os.environ["ARBITER_REDIS_URL"])
    redis = store.workers_redis()
    rm = RedisReadModel(redis)
    games = gameset.all_games()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    idle = float(os.environ.get("ARBITER_IDLE_SECONDS", "0") or 0)
    broker = os.environ.get("ARBITER_BROKER_URL", "")
    ai_dispatch: AiDispatch
    if broker:  # an idle seat's bot may hand the turn to an AI seat
        from services.workers.tasks import celery_dispatch

        ai_dispatch = celery_dispatch(broker)
    else:
        from services.core.server import in_process_ai

        ai_dispatch = in_process_ai
    host = Host(store, games, ai_dispatch=ai_dispatch)
    scheduler = Scheduler(RedisDeadlines(redis), host, idle)
    if kind == "projections":
        worker = ProjectionWorker(store, rm, games,
                                  min_idle_ms=int(os.environ.get("ARBITER_RECLAIM_MS", "30000")))
        worker.projector.listeners.append(scheduler.schedule_for)
        log.info("projection worker %s on %d partitions", worker.consumer, len(worker.feeds))
        await worker.run(stop)
    else:
        log.info("deadline scheduler running")
        await scheduler.run(stop)
    await store.close()
    return 0
