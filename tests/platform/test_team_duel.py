"""The team duel (loadtests/bots.py `duel --teams`): a side played by one bot at every seat
the deal gives it, against the same deals played by the default bot."""

import pytest

from loadtests.bots import duel_side, team_summary


@pytest.mark.parametrize("game,side", [("moody_bear", "red"), ("moody_bear", "solo"),
                                       ("shadow_council", "order")])
def test_a_side_played_by_the_default_bot_wins_exactly_its_fair_share(game: str, side: str
                                                                      ) -> None:
    default = {"moody_bear": "keeper", "shadow_council": "sleuth"}[game]
    row = duel_side(game, default, 12, "team-test", 5, side)
    assert row["games"] == 12 and row["won"] == row["fair"]
    expected = {"red": 0.4, "solo": 0.2}.get(side)
    if expected is not None:  # Moody Bear deals 2 Red, 2 Blue and the Solo at 5 seats
        assert row["seats_dealt"] == pytest.approx(expected)


def test_a_team_that_never_acts_wins_less_than_the_keepers_on_the_same_deals() -> None:
    """The Red team played by the passive bot, which never plays, trades or proclaims: it
    wins only when Blue proclaims wrongly ("If not, the other team wins the game!")."""
    row = duel_side("moody_bear", "passive", 20, "team-test", 5, "red")
    assert row["won"] <= 2 and row["fair"] >= 6


def test_sides_are_pooled_by_the_seats_they_are_dealt() -> None:
    rows = [
        {"side": "red", "games": 100, "rate": 0.5, "se": 0.05, "fair_share": 0.3,
         "seats_dealt": 0.4},
        {"side": "blue", "games": 100, "rate": 0.4, "se": 0.05, "fair_share": 0.3,
         "seats_dealt": 0.4},
        {"side": "solo", "games": 100, "rate": 0.5, "se": 0.05, "fair_share": 0.4,
         "seats_dealt": 0.2},
    ]
    summary = team_summary(rows)
    assert summary["rate"] == pytest.approx(0.46)  # 0.4 * 0.5 + 0.4 * 0.4 + 0.2 * 0.5
    assert summary["fair_share"] == pytest.approx(0.32)
    assert summary["ratio"] == pytest.approx(0.46 / 0.32)
    half = 1.96 * (0.4**2 + 0.4**2 + 0.2**2) ** 0.5 * 0.05
    assert summary["ci95"] == pytest.approx((0.46 - half, 0.46 + half))
