"""The workers' benchmarks, merged into `make bench`'s results by `run()`.

    replay      one long game in Redis: rebuilding its read models from the stream (events/s),
                and loading it in a fresh host with and without a snapshot
    simulation  bot-against-bot games per second in this process and on Celery workers
    ai_turns    an AI turn's cost, split: on a Celery ai worker (`arbiter workers ai -c 1`, as
                deployed) against the same turns played by the same host code in this process
                (the difference is Celery's own share), the bot alone, and the same turn in a
                host that does not hold the game (loading it whole: what holding it saves)

Needs ARBITER_TEST_REDIS_URL (make bench starts a private redis-server); without it only the
in-process figures are measured. The Celery figures start a worker with 2 processes on
database 1 of that Redis (the event store is database 0). About 30 s in all.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

from services.core.decider import Rng, RuleError, Seat
from services.core.host import Caller, Host
from services.core.reads import StaleVersion
from services.workers import gameset
from services.workers.projections import Projector, snapshot_source
from services.workers.readmodel import RedisReadModel
from services.workers.simulate import Plan
from services.workers.simulate import run as simulate

REDIS_URL = os.environ.get("ARBITER_TEST_REDIS_URL", "")
GAME = os.environ.get("BENCH_WORKERS_GAME", "bubblee")
AI_TURN_GAMES = os.environ.get("BENCH_AI_TURN_GAMES", "bubblee,moody_bear,shadow_council"
                               ).split(",")
AI_SECONDS = float(os.environ.get("BENCH_AI_SECONDS", "15"))
# The load test's seats (loadtests/loadtest.py): one human, the others AI seats.
SEATS = {"bubblee": 2, "bubble_shadow": 3, "moody_bear": 3, "shadow_council": 4, "eila": 1}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _db(url: str, db: int) -> str:
    return f"{url.rsplit('/', 1)[0] if url.count('/') > 2 else url}/{db}"


async def _long_game(host: Host, tries: int = 6) -> str:
    """The longest of a few random-bot games, played through the host into the store."""
    game = host.games[GAME]
    best, best_len = "", 0
    for t in range(tries):
        seats = [Seat(f"s{i}", "human") for i in range(game.seat_count)]
        game_id = (await host.create(GAME, seats, game.pb.Options())).game_id
        rng = Rng.for_test(t)
        while True:
            loaded = await host.load(game_id)
            if loaded.finished:
                break
            seat = rng.choice(list(game.to_act(loaded.state)))
            view = host.view_of(loaded, seat)
            command = game.bots["random"](view, game.legal_actions(loaded.state, seat), rng)
            await host.act(game_id, Caller(seat=seat, trusted=True), command, "",
                           loaded.version)
        if loaded.version > best_len:
            best, best_len = game_id, loaded.version
    return best


async def bench_replay() -> dict[str, Any]:
    from services.core.redis_store import RedisStore

    store = RedisStore(REDIS_URL)
    games = {GAME: gameset.game(GAME)}
    host = Host(store, games)
    game_id = await _long_game(host)
    entries = await store.version(game_id)
    prefix = f"arbiter:rm-bench-{uuid.uuid4().hex[:6]}"
    rm = RedisReadModel(store.redis, prefix)
    rebuilds = []
    for _ in range(5):
        await rm.drop()
        t0 = time.perf_counter()
        await Projector(store, rm, games, snapshot_every=0, cache_size=0).project(game_id)
        rebuilds.append(time.perf_counter() - t0)
    await rm.drop()
    every = max(10, entries // 10)
    await Projector(store, rm, games, snapshot_every=every).project(game_id)
    snap = await rm.snapshot(game_id)

    async def load(with_snapshot: bool) -> float:
        fresh = Host(store, games, snapshot_source=snapshot_source(rm) if with_snapshot else None)
        t0 = time.perf_counter()
        await fresh.load(game_id)
        return time.perf_counter() - t0

    full = [await load(False) for _ in range(7)]
    snapped = [await load(True) for _ in range(7)]
    await rm.drop()
    await store.close()
    rebuild_s = statistics.median(rebuilds)
    return {
        "game": GAME, "entries": entries,
        "rebuild_ms": round(1000 * rebuild_s, 2),
        "rebuild_events_per_s": round(entries / rebuild_s),
        "load_full_replay_ms": round(1000 * statistics.median(full), 2),
        "load_snapshot_ms": round(1000 * statistics.median(snapped), 2),
        "snapshot_version": snap.version if snap else 0,
        "tail_after_snapshot": entries - (snap.version if snap else 0),
    }


def bench_simulation_in_process(games: int = 60) -> dict[str, Any]:
    bots = ["greedy", "random"] if GAME == "bubblee" else ["random"] * 2
    report = simulate(Plan(GAME, games, bots, seed="bench"))
    return {"games": games, "bots": bots,
            "games_per_s": report["timing"]["games_per_second"]}


def bench_simulation_celery(games: int = 120, concurrency: int = 2) -> dict[str, Any]:
    import redis

    broker = _db(REDIS_URL, 1)
    redis.Redis.from_url(broker).flushdb()
    env = {**os.environ, "ARBITER_BROKER_URL": broker, "ARBITER_REDIS_URL": REDIS_URL,
           "PYTHONPATH": ROOT}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "services.workers.celery_app", "worker",
         "-Q", "sim", "-c", str(concurrency), "--prefetch-multiplier", "1", "-l", "warning",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "-n", "bench@%h"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bots = ["greedy", "random"] if GAME == "bubblee" else ["random"] * 2
    try:
        simulate(Plan(GAME, 2, bots, seed="warm-up", workers=concurrency), broker_url=broker)
        report = simulate(Plan(GAME, games, bots, seed="bench", workers=concurrency),
                          broker_url=broker)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
    return {"games": games, "bots": bots, "worker_processes": concurrency,
            "games_per_s": report["timing"]["games_per_second"]}


def _cpu_tree(pid: int) -> tuple[float, float]:
    """CPU seconds of a process, and of its descendants (a Celery worker, and its pool)."""
    from loadtests.bench_moves import cpu_seconds

    own, children, pids = cpu_seconds(pid), 0.0, _children(pid)
    while pids:
        p = pids.pop()
        try:
            children += cpu_seconds(p)
            pids += _children(p)
        except FileNotFoundError:
            pass  # it ended meanwhile
    return own, children


def _children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(c) for c in f.read().split()]
    return out


# How the ai worker is started: as deployed (`arbiter workers ai -c 1`, as the load test
# starts it), or Celery's own command with other settings, to compare.
AI_WORKERS: dict[str, tuple[list[str], dict[str, str]]] = {
    "deployed": (["-m", "services.cli.main", "workers", "ai", "-c", "1"], {}),
    # As deployed, but each AI turn a task of its own (as before turns were played inline).
    "one_per_task": (["-m", "services.cli.main", "workers", "ai", "-c", "1"],
                     {"ARBITER_AI_INLINE_TURNS": "1"}),
    "inline8": (["-m", "services.cli.main", "workers", "ai", "-c", "1"],
                {"ARBITER_AI_INLINE_TURNS": "8"}),
    "inline2": (["-m", "services.cli.main", "workers", "ai", "-c", "1"],
                {"ARBITER_AI_INLINE_TURNS": "2"}),
    "solo": (["-m", "celery", "-A", "services.workers.celery_app", "worker", "-Q", "ai",
              "-P", "solo", "--prefetch-multiplier", "1", "-l", "info", "-n", "bench-ai@%h"],
             {}),
    # The solo pool without Celery's two log lines per task (received, succeeded), as
    # `arbiter workers ai` now leaves them out.
    "solo_quiet": (["-m", "celery", "-A", "services.workers.celery_app", "worker", "-Q", "ai",
                    "-P", "solo", "--prefetch-multiplier", "1", "-l", "warning",
                    "-n", "bench-ai@%h"], {}),
    "solo_one_per_task": (["-m", "celery", "-A", "services.workers.celery_app", "worker",
                           "-Q", "ai", "-P", "solo", "--prefetch-multiplier", "1", "-l", "info",
                           "-n", "bench-ai@%h"], {"ARBITER_AI_INLINE_TURNS": "1"}),
}


def _ai_seats(game_name: str) -> list[Seat]:
    game = gameset.game(game_name)
    return [Seat(f"bot{i}", "ai") for i in range(game.seat_count)]


async def _ai_turns_played(store: Any, game_id: str) -> int:
    from services.core import log as gamelog

    entries = gamelog.decode(await store.read(game_id))
    return sum(e.command.command_id.startswith("ai:") for e in entries)


async def _in_process_turns(game_name: str, games: int) -> dict[str, float]:
    """Bot-against-bot games played turn by turn through `Host.play_ai_turn` in this process:
    CPU per turn with the game held by the host (as a worker holds it), the bot's own share,
    and a turn in a host that must load the game first."""
    from services.core.host import bot_rng
    from services.core.redis_store import RedisStore

    store = RedisStore(REDIS_URL)
    all_games = {game_name: gameset.game(game_name)}
    host = Host(store, all_games)
    game = all_games[game_name]
    ids = [(await host.create(game_name, _ai_seats(game_name), game.pb.Options())).game_id
           for _ in range(games)]
    turns, cpu, bot_cpu, cold_cpu, cold_turns = 0, 0.0, 0.0, 0.0, 0
    for n, game_id in enumerate(ids):
        while True:
            loaded = await host.load(game_id)
            if loaded.finished:
                break
            seat = game.to_act(loaded.state)[0]
            if n % 4 == 3:  # every fourth game: the turn as a host that never saw the game
                fresh = Host(store, all_games)
                t0 = time.process_time()
                await fresh.play_ai_turn(game_id, loaded.version, seat)
                cold_cpu += time.process_time() - t0
                cold_turns += 1
                await host.load(game_id, fresh=True)
                continue
            t0 = time.process_time()
            view, legal = host.view_of(loaded, seat), game.legal_actions(loaded.state, seat)
            game.bots[game.default_bot](view, legal, bot_rng(loaded, "bot", loaded.version))
            t1 = time.process_time()
            await host.play_ai_turn(game_id, loaded.version, seat)
            t2 = time.process_time()
            bot_cpu, cpu, turns = bot_cpu + (t1 - t0), cpu + (t2 - t1), turns + 1
    await store.close()
    return {"turns": turns, "host_ms_per_turn": round(1000 * cpu / turns, 3),
            "bot_ms_per_turn": round(1000 * bot_cpu / turns, 3),
            "load_whole_game_ms_per_turn": round(1000 * cold_cpu / max(1, cold_turns), 3)}


def bench_ai_turns(game_name: str, games: int = 0, worker_kind: str = "deployed"
                   ) -> dict[str, Any]:
    """Per AI turn: a Celery ai worker's CPU (parent and pool) over bot-against-bot games,
    beside the same turns in this process."""
    import redis

    from services.core.redis_store import RedisStore
    from services.workers.celery_app import make_app

    games = games or 16
    os.environ.setdefault("ARBITER_EXTRA_GAMES", "toy=services.toy")  # here and the worker's
    broker = _db(REDIS_URL, 1)
    redis.Redis.from_url(broker).flushdb()
    metrics_port = _free_port()
    env = {**os.environ, "ARBITER_BROKER_URL": broker, "ARBITER_REDIS_URL": REDIS_URL,
           "PYTHONPATH": ROOT, "ARBITER_METRICS_ADDR": f"127.0.0.1:{metrics_port}"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    argv, worker_env = AI_WORKERS[worker_kind]
    log_path = os.environ.get("BENCH_AI_WORKER_LOG", "")
    worker = subprocess.Popen(
        [sys.executable, *argv],
        cwd=ROOT, env={**env, **worker_env}, stdout=subprocess.DEVNULL,
        # BENCH_AI_WORKER_LOG=path keeps the worker's log (each task received and done).
        stderr=open(log_path, "w") if log_path else subprocess.DEVNULL)  # noqa: SIM115

    async def play() -> tuple[int, int, tuple[float, float], float, dict[str, float]]:
        """Games of one human seat and the load test's AI seats; this process plays the
        human's turns (a random legal command) for AI_SECONDS; the worker the AI turns."""
        store = RedisStore(REDIS_URL)
        game = gameset.game(game_name)
        sender = make_app(broker, results=False)

        # Queued at once, on this thread (the server queues from a thread of its executor,
        # which asyncio.run would wait for at its end, a publish retrying included).
        def dispatch(_: Host, game_id: str, version: int, seat: int) -> None:
            sender.send_task("arbiter.ai_turn", args=[game_id, version, seat], queue="ai",
                             ignore_result=True)

        host = Host(store, {game_name: game}, ai_dispatch=dispatch)
        seats = [Seat("human")] + [Seat(f"bot{i}", "ai")
                                   for i in range(1, SEATS.get(game_name, game.seat_count))]
        rng = Rng.for_test(7)

        async def human_turn(game_id: str, tokens: dict[int, str]) -> bool:
            """Play the human seat's turn if it is to act (a random legal command)."""
            loaded = await host.load(game_id, fresh=True)
            if loaded.finished or 0 not in game.to_act(loaded.state):
                return False
            command = rng.choice(game.legal_actions(loaded.state, 0))
            try:
                await host.act(game_id, Caller(token=tokens[0]), command,
                               f"human:{loaded.version}", loaded.version)
                return True
            except (StaleVersion, RuleError):  # an AI seat acting at the same time won
                return False

        # The worker is up once it has played an AI turn of a game like the others.
        warm = await host.create(game_name, seats, game.pb.Options())
        deadline = time.perf_counter() + 60
        while not await _ai_turns_played(store, warm.game_id):
            if time.perf_counter() > deadline:
                raise TimeoutError("the ai worker played no turn in 60 s")
            await human_turn(warm.game_id, warm.tokens)
            await asyncio.sleep(0.1)
        cpu0, t0 = _cpu_tree(worker.pid), time.perf_counter()
        counts0 = _ai_task_counts(metrics_port)
        made = [await host.create(game_name, seats, game.pb.Options()) for _ in range(games)]
        humans = 0
        while time.perf_counter() - t0 < AI_SECONDS:
            for m in made:
                humans += await human_turn(m.game_id, m.tokens)
            await asyncio.sleep(0.005)
        cpu1, elapsed = _cpu_tree(worker.pid), time.perf_counter() - t0
        counts = {k: v - counts0.get(k, 0) for k, v in _ai_task_counts(metrics_port).items()}
        turns = sum([await _ai_turns_played(store, m.game_id) for m in made])
        await store.close()
        return turns, humans, (cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]), elapsed, counts

    try:
        turns, humans, cpu, elapsed, counts = asyncio.run(asyncio.wait_for(play(), 300))
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
    inside = asyncio.run(_in_process_turns(game_name, 4))
    celery_ms = 1000 * sum(cpu) / turns
    return {"game": game_name, "worker": worker_kind, "worker_turns": turns,
            "human_commands": humans,
            # From the worker's /metrics (as deployed only): turns played, idle tasks.
            "worker_tasks_by_result": counts,
            "worker_turns_per_s": round(turns / elapsed, 1),
            "worker_ms_per_human_command": round(1000 * sum(cpu) / max(1, humans), 3),
            "worker_ms_per_turn": round(celery_ms, 3),
            # Celery's main process (the broker, acknowledgements) and its pool (the task).
            "worker_main_ms_per_turn": round(1000 * cpu[0] / turns, 3),
            "worker_pool_ms_per_turn": round(1000 * cpu[1] / turns, 3),
            "in_process": inside,
            "celery_share_ms_per_turn": round(celery_ms - inside["host_ms_per_turn"], 3)}


