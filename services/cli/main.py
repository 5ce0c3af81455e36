"""The `arbiter` command: serve, play, replay, verify (and the workers' commands)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from services import games as registry
from services.cli import commands
from services.core.startup import CannotStart
from services.games import GAME_MODULES
from services.workers.cli import add_parsers as add_worker_parsers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="arbiter", description="Arbiter, a rules server "
                                     "for tabletop games.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the games over gRPC (configured by ARBITER_*)")
    serve.add_argument("--games", default="", help="comma-separated games (default: all)")

    play = sub.add_parser(
        "play", help="play any game in the terminal against its bots",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Play a game at seat 0 against the game's bots. At each prompt:\n"
        + commands.PLAY_HELP,
        epilog="each game's options (--option key=value, repeated):\n" + "\n".join(
            f"  {name}: {commands.option_fields(registry.game(name))}"
            for name in sorted(GAME_MODULES)) + "\nexamples: --option solo_level=3 (Bubblee "
        "Pop), --option first_chapter=2 --option advanced=true (Eila), --option "
        "habit_order=H02,H01 (Eila, from chapter 2)\nkept games: $ARBITER_PLAY_DIR, else "
        "~/.local/share/arbiter/play")
    play.add_argument("game", choices=sorted(GAME_MODULES))
    play.add_argument("--bot", default="", help=(
        "the other seats' bot: one of the game's own (default: its usual one), a search "
        "level (easy, medium, hard) or a CPU budget per move (120ms)"))
    play.add_argument("--players", type=int, default=0,
                      help="seats at the table, yours included (default: the game's standard)")
    play.add_argument("--level", type=int, default=0,
                      help="Bubblee Pop: a solo level (1-20), as --option solo_level=N")
    play.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                      help="one of the game's options (see below)")
    play.add_argument("--resume", action="store_true",
                      help="go on with the last game of GAME left by quitting")
    play.add_argument("--no-colour", action="store_true",
                      help="no colour codes (also without a terminal, or with NO_COLOR set)")

    replay = sub.add_parser("replay", help="step through a log file or a stored game")
    replay.add_argument("source", nargs="?", default="",
                        help="a JSON Lines log file, or a game id on the server")
    replay.add_argument("--rebuild", action="store_true",
                        help="drop every read model and rebuild it from the event streams")
    replay.add_argument("--to", type=int, default=0, help="show the game at this version")
    replay.add_argument("--all", action="store_true", help="print every step, no prompt")
    replay.add_argument("--no-colour", action="store_true")
    replay.add_argument("--seat", type=int, default=None,
                        help="describe and draw the game as this seat sees it (default: a "
                        "spectator)")

    verify = sub.add_parser(
        "verify", help="re-run a log and check every event and the seed",
        epilog=f"exit codes: 0 every event matches; {commands.VERIFY_FAILED} the log differs "
        f"(tampered or damaged); {commands.VERIFY_NOT_FINISHED} the game is not finished (its "
        "seed is secret: only the server's admin can verify it before its end); 2 bad "
        "arguments")
    verify.add_argument("source", help="a JSON Lines log file, or a game id on the server")

    export = sub.add_parser("export", help="write a stored game's log as JSON Lines")
    export.add_argument("game_id")

    store = sub.add_parser("store", help="store maintenance: check the embedded store's file, "
                           "or migrate a Redis store's old layout")
    store.add_argument("action", choices=["check", "migrate"],
                       help="check: read every record of the embedded store's file and report "
                       "what a server would find at start, without starting one or changing "
                       "the file; migrate: copy games stored with 16 partitions (keys "
                       "arbiter:{p<n>}:...) to the 256-partition layout of ARBITER_REDIS_URL; "
                       "the old keys stay")
    store.add_argument("path", nargs="?", default="",
                       help="check: the file (default: $ARBITER_DATA_DIR/arbiter.aof)")

    eila = sub.add_parser("eila", help="Eila and Something Shiny's authored content")
    eila.add_argument("action", choices=["validate", "migrate", "texts"],
                      help="validate: every reference exists, every option can run, no chapter "
                      "can get stuck; migrate IN OUT: a log from before events held facts "
                      "(an export), written as facts while this content has its rules; "
                      "texts: keep today's content texts for the games played with it")
    eila.add_argument("paths", nargs="*", default=[], help="migrate: the log, the new log")

    add_worker_parsers(sub)  # simulate, stats, workers

    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    handler = getattr(commands, args.command)
    try:
        result = handler(args)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
    except CannotStart as e:
        print(f"arbiter {args.command}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: no traceback
        print(file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
