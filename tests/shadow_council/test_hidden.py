"""Hidden information: shadow identities hidden from everyone, their owners included, until
elimination; private results reach only the seat that earned them; redeal leaves a seat's
view unchanged."""

from __future__ import annotations

from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import Rng, RuleError
from services.shadow_council import GAME
from services.shadow_council.rules import legal_actions, to_act
from services.shadow_council.view import redact, redeal
from tests.shadow_council.helpers import act, new_game, of_kind, play, play_cmd, table

view = GAME.view


def random_game(seed: int, n: int):
    """Yield (state, events of the step) along a game of random and sleuth bots."""
    state, events = new_game(n, seed, ai=[k % 2 == 1 for k in range(n)])
    yield state, events
    version = 1
    while GAME.outcome(state) is None:
        seat = to_act(state)[0]
        rng = Rng(b"hidden-%d" % seed, version)
        bot = GAME.bots["sleuth" if (seat + seed) % 2 else "random"]
        cmd = bot(view(state, seat), legal_actions(state, seat), rng)
        events = GAME.decide_now(state, seat, cmd, rng)
        for e in events:
            state = GAME.evolve(state, e)
        version += 1
        yield state, events


def test_nobody_sees_an_unrevealed_shadow_identity_not_even_its_owner() -> None:
    s, _ = new_game(5, 2)
    for seat in [None, 0, 1, 2, 3, 4]:
        v = view(s, seat)
        assert all(sv.shadow_identity == 0 for sv in v.seats)


def test_public_identities_are_shown_to_all() -> None:
    s, _ = new_game(5, 2)
    v = view(s, None)
    assert [sv.public_identity for sv in v.seats] == [
        pb.Identity.Value("IDENTITY_" + i) for i in s.public
    ]


def test_eliminated_player_shadow_identity_is_revealed_to_all() -> None:
    s = play(table(n=5, hands=[["DARK_ASSASSINATE", "TAX"]] + [["TAX"]] * 4), 0,
             "DARK_ASSASSINATE", target=3)
    assert view(s, None).seats[3].shadow_identity == pb.IDENTITY_ASSASSIN
    assert view(s, 3).seats[2].shadow_identity == 0


def test_setup_event_hides_shadows_and_deck_from_every_seat() -> None:
    _, events = new_game(4, 0)
    for seat in [None, 0, 1, 2, 3]:
        e = redact(events[0], seat)
        assert list(e.set_up.shadow_identities) == [] and list(e.set_up.deck) == []
        assert len(e.set_up.public_identities) == 4


def test_drawn_cards_reach_only_the_drawer() -> None:
    _, events = new_game(4, 0)
    draw = next(e for e in events if e.WhichOneof("kind") == "cards_drawn")
    assert redact(draw, draw.cards_drawn.seat).cards_drawn.cards
    for seat in [None] + [k for k in range(4) if k != draw.cards_drawn.seat]:
        d = redact(draw, seat).cards_drawn
        assert list(d.cards) == [] and d.count == 6


def test_keyword_clue_reaches_only_the_seat_that_earned_it() -> None:
    _, events = act(table(hands=[["PEEK", "TAX"], [], [], []]), 0, play_cmd("PEEK", target=2))
    (clue,) = [e for e in events if e.WhichOneof("kind") == "clue_gained"]
    assert redact(clue, 0).clue_gained.keyword
    for seat in [None, 1, 2, 3]:
        assert redact(clue, seat).clue_gained.keyword == 0


def test_prophecy_guess_reaches_only_its_player() -> None:
    _, events = act(table(hands=[["PROPHECY", "TAX"], [], [], []]), 0,
                    play_cmd("PROPHECY", target=2, guess="SPY"))
    played = of_kind(events, "card_played")[0]
    assert played.guess == pb.IDENTITY_SPY
    card_event = next(e for e in events if e.WhichOneof("kind") == "card_played")
    assert redact(card_event, 2).card_played.guess == 0
    assert redact(card_event, None).card_played.guess == 0


def test_prophecy_clue_reaches_only_its_player_not_even_its_kind() -> None:
    # Ruling 22: whether the guess was right is in the public gold change, not in the clue.
    _, events = act(table(hands=[["PROPHECY", "TAX"], [], [], []]), 0,
                    play_cmd("PROPHECY", target=2, guess="SPY"))
    clue = next(e for e in events if e.WhichOneof("kind") == "clue_gained")
    assert redact(clue, 0).clue_gained.kind == pb.CLUE_NOT_IDENTITY
    for other in (1, 2, None):
        shown = redact(clue, other).clue_gained
        assert shown.kind == 0 and shown.identity == 0 and shown.source == clue.clue_gained.source


