"""What each `arbiter` subcommand does."""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import grpc
from arbiter.v1 import arbiter_pb2 as apb
from arbiter.v1 import arbiter_pb2_grpc as apb_grpc
from google.protobuf import text_format

from services import games as registry
from services.core import bots
from services.core import log as gamelog
from services.core.decider import Game, Outcome, RuleError, Seat
from services.core.happened import named
from services.core.host import Caller, Host
from services.core.server import Config, ConfigError, in_process_ai
from services.core.store import MemoryStore, StoreRefused, check_file
from services.process import serve as serve_forever
from services.workers.cli import (  # noqa: F401 (subcommands)
    balance,
    ladder,
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
    return _serve(config, {n: registry.game(n) for n in names})


async def _serve(config: Config, games: dict[str, Game]) -> int:
    try:
        return await serve_forever(config, games)
    except StoreRefused as refused:  # a damaged or locked file: a sentence, not a traceback
        print(f"arbiter: not starting: {refused}", file=sys.stderr)
        return 1
    except ConfigError as e:
        print(f"arbiter serve: {e}", file=sys.stderr)
        return 2


def store(args: argparse.Namespace) -> Any:
    """`arbiter store check [PATH]` or `arbiter store migrate`."""
    return check_store(args) if args.action == "check" else migrate_store(args)


def check_store(args: argparse.Namespace) -> int:
    """`arbiter store check [PATH]`: what a server would find in the file, nothing changed."""
    path = args.path or os.path.join(Config.from_env().data_dir, "arbiter.aof")
    if not os.path.exists(path):
        print(f"{path}: no such file", file=sys.stderr)
        return 2
    try:
        scan = check_file(path)
    except StoreRefused as damaged:
        print(f"damaged: {damaged}", file=sys.stderr)
        return 1
    print(f"{path}: {scan.records} records of {scan.games} games, {scan.good_bytes} bytes")
    if scan.unchained:
        print(f"the first {scan.unchained} records are of an earlier format: checksummed (or "
              "not), but not chained, so a record removed or moved among them cannot be seen; "
              "the records after them are chained")
    if scan.torn_bytes:
        print(f"a torn last record at byte {scan.good_bytes} ({scan.torn_bytes} bytes, an "
              "append cut short) would be dropped at start")
    return 0


async def migrate_store(args: argparse.Namespace) -> int:
    """`arbiter store migrate`: copy games of the 16-partition layout to the current one."""
    from services.core.redis_store import RedisStore, migrate_old_layout

    url = os.environ.get("ARBITER_REDIS_URL", "")
    if not url:
        print("arbiter store needs ARBITER_REDIS_URL (the embedded store has no partitions)",
              file=sys.stderr)
        return 2
    redis_store = RedisStore(url)
    try:
        copied, present = await migrate_old_layout(redis_store)
    finally:
        await redis_store.close()
    print(f"{copied} games copied to the 256-partition layout, {present} were there already; "
          "the old keys (arbiter:{p0}: to arbiter:{p15}:) are left for you to delete")
    return 0


def colour_wanted(no_colour: bool) -> bool:
    """Colour codes only for a terminal, never with --no-colour or NO_COLOR set (no-color.org:
    any non-empty value)."""
    return not no_colour and not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def renderer(game: Game) -> Any:
    """The game's table for the terminal, or the view as text."""
    return game.render or _view_text


def _view_text(view: Any, colour: bool = True) -> str:
    return text_format.MessageToString(view)


def _in_words(describe: Any, command: Any, view: Any) -> str:
    return str(describe(command, view))


def _text(message: Any) -> str:
    return text_format.MessageToString(message, as_one_line=True)


def _fields_words(message: Any) -> str:
    """A message's fields in words: "card siege, target 1" (zeros too: "option 0")."""
    parts = []
    for fd in message.DESCRIPTOR.fields:
        value = getattr(message, fd.name)
        name = fd.name.replace("_", " ")
        if fd.is_repeated:
            if value and fd.message_type is None:
                shown = [named(_enum(fd), v)
                         if fd.enum_type else str(v) for v in value]
                parts.append(f"{name} {', '.join(shown)}")
            elif value:
                parts.append(f"{name} [{'; '.join(_fields_words(v) for v in value)}]")
        elif fd.message_type is not None:
            if message.HasField(fd.name):
                parts.append(f"{name} ({_fields_words(value)})")
        elif fd.has_presence and not message.HasField(fd.name):
            continue
        elif fd.enum_type is not None:
            if value:
                parts.append(f"{name} {named(_enum(fd), value)}")
        elif fd.type == fd.TYPE_BOOL:
            if value:
                parts.append(name)
        elif value != "" or fd.type != fd.TYPE_STRING:
            parts.append(f"{name} {value}")
    return ", ".join(parts)


def _enum(fd: Any) -> Any:
    """The enum wrapper of a field's enum type (for its value names)."""
    from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

    return EnumTypeWrapper(fd.enum_type)


def _command_words(command: Any, view: Any = None) -> str:
    """A command as its kind and its fields: "play: card siege, target 1" (a scalar kind as
    its value: "take: 2")."""
    kind = command.WhichOneof("kind") or "nothing"
    value = getattr(command, kind) if kind != "nothing" else ""
    inner = _fields_words(value) if hasattr(value, "DESCRIPTOR") else str(value)
    return kind.replace("_", " ") + (f": {inner}" if inner else "")


def describer(game: Game) -> Any:
    """The game's words for a command, or the command as its kind and fields."""
    return game.describe_command or _command_words


def event_words(game: Game, event: Any, seat: int | None) -> str | None:
    """An event as the game describes it for `seat`, else as text."""
    if game.describe is not None:
        return game.describe(event, seat)
    return _text(event)


def result_words(outcome: Outcome, seats: list[Seat], me: int = 0) -> str:
    """How the game ended, in words, for seat `me`."""
    if not outcome.winners:
        text = "Nobody won"
    elif me in outcome.winners:
        others = [seats[w].name for w in outcome.winners if w != me]
        text = "You won" + (f" with {', '.join(others)}" if others else "")
    else:
        text = ", ".join(f"{seats[w].name} (seat {w})" for w in outcome.winners) + " won"
    if outcome.scores:
        text += "; scores " + ", ".join(f"seat {i}: {s}" for i, s in enumerate(outcome.scores))
    return text + (f" ({outcome.reason})." if outcome.reason else ".")


# ---- play ---------------------------------------------------------------------------------


class Quit(Exception):
    """The player left: q, end of input (Ctrl-D) or Ctrl-C."""


PLAY_HELP = """\
  a number   play the command of that number (long lists: a kind first, then a page of it)
  ?          this help
  q          quit: the game is kept (every move is saved as it is made); go on with
             `arbiter play GAME --resume`
  Ctrl-D, Ctrl-C also quit and keep the game."""


def ask(prompt: str) -> str:
    while True:
        try:
            answer = input(prompt).strip()
        except (EOFError, KeyboardInterrupt):
            raise Quit from None
        if answer.lower() in {"q", "quit", "exit"}:
            raise Quit
        if answer not in {"?", "help"}:
            return answer
        print(PLAY_HELP)


MENU = 9  # up to this many commands are listed at once; more are grouped by kind first


def choose(legal: list[Any], words: Callable[[Any], str]) -> Any:
    """Ask for one of the legal commands: directly when few, else a kind, then one of it."""
    options = legal
    if len(legal) > MENU:
        kinds: dict[str, list[Any]] = {}
        for c in legal:
            kinds.setdefault(c.WhichOneof("kind") or "nothing", []).append(c)
        if len(kinds) > 1:
            names = list(kinds)
            for i, name in enumerate(names):
                print(f"  {i}. {name.replace('_', ' ')} ({len(kinds[name])})")
            picked = _pick(len(names), "what kind of move> ")
            if picked is None:
                return None
            options = kinds[names[picked]]
    start = 0
    while True:  # pages of MENU commands, the last choice turning the page
        page = options[start:start + MENU]
        for i, c in enumerate(page):
            print(f"  {i}. {words(c)}")
        rest = len(options) - start - len(page)
        if rest:
            print(f"  {len(page)}. more ({rest} others)")
        picked = _pick(len(page) + (1 if rest else 0), "your move> ")
        if picked is None:
            return None
        if picked < len(page):
            return page[picked]
        start += MENU


def _pick(n: int, prompt: str) -> int | None:
    answer = ask(prompt)
    if not answer.isdigit() or not int(answer) < n:
        print(f"pick a number from 0 to {n - 1} (? for help, q to quit)")
        return None
    return int(answer)


def option_fields(game: Game) -> str:
    """The game's options for --option, in words: "no_powers (true/false), solo_level (number)";
    a field of a message inside Options is named with a dot (special_tokens.apples)."""
    return ", ".join(_fields_of(game.pb.Options.DESCRIPTOR, "")) or "none"


def _fields_of(descriptor: Any, prefix: str) -> list[str]:
    shown = []
    for fd in descriptor.fields:
        if fd.message_type is not None:
            shown += _fields_of(fd.message_type, f"{prefix}{fd.name}.")
            continue
        if fd.enum_type is not None:
            kind = "one of " + "/".join(v.name for v in fd.enum_type.values if v.number)
        elif fd.type == fd.TYPE_BOOL:
            kind = "true/false"
        elif fd.type == fd.TYPE_STRING:
            kind = "text"
        else:
            kind = "number"
        shown.append(f"{prefix}{fd.name} ({kind}{', comma-separated' if fd.is_repeated else ''})")
    return shown


def parse_options(game: Game, pairs: list[str]) -> Any:
    """The game's Options from `key=value` pairs; ValueError says which pair is wrong and why."""
    options = game.pb.Options()
    for pair in pairs:
        key, equals, text = pair.partition("=")
        target, fd = options, None
        for part in key.strip().replace("-", "_").split("."):
            if fd is not None:  # the previous part named a message: go into it
                target = getattr(target, fd.name) if fd.message_type is not None else None
            fd = target.DESCRIPTOR.fields_by_name.get(part) if target is not None else None
            if fd is None:
                break
        if not equals or fd is None or fd.message_type is not None:
            raise ValueError(f"--option {pair!r}: expected key=value with a key of "
                             f"{game.title}'s options: {option_fields(game)}")
        texts = [t.strip() for t in text.split(",") if t.strip()] if fd.is_repeated else [text]
        values = [_option_value(fd, t.strip(), pair) for t in texts]
        if fd.is_repeated:
            getattr(target, fd.name).extend(values)
        else:
            setattr(target, fd.name, values[0])
    return options


def _option_value(fd: Any, text: str, pair: str) -> Any:
    if fd.enum_type is not None:
        by_name = {v.name.lower(): v.number for v in fd.enum_type.values}
        number = by_name.get(text.lower())
        if number is None:
            raise ValueError(f"--option {pair!r}: {text!r} is not one of "
                             f"{', '.join(v.name for v in fd.enum_type.values)}")
        return number
    if fd.type == fd.TYPE_BOOL:
        if text.lower() not in {"true", "false", "yes", "no", "1", "0"}:
            raise ValueError(f"--option {pair!r}: {fd.name} is true or false")
        return text.lower() in {"true", "yes", "1"}
    if fd.type == fd.TYPE_STRING:
        return text
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--option {pair!r}: {fd.name} is a whole number") from None


def play(args: argparse.Namespace) -> Any:
    """`arbiter play GAME`: you at seat 0 against the game's bots, in the terminal."""
    try:
        return asyncio.run(_play(args))
    except (Quit, KeyboardInterrupt):  # Ctrl-C while the bots play: leave quietly
        print(f"\n{kept(args.game)}")
        return 0


def kept(game: str) -> str:
    return f"The game is kept: `arbiter play {game} --resume` goes on with it. bye"


def play_dir() -> str:
    """Where `arbiter play` keeps its games: ARBITER_PLAY_DIR, else the user's data folder."""
    home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                            "share")
    return os.environ.get("ARBITER_PLAY_DIR") or os.path.join(home, "arbiter", "play")


