"""AI players that do not cheat: they decide from the seat's view (its clue history and the
public facts) and the legal commands only."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import Rng, Seat
from services.shadow_council import GAME
from services.shadow_council.bots import belief_from_view, clues_seen, estimate, sleuth_bot
from services.shadow_council.rules import legal_actions, to_act
from services.shadow_council.state import GUESS, Clue
from services.shadow_council.view import redeal
from tests.shadow_council.helpers import new_game, play, start_round, table

view = GAME.view


def clue(subject: int, kind: str, tick: int = 1, **kw: Any) -> Clue:
    return Clue(tick=tick, round=1, subject=subject, kind=kind, source="PEEK", **kw)


def test_the_bot_reads_every_clue_of_its_view_as_the_state_holds_it() -> None:
    """One reading of a clue from protobuf: an Insight's suits reach the bot."""
    clues = (
        clue(2, "HAND_SUITS", suits=("MILITARY", "SHADOW")),
        clue(1, "SUIT", tick=2, suit="ECONOMY"),
        clue(3, "KEYWORD", tick=3, keyword="DAGGER"),
        clue(0, "NOT_IDENTITY", tick=4, identity="GENERAL"),
    )
    seen = clues_seen(view(table(clues=(clues, (), (), ())), 0))
    assert seen[0].suits == ("MILITARY", "SHADOW")
    assert tuple(seen) == clues


def test_belief_starts_uniform_over_the_identities_in_play() -> None:
    b = belief_from_view(view(table(), 0))
    assert b.p(0, "GENERAL") == pytest.approx(0.25)
    assert b.p(0, "SPY") == 0


def test_belief_keyword_clue_pins_the_subject() -> None:
    s = table(clues=((clue(2, "KEYWORD", keyword="DAGGER"),), (), (), ()))
    b = belief_from_view(view(s, 0))
    assert b.p(2, "ASSASSIN") == 1.0
    assert b.p(0, "ASSASSIN") == 0.0  # so nobody else is the Assassin


def test_belief_reflect_excludes_your_own_identity() -> None:
    s = table(clues=((clue(0, "NOT_IDENTITY", identity="GENERAL"),), (), (), ()))
    b = belief_from_view(view(s, 0))
    assert b.p(0, "GENERAL") == 0 and b.p(0, "MERCHANT") == pytest.approx(1 / 3)


def test_belief_uses_revealed_identities() -> None:
    s = play(table(n=5, hands=[["DARK_ASSASSINATE", "TAX"]] + [["TAX"]] * 4), 0,
             "DARK_ASSASSINATE", target=1)
    b = belief_from_view(view(s, 2))
    assert b.p(1, "MERCHANT") == 1.0 and b.p(2, "MERCHANT") == 0.0


def test_belief_knows_a_brainwashed_seat_new_shadow() -> None:
    s = play(table(shadow=["GENERAL", "ASSASSIN", "MERCHANT", "ALCHEMIST"],
                   hands=[["BRAINWASH", "TAX"], [], [], []]), 0, "BRAINWASH", target=1)
    b = belief_from_view(view(s, 3))
    assert b.p(1, "MERCHANT") == 1.0  # its old public identity
    assert b.p(3, "ASSASSIN") == 0.0  # the old shadow (now public) was seat 1's


def test_belief_is_updated_by_poison_and_the_spy_passive() -> None:
    s = play(table(n=6, hands=[["POISON", "TAX"]] + [["TAX"]] * 5), 0, "POISON", target=4)
    assert belief_from_view(view(s, 0)).p(4, "ALCHEMIST") == 1.0
    # Round 2: seat 5 wears the Spy and views a random other survivor's keyword.
    s = table(n=6, hands=[["TAX"]] * 3 + [[]] + [["TAX"]] * 2, deck=["PEEK"] * 10)
    s, _ = start_round(s, "MARKET_BOOM", round=2)
    (spied,) = s.clues[5]
    assert spied.source == "SPY" and spied.subject != 5
    b = belief_from_view(view(s, 5))
    assert b.p(spied.subject, s.shadow[spied.subject]) == 1.0
    assert belief_from_view(view(s, 0)).uncertainty(spied.subject) > 0  # nobody else learns


