"""Simulations: many bot-against-bot games on the pure decider, with no store.

Every game is a pure function of (game, bots, options, seed, index): its secret seed is
sha256("<seed>:<index>"), the decider's randomness is Rng(that seed, version) exactly as the
server derives it, and each bot draws from Rng("bot:" + that seed, version). So the same seed
gives the same report however many processes or Celery workers play the games.

Seats rotate: in game i the bot named k-th sits at seat (k + i) mod n, so no bot keeps the
first move (disable with rotate=False). Win rates are per bot entry ("A,B": entry 0 is A).
"""

from __future__ import annotations

import hashlib
import math
import multiprocessing
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from services.core.bots import bot_names, choose_command, known
from services.core.decider import Game, Rng, RuleError, Seat
from services.core.metrics import METRICS
from services.workers import gameset
from services.workers.projections import event_kind, fmt

MAX_COMMANDS = 20_000
Progress = Callable[[int, int], None]


def _moody_bear_sides(state: Any) -> list[str]:
    from services.moody_bear import state as mb

    return [mb.pb.Team.Name(t).lower() for t in state.teams]


def _shadow_council_tally(state: Any) -> dict[str, str]:
    """Who won, and who would have without the zone bonus point (survivors, then gold)."""
    from services.shadow_council.rules import tally

    t = tally(state)
    survivors, gold = t.survivors, t.gold
    without = ""
    if len(set(survivors.values())) > 1:
        without = max(survivors, key=lambda f: survivors[f])
    elif len(set(gold.values())) > 1:
        without = max(gold, key=lambda f: gold[f])
    return {"winner": t.winner.lower(), "without_bonus": without.lower(),
            "bonus": t.zone_bonus.lower()}


def _bubblee_scores(state: Any) -> tuple[int, ...]:
    from services.bubblee.state import scores

    return scores(state)


# The score of every seat, for games won on points: the balance report's "at equal turns"
# takes the scores as they stood when the first mover was about to start a turn (both
# sides having had as many), which removes an extra last turn from the same games.
SCORES: dict[str, Callable[[Any], Sequence[int]]] = {"bubblee": _bubblee_scores}

# Facts of a final state the balance report weighs (a counterfactual on the tally).
TALLIES: dict[str, Callable[[Any], dict[str, str]]] = {"shadow_council": _shadow_council_tally}

# Where seats win together, the side each seat played on, read from the final state:
# Moody Bear's teams (red, blue, solo), Shadow Council's factions (Order, Chaos).
SIDES: dict[str, Callable[[Any], list[str]]] = {
    "moody_bear": _moody_bear_sides,
    "shadow_council": lambda state: [state.faction(s).lower() for s in range(state.seats)],
}
# The sides a seat may be dealt, for side bots to name.
SIDE_NAMES = {"moody_bear": ("red", "blue", "solo"), "shadow_council": ("order", "chaos")}