def _saved_path() -> str:
    return os.path.join(play_dir(), "saved.json")


def _saved() -> dict[str, dict[str, str]]:
    """The games kept by `arbiter play`: game id -> {"game", "token"} (seat 0's token)."""
    try:
        with open(_saved_path(), encoding="utf-8") as f:
            return dict(json.load(f))
    except FileNotFoundError:
        return {}


def _save(saved: dict[str, dict[str, str]]) -> None:
    path = _saved_path()
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(saved, f, indent=1)
    os.chmod(path + ".tmp", 0o600)  # seat tokens
    os.replace(path + ".tmp", path)


async def _play(args: argparse.Namespace) -> int:
    game = registry.game(args.game)
    bot = args.bot or game.default_bot
    if not bots.known(game, bot):
        print(f"no bot {bot!r}; choose one of {', '.join(bots.bot_names(game))}")
        return 2
    try:
        options = parse_options(game, args.option)
    except ValueError as bad:
        print(bad)
        return 2
    players = args.players or game.seat_count
    if args.level:
        if game.name != "bubblee":
            print("--level is for Bubblee Pop's solo levels")
            return 2
        options.solo_level = args.level
    if game.name == "bubblee" and options.solo_level:
        players = 1
    if not game.min_seats <= players <= game.max_seats:
        print(f"{game.title} takes {game.min_seats} to {game.max_seats} players")
        return 2
    try:
        store = MemoryStore(os.path.join(play_dir(), "games.aof"))
    except StoreRefused as refused:  # another `arbiter play` holds the file
        print(f"cannot open the kept games: {refused}")
        return 2
    host = Host(store, {game.name: game}, ai_dispatch=in_process_ai)
    saved = _saved()
    try:
        if args.resume:
            mine = [gid for gid, s in saved.items() if s["game"] == game.name]
            if not mine:
                print(f"no kept game of {game.title} to resume; start one with "
                      f"`arbiter play {game.name}`")
                return 2
            game_id = mine[-1]
            token = saved[game_id]["token"]
            loaded = await host.load(game_id)
            print(f"{game.title}, resumed at version {loaded.version}: you are seat 0. "
                  "(? for help, q to quit)")
            if not loaded.finished:  # a bot's turn when the game was left: it plays it now
                for seat in game.to_act(loaded.state):
                    if loaded.seats[seat].kind == "ai":
                        await host.play_ai_turn(game_id, loaded.version, seat)
        else:
            seats = [Seat("you")] + [Seat(f"{bot} {i}", "ai", bot) for i in range(1, players)]
            try:
                made = await host.create(game.name, seats, options)
            except RuleError as e:
                print(f"{game.title} refused these options: {e.message}")
                return 2
            game_id, token = made.game_id, made.tokens[0]
            saved[game_id] = {"game": game.name, "token": token}
            _save(saved)
            against = f"against {players - 1} {bot} bot(s)" if players > 1 else "solo"
            print(f"{game.title}, {against}: you are seat 0. Seed commitment "
                  f"{made.commitment[:16]}... (? for help, q to quit)")
        if await _play_turns(host, game, game_id, Caller(token=token), args):
            del saved[game_id]  # over: nothing to resume
            _save(saved)
        else:
            print(kept(game.name))
        return 0
    finally:
        await store.close()