def test_belief_is_rebuilt_from_the_view_alone() -> None:
    s = play(table(hands=[["EAVESDROP", "TAX"], [], [], []]), 0, "EAVESDROP", target=3)
    v = view(s, 0)
    assert belief_from_view(pb.View.FromString(v.SerializeToString())).p(3, "ALCHEMIST") == 1


def test_sleuth_uses_a_free_reflect_when_unsure_of_itself() -> None:
    s = table(free_reflect=(True, False, False, False), hands=[["RALLY", "TAX"], [], [], []])
    cmd = sleuth_bot(view(s, 0), legal_actions(s, 0), Rng.for_test(0))
    assert cmd.WhichOneof("kind") == "free_reflect"


def test_sleuth_plays_toward_the_faction_it_believes_it_belongs_to() -> None:
    knows_chaos = ((clue(0, "KEYWORD", keyword="DAGGER"),), (), (), ())
    hand = [["RALLY", "SCHEME"], [], [], []]
    s = table(shadow=["ASSASSIN", "MERCHANT", "GENERAL", "ALCHEMIST"], clues=knows_chaos,
              hands=hand)
    # A clue about itself from Peek cannot happen, but it is the simplest certain belief.
    cmd = sleuth_bot(view(s, 0), legal_actions(s, 0), Rng.for_test(0))
    assert cmd.play.card == pb.CARD_SCHEME


def test_sleuth_guesses_only_a_certain_enemy() -> None:
    certain = ((clue(0, "KEYWORD", keyword="BLADE"), clue(2, "KEYWORD", keyword="DAGGER")),
               (), (), ())
    s = replace(table(clues=certain, ai=(True,) * 4, round=2), phase=GUESS, ai_guesser=0)
    cmd = sleuth_bot(view(s, 0), legal_actions(s, 0), Rng.for_test(0))
    assert cmd.guess.target == 2 and cmd.guess.identity == pb.IDENTITY_ASSASSIN
    s = replace(s, clues=((), (), (), ()))
    cmd = sleuth_bot(view(s, 0), legal_actions(s, 0), Rng.for_test(0))
    assert cmd.WhichOneof("kind") == "skip_guess"


def test_sleuth_decides_the_same_on_a_redealt_table() -> None:
    """It sees only the view, so re-dealing what it cannot see cannot change its choice."""
    for seed in range(6):
        seats = [Seat(f"p{k}", "ai") for k in range(5)]
        s = GAME.replay(GAME.setup(pb.Options(), seats, Rng.for_test(seed)))
        seat = to_act(s)[0]
        other = redeal(s, seat, Rng.for_test(seed + 100))
        a = sleuth_bot(view(s, seat), legal_actions(s, seat), Rng.for_test(1))
        b = sleuth_bot(view(other, seat), legal_actions(other, seat), Rng.for_test(1))
        assert a == b


def test_sleuth_decides_the_same_on_tables_redealt_mid_game() -> None:
    """Whatever the sleuth has learned by then (clues, revealed and brainwashed identities),
    re-dealing what its seat cannot see (every unpinned shadow, its own included, the other
    hands, the deck) never changes its choice."""
    decisions = 0
    for seed in range(6):
        n = 4 + seed % 3
        seats = [Seat(f"p{k}", "ai") for k in range(n)]
        s = GAME.replay(GAME.setup(pb.Options(), seats, Rng(b"mid-%d" % seed, 0)))
        version = 1
        while GAME.outcome(s) is None:
            seat = to_act(s)[0]
            rng_seed = b"mid-%d" % seed
            cmd = sleuth_bot(view(s, seat), legal_actions(s, seat), Rng(rng_seed, version))
            if version % 4 == 0:
                other = redeal(s, seat, Rng(b"mid-other-%d" % seed, version))
                again = sleuth_bot(view(other, seat), legal_actions(other, seat),
                                   Rng(rng_seed, version))
                assert again == cmd
                decisions += 1
            for e in GAME.decide_now(s, seat, cmd, Rng(rng_seed, version)):
                s = GAME.evolve(s, e)
            version += 1
    assert decisions > 30


