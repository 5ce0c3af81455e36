"""What each `arbiter` subcommand does."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from typing import Any

import grpc
from arbiter.v1 import arbiter_pb2 as apb
from arbiter.v1 import arbiter_pb2_grpc as apb_grpc
from google.protobuf import text_format

from services import games as registry
from services.core import log as gamelog
from services.core.decider import Game, Seat
from services.core.host import Caller, Host
from services.core.server import Config, in_process_ai
from services.core.server import serve as serve_forever
from services.core.store import MemoryStore
from services.workers.cli import (  # noqa: F401 (subcommands)
    balance,
    rebuild,
    simulate,
    stats,
    workers,
)


def serve(args: argparse.Namespace) -> Any:
    config = Config.from_env()
    names = [g for g in (args.games or "").split(",") if g] or config.games or list(
        registry.GAME_MODULES)
    unknown = [n for n in names if n not in registry.GAME_MODULES]
    if unknown:
        print(f"unknown games: {', '.join(unknown)}; known: {', '.join(registry.GAME_MODULES)}",
              file=sys.stderr)
        return 2
    return serve_forever(config, {n: registry.game(n) for n in names})


def renderer(game: Game) -> Any:
    """The game's terminal drawing (services/<game>/render.py), or the view as text."""
    try:
        module = importlib.import_module(f"services.{game.name}.render")
        return module.render
    except ImportError:
        return lambda view, colour=True: text_format.MessageToString(view)


def _text(message: Any) -> str:
    return text_format.MessageToString(message, as_one_line=True)


def describer(game: Game) -> Any:
    """The game's words for a command (render.describe), or the command as text."""
    try:
        return importlib.import_module(f"services.{game.name}.render").describe
    except (ImportError, AttributeError):
        return _text


# ---- play ---------------------------------------------------------------------------------


async def play(args: argparse.Namespace) -> int:
    game = registry.game(args.game)
    host = Host(MemoryStore(), {game.name: game})
    host.ai_dispatch = in_process_ai
    if args.bot not in game.bots:
        print(f"no bot {args.bot!r}; choose one of {', '.join(sorted(game.bots))}")
        return 2
    seats = [Seat("you"), Seat(args.bot, "ai", args.bot)]
    game_id, tokens, commitment, _ = await host.create(game.name, seats, game.pb.Options())
    me = Caller(token=tokens[0])
    draw, describe = renderer(game), describer(game)
    print(f"{game.title}: you are seat 0 against the {args.bot} bot. Seed commitment "
          f"{commitment[:16]}...  (q to quit)")
    while True:
        await asyncio.sleep(0.05)  # let the bot's turn land
        loaded = await host.load(game_id)
        print(draw(host.view_of(loaded, 0), colour=not args.no_colour))
        if loaded.finished:
            outcome = game.outcome(loaded.state)
            print("Game over:", outcome)
            return 0
        if 0 not in game.to_act(loaded.state):
            continue
        legal = game.legal_actions(loaded.state, 0)
        for i, c in enumerate(legal):
            print(f"  {i:3d}  {describe(c)}")
        choice = input("your move> ").strip()
        if choice in {"q", "quit"}:
            return 0
        if not choice.isdigit() or int(choice) >= len(legal):
            print("pick a number from the list")
            continue
        try:
            await host.act(game_id, me, legal[int(choice)], f"cli-{loaded.version}",
                           loaded.version)
        except Exception as e:  # noqa: BLE001 - show the rule's sentence and go on
            print("refused:", e)


# ---- logs ---------------------------------------------------------------------------------


def _address() -> str:
    return os.environ.get("ARBITER_GRPC_ADDR", "127.0.0.1:50051")


def _channel() -> grpc.Channel:
    return grpc.insecure_channel(_address())


def _admin_metadata() -> list[tuple[str, str]]:
    token = os.environ.get("ARBITER_ADMIN_TOKEN", "")
    return [("x-admin-token", token)] if token else []


def load_lines(source: str) -> list[str]:
    if os.path.exists(source):
        with open(source, encoding="utf-8") as f:
            return [line for line in f.read().splitlines() if line.strip()]
    # A running game's log is the admin's alone (ARBITER_ADMIN_TOKEN); a finished one is public.
    return list(_ask_server(source, "ExportLog", apb.ExportLogRequest(game_id=source)).lines)


def _ask_server(game_id: str, method: str, request: Any) -> Any:
    """Call arbiter.v1 about a stored game, as the admin when ARBITER_ADMIN_TOKEN is set."""
    stub = apb_grpc.ArbiterStub(_channel())
    try:
        return getattr(stub, method)(request, metadata=_admin_metadata())
    except grpc.RpcError as e:
        raise SystemExit(f"{game_id!r} is not a file, and the server at {_address()} answered "
                         f"{e.code().name}: {e.details()}") from None


def replay(args: argparse.Namespace) -> Any:
    if args.rebuild:
        return rebuild(args)
    if not args.source:
        print("replay needs a log file or a game id (or --rebuild)", file=sys.stderr)
        return 2
    lines = load_lines(args.source)
    name = gamelog.game_of_json_lines(lines)
    game = registry.game(name)
    entries = gamelog.from_json_lines(game, lines)
    draw, describe = renderer(game), describer(game)
    last = min(args.to, len(entries)) if args.to else len(entries)
    state: Any = None
    for batch in gamelog.batches(entries):
        for entry in batch.entries:
            if entry.version > last:
                break
            if entry.HasField("command"):
                c = entry.command
                who = "server" if c.system else f"seat {c.seat}"
                print(f"v{entry.version}: {who}: "
                      f"{describe(game.pb.Command.FromString(c.command))}")
            body = entry.WhichOneof("body")
            if body == "event":
                event = gamelog.game_event(game, entry)
                state = game.evolve(state, event)
                print(f"v{entry.version}: {_text(event)}")
            elif body == "finished":
                print(f"v{entry.version}: game over: {_text(entry.finished.outcome)}")
        shown = min(batch.last_version, last)
        if state is not None and (not args.to or shown == last):
            view = game.view(state, None)
            view.version = shown
            print(draw(view, colour=not args.no_colour))
            if not args.all and not args.to and sys.stdin.isatty():
                if input("enter: next, q: quit> ").strip() == "q":
                    return 0
        if shown == last:
            break
    return 0


def verify(args: argparse.Namespace) -> int:
    if not os.path.exists(args.source):
        return _verify_on_server(args.source)
    lines = load_lines(args.source)
    try:
        game = registry.game(gamelog.game_of_json_lines(lines))
        verified = gamelog.verify(game, gamelog.from_json_lines(game, lines))
    except (gamelog.BadLog, KeyError) as bad:
        print(f"FAILED: {bad}")
        return 1
    print(f"OK: {verified.entries} entries re-run against the revealed seed; every event matches")
    return 0


def _verify_on_server(game_id: str) -> int:
    """A stored game is verified by the server, which holds a running game's seed and uses it
    for the admin (ARBITER_ADMIN_TOKEN)."""
    reply = _ask_server(game_id, "VerifyLog", apb.VerifyLogRequest(game_id=game_id))
    if not reply.ok:
        print(f"FAILED: line {reply.first_bad_line}: {reply.reason}")
        return 1
    print(f"OK: {reply.entries} entries re-run by the server; every event matches")
    return 0


def export(args: argparse.Namespace) -> int:
    for line in load_lines(args.game_id):
        print(line)
    return 0


def eila(args: argparse.Namespace) -> int:
    from services.eila.validate import run_validate

    return run_validate()
