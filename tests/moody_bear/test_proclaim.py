"""Proclaiming victory: name the teammate, reveal, win with the gems or hand the win over."""

from __future__ import annotations

import pytest
from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import RuleError
from services.moody_bear import GAME
from services.moody_bear.cards import (
    BLUE,
    DUO_JEWEL,
    KNIGHT,
    LAVA_GEM,
    MACE,
    RED,
    SNOW_DIAMOND,
    SOLO,
)
from services.moody_bear.state import OVER
from tests.moody_bear.helpers import act, kinds, table

TEAMS5 = (RED, BLUE, RED, BLUE, SOLO)


def proclaim(teammate: int | None = None) -> pb.Command:
    p = pb.Proclaim()
    if teammate is not None:
        p.teammate = teammate
    return pb.Command(proclaim=p)


def test_a_right_proclamation_wins_for_the_whole_team() -> None:
    hands = [[LAVA_GEM, LAVA_GEM], [], [LAVA_GEM, MACE], [], []]
    state, events = act(table(5, hands=hands, teams=TEAMS5), 0, proclaim(2))
    assert kinds(events) == ["proclaimed", "game_ended"]
    assert state.phase == OVER and GAME.outcome(state).winners == (0, 2)
    assert events[1].game_ended.winning_team == RED


def test_a_proclamation_reveals_both_team_cards_and_hands() -> None:
    hands = [[LAVA_GEM, LAVA_GEM], [], [LAVA_GEM, MACE], [], []]
    state, events = act(table(5, hands=hands, teams=TEAMS5), 0, proclaim(2))
    reveals = {r.seat: (r.team, list(r.cards)) for r in events[0].proclaimed.reveals}
    assert reveals == {0: (RED, [LAVA_GEM, LAVA_GEM]), 2: (RED, sorted([LAVA_GEM, MACE]))}
    assert GAME.redact(events[0], 3) == events[0], "shown to everyone"
    seen = GAME.view(state, None).players
    assert seen[2].team == RED and list(seen[2].revealed_hand) == sorted([LAVA_GEM, MACE])


def test_a_proclamation_with_a_wrong_teammate_lets_the_opposing_team_win() -> None:
    hands = [[LAVA_GEM, LAVA_GEM], [LAVA_GEM], [], [], []]
    state, _ = act(table(5, hands=hands, teams=TEAMS5), 0, proclaim(1))
    assert GAME.outcome(state).winners == (1, 3)


def test_naming_the_solo_player_as_teammate_loses() -> None:
    hands = [[LAVA_GEM, LAVA_GEM], [], [], [], [LAVA_GEM]]
    state, _ = act(table(5, hands=hands, teams=TEAMS5), 0, proclaim(4))
    assert GAME.outcome(state).winners == (1, 3)


def test_a_proclamation_with_gems_missing_lets_the_opposing_team_win() -> None:
    state = table(5, hands=[[], [SNOW_DIAMOND], [], [SNOW_DIAMOND], []], teams=TEAMS5, turn=1)
    state, events = act(state, 1, proclaim(3))
    assert events[0].proclaimed.gems == 2 and events[0].proclaimed.required == 3
    assert GAME.outcome(state).winners == (0, 2)


def test_three_players_one_member_teams_need_only_two_gems() -> None:
    state = table(3, hands=[[LAVA_GEM, LAVA_GEM], [], []], teams=(RED, BLUE, SOLO))
    state, events = act(state, 0, proclaim())
    assert events[0].proclaimed.required == 2
    assert GAME.outcome(state).winners == (0,)


def test_three_players_one_gem_is_not_enough() -> None:
    state = table(3, hands=[[LAVA_GEM, KNIGHT], [], []], teams=(RED, BLUE, SOLO))
    state, _ = act(state, 0, proclaim())
    assert GAME.outcome(state).winners == (1,)


def test_a_one_member_team_of_the_five_player_structure_needs_two_gems() -> None:
    state = table(4, hands=[[], [SNOW_DIAMOND, SNOW_DIAMOND], [], []],
                  teams=(RED, BLUE, RED, SOLO), turn=1)
    state, _ = act(state, 1, proclaim())
    assert GAME.outcome(state).winners == (1,)


def test_a_two_member_team_may_proclaim_alone_with_three_gems() -> None:
    state = table(4, hands=[[LAVA_GEM] * 3, [], [], []])
    state, _ = act(state, 0, proclaim())
    assert GAME.outcome(state).winners == (0, 2)


def test_the_duo_jewel_counts_as_a_gem() -> None:
    state = table(4, hands=[[LAVA_GEM, DUO_JEWEL], [], [LAVA_GEM], []], duo_jewel=True)
    state, _ = act(state, 0, proclaim(2))
    assert GAME.outcome(state).winners == (0, 2)


def test_the_solo_player_cannot_proclaim() -> None:
    state = table(5, hands=[[], [], [], [], [LAVA_GEM]], teams=TEAMS5, turn=4)
    assert not any(c.HasField("proclaim") for c in GAME.legal_actions(state, 4))
    with pytest.raises(RuleError) as e:
        act(state, 4, proclaim())
    assert e.value.code == "SOLO_CANNOT_PROCLAIM"


def test_a_player_proclaims_only_holding_one_of_the_required_items() -> None:
    state = table(4, hands=[[SNOW_DIAMOND], [], [LAVA_GEM] * 3, []])
    assert not any(c.HasField("proclaim") for c in GAME.legal_actions(state, 0))
    with pytest.raises(RuleError) as e:
        act(state, 0, proclaim(2))
    assert e.value.code == "NO_GEM"


def test_the_end_reveals_every_team_card() -> None:
    state = table(5, hands=[[LAVA_GEM] * 3, [], [], [], []], teams=TEAMS5)
    state, _ = act(state, 0, proclaim())
    assert [p.team for p in GAME.view(state, 1).players] == list(TEAMS5)
