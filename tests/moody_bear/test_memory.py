"""What a seat saw of the deck's top it keeps knowing: the order it arranged the top three
in ("look at the top 3 cards of the drawing deck then rearrange them in any order") stays in
its view while those cards stay on top, and the search bots' re-deal keeps it."""

from __future__ import annotations

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import Rng
from services.moody_bear import GAME
from services.moody_bear.cards import (
    AMBASSADOR,
    CANCEL,
    DARK_SWALLOW,
    KNIGHT,
    LAVA_GEM,
    MACE,
    REVEAL,
    SHUFFLE,
    SNOW_DIAMOND,
    SWAP,
)
from services.moody_bear.state import State
from tests.moody_bear.helpers import END_TURN, PASS_TURN, PLAY_MACE, act, all_decline, play, table

DECK = [MACE, LAVA_GEM, CANCEL, REVEAL, SWAP, SNOW_DIAMOND, DARK_SWALLOW, LAVA_GEM]
ORDER = [CANCEL, LAVA_GEM, MACE]


def arranged(hands: list[list[int]] | None = None, deck: list[int] = DECK,
             order: list[int] = ORDER) -> State:
    """Seat 0 looks at the top three and puts them back in `order`, then ends its turn."""
    hands = hands or [[KNIGHT, AMBASSADOR], [], [], []]
    state, _ = act(table(4, hands=hands, deck=deck), 0, play(KNIGHT, AMBASSADOR))
    state, _ = all_decline(state)
    state, _ = act(state, 0, pb.Command(arrange=pb.Arrange(order=order)))
    return state


def known_top(state: State, seat: int | None) -> list[int]:
    return list(GAME.view(state, seat).known_top)


def test_the_arranger_sees_the_order_it_chose_and_nobody_else_does() -> None:
    state = arranged()
    assert known_top(state, 0) == ORDER
    assert [known_top(state, s) for s in (1, 2, 3, None)] == [[], [], [], []]


def test_each_draw_takes_the_first_known_card() -> None:
    state, _ = act(arranged(), 0, END_TURN)
    state, _ = act(state, 1, PASS_TURN)  # seat 1 draws the Cancel
    assert known_top(state, 0) == ORDER[1:]
    state, _ = act(state, 2, PASS_TURN)
    state, _ = act(state, 3, PASS_TURN)
    assert known_top(state, 0) == []


def test_a_shuffle_ends_what_the_arranger_knows() -> None:
    state = arranged(hands=[[KNIGHT, AMBASSADOR], [SHUFFLE], [], []])
    state, _ = act(state, 0, END_TURN)
    state, _ = act(state, 1, play(SHUFFLE))
    state, _ = all_decline(state)
    assert known_top(state, 0) == []


def test_another_seats_look_at_the_top_ends_what_the_first_knew() -> None:
    hands = [[KNIGHT, AMBASSADOR], [KNIGHT, AMBASSADOR], [], []]
    state, _ = act(arranged(hands=hands), 0, END_TURN)
    state, _ = act(state, 1, play(KNIGHT, AMBASSADOR))
    state, _ = all_decline(state)
    assert known_top(state, 0) == []  # seat 1 is rearranging them unseen
    state, _ = act(state, 1, pb.Command(arrange=pb.Arrange(order=[MACE, CANCEL, LAVA_GEM])))
    assert known_top(state, 0) == [] and known_top(state, 1) == [MACE, CANCEL, LAVA_GEM]


def test_a_dark_swallow_put_back_unseen_ends_what_the_arranger_knows() -> None:
    deck = [CANCEL, DARK_SWALLOW, MACE, LAVA_GEM, REVEAL, SWAP]
    hands = [[KNIGHT, AMBASSADOR], [], [MACE], []]
    state = arranged(hands=hands, deck=deck, order=[DARK_SWALLOW, CANCEL, MACE])
    state, _ = act(state, 0, END_TURN)
    state, _ = act(state, 1, PASS_TURN)  # draws the Dark Swallow
    assert known_top(state, 0) == [CANCEL, MACE]
    state, _ = act(state, 2, PLAY_MACE)
    state, _ = all_decline(state)
    assert DARK_SWALLOW in state.deck and known_top(state, 0) == []


def test_a_redeal_keeps_the_known_top_and_deals_the_rest_anew() -> None:
    state = arranged()
    for k in range(20):
        world = GAME.redeal(state, 0, Rng(b"memory", k))
        assert list(world.deck[:3]) == ORDER
        assert GAME.view(world, 0) == GAME.view(state, 0)
    others = {GAME.redeal(state, 1, Rng(b"memory", k)).deck[:3] for k in range(20)}
    assert len(others) > 1, "a seat that never saw the top gets it dealt anew"


def test_a_redeal_never_puts_the_dark_swallow_among_the_known_cards() -> None:
    """The arranger saw three cards without the Dark Swallow: it lies below them in every
    world the search samples (before, it could be dealt on top)."""
    state = arranged()
    places = {GAME.redeal(state, 0, Rng(b"swallow", k)).deck.index(DARK_SWALLOW)
              for k in range(60)}
    assert min(places) >= 3 and len(places) > 1
