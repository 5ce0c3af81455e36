"""A tiny game for the workers' tests: "Take the last counter".

Two seats take 1 to 3 counters in turn from a pile; whoever takes the last one wins. A random
draw at setup decides who starts (recorded in the opening event, as every random outcome
must be). The server may issue a system command `timeout`, naming the turn by the pile it
began with: the seat to act takes one counter (a turn already over refuses it).
The messages are built at run time (no .proto file), so the tests need no generated code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.core.decider import Game, MalformedCommand, Outcome, Rng, RuleError, Seat

TOY_PROTO = """
syntax = "proto3";
package arbiter.toy.v1;
import "arbiter/v1/arbiter.proto";

message CreateGameRequest { repeated arbiter.v1.Seat seats = 1; Options options = 2; }
message ActRequest {
  string game_id = 1;
  string command_id = 2;
  optional int64 expected_version = 3;
  Command command = 4;
  optional int32 seat = 5;
}
message ActResponse { int64 version = 1; repeated Event events = 2; View view = 3; }
message LegalActions { int64 version = 1; int32 seat = 2; repeated Command commands = 3; }
message Update {
  int64 version = 1;
  oneof body {
    Event event = 2;
    arbiter.v1.GameStarted started = 3;
    arbiter.v1.GameFinished finished = 4;
  }
  View view = 5;
}
message PlayRequest { oneof kind { arbiter.v1.PlayOpen open = 1; ActRequest act = 2; } }
message PlayResponse {
  arbiter.v1.PlayAnswer answer = 1;
  repeated Update updates = 2;
  View view = 3;
  LegalActions legal = 4;
}
message Options { int32 pile = 1; int32 timeout_seconds = 2; int32 idle_seconds = 3; }
message Command { oneof kind { int32 take = 1; int32 timeout = 2; } }
message Opened { int32 pile = 1; int32 first = 2; int32 timeout_seconds = 3; }
message Took { int32 seat = 1; int32 count = 2; bool forced = 3; }
message Event { int64 version = 1; oneof kind { Opened opened = 2; Took took = 3; } }
message View {
  int64 version = 1;
  optional int32 seat = 2;
  repeated int32 to_act = 3;
  arbiter.v1.Outcome outcome = 4;
  int32 pile = 10;
}
"""


def _build_module() -> Any:
    """Compile TOY_PROTO once (cached in the temp folder) and import it."""
    from arbiter.v1 import arbiter_pb2  # noqa: F401 - registers arbiter/v1/arbiter.proto

    digest = hashlib.sha256(TOY_PROTO.encode()).hexdigest()[:12]
    out = os.path.join(tempfile.gettempdir(), f"arbiter-toy-{digest}")
    module_path = os.path.join(out, "arbiter", "toy", "v1", "toy_pb2.py")
    if not os.path.exists(module_path):
        from grpc_tools import protoc

        work = tempfile.mkdtemp(prefix="arbiter-toy-")
        os.makedirs(os.path.join(work, "src", "arbiter", "toy", "v1"))
        with open(os.path.join(work, "src", "arbiter", "toy", "v1", "toy.proto"), "w") as f:
            f.write(TOY_PROTO)
        os.makedirs(os.path.join(work, "out"))
        protos = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), "protos")
        include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
        import google.rpc  # google/rpc/status.proto, which arbiter.proto imports

        google_protos = os.path.dirname(os.path.dirname(google.rpc.__path__[0]))
        code = protoc.main(["protoc", f"-I{os.path.join(work, 'src')}", f"-I{protos}",
                            f"-I{include}", f"-I{google_protos}",
                            f"--python_out={os.path.join(work, 'out')}",
                            "arbiter/toy/v1/toy.proto"])
        assert code == 0, "protoc failed on the toy game"
        os.makedirs(os.path.dirname(out), exist_ok=True)
        try:
            os.rename(os.path.join(work, "out"), out)
        except OSError:
            pass  # another process got there first
    spec = importlib.util.spec_from_file_location("arbiter_toy_pb2", module_path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["arbiter_toy_pb2"] = module
    spec.loader.exec_module(module)
    return module


pb = _build_module()


@dataclass(frozen=True)
class State:
    pile: int
    turn: int
    winner: int | None = None
    timeout: int = 0  # seconds a seat has before the server takes one counter for it


def setup(options: Any, seats: Sequence[Seat], rng: Rng) -> list[Any]:
    pile = options.pile or 15
    return [pb.Event(opened=pb.Opened(pile=pile, first=rng.below(2),
                                      timeout_seconds=options.timeout_seconds))]


def decide(state: State, seat: int | None, command: Any, rng: Rng) -> list[Any]:
    kind = command.WhichOneof("kind")
    if kind is None:
        raise MalformedCommand("NO_COMMAND", "the command names no action")
    if kind == "timeout":
        if seat is not None:
            raise RuleError("SYSTEM_ONLY", "only the server may time a seat out")
        if command.timeout != state.pile:
            raise RuleError("STALE_TIMEOUT", "that turn is over")
        return [pb.Event(took=pb.Took(seat=state.turn, count=1, forced=True))]
    if not 1 <= command.take <= 3:
        raise MalformedCommand("BAD_COUNT", "take 1, 2 or 3 counters", "take")
    if command.take > state.pile:
        raise RuleError("TOO_MANY", f"only {state.pile} counters are left")
    return [pb.Event(took=pb.Took(seat=state.turn, count=command.take))]


def evolve(state: State | None, event: Any) -> State:
    if event.WhichOneof("kind") == "opened":
        return State(event.opened.pile, event.opened.first,
                     timeout=event.opened.timeout_seconds)
    assert state is not None
    pile = state.pile - event.took.count
    return State(pile, 1 - state.turn, event.took.seat if pile == 0 else None, state.timeout)


def view(state: State, seat: int | None) -> Any:
    v = pb.View(pile=state.pile, to_act=list(to_act(state)))
    if seat is not None:
        v.seat = seat
    return v


def to_act(state: State) -> list[int]:
    return [] if state.winner is not None else [state.turn]


def legal_actions(state: State, seat: int) -> list[Any]:
    return [pb.Command(take=n) for n in range(1, min(3, state.pile) + 1)]


def outcome(state: State) -> Outcome | None:
    return None if state.winner is None else Outcome((state.winner,), reason="took the last")


def observe(event: Any) -> dict[str, float]:
    return {"take": float(event.took.count)} if event.WhichOneof("kind") == "took" else {}


def deadlines(state: State) -> list[tuple[float, Any]]:
    """With a timeout option, the server takes a counter for a seat that waits too long."""
    if state.timeout and state.winner is None:
        return [(float(state.timeout), pb.Command(timeout=state.pile))]
    return []


def random_bot(view: Any, legal: list[Any], rng: Rng) -> Any:
    return rng.choice(legal)


def perfect_bot(view: Any, legal: list[Any], rng: Rng) -> Any:
    """Leave a multiple of four when it can."""
    for c in legal:
        if (view.pile - c.take) % 4 == 0:
            return c
    return rng.choice(legal)


GAME: Game[State] = Game(
    name="toy", title="Take the last counter", pb=pb, min_seats=2, max_seats=2,
    setup=setup, decide=decide, evolve=evolve, view=view,
    redact=lambda event, seat: event, to_act=to_act, legal_actions=legal_actions,
    outcome=outcome, bots={"random": random_bot, "perfect": perfect_bot},
    default_bot="random", observe=observe, deadlines=deadlines)