def wilson(wins: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def game_seed(seed: str, index: int) -> bytes:
    return hashlib.sha256(f"{seed}:{index}".encode()).digest()


def play_one(game: Game, bots: Sequence[str], seed: str, index: int, options: Any = None,
             rotate: bool = True, max_commands: int = MAX_COMMANDS,
             side_bots: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One game from setup to the end; the result as plain, JSON-ready values.

    `side_bots` (side -> bot) plays every seat dealt that side (SIDES: a Moody Bear team, a
    Shadow Council faction) with that bot instead of its own: the Solo as a passive bot
    against searching teams, say, whichever seat the deal makes the Solo."""
    n = len(bots)
    shift = index % n if rotate else 0
    entry_at = [(s + shift) % n for s in range(n)]  # seat -> bot entry
    secret = game_seed(seed, index)
    options = options if options is not None else game.pb.Options()
    seats = [Seat(f"seat{s}", "ai", bots[entry_at[s]]) for s in range(n)]
    t0 = time.perf_counter()
    events = game.setup(options, seats, Rng(secret, 0))
    state = game.replay(events)
    if side_bots:
        dealt = SIDES[game.name](state)
        seats = [replace(seat, bot=side_bots.get(dealt[s], seat.bot))
                 for s, seat in enumerate(seats)]
    version = 1 + len(events)  # as stored: GameStarted, then the setup events
    commands = 0
    kinds: Counter[str] = Counter()
    observed: Counter[str] = Counter()
    error = ""
    first_mover = -1  # the first seat to act alone: who really moved first
    trail = hashlib.sha256()  # the commands in order: two games alike are the same game
    scored = SCORES.get(game.name)
    even_scores: Sequence[int] = ()  # the scores when both sides had had as many turns
    last_seat = -1
    outcome = game.outcome(state)
    while outcome is None and commands < max_commands:
        to_act = list(game.to_act(state))
        if not to_act:
            error = "nobody may act but the game is not over"
            break
        if first_mover < 0 and len(to_act) == 1:
            first_mover = to_act[0]
        seat = to_act[Rng(b"seat:" + secret, version).below(len(to_act))] if len(
            to_act) > 1 else to_act[0]
        if scored and seat == first_mover != last_seat:  # a new round of turns begins
            even_scores = scored(state)
        last_seat = seat
        try:
            command = choose_command(game, state, seat, seats[seat].bot,
                                     Rng(b"bot:" + secret, version))
            new = game.decide_now(state, seat, command, Rng(secret, version))
            trail.update(b"%d:" % seat + command.SerializeToString())
        except RuleError as e:
            error = f"seat {seat} ({seats[seat].bot}): {e.code}: {e.message}"
            break
        for event in new:
            state = game.evolve(state, event)
            kinds[event_kind(event)] += 1
            if game.observe is not None:
                for key, value in game.observe(event).items():
                    observed[f"{key}:{fmt(value)}"] += 1
        version += len(new)
        commands += 1
        outcome = game.outcome(state)
    seconds = time.perf_counter() - t0
    METRICS.simulation_games.labels(game.name).inc()
    METRICS.simulation_seconds.labels(game.name).observe(seconds)
    winners = sorted(outcome.winners) if outcome else []
    result = {"index": index, "finished": outcome is not None, "error": error,
              "winner_seats": winners, "winner_entries": sorted(entry_at[w] for w in winners),
              "first_mover_seat": first_mover,
              "first_mover_entry": entry_at[first_mover] if first_mover >= 0 else -1,
              "end": end_kind(outcome.reason) if outcome else "",
              "commands": commands, "events": dict(kinds), "observed": dict(observed),
              "seconds": seconds, "digest": trail.hexdigest()[:16],
              "entry_seats": [entry_at.index(k) for k in range(n)]}
    if game.name in SIDES:
        result["sides"] = SIDES[game.name](state)
    if even_scores:
        best = max(even_scores)
        result["even_turn_winners"] = [s for s, v in enumerate(even_scores) if v == best]
    if game.name in TALLIES and outcome is not None:
        result["tally"] = TALLIES[game.name](state)
    if game.name == "eila":  # a campaign retries lost chapters: every attempt counts
        from services.eila.tools.simulate import attempts

        result["attempts"] = attempts(state)
    return result


def end_kind(reason: str) -> str:
    """How a game ended, with its numbers left out, so that like endings count together."""
    return re.sub(r"\d+", "#", reason.split(";")[0]).strip()


def play_chunk(game_name: str, bots: Sequence[str], seed: str, indexes: Sequence[int],
               options: bytes = b"", rotate: bool = True,
               side_bots: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """A slice of a simulation (what a process or a Celery `sim` task runs)."""
    game = gameset.game(game_name)
    opts = game.pb.Options.FromString(options)
    return [play_one(game, bots, seed, i, opts, rotate, side_bots=side_bots) for i in indexes]


@dataclass
class Plan:
    game: str
    games: int
    bots: list[str]
    seed: str = "0"
    options: bytes = b""
    rotate: bool = True
    workers: int = 1
    chunk: int = 0  # games per task; 0: chosen from the number of games and workers
    side_bots: dict[str, str] = field(default_factory=dict)  # see play_one

    def chunks(self) -> list[list[int]]:
        size = self.chunk or max(1, min(200, math.ceil(self.games / (4 * max(1, self.workers)))))
        return [list(range(i, min(i + size, self.games))) for i in range(0, self.games, size)]


class BadPlan(ValueError):
    def __init__(self, message: str, field: str = "bots") -> None:
        super().__init__(message)
        self.field = field  # the request field at fault: bots, games or options


def check(plan: Plan) -> Game:
    game = gameset.game(plan.game)
    try:
        game.check_seat_count(len(plan.bots))
    except RuleError as e:
        raise BadPlan(f"give one bot a seat: {e.message}") from e
    if plan.side_bots and game.name not in SIDES:
        raise BadPlan(f"{game.title} has no sides for side bots")
    strange = sorted(set(plan.side_bots) - set(SIDE_NAMES.get(game.name, ())))
    if strange:  # a side no seat is ever dealt would leave the plan silently unchanged
        raise BadPlan(f"{game.title} has no side {', '.join(strange)}; its sides are "
                      f"{', '.join(SIDE_NAMES[game.name])}")
    unknown = [b for b in [*plan.bots, *plan.side_bots.values()] if not b or not known(game, b)]
    if unknown:
        raise BadPlan(f"no bot named {', '.join(unknown)}; choose from "
                      f"{', '.join(bot_names(game))}")
    if plan.games <= 0:
        raise BadPlan("play at least one game", "games")
    try:
        options = game.pb.Options.FromString(plan.options)
    except Exception as e:  # noqa: BLE001 - a protobuf DecodeError
        raise BadPlan("options is not the game's Options message", "options") from e
    try:  # the game's own rules for its seats and options (a duel, a solo level...)
        game.setup(options, [Seat(b, "ai", b) for b in plan.bots], Rng(b"check", 0))
    except RuleError as e:
        raise BadPlan(e.message, "bots" if e.field in (None, "", "seats") else "options") from e
    return game


def run(plan: Plan, progress: Progress | None = None, broker_url: str = "") -> dict[str, Any]:
    """Play the plan in this process, in `workers` processes, or on Celery (with a broker)."""
    game = check(plan)
    results, seconds = play(plan, progress, broker_url)
    return finish(game, plan, results, seconds, bool(broker_url))


def play(plan: Plan, progress: Progress | None = None, broker_url: str = ""
         ) -> tuple[list[dict[str, Any]], float]:
    """Each game's result (in index order) and the seconds they took, as `run` plays them."""
    t0 = time.perf_counter()
    results: list[dict[str, Any]] = []
    chunks = plan.chunks()

    def done(rows: list[dict[str, Any]]) -> None:
        results.extend(rows)
        if progress:
            progress(len(results), plan.games)

    args = (plan.game, plan.bots, plan.seed)
    if broker_url:
        from services.workers.tasks import run_on_celery

        run_on_celery(broker_url, plan, chunks, done)
    elif plan.workers > 1:
        # Spawned, not forked: a fork copies the caller's threads and open connections (gRPC's,
        # a Celery client's), whose after-fork clean-up can wait forever on a socket.
        with ProcessPoolExecutor(plan.workers, mp_context=multiprocessing.get_context("spawn")
                                 ) as pool:
            futures = [pool.submit(play_chunk, *args, c, plan.options, plan.rotate,
                                   plan.side_bots) for c in chunks]
            for f in futures:
                done(f.result())
    else:
        for c in chunks:
            done(play_chunk(*args, c, plan.options, plan.rotate, plan.side_bots))
    return sorted(results, key=lambda r: r["index"]), time.perf_counter() - t0


def finish(game: Game, plan: Plan, results: list[dict[str, Any]], seconds: float,
           celery: bool) -> dict[str, Any]:
    """The report of the games played, with how long they took."""
    report = summarise(game, plan, results)
    report["timing"] = {"seconds": round(seconds, 3),
                        "games_per_second": round(plan.games / seconds, 1) if seconds else 0.0,
                        "workers": plan.workers, "celery": celery}
    return report


def summarise(game: Game, plan: Plan, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The report: deterministic for a seed (everything but "timing")."""
    results = sorted(results, key=lambda r: r["index"])
    n = len(results)
    finished = [r for r in results if r["finished"]]
    # A sole win, a win shared with other seats, and a game nobody won are three results.
    sole = [r for r in finished if len(r["winner_seats"]) == 1]
    wins = Counter(r["winner_entries"][0] for r in sole)
    shared = Counter(e for r in finished if len(r["winner_seats"]) > 1 for e in r["winner_entries"])
    seat_wins = Counter(r["winner_seats"][0] for r in sole)
    lengths = [r["commands"] for r in finished]
    events: Counter[str] = Counter()
    observed: dict[str, Counter[str]] = {}
    for r in results:
        events.update(r["events"])
        for key_value, count in r["observed"].items():
            key, value = key_value.rsplit(":", 1)
            observed.setdefault(key, Counter())[value] += count
    bots = []
    for k, name in enumerate(plan.bots):
        lo, hi = wilson(wins[k], n)
        bots.append({"entry": k, "bot": name, "wins": wins[k], "shared_wins": shared[k],
                     "win_rate": round(wins[k] / n, 4) if n else 0.0,
                     "ci95": [round(lo, 4), round(hi, 4)]})
    # First-mover advantage: of the games some seats but not all won, how many the first to
    # act was among the winners (by who actually moved first, whatever the seat numbers).
    # Where seats win together (teams, factions) a win is its side's, so with no advantage
    # the first mover wins the games in proportion to the seats that won them: the even
    # share is that proportion on average (1/seats where one seat wins).
    moved = [r for r in finished if r["first_mover_seat"] >= 0
             and 0 < len(r["winner_seats"]) < len(plan.bots)]
    first_won = sum(1 for r in moved if r["first_mover_seat"] in r["winner_seats"])
    fm_lo, fm_hi = wilson(first_won, len(moved))
    winners_a_game = sum(len(r["winner_seats"]) for r in moved) / len(moved) if moved else 1

    def by_value(c: Counter[str]) -> dict[str, int]:
        return dict(sorted(c.items(), key=lambda kv: float(kv[0])))

    report = {
        "game": game.name, "games": n, "bots": bots, "seed": plan.seed,
        "rotate": plan.rotate, "finished": len(finished),
        "unfinished": n - len(finished),
        "errors": [f"game {r['index']}: {r['error']}" for r in results if r["error"]][:20],
        "draws": sum(1 for r in finished if not r["winner_seats"]),
        "shared": sum(1 for r in finished if len(r["winner_seats"]) > 1),
        "first_mover": {"decided_games": len(moved), "first_mover_won": first_won,
                        "win_rate": round(first_won / len(moved), 4) if moved else 0.0,
                        "ci95": [round(fm_lo, 4), round(fm_hi, 4)],
                        "even_share": round(winners_a_game / len(plan.bots), 4)},
        "ends": dict(Counter(r["end"] for r in finished).most_common()),
        "seat_wins": [seat_wins[s] for s in range(len(plan.bots))],
        "length": {"mean": round(sum(lengths) / len(lengths), 2) if lengths else 0.0,
                   "min": min(lengths, default=0), "max": max(lengths, default=0)},
        "events": dict(sorted(events.items())),
        "observed": {k: by_value(v) for k, v in sorted(observed.items())},
    }
    sides = side_wins(results)  # where seats win together: each side's share
    if sides:
        report["sides"] = sides
    if plan.side_bots:
        report["side_bots"] = dict(plan.side_bots)
    if game.name == "eila":  # win rates per chapter attempt, not per campaign
        from services.eila.tools.simulate import per_attempt

        per_attempt(report, results)
    return report


def side_wins(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Which side won each finished game, where seats win by side: each side's share of the
    games a side won, against the even share (one over the sides dealt)."""
    finished = [r for r in results if r["finished"] and len(set(r.get("sides", []))) > 1]
    if not finished:
        return {}
    dealt: Counter[str] = Counter()
    won: Counter[str] = Counter()
    for r in finished:
        dealt.update(set(r["sides"]))
        winning = {r["sides"][w] for w in r["winner_seats"]}
        if len(winning) == 1:
            won[winning.pop()] += 1
    decided = sum(won.values())
    out: dict[str, Any] = {"decided_games": decided, "games": len(finished)}
    for side in sorted(dealt):
        lo, hi = wilson(won[side], decided)
        out[side] = {"won": won[side], "dealt": dealt[side],
                     "win_rate": round(won[side] / decided, 4) if decided else 0.0,
                     "ci95": [round(lo, 4), round(hi, 4)],
                     "even_share": round(dealt[side] / len(finished) / len(dealt), 4)}
    return out


def render(report: dict[str, Any]) -> str:
    """The report as text for the terminal."""
    lines = [f"{report['game']}: {report['games']} games, seed {report['seed']}"
             f"{' (seats rotate)' if report['rotate'] else ''}"]
    for b in report["bots"]:
        lo, hi = b["ci95"]
        lines.append(f"  {b['bot']:<12} (entry {b['entry']}) sole wins {b['wins']:>6}  "
                     f"{100 * b['win_rate']:5.1f}%  95% CI [{100 * lo:5.1f}%, {100 * hi:5.1f}%]"
                     f"  shared wins {b['shared_wins']}")
    lines.append(f"  sole wins above; shared wins {report['shared']} games, no winner "
                 f"{report['draws']}, unfinished (command cap or error) {report['unfinished']}")
    fm = report["first_mover"]
    if fm["decided_games"] and len(report["bots"]) > 1:  # one seat: no one moves "first"
        lo, hi = fm["ci95"]
        lines.append(f"  the first to move won {fm['first_mover_won']} of {fm['decided_games']} "
                     f"games some seats won: {100 * fm['win_rate']:.1f}% "
                     f"[{100 * lo:.1f}%, {100 * hi:.1f}%] (even: {100 * fm['even_share']:.1f}%)")
    for end, count in report["ends"].items():
        lines.append(f"  ended: {end}: {count}")
    sides = report.get("sides", {})
    for side, f in sides.items():
        if isinstance(f, dict):
            lo, hi = f["ci95"]
            lines.append(f"  side {side}: won {f['won']} of the {sides['decided_games']} games "
                         f"one side won, {100 * f['win_rate']:.1f}% [{100 * lo:.1f}%, "
                         f"{100 * hi:.1f}%] (even: {100 * f['even_share']:.1f}%)")
    if "attempts" in report:  # Eila
        from services.eila.tools.simulate import render_attempts

        lines += render_attempts(report["attempts"])
    ln = report["length"]
    lines.append(f"  length (commands): mean {ln['mean']}, min {ln['min']}, max {ln['max']}")
    for key, hist in report["observed"].items():
        total = sum(hist.values()) or 1
        lines.append(f"  {key} histogram:")
        for value, count in hist.items():
            bar = "#" * max(1, round(40 * count / total)) if count else ""
            lines.append(f"    {value:>6}: {count:>8}  {bar}")
    if report["events"]:
        lines.append("  events: " + ", ".join(f"{k} {v}" for k, v in report["events"].items()))
    for e in report["errors"]:
        lines.append(f"  error: {e}")
    t = report.get("timing")
    if t:
        lines.append(f"  {t['seconds']} s, {t['games_per_second']} games/s")
    return "\n".join(lines)


def progress_bar(stream: Any, width: int = 30) -> Progress:
    def show(done: int, total: int) -> None:
        filled = width * done // total
        stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} games")
        if done >= total:
            stream.write("\n")
        stream.flush()

    return show
