"""Every chapter can be won (the greedy bot wins it in both modes) and none is trivial
(the random bot almost never wins). Seeded, so the figures are deterministic."""

from __future__ import annotations

import pytest

from services.eila import GAME
from services.eila.tools.simulate import campaign, chapter_rates
from tests.eila.helpers import start

CHAPTERS = range(6)


# Advanced chapter 1 is the hardest: the greedy bot wins 25.5% and 27% of two samples of 200
# games, so a 25% bar would sit on its rate and pass or fail with the seeds. The planner wins
# it instead (test_the_planner_wins_the_hardest_chapter). Every other chapter keeps 25%.
PLANNED = {(1, True)}


@pytest.mark.parametrize("advanced", [False, True])
def test_every_chapter_can_be_won_by_the_greedy_bot(advanced: bool) -> None:
    for chapter in CHAPTERS:
        if (chapter, advanced) in PLANNED:
            continue
        rate, _, _ = chapter_rates("greedy", chapter, advanced, range(48))
        assert rate >= 0.25, f"chapter {chapter} {'advanced' if advanced else 'normal'}: {rate}"


@pytest.mark.slow
def test_the_planner_wins_the_hardest_chapter() -> None:
    """Advanced chapter 1 at 8 playouts a move (repeatable; a CPU budget is not): the planner
    wins 9 of seeds 0-11, where the greedy bot wins 2 (docs/eila.md); the bar is the 60% of
    the goal for advanced chapters."""
    rate, _, cut = chapter_rates("planner:1000000:8", 1, True, range(12))
    assert rate >= 0.6 and not cut, rate


def test_the_random_bot_wins_rarely() -> None:
    for chapter in CHAPTERS:
        rate, _, _ = chapter_rates("random", chapter, False, range(8))
        assert rate <= 0.125, f"chapter {chapter}: {rate}"


def test_bots_only_send_legal_commands() -> None:
    state = start(0)
    legal = GAME.legal_actions(state, 0)
    for name, bot in GAME.bots.items():
        from services.core.decider import Rng

        assert bot(GAME.view(state, 0), legal, Rng(b"b", 0)) in legal, name


def test_the_greedy_bot_completes_a_campaign() -> None:
    won, attempts = campaign("greedy", False, seed=1)
    assert won == 6 and attempts >= 6


@pytest.mark.slow
def test_win_rates_over_many_seeds() -> None:
    """The figures of docs/eila.md (100 seeds, normal mode). Since the night meal and the room
    for Fear became the player's choices (issue 14), every pause is a command and re-deals
    every later die: greedy wins chapters 4 and 5 about 90% of attempts (89.5% over 200 seeds
    in docs/eila.md), so 100 seeds land either side of 0.9; the bar for those two is 0.85."""
    for chapter in CHAPTERS:
        greedy, _, _ = chapter_rates("greedy", chapter, False, range(100))
        rand, _, _ = chapter_rates("random", chapter, False, range(100))
        bar = 0.85 if chapter >= 4 else 0.9
        assert greedy >= bar and rand <= 0.02, (chapter, greedy, rand)
