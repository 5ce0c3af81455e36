"""The suite every game passes, parametrised by game (DESIGN.md, "Tests that every game passes").

Random legal play to the end over many seeds; purity (nothing mutates a state); replay of the
log equals the state; the same seed gives the same game; malformed and illegal commands are
rejected and change nothing; no leak (re-deal what a seat cannot see: its view, its legal
commands and the rules' answers to its commands are unchanged); the last two follow the
game's playout policy (Game.playout), which gets further into a game than random play;
export, import and verify round trip, and a tampered log is caught at its line.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
from typing import Any

import pytest

from services import games as registry
from services.core import log as gamelog
from services.core.decider import Game, MalformedCommand, Rng, RuleError, Seat
from services.core.host import Caller, Host, StaleVersion
from services.core.server import in_process_ai
from services.core.store import MemoryStore
from tests.conformance.playouts import policy

GAMES = list(registry.GAME_MODULES)
MAX_COMMANDS = 20_000
SEEDS = range(12)


def seats_for(game: Game, kind: str = "human") -> list[Seat]:
    return [Seat(f"p{i}", kind, "random" if kind == "ai" else "")
            for i in range(game.seat_count)]


def random_game(game: Game, seed: int, check: bool = False) -> tuple[list[Any], Any]:
    """Play random legal commands to the end; return the events and the final state."""
    rng = Rng.for_test(seed)
    events = game.setup(game.pb.Options(), seats_for(game), Rng(b"seed-%d" % seed, 0))
    state = game.replay(events)
    version = len(events)
    for _ in range(MAX_COMMANDS):
        if game.outcome(state) is not None:
            return events, state
        seats = list(game.to_act(state))
        assert seats, "nobody may act but the game is not over"
        seat = rng.choice(seats)
        legal = game.legal_actions(state, seat)
        assert legal, f"seat {seat} must act but has no legal command"
        command = rng.choice(legal)
        before = copy.deepcopy(state) if check else None
        new = game.decide(state, seat, command, Rng(b"seed-%d" % seed, version))
        for e in new:
            state = game.evolve(state, e)
        if check:
            assert before is not None
            # Deciding and evolving never change the state they were given.
            assert game.replay(events) == before
        events += new
        version += len(new)
    raise AssertionError(f"no end after {MAX_COMMANDS} commands")


@pytest.fixture(params=GAMES)
def game(request: pytest.FixtureRequest) -> Game:
    return registry.game(request.param)


def test_random_play_reaches_the_end(game: Game) -> None:
    for seed in SEEDS:
        events, state = random_game(game, seed)
        outcome = game.outcome(state)
        assert outcome is not None
        assert all(0 <= w < game.seat_count for w in outcome.winners)


def test_replaying_the_log_gives_the_state_and_nothing_mutates(game: Game) -> None:
    events, state = random_game(game, 1, check=True)
    assert game.replay(events) == state


def test_the_same_seed_gives_the_same_game(game: Game) -> None:
    a, _ = random_game(game, 7)
    b, _ = random_game(game, 7)
    assert [e.SerializeToString() for e in a] == [e.SerializeToString() for e in b]
    c = game.setup(game.pb.Options(), seats_for(game), Rng(b"another", 0))
    d = game.setup(game.pb.Options(), seats_for(game), Rng(b"another", 0))
    assert c == d


def test_the_platform_fills_the_fields_every_view_has(game: Game) -> None:
    """A game shows its own fields; seat, to_act, outcome and hidden come from Game.view
    alone, so they mean the same in every game."""
    events, _ = random_game(game, 3)
    state = game.start(events[0])
    for k, event in enumerate(events[1:]):
        state = game.evolve(state, event)
        if k % 5 and k != len(events) - 2:
            continue
        outcome = game.outcome(state)
        for seat in [None, *range(game.seat_count)]:
            shown = game.show(state, seat)
            assert not [f.name for f, _ in shown.ListFields()
                        if f.name in ("seat", "to_act", "outcome", "hidden", "version")]
            view = game.view(state, seat)
            assert view.HasField("seat") == (seat is not None) and view.seat == (seat or 0)
            assert list(view.to_act) == list(game.to_act(state))
            assert view.outcome == (outcome.to_pb() if outcome else type(view.outcome)())
    assert outcome is not None and state == game.replay(events)


def test_the_platform_refuses_before_the_rules_run(game: Game) -> None:
    """An empty command, a seat not to act and a finished game are refused by the platform
    (Game.decide_now, the path of the host and of log verification) before the game's decide
    runs: a game needs no copy of these checks."""
    decided: list[Any] = []

    def watched_decide(*args: Any) -> Any:
        decided.append(args)
        return game.decide(*args)

    watched = dataclasses.replace(game, decide=watched_decide)
    events = game.setup(game.pb.Options(), seats_for(game), Rng(b"s", 0))
    state = game.replay(events)
    seat = list(game.to_act(state))[0]
    before = copy.deepcopy(state)
    with pytest.raises(MalformedCommand) as empty:
        watched.decide_now(state, seat, game.pb.Command(), Rng(b"s", 1))
    assert empty.value.code == "NO_COMMAND"
    command = game.legal_actions(state, seat)[0]
    for idle in (s for s in range(game.seat_count) if s not in game.to_act(state)):
        with pytest.raises(RuleError) as not_yours:
            watched.decide_now(state, idle, command, Rng(b"s", 1))
        assert not_yours.value.code == "NOT_YOUR_TURN"
    _, over = random_game(game, 2)
    for anyone in [None, *range(game.seat_count)]:
        with pytest.raises(RuleError) as finished:
            watched.decide_now(over, anyone, command, Rng(b"s", 1))
        assert finished.value.code == "GAME_OVER"
    assert decided == [] and state == before


def test_rejected_commands_change_nothing(game: Game) -> None:
    """Every legal command of one moment, replayed later when illegal, is refused cleanly."""
    rng = Rng.for_test(3)
    events = game.setup(game.pb.Options(), seats_for(game), Rng(b"s", 0))
    state = game.replay(events)
    refused = 0
    for step in range(200):
        if game.outcome(state) is not None:
            break
        seat = rng.choice(list(game.to_act(state)))
        legal = game.legal_actions(state, seat)
        command = policy(game)(game.view(state, seat), legal, rng)
        new = game.decide(state, seat, command, Rng(b"s", step + 1))
        after = state
        for e in new:
            after = game.evolve(after, e)
        # Try the other commands of the old moment now.
        for stale in legal[:5]:
            for s in game.to_act(after):
                snapshot = copy.deepcopy(after)
                try:
                    game.decide(after, s, stale, Rng(b"s", 10_000 + step))
                except RuleError as e:
                    refused += 1
                    assert e.code and e.code.upper() == e.code and e.message
                assert after == snapshot
        state = after
    assert refused > 0


def answer_to(game: Game, state: Any, seat: int, command: Any, step: int) -> Any:
    """What a seat is told when it sends a command: accepted, or the rule's code and sentence."""
    try:
        game.decide_now(state, seat, command, Rng(b"answer", step))
    except (RuleError, MalformedCommand) as refused:
        return type(refused).__name__, refused.code, refused.message
    return "accepted"


