"""Bots: they play from their view only, and the keeper beats the random bot."""

from __future__ import annotations

from collections import Counter

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import Rng
from services.moody_bear import GAME
from services.moody_bear.bots import keeper_bot
from services.moody_bear.cards import (
    BLUE,
    CANCEL,
    DARK_SWALLOW,
    KNIGHT,
    LAVA_GEM,
    MACE,
    RED,
    SOLO,
)
from tests.moody_bear.helpers import (
    DECLINE,
    PASS_TURN,
    PLAY_CANCEL,
    PLAY_MACE,
    act,
    play,
    play_game,
    table,
)

GAMES_PER_TABLE = 30


def keeper_choice(state, seat):  # type: ignore[no-untyped-def]
    return keeper_bot(GAME.view(state, seat), GAME.legal_actions(state, seat), Rng.for_test(0))


def win_rates(players: int) -> dict[str, float]:
    """Keepers and random bots on alternate seats (which seats rotates with the seed)."""
    wins: Counter[str] = Counter()
    seats: Counter[str] = Counter()
    for seed in range(GAMES_PER_TABLE):
        bots = ["keeper" if (i + seed) % 2 == 0 else "random" for i in range(players)]
        state, _ = play_game(players, seed, bots)
        for seat, bot in enumerate(bots):
            seats[bot] += 1
            wins[bot] += seat in state.winners
    return {bot: wins[bot] / seats[bot] for bot in seats}


def test_the_keeper_wins_more_often_than_the_random_bot() -> None:
    figures = {players: win_rates(players) for players in (3, 4, 5)}
    print("\nwin rate per seat, keeper vs random:", figures)
    for rates in figures.values():
        assert rates["keeper"] > rates["random"] + 0.1, figures


def test_bots_send_only_legal_commands() -> None:
    for seed in range(3):
        state, events = play_game(5, seed, ["keeper", "random"] * 2 + ["keeper"])
        assert GAME.outcome(state) is not None and len(events) > 10


def test_the_keeper_answers_the_dark_swallow() -> None:
    state = table(4, hands=[[], [MACE], [], []], deck=[DARK_SWALLOW, KNIGHT])
    state, _ = act(state, 0, PASS_TURN)
    assert keeper_choice(state, 1) == PLAY_MACE


def test_the_solo_keeper_cancels_the_mace() -> None:
    teams = (RED, BLUE, SOLO)
    state = table(3, hands=[[], [MACE], [CANCEL]], deck=[DARK_SWALLOW], teams=teams)
    state, _ = act(state, 0, PASS_TURN)
    assert keeper_choice(state, 2) == DECLINE
    state, _ = act(state, 1, PLAY_MACE)
    assert keeper_choice(state, 2) == PLAY_CANCEL


def test_the_keeper_cancels_a_steal_from_its_gems() -> None:
    hands = [[KNIGHT, KNIGHT], [LAVA_GEM, CANCEL], [], []]
    state = table(4, hands=hands, teams=(BLUE, RED, BLUE, RED))
    state, _ = act(state, 0, play(KNIGHT, KNIGHT, target=1))
    assert keeper_choice(state, 1) == PLAY_CANCEL
    assert keeper_choice(state, 3) == DECLINE, "not its business"


def test_the_keeper_keeps_its_gems_when_passing_cards() -> None:
    state = table(3, hands=[[KNIGHT, pb.THUNDER_ASSASSIN], [LAVA_GEM, KNIGHT], [MACE]],
                  teams=(BLUE, RED, SOLO))
    state, _ = act(state, 0, play(KNIGHT, pb.THUNDER_ASSASSIN, direction=pb.LEFT))
    for seat in (1, 2):
        state, _ = act(state, seat, DECLINE)
    assert keeper_choice(state, 1) == pb.Command(choose_pass=pb.ChoosePass(card=KNIGHT))


def test_the_keeper_proclaims_with_two_gems_in_a_three_player_game() -> None:
    state = table(3, hands=[[LAVA_GEM, LAVA_GEM], [], []], teams=(RED, BLUE, SOLO))
    assert keeper_choice(state, 0) == pb.Command(proclaim=pb.Proclaim())
