"""Private information stays private: views, each seat's event feed, and redeal."""

from __future__ import annotations

import pytest
from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import Rng
from services.moody_bear import GAME
from services.moody_bear.cards import (
    AMBASSADOR,
    ASSASSIN,
    CANCEL,
    KNIGHT,
    LAVA_GEM,
    MACE,
    REVEAL,
    SNOW_DIAMOND,
    SWAP,
)
from tests.moody_bear.helpers import (
    PASS_TURN,
    act,
    all_decline,
    new_game,
    play,
    setup_events,
    table,
)

HIDDEN_CARD = pb.CARD_UNSPECIFIED


def feed(events, seat):  # type: ignore[no-untyped-def]
    return [GAME.redact(e, seat) for e in events]


@pytest.mark.parametrize(
    "players,options",
    [(3, {}), (4, {}), (5, {}), (4, {"five_player_structure": True, "duo_jewel": True}),
     (5, {"response_deadline_seconds": 30})],
)
def test_redeal_keeps_every_seats_view(players: int, options: dict) -> None:
    for seed in range(4):
        state = new_game(players, seed, **options)
        rng = Rng.for_test(seed)
        step = 0
        while GAME.outcome(state) is None:
            for seat in range(players):
                other = GAME.redeal(state, seat, Rng(b"redeal", step * 10 + seat))
                assert GAME.view(other, seat) == GAME.view(state, seat)
                assert GAME.view(other, None) == GAME.view(state, None)
                assert GAME.legal_actions(other, seat) == GAME.legal_actions(state, seat)
            seat = rng.choice(GAME.to_act(state))
            command = rng.choice(GAME.legal_actions(state, seat))
            for e in GAME.decide_now(state, seat, command, Rng(b"play-%d" % seed, step)):
                state = GAME.evolve(state, e)
            step += 1
        assert step > 0, "the game ended before any redeal was compared"


def test_redeal_deals_anew_what_the_seat_cannot_see() -> None:
    state = new_game(5, 1)
    others = [GAME.redeal(state, 0, Rng(b"r", i)) for i in range(10)]
    assert all(o.hands[0] == state.hands[0] and o.teams[0] == state.teams[0] for o in others)
    assert any(o.hands[1:] != state.hands[1:] for o in others)
    assert any(o.teams != state.teams for o in others)
    assert any(o.deck != state.deck for o in others)


def test_hands_are_dealt_face_down() -> None:
    hands = decks = 0
    for e in setup_events(4):
        if e.HasField("hand_dealt"):
            hands += 1
            seat = e.hand_dealt.seat
            assert list(GAME.redact(e, seat).hand_dealt.cards) == list(e.hand_dealt.cards)
            hidden = GAME.redact(e, (seat + 1) % 4).hand_dealt
            assert list(hidden.cards) == [] and hidden.count == 5
        if e.HasField("deck_formed"):
            decks += 1
            assert all(list(GAME.redact(e, s).deck_formed.cards) == [] for s in (0, 1, None))
    assert (hands, decks) == (4, 1), "every seat's hand and the deck were checked"


def test_a_trade_offer_is_seen_only_by_the_target() -> None:
    state = table(4, hands=[[LAVA_GEM], [MACE], [], []])
    state, events = act(state, 0, pb.Command(offer=pb.Offer(target=1, card=LAVA_GEM)))
    assert GAME.view(state, 1).trade.card == LAVA_GEM
    assert GAME.view(state, 2).trade.card == HIDDEN_CARD
    assert GAME.view(state, None).trade.card == HIDDEN_CARD
    assert GAME.view(state, 2).trade.target == 1
    assert feed(events, 1)[0].trade_offered.card == LAVA_GEM
    assert feed(events, 3)[0].trade_offered.card == HIDDEN_CARD
    state, events = act(state, 1, pb.Command(accept=pb.Accept(give=MACE)))
    assert feed(events, 2)[0].trade_accepted.returned == HIDDEN_CARD
    assert feed(events, 0)[0].trade_accepted.returned == MACE


