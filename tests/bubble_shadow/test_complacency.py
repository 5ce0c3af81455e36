"""The Complacency variant: 5 tokens, phases, drawing by pacts signed, satisfaction."""

from __future__ import annotations

from dataclasses import replace

import pytest
from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import GAME
from services.bubble_shadow import tokens as tk
from services.bubble_shadow.rules import eligible_mortals, legal_actions
from services.bubble_shadow.state import State
from services.bubble_shadow.view import redact
from services.core.decider import RuleError

from .helpers import act, decide_events, fold, kinds, play, sign, table, tokens

DRAW = pb.Command(draw_tokens=pb.DrawTokens())
SATISFIED = pb.Command(declare_satisfaction=pb.DeclareSatisfaction())


def phase_table(phase: int = 1, n: int = 3) -> State:
    """Seat 0, the Magician, has one pact fewer than the others: its pact ends the phase."""
    state = table(n, magician=0, hands={0: (0, 1)}, complacency=True,
                  pacts={s: phase - 1 if s == 0 else phase for s in range(n)},
                  behind={s: tokens(moon=1, silver=1) for s in range(n)})
    return replace(state, phase=phase, final_phase=phase == 4)


def end_phase(state: State, mortal: int = 2) -> tuple[list[pb.Event], State]:
    state = act(state, 0, play(state.players[0].hand[0], mortal))
    events = decide_events(state, mortal, sign(0))
    return events, fold(state, events)


def any_end(state: State, seat: int) -> pb.Command:
    return legal_actions(state, seat)[0]


def test_phase_ends_when_everyone_playing_has_the_same_number_of_pacts() -> None:
    state = phase_table(1)
    events, after = end_phase(state)
    assert kinds(events) == ["pact_signed", "phase_ended"]
    assert after.stage == pb.STAGE_PHASE_END


def test_phase_goes_on_while_pact_counts_differ() -> None:
    state = table(3, hands={0: (0,)}, complacency=True, pacts={0: 0, 1: 0, 2: 1},
                  behind={1: tokens(moon=1)})
    events, _ = end_phase(state, mortal=1)
    assert kinds(events) == ["pact_signed"]


def test_phase_end_order_starts_with_the_last_mortal_clockwise() -> None:
    _, after = end_phase(phase_table(1, n=4), mortal=2)
    assert after.phase_order == (2, 3, 0, 1)
    assert GAME.to_act(after) == [2]
    with pytest.raises(RuleError) as err:
        act(after, 3, DRAW)
    assert err.value.code == "NOT_YOUR_TURN"


@pytest.mark.parametrize("phase,drawn", [(1, 3), (2, 2), (3, 1)])
def test_draw_by_pacts_signed(phase: int, drawn: int) -> None:
    _, after = end_phase(phase_table(phase))
    before = tk.total(after.players[2].tokens)
    after = act(after, 2, DRAW)
    assert tk.total(after.players[2].tokens) - before == drawn
    assert after.phase_order == (0, 1)


def test_draw_from_a_short_bag_takes_what_is_left() -> None:
    _, after = end_phase(phase_table(1))
    after = replace(after, bag=tokens(moon=2))
    after = act(after, 2, DRAW)
    # Seat 2 paid its only Moon for the pact; it draws the 2 left, not 3.
    assert after.players[2].behind[pb.MOON] == 2 and after.bag == tk.EMPTY


def test_phase_draw_shows_others_only_the_count() -> None:
    _, after = end_phase(phase_table(1))
    [drawn] = decide_events(after, 2, DRAW)
    seen = redact(drawn, 0)
    assert seen is not None and seen.tokens_drawn.deal.token_count == 3
    assert list(seen.tokens_drawn.deal.tokens) == []
    assert redact(drawn, 2) == drawn


def test_no_satisfaction_next_phase_is_not_final() -> None:
    _, after = end_phase(phase_table(1))
    for seat in (2, 0, 1):
        after = act(after, seat, DRAW)
    assert after.stage == pb.STAGE_PLAY and after.phase == 2 and not after.final_phase
    assert after.magician == 2  # the last Mortal starts the next phase


def test_declare_satisfaction_makes_the_next_phase_final() -> None:
    _, after = end_phase(phase_table(2))
    after = act(act(act(after, 2, DRAW), 0, SATISFIED), 1, DRAW)
    assert after.phase == 3 and after.final_phase
    assert after.players[0].satisfied and after.satisfied_seat == 0


def test_only_one_player_may_declare_satisfaction_per_round() -> None:
    _, after = end_phase(phase_table(1))
    after = act(after, 2, SATISFIED)
    assert legal_actions(after, 0) == [DRAW]
    with pytest.raises(RuleError) as err:
        act(after, 0, SATISFIED)
    assert err.value.code == "SATISFACTION_TAKEN"