async def _play_turns(host: Host, game: Game, game_id: str, me: Caller,
                      args: argparse.Namespace) -> bool:
    """Seat 0's turns until the game ends (True) or the player quits (False)."""
    draw, describe = renderer(game), describer(game)
    chapter = None
    try:
        while True:
            loaded = await _when_mine(host, game, game_id)
            view = host.view_of(loaded, 0)
            if game.name == "eila" and view.chapter_title and view.chapter != chapter:
                chapter = view.chapter
                print(f"\n== Chapter {view.chapter}: {view.chapter_title} ==\n{view.prologue}\n")
            if view.happened:
                print("what happened:\n" + "\n".join(f"  - {h}" for h in view.happened))
            print(draw(view, colour=colour_wanted(args.no_colour)))
            if loaded.finished:
                outcome = game.outcome(loaded.state)
                assert outcome is not None, "a finished game has an outcome"
                print("Game over. " + result_words(outcome, loaded.seats))
                return True
            legal = game.legal_actions(loaded.state, 0)
            command = choose(legal, functools.partial(_in_words, describe, view=view))
            if command is None:
                continue
            try:
                done = await host.act(game_id, me, command, f"cli-{loaded.version}",
                                      loaded.version)
            except RuleError as e:
                print("refused:", e.message)
                continue
            said = [w for w in (event_words(game, e, 0) for e in done.events) if w]
            print("after your move:\n" + "\n".join(f"  - {w}" for w in said) if said else "")
    except Quit:
        return False


