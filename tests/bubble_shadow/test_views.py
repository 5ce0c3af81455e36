"""What each seat sees: its own screen and hand; of the others only what is in front of them
and how many tokens are behind. Events are redacted the same way; redeal keeps views."""

from __future__ import annotations

from dataclasses import replace

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import GAME
from services.bubble_shadow import tokens as tk
from services.bubble_shadow.state import State
from services.bubble_shadow.view import redact, redeal
from services.core.decider import Rng

from .helpers import act, new_game, play, sign, table, tokens

view = GAME.view


def test_own_tokens_behind_the_screen_are_visible() -> None:
    state, _ = new_game(3)
    me = view(state, 1).players[1]
    assert tk.from_pb(me.behind) == state.players[1].behind and me.behind_count == 11


def test_others_show_tokens_in_front_and_only_how_many_behind() -> None:
    state = table(behind={2: tokens(moon=3, bubble=1)}, front={2: tokens(silver=2)})
    other = view(state, 0).players[2]
    assert list(other.behind) == [] and other.behind_count == 4
    assert tk.from_pb(other.front) == tokens(silver=2)


def test_hands_are_private() -> None:
    state, _ = new_game(3)
    v = view(state, 0)
    assert [c.id for c in v.players[0].hand] == list(state.players[0].hand)
    assert list(v.players[1].hand) == [] and v.players[1].hand_count == 6


def test_spectator_sees_no_hidden_information() -> None:
    state, _ = new_game(3)
    v = view(state, None)
    assert all(list(p.hand) == [] and list(p.behind) == [] for p in v.players)
    assert not v.HasField("seat")


def test_public_pacts_and_signed_pacts_are_public() -> None:
    state = table(hands={0: (16,)}, behind={1: tokens(moon=2)}, public=(36, 40, 44))
    state = act(act(state, 0, play(16, 1)), 1, sign(0))
    v = view(state, 2)
    assert [c.id for c in v.public_pacts] == [36, 40, 44]
    assert [p.card for p in v.players[0].pacts] == [16]


def test_screens_open_before_resolution() -> None:
    state = table(hands={0: (0,)}, behind={1: tokens(silver=3), 2: tokens(moon=1)},
                  pacts={0: 3, 1: 4, 2: 4}, special_tokens=pb.SpecialTokens(crown=True))
    # Seat 2 holds the Crown: the round stops before resolution with screens still closed.
    players = list(state.players)
    players[2] = replace(players[2], front=tokens(crown=1))
    state = replace(state, players=tuple(players), crown_holder=2)
    state = act(act(state, 0, play(0, 1)), 1, sign(1))
    assert list(view(state, 0).players[2].behind) == []
    events = GAME.decide_now(state, 2, pb.Command(use_crown=pb.UseCrown()), Rng.for_test(0))
    revealed = next(e for e in events if e.WhichOneof("kind") == "tokens_revealed")
    assert redact(revealed, 0) == revealed
    assert tk.from_pb(revealed.tokens_revealed.seats[2].behind) == tokens(moon=1)


def test_redact_round_start_hides_other_deals() -> None:
    _, events = new_game(3)
    started = events[1]
    seen = redact(started, 1)
    assert seen is not None
    for deal in seen.round_started.deals:
        if deal.seat == 1:
            assert list(deal.hand) and list(deal.tokens)
        else:
            assert list(deal.hand) == [] and list(deal.tokens) == []
            assert deal.hand_count == 6 and deal.token_count == 11
    spectator = redact(started, None)
    assert spectator is not None
    assert all(list(d.hand) == [] for d in spectator.round_started.deals)


def test_redact_face_choice_hides_the_faces() -> None:
    state, _ = new_game(3, 1, special_tokens=pb.SpecialTokens(palettes=3))
    [event] = GAME.decide_now(state, 0, pb.Command(choose_faces=pb.ChooseFaces()), Rng.for_test(0))
    seen = redact(event, 1)
    assert seen is not None and not seen.faces_chosen.HasField("faces")
    assert redact(event, 0) == event


def test_magician_pay_order_is_private_until_the_payment() -> None:
    # "The transaction process is public": what is paid, once paid. The pay order sent with
    # the pact (which tokens the Magician would hand over first) is not a payment and could
    # name what lies behind the screen, so only the Magician sees it in the event.
    state = table(hands={0: (0,)}, behind={0: tokens(moon=1, apple=1), 1: tokens(silver=1)})
    command = play(0, 1, pay_order=[(pb.APPLE, True)])
    [played] = GAME.decide_now(state, 0, command, Rng.for_test(0))
    assert len(played.pact_played.pay_order) == 1
    assert redact(played, 0) == played
    for seat in (1, 2, None):
        seen = redact(played, seat)
        assert seen is not None and list(seen.pact_played.pay_order) == []
        assert seen.pact_played.card == 0 and seen.pact_played.mortal == 1
    assert len(played.pact_played.pay_order) == 1  # redact works on a copy


def test_redeal_keeps_every_view() -> None:
    for n, options in [(3, {}), (5, {"all_special_tokens": True}),
                       (4, {"complacency": True, "all_special_tokens": True})]:
        state, _ = new_game(n, 3, **options)
        for step in range(60):
            if GAME.outcome(state) is not None:
                break
            for seat in range(n):
                other = redeal(state, seat, Rng(b"redeal", step))
                assert view(other, seat) == view(state, seat)
            seat = GAME.to_act(state)[0]
            legal = GAME.legal_actions(state, seat)
            state = act(state, seat, Rng(b"pick", step).choice(legal), seed=step)


def test_redeal_changes_what_the_seat_cannot_see() -> None:
    state, _ = new_game(4, 2)
    other = redeal(state, 0, Rng.for_test(5))
    assert other.players[0] == state.players[0]
    assert [p.hand for p in other.players[1:]] != [p.hand for p in state.players[1:]]
    assert [p.behind for p in other.players[1:]] != [p.behind for p in state.players[1:]]
    assert all_tokens(other) == all_tokens(state)


def all_tokens(state: State) -> tk.Tokens:
    out = tk.unfaced(state.bag)
    for p in state.players:
        out = tk.add(out, tk.unfaced(p.tokens))
    return out


def test_signed_pact_shows_what_was_paid_not_the_price_owed() -> None:
    """Card 2 (1 Moon / 3 Silver Coins): the Mortal takes the Moon end, and the Magician, who
    holds no Silver Coin, owes 3 and pays nothing (ruling 10). The view says so, as the event
    does, and keeps the price owed beside it."""
    state = table(hands={0: (2,)}, behind={0: tokens(bubble=2), 1: tokens(moon=1, silver=1)})
    events = GAME.decide_now(act(state, 0, play(2, 1)), 1, sign(0), Rng.for_test(0))
    signed = events[0].pact_signed
    assert list(signed.magician_paid) == [] and len(signed.mortal_paid) == 1
    state = act(act(state, 0, play(2, 1)), 1, sign(0))
    for viewer in (None, 0, 1, 2):
        pact = view(state, viewer).players[0].pacts[0]
        assert (pact.magician_paid.token, pact.magician_paid.quantity) == (pb.SILVER, 0)
        assert (pact.magician_price.token, pact.magician_price.quantity) == (pb.SILVER, 3)
        assert (pact.mortal_paid.token, pact.mortal_paid.quantity) == (pb.MOON, 1)
        assert (pact.mortal_price.token, pact.mortal_price.quantity) == (pb.MOON, 1)
        assert list(pact.magician_tokens) == []
        assert [(t.token, t.behind) for t in pact.mortal_tokens] == [(pb.MOON, True)]
