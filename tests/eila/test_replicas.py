"""Every process shows an Eila game alike: views and events, as bytes (issue 21, item 15).

Two processes with different hash seeds play the same campaign; one redacts its events
oldest first, the other newest first, as two replicas that served other games before would.
What each seat and a spectator are shown must be byte-identical.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PLAY = """
import hashlib, sys
from arbiter.eila.v1 import eila_pb2 as pb
from services.core.decider import Rng, Seat
from services.eila import GAME, bots

events = list(GAME.setup(pb.Options(), [Seat("eila")], Rng(b"replicas", 0)))
state = GAME.replay(events)
views = [GAME.view(state, 0).SerializeToString(deterministic=True)]
for turn in range(150):
    if GAME.outcome(state) is not None:
        break
    command = bots.greedy_bot(GAME.view(state, 0), GAME.legal_actions(state, 0),
                              Rng(b"bot", turn))
    for event in GAME.decide_now(state, 0, command, Rng(b"turn", turn)):
        state = GAME.evolve(state, event)
        events.append(event)
    views.append(GAME.view(state, 0).SerializeToString(deterministic=True))
order = list(range(len(events)))
if sys.argv[1] == "newest-first":
    order.reverse()
shown = {}
for i in order:
    for seat in (0, None):
        shown[i, seat] = GAME.redact(events[i], seat).SerializeToString(deterministic=True)
digest = hashlib.sha256()
for key in sorted(shown, key=lambda k: (k[0], k[1] is None)):
    digest.update(shown[key])
for view in views:
    digest.update(view)
print(len(events), digest.hexdigest())
"""


def run(hash_seed: str, order: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-c", PLAY, order], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    return done.stdout.strip()


def test_two_processes_show_the_same_bytes() -> None:
    first = run("1", "oldest-first")
    second = run("2", "newest-first")
    assert int(first.split()[0]) > 50  # a campaign long enough to hide decks many times
    assert first == second