def test_satisfied_last_mortal_then_last_magician_starts() -> None:
    _, after = end_phase(phase_table(1))  # 0 was the last Magician, 2 the last Mortal
    after = act(act(act(after, 2, SATISFIED), 0, DRAW), 1, DRAW)
    assert after.magician == 0


def test_satisfied_player_cannot_be_chosen_as_mortal() -> None:
    _, after = end_phase(phase_table(1))
    after = act(act(act(after, 2, DRAW), 0, DRAW), 1, SATISFIED)
    assert eligible_mortals(after, 2) == [0]
    with pytest.raises(RuleError) as err:
        act(after, 2, play(after.players[2].hand[0] if after.players[2].hand else 0, 1))
    assert err.value.code in ("MORTAL_SATISFIED", "CARD_NOT_IN_HAND")
    players = list(after.players)
    players[2] = replace(players[2], hand=(5,))
    with pytest.raises(RuleError) as err:
        act(replace(after, players=tuple(players)), 2, play(5, 1))
    assert err.value.code == "MORTAL_SATISFIED"


def test_round_ends_after_the_final_phase() -> None:
    # Satisfaction after phase 1: phase 2 is final; once seats 0 and 2 have 2 pacts it ends.
    _, after = end_phase(phase_table(1))
    after = act(act(act(after, 2, DRAW), 0, DRAW), 1, SATISFIED)
    players = list(after.players)
    players[2] = replace(players[2], hand=(5, 6), pacts=players[2].pacts)
    players[0] = replace(players[0], hand=(7,))
    after = replace(after, players=tuple(players))
    after = act(after, 2, play(5, 0))
    after = act(after, 0, any_end(after, 0))  # 2 has 2 pacts, 0 has 1
    after = act(after, 0, play(7, 2))
    events = decide_events(after, 2, any_end(after, 2))
    assert "round_ended" in kinds(events) and "phase_ended" not in kinds(events)


def test_phase_four_is_always_final() -> None:
    _, after = end_phase(phase_table(3))
    after = act(act(act(after, 2, DRAW), 0, DRAW), 1, DRAW)
    assert after.phase == 4 and after.final_phase


def test_phase_four_ends_the_round() -> None:
    events, _ = end_phase(phase_table(4))
    assert "round_ended" in kinds(events)


def test_satisfied_player_rejoins_for_resolution() -> None:
    _, after = end_phase(phase_table(3))
    after = act(act(act(after, 2, DRAW), 0, SATISFIED), 1, DRAW)
    # Phase 4 (final): seats 1 and 2 still playing, with 3 pacts each; 2 starts.
    players = list(after.players)
    players[1] = replace(players[1], hand=(5,), pacts=players[1].pacts[:3])
    players[2] = replace(players[2], hand=(6,))
    after = replace(after, players=tuple(players))
    assert eligible_mortals(after, 2) == [1]
    after = act(after, 2, play(6, 1))
    after = act(after, 1, any_end(after, 1))
    after = act(after, 1, play(5, 2))
    events = decide_events(after, 2, any_end(after, 2))
    resolved = events[kinds(events).index("round_resolved")].round_resolved
    assert len(resolved.tallies) == 3
    assert not any(p.satisfied for p in fold(after, events).players)


def test_new_round_draws_five_tokens_each_in_the_variant() -> None:
    # "During setup, the number of Price Tokens each player draws is changed from 11 to 5";
    # a new round draws "11 tokens again" at the standard game, so 5 again in the variant.
    state = phase_table(4)
    events, after = end_phase(state)
    started = events[kinds(events).index("round_started")].round_started
    assert started.round == 2
    assert [d.token_count + d.crown for d in started.deals] == [5, 5, 5]
    assert [tk.total(p.tokens) for p in after.players] == [5, 5, 5]
    assert after.phase == 1 and not after.final_phase and after.satisfied_seat == -1


def test_every_version_of_a_phase_end_can_be_viewed() -> None:
    """The last phase-end action and the next phase's start come in one batch; the state
    between them (every player has acted) is a version that Watch and Replay show."""
    _, state = end_phase(phase_table(1))
    for seat in (2, 0):
        state = act(state, seat, DRAW)
    events = decide_events(state, 1, DRAW)
    assert kinds(events) == ["tokens_drawn", "phase_started"]
    between = fold(state, events[:1])
    assert GAME.to_act(between) == []
    for seat in (None, 0, 1, 2):
        assert GAME.view(between, seat).stage == pb.STAGE_PHASE_END