def faction_win_rates(games: int, faction: str) -> tuple[float, float]:
    """Win rate of the seats that start in `faction` when they are sleuths vs when they are
    random, against random opponents, over the same seeded deals (4, 5 and 6 players)."""
    rates = []
    for smart in (True, False):
        wins = seats_counted = 0
        for seed in range(games):
            n = 4 + seed % 3
            seats = [Seat(f"p{k}", "ai") for k in range(n)]
            log = GAME.setup(pb.Options(), seats, Rng(b"winrate-%d" % seed, 0))
            state = GAME.replay(log)
            team = {k for k in range(n) if state.faction(k) == faction}
            version = 1
            while GAME.outcome(state) is None:
                seat = to_act(state)[0]
                rng = Rng(b"winrate-%d" % seed, version)
                bot = GAME.bots["sleuth" if smart and seat in team else "random"]
                cmd = bot(view(state, seat), legal_actions(state, seat), rng)
                for e in GAME.decide_now(state, seat, cmd, rng):
                    state = GAME.evolve(state, e)
                version += 1
            result = GAME.outcome(state)
            assert result is not None
            wins += sum(1 for k in team if k in result.winners)
            seats_counted += len(team)
        rates.append(wins / seats_counted)
    return rates[0], rates[1]


@pytest.mark.slow
@pytest.mark.parametrize("faction", ["ORDER", "CHAOS"])
def test_sleuth_seats_win_more_often_than_random_seats_of_the_same_faction(
    faction: str,
) -> None:
    smart, random = faction_win_rates(60, faction)
    print(f"{faction}: sleuth {smart:.2f} vs random {random:.2f} over 60 deals")
    assert smart > random + 0.1


# ---- the search bots' estimate -------------------------------------------------------------


def test_the_estimate_is_registered_and_stays_between_0_and_1() -> None:
    assert GAME.estimate is estimate
    state, _ = new_game(n=5, seed=3)
    for seat in range(5):
        assert 0.0 < estimate(state, seat) < 1.0


def test_the_estimate_favours_the_faction_with_more_survivors() -> None:
    # Seats 0, 1 are Order (General, Merchant), 2, 3 Chaos (Assassin, Alchemist).
    ahead = table(alive=(True, True, True, False), round=4)
    behind = table(alive=(True, False, True, True), round=4)
    assert estimate(ahead, 0) > 0.5 > estimate(ahead, 2)
    assert estimate(ahead, 0) > estimate(behind, 0)
    assert estimate(behind, 2) > estimate(ahead, 2)


def test_the_estimate_favours_the_zone_leader_more_as_the_game_goes_on() -> None:
    early = table(zones=(6, 3, 0, 0), round=1)
    late = table(zones=(6, 3, 0, 0), round=5)
    even = table(zones=(0, 0, 0, 0), round=5)
    assert estimate(late, 0) > estimate(even, 0) > estimate(late, 2)
    assert estimate(late, 0) - estimate(late, 2) > estimate(early, 0) - estimate(early, 2)


def test_the_estimate_judges_the_seats_faction_not_its_public_identity() -> None:
    # Seat 0 shows the General but is secretly the Assassin: it wins with Chaos.
    state = table(shadow=["ASSASSIN", "MERCHANT", "GENERAL", "ALCHEMIST"],
                  alive=(True, True, False, True), round=4)
    assert estimate(state, 0) > 0.5 > estimate(state, 1)