def test_a_look_at_a_team_card_is_seen_only_by_the_looker() -> None:
    state = table(4, hands=[[REVEAL], [], [], []])
    state, _ = act(state, 0, play(REVEAL, target=1))
    state, events = all_decline(state)
    looked = [e for e in events if e.HasField("identity_looked")][0]
    assert GAME.redact(looked, 0).identity_looked.team == pb.BLUE
    for seat in (1, 2, 3, None):
        assert GAME.redact(looked, seat).identity_looked.team == pb.TEAM_UNSPECIFIED


def test_a_look_at_a_hand_is_seen_only_by_the_looker() -> None:
    state = table(4, hands=[[ASSASSIN, AMBASSADOR], [LAVA_GEM], [], []])
    state, _ = act(state, 0, play(ASSASSIN, AMBASSADOR, target=1))
    state, events = all_decline(state)
    looked = [e for e in events if e.HasField("hand_looked")][0]
    assert list(GAME.redact(looked, 0).hand_looked.cards) == [LAVA_GEM]
    assert list(GAME.redact(looked, 2).hand_looked.cards) == []


def test_a_look_at_the_top_three_is_seen_only_by_the_looker() -> None:
    state = table(4, hands=[[KNIGHT, AMBASSADOR], [], [], []], deck=[MACE, CANCEL, REVEAL])
    state, _ = act(state, 0, play(KNIGHT, AMBASSADOR))
    state, events = all_decline(state)
    taken = events[-1]
    assert list(GAME.redact(taken, 0).top_cards_taken.cards) == [MACE, CANCEL, REVEAL]
    assert list(GAME.redact(taken, 1).top_cards_taken.cards) == []
    assert list(GAME.view(state, 1).top_cards) == []
    state, events = act(state, 0, pb.Command(arrange=pb.Arrange(order=[REVEAL, MACE, CANCEL])))
    assert list(GAME.redact(events[0], 2).top_cards_arranged.cards) == []


def test_a_stolen_card_is_seen_only_by_the_thief_and_the_victim() -> None:
    state = table(4, hands=[[KNIGHT, KNIGHT], [LAVA_GEM], [], []])
    state, _ = act(state, 0, play(KNIGHT, KNIGHT, target=1))
    state, events = all_decline(state)
    stolen = events[-1]
    assert GAME.redact(stolen, 0).card_stolen.card == LAVA_GEM
    assert GAME.redact(stolen, 1).card_stolen.card == LAVA_GEM
    assert GAME.redact(stolen, 2).card_stolen.card == HIDDEN_CARD


def test_a_drawn_card_is_seen_only_by_the_drawer() -> None:
    state, events = act(table(4, deck=[SNOW_DIAMOND]), 0, PASS_TURN)
    assert GAME.redact(events[0], 0).card_drawn.card == SNOW_DIAMOND
    assert GAME.redact(events[0], 1).card_drawn.card == HIDDEN_CARD
    assert GAME.view(state, 1).players[0].hand_size == 1


def test_swapped_hands_are_seen_only_by_the_two_players() -> None:
    state = table(4, hands=[[SWAP, LAVA_GEM], [MACE], [], []])
    state, _ = act(state, 0, play(SWAP, target=1))
    state, events = all_decline(state)
    swapped = events[-1]
    assert list(GAME.redact(swapped, 1).hands_swapped.seat_cards) == [LAVA_GEM]
    other = GAME.redact(swapped, 2).hands_swapped
    assert list(other.seat_cards) == [] and list(other.target_cards) == []
    assert other.seat_count == 1 and other.target_count == 1