def _ai_task_counts(metrics_port: int) -> dict[str, float]:
    """arbiter_ai_tasks_total by result, from an ai worker's /metrics (empty without one)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                    timeout=5) as reply:
            text = reply.read().decode()
    except OSError:
        return {}
    return {s.labels["result"]: s.value for f in text_string_to_metric_families(text)
            for s in f.samples if s.name == "arbiter_ai_tasks_total"}


def _free_port() -> int:
    from loadtests.bench_moves import free_ports

    return free_ports(1)[0]


def run() -> dict[str, Any]:
    out: dict[str, Any] = {"simulation_in_process": bench_simulation_in_process()}
    if not REDIS_URL:
        out["note"] = "no ARBITER_TEST_REDIS_URL: replay and Celery figures not measured"
        return out
    out["replay"] = asyncio.run(bench_replay())
    out["simulation_celery"] = bench_simulation_celery()
    out["ai_turns"] = {}
    for g in AI_TURN_GAMES:
        try:
            out["ai_turns"][g] = bench_ai_turns(g)
        except Exception as e:  # noqa: BLE001 - one game's failure leaves the others' figures
            out["ai_turns"][g] = {"error": repr(e)}
    return out


if __name__ == "__main__":
    import json

    # Only the AI turns, with the workers named (default: as deployed):
    #     python -m loadtests.bench_workers ai [NAME of AI_WORKERS ...]
    if sys.argv[1:2] == ["ai"]:
        print(json.dumps({f"{g} {w}": bench_ai_turns(g, worker_kind=w) for g in AI_TURN_GAMES
                          for w in sys.argv[2:] or ["deployed"]}, indent=2))
    else:
        print(json.dumps(run(), indent=2))