async def _when_mine(host: Host, game: Game, game_id: str) -> Any:
    """The game once it is seat 0's turn or over (the bots play meanwhile)."""
    for _ in range(6000):
        loaded = await host.load(game_id)
        if loaded.finished or 0 in game.to_act(loaded.state):
            return loaded
        await asyncio.sleep(0.01)
    raise RuntimeError("the bots did not finish their turns within a minute")


# ---- logs ---------------------------------------------------------------------------------


def _address() -> str:
    return os.environ.get("ARBITER_GRPC_ADDR", "127.0.0.1:50051")


def _channel() -> grpc.Channel:
    """Plaintext, or TLS checked against the CA in ARBITER_TLS_CA (a PEM file)."""
    ca = os.environ.get("ARBITER_TLS_CA", "")
    if not ca:
        return grpc.insecure_channel(_address())
    with open(ca, "rb") as f:
        return grpc.secure_channel(_address(), grpc.ssl_channel_credentials(f.read()))


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
    seats = gamelog.seats_from_pb(entries[0].started.seats)
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
                state = game.fold(state, event)
                said = event_words(game, event, args.seat)
                kind = event.WhichOneof("kind") or "event"
                print(f"v{entry.version}: {said or kind.replace('_', ' ')}")
            elif body == "finished":
                o = entry.finished.outcome
                outcome = Outcome(tuple(o.winners), tuple(o.scores), o.reason)
                print(f"v{entry.version}: game over. {result_words(outcome, seats, args.seat)}")
        shown = min(batch.last_version, last)
        if state is not None and (not args.to or shown == last):
            view = game.view(state, args.seat)
            view.version = shown
            print(draw(view, colour=colour_wanted(args.no_colour)))
            if not args.all and not args.to and sys.stdin.isatty():
                try:
                    if ask("enter: next, q: quit> ") == "q":
                        return 0
                except Quit:
                    return 0
        if shown == last:
            break
    return 0


