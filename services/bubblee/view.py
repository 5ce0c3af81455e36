"""Bubblee Pop: what a seat sees. Everything is public, so a view is the whole table, and a
view gives the state back (bots look ahead with the real rules)."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import board
from services.bubblee.board import WIDTH
from services.bubblee.state import (
    OVER,
    State,
    _counts,
    _planet_masks,
    _update,
    put_counts,
    scores,
    target_remaining,
)
from services.core.decider import Outcome, Rng


def show(state: State, seat: int | None) -> pb.View:
    """Everything in Bubblee Pop is public: every seat sees the same (the bag's content can
    be counted from the table; it has no order)."""
    v = pb.View()
    o = v.options
    o.no_powers = state.no_powers
    o.extra_blacks = state.extra_blacks
    o.opponent_lines_grant_powers = state.opponent_lines_grant_powers
    o.solo_level = state.solo_level
    for masks in state.planets:
        # 20 cells; 25 at the very end when an eliminating Bubblee sits above a full column.
        n = board.PLANET_CELLS
        if board.occupied(masks) & board.ABOVE_PLANET:
            n += WIDTH
        v.planets.add().cells.extend(board.cells(masks, n))
    v.sky.extend(state.sky)
    for zone in state.zones:
        put_counts(v.score_zones.add(), zone)
    v.scores.extend(scores(state))
    v.pool.extend(state.pool)
    v.drawn = state.drawn
    v.turn = state.turn
    v.phase = state.phase
    v.swapped = state.swapped
    v.first_turn = state.first_turn
    v.bag_size = sum(state.bag)
    put_counts(v.bag, state.bag)
    put_counts(v.set_aside, state.set_aside)
    v.seats = state.seats
    if state.solo_level:
        v.target_remaining = target_remaining(state)
    return v


def redact(event: pb.Event, seat: int | None) -> pb.Event:
    """Nothing is hidden: every event is public."""
    return event


def redraw(state: State, rng: Rng) -> State:
    """A solo level's draws to come follow from the level's bag seed, which no view shows:
    the same table drawing from another seed."""
    if not state.solo_level:
        return state
    return _update(state, draw_seed=rng.below(1 << 32))


def state_from_view(v: pb.View) -> State:
    """The state a view shows. Everything in Bubblee Pop is public, so this is the whole
    state (but for the count of draws so far and the solo bag seed): bots use it to look
    ahead with the real rules."""
    o = v.options
    outcome_ = None
    if v.phase == OVER:
        outcome_ = Outcome(tuple(v.outcome.winners), tuple(v.outcome.scores), v.outcome.reason)
    z0, z1 = (_counts(z) for z in v.score_zones)
    p0, p1 = (_planet_masks(p.cells) for p in v.planets)
    return State(
        seats=v.seats,
        no_powers=o.no_powers,
        extra_blacks=o.extra_blacks,
        opponent_lines_grant_powers=o.opponent_lines_grant_powers,
        solo_level=o.solo_level,
        draw_seed=0,
        planets=(p0, p1),
        sky=tuple(v.sky),
        bag=_counts(v.bag),
        set_aside=_counts(v.set_aside),
        zones=(z0, z1),
        turn=v.turn,
        phase=v.phase,
        drawn=v.drawn,
        swapped=v.swapped,
        first_turn=v.first_turn,
        pool=tuple(v.pool),
        draws=0,
        outcome=outcome_,
    )
