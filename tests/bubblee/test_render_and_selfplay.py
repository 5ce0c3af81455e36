"""The terminal drawing and the self-play benchmark harness."""

from __future__ import annotations

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import GAME, render, rules
from services.bubblee.tools import selfplay
from tests.bubblee.helpers import new_game, table

view = GAME.view


def test_render_plain_draws_sky_planets_and_zones() -> None:
    state = table(planet0=(".....", ".....", "R....", "K.K.K"), sky=("RPBGY", "PBGYR"),
                  zones=((1, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0)))
    text = render.render(view(state, 0), colour=False)
    assert text.splitlines()[:14] == [
        "seat 1: 0 points  zone -",
        "    1 2 3 4 5",
        "grd K . K . K",  # planet 1 upside down: its ground is farthest from the sky
        "    . . . . .",
        "    . . . . .",
        "top . . . . .",
        "sky R P B G Y   <- seat 1's row",
        "sky P B G Y R   <- seat 0's row",
        "top . . . . .",
        "    . . . . .",
        "    R . . . .",
        "grd K . K . K",
        "    1 2 3 4 5",
        "seat 0 (you): 1 points  zone R1 <",
    ]
    assert "bag 73 (R14 P14 B14 G14 Y14 K3)" in text
    assert "\x1b[" not in text


def test_render_colour_uses_ansi() -> None:
    text = render.render(view(new_game(), None), colour=True)
    assert "\x1b[31m" in text and "\x1b[0m" in text


def test_render_shows_drawn_pool_and_outcome() -> None:
    state = table(phase=pb.PHASE_POWERS, pool=(1, 5))
    assert "powers 0:red 1:yellow" in render.render(view(state, 0), colour=False)
    state = table(phase=pb.PHASE_PLACE, drawn=3, sky=("RPBGY", "PB.YR"))
    assert "drawn B (blue)" in render.render(view(state, 0), colour=False)
    over = state._replace(outcome=rules.Outcome((1,), (2, 3), "the bag cannot refill the sky"),
                          phase=pb.PHASE_OVER)
    assert "won by seat 1" in render.render(view(over, None), colour=False)


def test_render_solo_shows_the_target() -> None:
    text = render.render(view(new_game(pb.Options(solo_level=1)), 0), colour=False)
    assert "target planet: 5 coloured left" in text


def test_selfplay_returns_turn_timings_and_cascade_depths() -> None:
    result = selfplay.play_random_games(3, seed=2)
    assert result.games == 3 and len(result.outcomes) == 3
    assert len(result.turn_micros) == result.turns > 0
    assert all(t > 0 for t in result.turn_micros)
    assert result.cascade_depths and all(d >= 0 for d in result.cascade_depths)
    assert result.turns_per_second > 0


def test_selfplay_is_deterministic() -> None:
    a = selfplay.play_random_games(2, seed=5)
    b = selfplay.play_random_games(2, seed=5)
    assert a.outcomes == b.outcomes and a.cascade_depths == b.cascade_depths