def test_no_leak_redealing_hidden_information_keeps_each_view(game: Game) -> None:
    if game.redeal is None:
        pytest.skip(f"{game.title} hides nothing but randomness to come")
    check_no_leak_in_views(game, game.pb.Options(), game.seat_count)


def check_no_leak_in_views(game: Game, options: Any, players: int, every: int = 7) -> None:
    """Every `every` commands of a random game, each seat's world is re-dealt: its view, a
    spectator's, its legal commands and the rules' answers to it must not change."""
    assert game.redeal is not None
    rng = Rng.for_test(5)
    events = game.setup(options, [Seat(f"p{i}") for i in range(players)], Rng(b"s", 0))
    state = game.replay(events)
    checked = 0
    for step in range(300):
        if game.outcome(state) is not None:
            break
        if step % every == 0:
            for seat in range(players):
                other = game.redeal(state, seat, Rng(b"redeal-%d" % step, seat))
                assert game.view(other, seat) == game.view(state, seat)
                assert game.view(other, None) == game.view(state, None)
                # What the seat may do, and how the rules answer it, cannot depend on what it
                # cannot see: not even for commands that name other seats' hidden things.
                assert game.legal_actions(other, seat) == game.legal_actions(state, seat)
                if seat not in game.to_act(state):
                    continue  # "not your turn", whatever is hidden
                tried = list(game.legal_actions(state, seat))
                for someone in range(players):
                    if someone != seat:
                        tried += game.legal_actions(state, someone)[:25]
                        tried += game.legal_actions(other, someone)[:25]
                for command in tried:
                    answer = answer_to(game, state, seat, command, step)
                    assert answer_to(game, other, seat, command, step) == answer, (
                        f"seat {seat} is answered differently in worlds it cannot tell apart")
                checked += 1
        seat = rng.choice(list(game.to_act(state)))
        command = policy(game)(game.view(state, seat), game.legal_actions(state, seat), rng)
        for e in game.decide(state, seat, command, Rng(b"s", step + 1)):
            state = game.evolve(state, e)
    assert checked > 0


def test_no_leak_in_the_event_feed(game: Game) -> None:
    """Two worlds that a seat cannot tell apart at the start (everything it cannot see dealt
    anew) receive the same commands. While the seat's views stay equal, so must every event
    it is shown: a redaction that lets hidden information through makes them differ."""
    if game.redeal is None:
        pytest.skip(f"{game.title} hides nothing but randomness to come")
    check_no_leak_in_feed(game, game.pb.Options(), game.seat_count)


