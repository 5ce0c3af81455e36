"""Fin de partie et décompte (rulebook "Fin de partie", "Décompte des points")."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME
from tests.bubblee.helpers import act, drop, kinds, of_kind, table

view = GAME.view

ZONES_5_3 = ((5, 0, 0, 0, 0, 0), (0, 3, 0, 0, 0, 0))


def test_game_ends_when_bag_cannot_refill_sky() -> None:
    state = table(bag=(1, 0, 0, 0, 0, 0), zones=ZONES_5_3)
    events, after = act(state, drop((0, 0), (1, 0)))  # leaves 2 empty cells, 1 in the bag
    assert kinds(events)[-2:] == ["turn_ended", "game_over"]  # checked before refilling
    assert "drawn" not in kinds(events)
    assert after.outcome is not None and after.phase == pb.PHASE_OVER
    assert after.outcome.reason == "the bag cannot refill the sky"


def test_game_goes_on_when_bag_exactly_refills_sky() -> None:
    state = table(bag=(2, 0, 0, 0, 0, 0))
    events, after = act(state, drop((0, 0), (1, 0)))
    assert kinds(events)[-1] == "drawn" and after.outcome is None


def test_most_points_wins() -> None:
    state = table(bag=(1, 0, 0, 0, 0, 0), zones=ZONES_5_3)
    events, after = act(state, drop((0, 0), (1, 0)))
    outcome = of_kind(events, "game_over")[0].outcome
    assert list(outcome.winners) == [0] and list(outcome.scores) == [5, 3]
    assert after.outcome is not None and after.outcome.scores == (5, 3)


def test_tie_is_shared() -> None:
    state = table(bag=(1, 0, 0, 0, 0, 0), zones=((2, 0, 0, 0, 0, 1), (0, 0, 3, 0, 0, 0)))
    _, after = act(state, drop((0, 0), (1, 0)))
    assert after.outcome is not None and after.outcome.winners == (0, 1)


def test_view_shows_the_outcome() -> None:
    state = table(bag=(1, 0, 0, 0, 0, 0), zones=ZONES_5_3)
    _, after = act(state, drop((0, 0), (1, 0)))
    v = view(after, None)
    assert list(v.outcome.winners) == [0] and v.phase == pb.PHASE_OVER and not v.to_act


def test_loss_at_once_wins_for_the_other_seat_whatever_the_points() -> None:
    # « le joueur concerné perd immédiatement »: points do not matter
    from tests.bubblee.helpers import place

    full = ("RPBGY", "PBGYR", "RPBGY", "PBGYR")
    state = table(planet0=full, sky=("GPBYR", "R.GPB"), phase=pb.PHASE_PLACE, drawn=5,
                  zones=((9, 0, 0, 0, 0, 0), (1, 0, 0, 0, 0, 0)))
    events, after = act(state, place(1, 0))
    assert after.outcome is not None and after.outcome.winners == (1,)
    assert after.outcome.scores == (9, 1)