# `arbiter verify`'s exit codes besides 0 (every event matches) and 2 (bad arguments).
VERIFY_FAILED = 1  # the log differs from a re-run: tampered or damaged
VERIFY_NOT_FINISHED = 3  # a running game: its seed is secret, so nothing could be checked yet


def verify(args: argparse.Namespace) -> int:
    if not os.path.exists(args.source):
        return _verify_on_server(args.source)
    lines = load_lines(args.source)
    try:
        game = registry.game(gamelog.game_of_json_lines(lines))
        verified = gamelog.verify(game, gamelog.from_json_lines(game, lines))
    except gamelog.NotFinished:
        return _not_finished()
    except (gamelog.BadLog, KeyError) as bad:
        print(f"FAILED: {bad}")
        return VERIFY_FAILED
    print(f"OK: {verified.entries} entries re-run against the revealed seed; every event matches")
    return 0


def _not_finished() -> int:
    print("not finished: the game is still running and its seed is secret until it ends; "
          "verify it again then (or as the admin, with ARBITER_ADMIN_TOKEN, on the server)")
    return VERIFY_NOT_FINISHED


def _verify_on_server(game_id: str) -> int:
    """A stored game is verified by the server, which holds a running game's seed and uses it
    for the admin (ARBITER_ADMIN_TOKEN)."""
    reply = _ask_server(game_id, "VerifyLog", apb.VerifyLogRequest(game_id=game_id))
    if not reply.ok and reply.reason == gamelog.NOT_FINISHED:
        return _not_finished()
    if not reply.ok:
        print(f"FAILED: line {reply.first_bad_line}: {reply.reason}")
        return VERIFY_FAILED
    print(f"OK: {reply.entries} entries re-run by the server; every event matches")
    return 0


def export(args: argparse.Namespace) -> int:
    for line in load_lines(args.game_id):
        print(line)
    return 0


def eila(args: argparse.Namespace) -> int:
    from services.eila.tools import migrate
    from services.eila.tools.validate import run_validate

    if args.action == "migrate":
        if len(args.paths) != 2:
            print("arbiter eila migrate IN OUT: the legacy log and the file to write",
                  file=sys.stderr)
            return 2
        return migrate.run_migrate(*args.paths)
    if args.action == "texts":
        return migrate.run_texts()
    return run_validate()