def check_no_leak_in_feed(game: Game, options: Any, players: int, seeds: int = 4) -> None:
    assert game.redeal is not None
    compared = 0
    for seat in range(players):
        for seed in range(seeds):
            seats = [Seat(f"p{i}") for i in range(players)]
            events = game.setup(options, seats, Rng(b"feed-%d" % seed, 0))
            real = game.replay(events)
            other = game.redeal(real, seat, Rng(b"other-%d" % seed, seat))
            assert game.view(other, seat) == game.view(real, seat)
            chooser = Rng(b"choose-%d" % seed, seat)
            version = len(events)
            for _ in range(400):
                if game.outcome(real) is not None or game.outcome(other) is not None:
                    break
                actor = chooser.choice(list(game.to_act(real)))
                command = policy(game)(game.view(real, actor), game.legal_actions(real, actor),
                                       chooser)
                rng_version = Rng(b"feed-%d" % seed, version)
                mine = game.decide(real, actor, command, rng_version)
                try:
                    theirs = game.decide(other, actor, command, Rng(b"feed-%d" % seed, version))
                except RuleError:
                    break  # the worlds part here; the seat saw nothing of why
                for e in mine:
                    real = game.evolve(real, e)
                for e in theirs:
                    other = game.evolve(other, e)
                version += len(mine)
                if game.view(real, seat) != game.view(other, seat):
                    break  # the seat has now legitimately learned something hidden
                shown = [game.redact(e, seat) for e in mine]
                shown_other = [game.redact(e, seat) for e in theirs]
                assert [e for e in shown if e is not None] == [
                    e for e in shown_other if e is not None], (
                    f"seat {seat} is shown different events in worlds it cannot tell apart")
                if game.describe is not None:  # and told the same words
                    told = [game.describe(e, seat) for e in mine]
                    told_other = [game.describe(e, seat) for e in theirs]
                    assert [w for w in told if w] == [w for w in told_other if w], (
                        f"seat {seat} is told different things in worlds it cannot tell apart")
                compared += 1
    assert compared > 0


# ---- through the host: AI seats, export, import, verify ------------------------------------


async def finished_game(game: Game) -> tuple[Host, str]:
    host = Host(MemoryStore(), {game.name: game}, admin_token="admin",
                ai_dispatch=in_process_ai)
    game_id = (await host.create(game.name, seats_for(game, "ai"), game.pb.Options())).game_id
    for _ in range(20_000):
        loaded = await host.load(game_id)
        if loaded.finished:
            return host, game_id
        await asyncio.sleep(0)
    raise AssertionError("the AI seats did not finish the game")


async def test_ai_seats_play_to_the_end_through_the_command_path(game: Game) -> None:
    host, game_id = await finished_game(game)
    _, entries = await host.history(game_id)
    commands = [e.command for e in entries if e.HasField("command")]
    assert commands and all(c.command_id.startswith(f"ai:{game_id}:") for c in commands)


async def test_export_import_verify_round_trip(game: Game) -> None:
    host, game_id = await finished_game(game)
    loaded, entries = await host.history(game_id)
    lines = gamelog.to_json_lines(game, entries)
    assert gamelog.verify(game, gamelog.from_json_lines(game, lines)).finished
    other = Host(MemoryStore(), {game.name: game})
    from services.core.grpc_api import import_lines

    new_id, version = await import_lines(other, lines)
    assert version == len(lines)
    _, imported = await other.history(new_id)
    assert gamelog.to_json_lines(game, imported) == lines


async def test_a_tampered_log_is_caught_at_its_line(game: Game) -> None:
    host, game_id = await finished_game(game)
    _, entries = await host.history(game_id)
    lines = gamelog.to_json_lines(game, entries)
    # Tamper with the first command's event: drop the entry's event and put another there.
    target = next(i for i, line in enumerate(lines) if '"command"' in line)
    row = json.loads(lines[target])
    donor = next(json.loads(line) for line in lines[target + 1:] if '"event"' in line
                 and json.loads(line)["event"] != row.get("event"))
    row["event"] = donor["event"]
    tampered = lines[:target] + [json.dumps(row)] + lines[target + 1:]
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.verify(game, gamelog.from_json_lines(game, tampered))
    assert bad.value.line == target + 1
    # A wrong seed is caught at the first line.
    final = json.loads(lines[-1])
    final["finished"]["seed"] = "00" * 32
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.verify(game, gamelog.from_json_lines(game, lines[:-1] + [json.dumps(final)]))
    assert bad.value.line == 1


async def test_the_host_refuses_a_seat_that_may_not_act(game: Game) -> None:
    host = Host(MemoryStore(), {game.name: game}, admin_token="admin")
    made = await host.create(game.name, seats_for(game),
                             game.pb.Options())
    game_id, tokens, version = made.game_id, made.tokens, made.version
    loaded = await host.load(game_id)
    acting = list(game.to_act(loaded.state))
    idle = [s for s in range(game.seat_count) if s not in acting]
    command = game.legal_actions(loaded.state, acting[0])[0]
    if idle:
        with pytest.raises(RuleError) as e:
            await host.act(game_id, Caller(token=tokens[idle[0]]), command, "c1")
        assert e.value.code == "NOT_YOUR_TURN"
    with pytest.raises(StaleVersion):
        await host.act(game_id, Caller(token=tokens[acting[0]]), command, "c2", version - 1)
    assert (await host.load(game_id)).version == version