def test_insight_and_scout_results_reach_only_their_player() -> None:
    s = table(hands=[["INSIGHT", "SCOUT"], ["PEEK"], [], []])
    _, events = act(s, 0, play_cmd("INSIGHT", target=1))
    clue = next(e for e in events if e.WhichOneof("kind") == "clue_gained")
    assert list(redact(clue, 0).clue_gained.suits) == [pb.SUIT_STRATEGY]
    assert list(redact(clue, 1).clue_gained.suits) == []


def test_view_carries_the_seat_private_clue_history_only() -> None:
    s = play(table(hands=[["EAVESDROP", "TAX"], [], [], []]), 0, "EAVESDROP", target=3)
    assert view(s, 0).clues[0].identity == pb.IDENTITY_ALCHEMIST
    assert list(view(s, 1).clues) == [] and list(view(s, None).clues) == []


def test_hand_is_seen_by_its_owner_only() -> None:
    s, _ = new_game(4, 1)
    assert len(view(s, 0).hand) == 6
    assert list(view(s, None).hand) == []


def test_errors_do_not_reveal_hidden_information() -> None:
    s, _ = new_game(5, 4)
    codes = set()
    for target in range(1, 5):
        for identity in range(1, 7):
            cmd = pb.Command(guess=pb.Guess(target=target, identity=identity))
            try:
                GAME.decide_now(s, 0, cmd, Rng.for_test(0))
            except RuleError as err:
                codes.add((err.code, err.message))
    assert codes == {("NOT_GUESS_PHASE", "guesses are made in the guess phase")}


def test_redeal_leaves_every_seat_view_and_legal_actions_unchanged() -> None:
    checked = 0
    for seed in range(12):
        n = 4 + seed % 3
        for step, (state, _) in enumerate(random_game(seed, n)):
            if step % 3:
                continue
            for seat in range(n):
                other = redeal(state, seat, Rng(b"redeal", step * 10 + seat))
                assert view(other, seat) == view(state, seat)
                assert legal_actions(other, seat) == legal_actions(state, seat)
                checked += 1
    assert checked > 100


def test_redeal_really_changes_what_the_seat_cannot_see() -> None:
    s, _ = new_game(6, 5)
    changed_shadow = changed_hands = False
    for k in range(10):
        other = redeal(s, 0, Rng(b"x", k))
        changed_shadow |= other.shadow != s.shadow
        changed_hands |= other.hands[1:] != s.hands[1:]
        assert other.hands[0] == s.hands[0]
    assert changed_shadow and changed_hands


def test_redeal_keeps_the_shadows_consistent_with_the_seat_clues() -> None:
    s = play(table(n=6, hands=[["EAVESDROP", "TAX"]] + [["TAX"]] * 5), 0, "EAVESDROP",
             target=4)
    for k in range(10):
        assert redeal(s, 0, Rng(b"y", k)).shadow[4] == "ALCHEMIST"


def test_every_redacted_feed_hides_what_the_seat_may_not_see() -> None:
    seen: set[str] = set()
    for seed in range(6):
        for _, events in random_game(seed, 4 + seed % 3):
            for e in events:
                kind = e.WhichOneof("kind")
                seen.add(kind)
                for seat in [None, 0, 1, 2, 3]:
                    r = redact(e, seat)
                    if kind == "clue_gained" and seat != e.clue_gained.seat:
                        c = r.clue_gained
                        assert not (c.keyword or c.identity or c.suit or c.suits)
                    if kind == "cards_drawn" and seat != e.cards_drawn.seat:
                        assert not r.cards_drawn.cards
                    if kind == "deck_reshuffled":
                        assert not r.deck_reshuffled.deck
    # The feed did contain the hidden information checked above (random games this short
    # never run the deck out, so a reshuffle is checked on its own below).
    assert {"clue_gained", "cards_drawn"} <= seen, seen
    drawn = next(e.cards_drawn for _, events in random_game(0, 4) for e in events
                 if e.WhichOneof("kind") == "cards_drawn" and e.cards_drawn.cards)
    reshuffled = pb.Event(deck_reshuffled=pb.DeckReshuffled(count=len(drawn.cards),
                                                            deck=list(drawn.cards)))
    for seat in [None, 0, 1, 2, 3]:
        r = redact(reshuffled, seat).deck_reshuffled
        assert not r.deck and r.count == len(drawn.cards) > 0