def test_passed_cards_are_seen_only_by_the_giver_and_the_receiver() -> None:
    state = table(3, hands=[[KNIGHT, ASSASSIN, LAVA_GEM], [MACE], [CANCEL]])
    state, _ = act(state, 0, play(KNIGHT, ASSASSIN, direction=pb.LEFT))
    state, _ = all_decline(state)
    state, events = act(state, 0, pb.Command(choose_pass=pb.ChoosePass(card=LAVA_GEM)))
    assert GAME.redact(events[0], 1).pass_card_chosen.card == HIDDEN_CARD
    assert GAME.view(state, 0).passing.my_choice == LAVA_GEM
    assert GAME.view(state, 1).passing.my_choice == HIDDEN_CARD
    state, _ = act(state, 1, pb.Command(choose_pass=pb.ChoosePass(card=MACE)))
    state, events = act(state, 2, pb.Command(choose_pass=pb.ChoosePass(card=CANCEL)))
    passed = events[-1]
    cards_for = {
        s: {t.seat: t.card for t in GAME.redact(passed, s).cards_passed.transfers}
        for s in (0, 1, 2)
    }
    assert cards_for[1] == {0: LAVA_GEM, 1: MACE, 2: HIDDEN_CARD}
    assert cards_for[0] == {0: LAVA_GEM, 1: HIDDEN_CARD, 2: CANCEL}


def test_the_spectator_sees_no_hand_and_no_team() -> None:
    state = new_game(5)
    seen = GAME.view(state, None)
    assert list(seen.hand) == [] and seen.team == pb.TEAM_UNSPECIFIED and not seen.HasField("seat")
    assert all(p.team == pb.TEAM_UNSPECIFIED and p.hand_size == 5 for p in seen.players)
    assert list(seen.may) == []


def test_a_seat_sees_its_own_hand_and_team_only() -> None:
    state = new_game(4)
    seen = GAME.view(state, 2)
    assert list(seen.hand) == list(state.hands[2]) and seen.team == state.teams[2]
    assert [p.team for p in seen.players if p.seat != 2] == [pb.TEAM_UNSPECIFIED] * 3


def test_the_dark_swallow_position_is_hidden_from_everyone() -> None:
    from services.moody_bear.cards import DARK_SWALLOW
    from tests.moody_bear.helpers import PLAY_MACE

    state = table(4, hands=[[MACE], [], [], []], deck=[DARK_SWALLOW, KNIGHT])
    state, _ = act(state, 0, PASS_TURN)
    state, _ = act(state, 0, PLAY_MACE)
    state, events = all_decline(state)
    back = [e for e in events if e.HasField("dark_swallow_returned")][0]
    for seat in (0, 1, None):
        assert not GAME.redact(back, seat).dark_swallow_returned.HasField("position")


def learns(event: pb.Event, seat: int) -> bool:
    """Whether this event shows `seat` something that was hidden from it until now."""
    kind = event.WhichOneof("kind")
    body = getattr(event, str(kind))
    if kind in ("dark_swallow_drawn", "proclaimed", "game_ended", "card_requested"):
        return True  # public news: the Swallow drawn, the reveal, whether a card was there
    if kind in ("identity_looked", "hand_looked", "top_cards_taken", "card_stolen",
                "card_drawn"):
        return bool(body.seat == seat)
    if kind == "hands_swapped":
        return seat in (body.seat, body.target)
    if kind == "cards_passed":
        return any(t.to == seat for t in body.transfers)
    return False


def test_each_seats_event_feed_shows_only_what_that_seat_saw() -> None:
    """Re-deal what a seat cannot see, let another seat send the same command in both games:
    unless the events teach the seat something new, its feed of them is the same."""
    from services.core.decider import RuleError

    compared = 0
    for players, seed in ((3, 0), (4, 1), (5, 2)):
        state = new_game(players, seed)
        rng = Rng.for_test(seed)
        step = 0
        while GAME.outcome(state) is None:
            actor = rng.choice(GAME.to_act(state))
            command = rng.choice(GAME.legal_actions(state, actor))
            events = GAME.decide_now(state, actor, command, Rng(b"feed", step))
            for seat in range(players):
                if seat == actor:
                    continue
                other = GAME.redeal(state, seat, Rng(b"other", step * 10 + seat))
                try:
                    other_events = GAME.decide_now(other, actor, command, Rng(b"feed", step))
                except RuleError:
                    continue  # the actor does not hold those cards in the other deal
                if any(learns(e, seat) for e in events + other_events):
                    continue
                assert feed(events, seat) == feed(other_events, seat), (command, seat)
                compared += 1
            for e in events:
                state = GAME.evolve(state, e)
            step += 1
    assert compared > 100
