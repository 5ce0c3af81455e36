"""Win rates per chapter attempt in `arbiter simulate eila` and the Simulate RPC (issue 14)."""

from __future__ import annotations

from arbiter.eila.v1 import eila_pb2 as pb

from services.eila import GAME
from services.workers.grpc_sim import response_of
from services.workers.simulate import Plan, play_one, render, run, summarise

ADVANCED_1 = pb.Options(first_chapter=1, advanced=True, single_chapter=True)


def test_a_chapter_won_after_retries_counts_each_attempt() -> None:
    """Greedy wins advanced chapter 1 in about a quarter of its attempts; every game ends in
    a win because the campaign retries, which used to be reported as 100%."""
    plan = Plan("eila", 4, ["greedy"], seed="attempts", options=ADVANCED_1.SerializeToString())
    report = run(plan)
    bot, attempts = report["bots"][0], report["attempts"]
    assert bot["games_won"] == report["finished"] == 4  # every game won in the end
    assert attempts["ended"] > 4 and bot["attempts"] == attempts["ended"]
    assert bot["wins"] == attempts["won"] == 4  # one attempt won per game
    assert bot["win_rate"] == round(4 / attempts["ended"], 4) < 1
    assert attempts["by_chapter"]["1"]["lost"] == attempts["ended"] - 4
    assert response_of(report).bots[0].win_rate == bot["win_rate"]
    assert f"4 won of {attempts['ended']} attempts" in render(report)


def test_games_stopped_by_the_command_cap_are_reported_apart() -> None:
    """The attempt in progress when the cap stops a game is neither won nor lost."""
    options = pb.Options(first_chapter=3, single_chapter=True)
    cut = play_one(GAME, ["random_options"], "cap", 0, options, max_commands=60)
    assert not cut["finished"] and cut["attempts"]["cut"] == 1
    assert cut["attempts"]["cut_chapter"] == 3
    done = play_one(GAME, ["greedy"], "cap", 1, pb.Options(single_chapter=True))
    assert done["finished"] and not done["attempts"]["cut"]
    plan = Plan("eila", 2, ["random_options"], options=options.SerializeToString())
    report = summarise(GAME, plan, [cut, done])
    attempts = report["attempts"]
    assert attempts["stopped_by_cap"] == 1 and attempts["stopped_by_cap_in_chapter"] == {"3": 1}
    ended = sum(r["attempts"]["won"] + r["attempts"]["lost"] for r in (cut, done))
    assert attempts["ended"] == ended == report["bots"][0]["attempts"]
    assert "games stopped by the command cap: 1" in render(report)
