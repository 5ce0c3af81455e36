"""Special Price Tokens: Chess Pieces, Palettes, Apple, Rose, Crown, Oyster and Snake, and the
order in which they act before resolution."""

from __future__ import annotations

from dataclasses import replace

import pytest
from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import GAME
from services.bubble_shadow import tokens as tk
from services.bubble_shadow.rules import legal_actions, signable_ends
from services.bubble_shadow.view import redact
from services.core.decider import MalformedCommand, RuleError

from .helpers import act, decide_events, fold, kinds, last_turn, new_game, play, sign, table, tokens

view = GAME.view

CROWN_OPTIONS = {"special_tokens": pb.SpecialTokens(crown=True, snakes=5, oysters=2)}


def crown_table(holder: int, by_seat: dict[int, tk.Tokens], **options: object):  # noqa: ANN201
    state = last_turn(by_seat, **CROWN_OPTIONS, **options)
    players = list(state.players)
    players[holder] = replace(players[holder], front=tk.add(players[holder].front,
                                                            tokens(crown=1)))
    return replace(state, players=tuple(players), crown_holder=holder)


def finish_turn(state):  # noqa: ANN001, ANN201
    """Seat 0 plays 1 Moon / 1 Silver to seat 1, who signs the Silver end: the round ends."""
    state = act(state, 0, play(0, 1))
    events = decide_events(state, 1, sign(1))
    return events, fold(state, events)


def snake_answer(price: int = pb.TOKEN_UNSPECIFIED) -> pb.Command:
    return pb.Command(discard_for_snake=pb.DiscardForSnake(price=price))


def answer_snakes(state, chosen: dict[int, int] | None = None):  # noqa: ANN001, ANN201
    """Every seat asked at the Snake step answers, screens closed: the price in `chosen`, else
    none. Returns the events and the state after."""
    events: list[pb.Event] = []
    while state.stage == pb.STAGE_SNAKE and not state.revealed and state.snake_pending:
        seat = state.snake_pending[0]
        new = decide_events(state, seat, snake_answer((chosen or {}).get(seat, 0)))
        events += new
        state = fold(state, new)
    return events, state


def crown_then_snakes(state, swap: pb.UseCrown, chosen: dict[int, int] | None = None
                      ) -> list[pb.Event]:  # noqa: ANN001
    """The Crown's holder (seat 2) acts, then every seat answers the Snake step."""
    events = decide_events(state, 2, pb.Command(use_crown=swap))
    more, _ = answer_snakes(fold(state, events), chosen)
    return events + more


# ---- Chess Pieces and Palettes ----------------------------------------------------------


def test_palette_and_chess_faces_are_chosen_when_drawn() -> None:
    state, _ = new_game(3, 1, special_tokens=pb.SpecialTokens(palettes=3, chess=3))
    assert GAME.to_act(state) == [0, 1, 2] and state.faces_pending == (0, 1, 2)
    seat = next(s for s in range(3) if state.players[s].behind[pb.PALETTE] > 0)
    me = state.players[seat].behind
    after = act(state, seat, pb.Command(choose_faces=pb.ChooseFaces(
        palettes_on_moon=me[pb.PALETTE], chess_on_bubble=0)))
    now = after.players[seat].behind
    assert now[pb.PALETTE_MOON] == me[pb.PALETTE] and now[pb.CHESS_SILVER] == me[pb.CHESS]
    assert now[pb.PALETTE] == 0 and now[pb.CHESS] == 0
    assert seat not in after.faces_pending


def test_every_drawer_chooses_faces_when_palettes_or_chess_are_in_the_game() -> None:
    state, _ = new_game(3, 1, special_tokens=pb.SpecialTokens(palettes=1))
    empty = [s for s in range(3) if state.players[s].behind[pb.PALETTE] == 0]
    assert empty and all(s in GAME.to_act(state) for s in empty)
    assert legal_actions(state, empty[0]) == [pb.Command(choose_faces=pb.ChooseFaces())]


def test_no_face_step_without_palettes_or_chess() -> None:
    state, _ = new_game(3)
    assert state.faces_pending == () and GAME.to_act(state) == [state.magician]


def test_face_counts_cannot_exceed_the_tokens_drawn() -> None:
    state, _ = new_game(3, 1, special_tokens=pb.SpecialTokens(palettes=1))
    with pytest.raises(RuleError) as err:
        act(state, 0, pb.Command(choose_faces=pb.ChooseFaces(palettes_on_moon=2)))
    assert err.value.code == "BAD_FACES"


def test_play_waits_for_the_face_choices() -> None:
    state, _ = new_game(3, 1, special_tokens=pb.SpecialTokens(palettes=1))
    magician = state.magician
    hand_card = state.players[magician].hand[0]
    with pytest.raises(RuleError) as err:
        act(state, magician, play(hand_card, (magician + 1) % 3))
    assert err.value.code == "CHOOSE_FACES_FIRST"


def test_received_chess_piece_or_palette_is_tossed() -> None:
    faces = set()
    for seed in range(30):
        state = table(hands={0: (0,)}, behind={1: tokens(palette_moon=1)})
        state = act(state, 0, play(0, 1))
        events = decide_events(state, 1, sign(0), seed=seed)
        paid = events[0].pact_signed.mortal_paid[0]
        assert paid.token == pb.PALETTE_MOON
        faces.add(paid.received_as)
        assert fold(state, events).players[0].front[paid.received_as] == 1
    assert faces == {pb.PALETTE_MOON, pb.PALETTE_SILVER}


def test_palette_counts_as_its_face() -> None:
    state = table(hands={0: (4,)}, behind={1: tokens(palette_silver=2)})  # 2 Moons / 2 Silver
    assert signable_ends(act(state, 0, play(4, 1))) == [1]


# ---- Apple, Rose, Oyster ----------------------------------------------------------------


def test_apple_is_a_moon_while_playing_and_a_bubble_at_resolution() -> None:
    assert tk.counts_as(tokens(apple=2), pb.MOON) == 2
    assert tk.tally(tokens(apple=2, moon=1), None) == (1, 0, 2)


def test_rose_is_a_bubble_while_playing_and_a_moon_at_resolution() -> None:
    assert tk.counts_as(tokens(rose=2), pb.BUBBLE) == 2
    assert tk.tally(tokens(rose=2, bubble=1), None) == (2, 0, 1)


def test_oyster_is_one_silver_while_playing_and_four_at_resolution() -> None:
    assert tk.counts_as(tokens(oyster=1), pb.SILVER) == 1
    assert tk.tally(tokens(oyster=1, silver=1), None) == (0, 5, 0)


# ---- Crown ------------------------------------------------------------------------------


def test_crown_is_not_a_price() -> None:
    assert all(tk.counts_as(tokens(crown=1), p) == 0 for p in tk.MAIN)
    assert tk.tally(tokens(crown=1), None) == (0, 0, 0)


def test_crown_holder_decides_before_resolution() -> None:
    state = crown_table(2, {0: tokens(moon=1), 1: tokens(silver=1), 2: tokens(moon=1, bubble=4)})
    events, after = finish_turn(state)
    assert kinds(events) == ["pact_signed", "round_ended"]
    assert after.stage == pb.STAGE_CROWN and GAME.to_act(after) == [2]
    assert len(legal_actions(after, 2)) == 4  # forgo, or one of the three pairs


def test_crown_swaps_two_quantities() -> None:
    state = crown_table(2, {0: tokens(moon=1), 1: tokens(silver=1), 2: tokens(moon=1, bubble=4)})
    _, after = finish_turn(state)
    events = crown_then_snakes(after, pb.UseCrown(first=pb.MOON, second=pb.BUBBLE))
    resolved = events[kinds(events).index("round_resolved")].round_resolved
    assert (resolved.tallies[2].moons, resolved.tallies[2].bubbles) == (4, 1)


def test_crown_can_be_forgone() -> None:
    state = crown_table(2, {0: tokens(moon=1), 1: tokens(silver=1), 2: tokens(moon=1, bubble=4)})
    _, after = finish_turn(state)
    events = crown_then_snakes(after, pb.UseCrown())
    resolved = events[kinds(events).index("round_resolved")].round_resolved
    assert (resolved.tallies[2].moons, resolved.tallies[2].bubbles) == (1, 4)


def test_crown_swap_names_two_different_main_prices() -> None:
    state = crown_table(2, {0: tokens(moon=1), 1: tokens(silver=1), 2: tokens()})
    _, after = finish_turn(state)
    for first, second in [(pb.MOON, pb.MOON), (pb.MOON, pb.APPLE), (pb.MOON, 0)]:
        with pytest.raises(RuleError) as err:
            act(after, 2, pb.Command(use_crown=pb.UseCrown(first=first, second=second)))
        assert err.value.code == "BAD_CROWN_SWAP"


def test_crown_does_not_touch_oysters() -> None:
    assert tk.tally(tokens(oyster=1, moon=2), (pb.MOON, pb.SILVER)) == (0, 6, 0)


def crown_round(holder_only: bool) -> pb.RoundResolved:
    """The audit's table: seat 2 holds the Crown and swaps Moons and Bubbles. After the last
    pact seat 0 holds 2 Moons and 1 Silver Coin, seat 1 1 Moon and 2 Bubbles, seat 2 1 Moon
    and 4 Bubbles."""
    state = crown_table(2, {0: tokens(moon=3), 1: tokens(silver=1, bubble=2),
                            2: tokens(moon=1, bubble=4)}, crown_swaps_holder_only=holder_only)
    _, after = finish_turn(state)
    events = crown_then_snakes(after, pb.UseCrown(first=pb.MOON, second=pb.BUBBLE))
    return events[kinds(events).index("round_resolved")].round_resolved


def counts(t: pb.Tally) -> tuple[int, int, int]:
    return (t.moons, t.silver, t.bubbles)


def test_crown_swaps_every_players_counts_by_default() -> None:
    resolved = crown_round(holder_only=False)
    assert counts(resolved.tallies[0]) == (0, 1, 2)  # seat 0's 2 Moons count as Bubbles
    assert counts(resolved.tallies[1]) == (2, 0, 1)
    assert counts(resolved.tallies[2]) == (4, 0, 1)  # the holder's own counts too


def test_crown_swaps_only_its_holders_counts_with_the_option() -> None:
    resolved = crown_round(holder_only=True)
    assert counts(resolved.tallies[0]) == (2, 1, 0)  # unchanged
    assert counts(resolved.tallies[1]) == (1, 0, 2)  # unchanged
    assert counts(resolved.tallies[2]) == (4, 0, 1)  # swapped


def snake_under_crown(holder_only: bool) -> pb.SnakeDiscarded:
    """Seat 1 (not the holder) ends with 6 Moons and a Snake; the holder swaps Moons and
    Bubbles."""
    state = crown_table(2, {0: tokens(moon=1), 1: tokens(moon=5, silver=1, snake=1),
                            2: tokens(bubble=1)}, crown_swaps_holder_only=holder_only)
    _, after = finish_turn(state)
    events = crown_then_snakes(after, pb.UseCrown(first=pb.MOON, second=pb.BUBBLE))
    return events[kinds(events).index("snake_discarded")].snake_discarded


def test_a_snake_discards_by_the_counts_the_crown_left() -> None:
    # By default seat 1's 6 Moons count as Bubbles: 5 Bubbles go (the Moon tokens).
    discarded = snake_under_crown(holder_only=False)
    assert discarded.seat == 1 and discarded.price == pb.BUBBLE
    assert tk.from_pb(discarded.removed) == tokens(moon=5)
    # With the option seat 1's counts are untouched: 5 Moons go.
    discarded = snake_under_crown(holder_only=True)
    assert discarded.seat == 1 and discarded.price == pb.MOON
    assert tk.from_pb(discarded.removed) == tokens(moon=5)


def test_crown_holder_only_option_needs_a_crown() -> None:
    with pytest.raises(MalformedCommand) as err:
        new_game(3, crown_swaps_holder_only=True)
    assert err.value.code == "BAD_OPTIONS"
    state, _ = new_game(3, crown_swaps_holder_only=True, all_special_tokens=True)
    assert state.crown_holder_only
    assert view(state, 0).crown_swaps_holder_only
    assert not view(new_game(3)[0], None).crown_swaps_holder_only


def test_snake_owners_answer_with_the_screens_closed() -> None:
    """Ruling 17: after the Crown every seat answers the Snake step before the screens open,
    the Snake's owner with a price, the others with none; the last answer opens the screens."""
    crown = pb.Command(use_crown=pb.UseCrown())
    state = crown_table(2, {0: tokens(moon=1), 1: tokens(silver=1),
                            2: tokens(moon=6, snake=1, oyster=1, bubble=5)})
    _, after = finish_turn(state)
    assert not after.revealed
    assert view(after, 0).players[2].behind == []  # the Crown's holder decides blind
    assert kinds(decide_events(after, 2, crown)) == ["crown_used"]
    after = act(after, 2, crown)
    assert after.stage == pb.STAGE_SNAKE and not after.revealed
    assert GAME.to_act(after) == [0, 1, 2]  # everyone, not only the Snake's owner
    for seat in (0, 1):
        assert view(after, seat).players[2].behind == []  # seat 2's screen is still closed
        assert legal_actions(after, seat) == [snake_answer()]
    assert view(after, 2).players[0].behind == []  # the owner chooses without seeing others
    assert {c.discard_for_snake.price for c in legal_actions(after, 2)} == set(tk.MAIN)
    after = act(after, 2, snake_answer(pb.MOON))
    after = act(after, 0, snake_answer())
    assert not after.revealed and GAME.to_act(after) == [1]
    events = decide_events(after, 1, snake_answer())
    assert kinds(events)[:3] == ["snake_chosen", "tokens_revealed", "snake_discarded"]
    assert events[2].snake_discarded.price == pb.MOON


def test_no_snake_step_without_a_snake_in_the_game() -> None:
    state = crown_table(2, {0: tokens(moon=1), 1: tokens(silver=1), 2: tokens(moon=3)})
    state = replace(state, pool=tk.sub(state.pool, tokens(snake=state.pool[pb.SNAKE])))
    _, after = finish_turn(state)
    events = decide_events(after, 2, pb.Command(use_crown=pb.UseCrown()))
    assert kinds(events)[:3] == ["crown_used", "tokens_revealed", "round_resolved"]


def test_a_snake_answer_is_hidden_from_the_other_seats() -> None:
    _, after = snake_round(tokens(moon=6, snake=1, bubble=5))
    (event,) = decide_events(after, 2, snake_answer(pb.BUBBLE))
    assert redact(event, 2).snake_chosen.price == pb.BUBBLE
    for other in (0, 1, None):
        shown = redact(event, other).snake_chosen
        assert shown.seat == 2 and shown.price == pb.TOKEN_UNSPECIFIED


def test_a_seat_without_a_choice_names_no_price() -> None:
    _, after = snake_round(tokens(moon=1, snake=1, bubble=5))  # only Bubbles reach 5
    for price in (pb.MOON, pb.SILVER):
        with pytest.raises(RuleError) as err:
            act(after, 2, snake_answer(price))
        assert err.value.code == "BAD_SNAKE_DISCARD"
    act(after, 2, snake_answer(pb.BUBBLE))  # the one price its Snake must take is accepted
    assert legal_actions(after, 2) == [snake_answer()]


def test_games_from_before_the_change_open_the_screens_before_the_snakes() -> None:
    """A game whose GameSetUp lacks `snakes_choose_unseen` replays and plays on as it was
    played: the screens open after the Crown and only a Snake owner with a choice answers."""
    crown = pb.Command(use_crown=pb.UseCrown())
    state = crown_table(2, {0: tokens(moon=1), 1: tokens(silver=1),
                            2: tokens(moon=6, snake=1, oyster=1, bubble=5)})
    state = replace(state, snakes_unseen=False)
    _, after = finish_turn(state)
    assert kinds(decide_events(after, 2, crown)) == ["crown_used", "tokens_revealed"]
    after = act(after, 2, crown)
    assert after.revealed and after.stage == pb.STAGE_SNAKE and GAME.to_act(after) == [2]
    events = decide_events(after, 2, snake_answer(pb.BUBBLE))
    assert kinds(events)[0] == "snake_discarded"


# ---- Snake ------------------------------------------------------------------------------


def snake_round(seat2: tk.Tokens):  # noqa: ANN201
    """The round ends (nobody holds the Crown) and stops at the Snake step."""
    state = last_turn({0: tokens(moon=1), 1: tokens(silver=1), 2: seat2}, **CROWN_OPTIONS)
    return finish_turn(state)


def snake_events(seat2: tk.Tokens, chosen: dict[int, int] | None = None):  # noqa: ANN201
    """The round ends and every seat answers the Snake step: all the events, the state."""
    events, after = snake_round(seat2)
    more, after = answer_snakes(after, chosen)
    return events + more, after


def test_snake_rulebook_example_paul() -> None:
    # Paul: 6 Moons, 2 Silver Coins (1 Snake, 1 Oyster = 5 Silver), 5 Bubbles: all reach 5.
    events, after = snake_round(tokens(moon=6, snake=1, oyster=1, bubble=5))
    assert kinds(events)[-1] == "round_ended"
    assert after.stage == pb.STAGE_SNAKE and GAME.to_act(after) == [0, 1, 2]
    assert {c.discard_for_snake.price for c in legal_actions(after, 2)} == set(tk.MAIN)
    events, _ = answer_snakes(after, {2: pb.BUBBLE})  # he chooses to discard 5 Bubbles
    discarded = events[kinds(events).index("snake_discarded")].snake_discarded
    assert tk.from_pb(discarded.removed) == tokens(bubble=5)
    resolved = events[kinds(events).index("round_resolved")].round_resolved
    assert (resolved.tallies[2].moons, resolved.tallies[2].silver,
            resolved.tallies[2].bubbles) == (6, 5, 0)


def test_snake_discard_must_name_a_price_that_reaches_five() -> None:
    _, after = snake_round(tokens(moon=6, snake=1, bubble=5))
    for price in (pb.SILVER, pb.TOKEN_UNSPECIFIED):
        with pytest.raises(RuleError) as err:
            act(after, 2, snake_answer(price))
        assert err.value.code == "BAD_SNAKE_DISCARD"


def test_snake_with_one_choice_discards_automatically() -> None:
    events, _ = snake_events(tokens(moon=1, snake=1, bubble=5))
    discarded = events[kinds(events).index("snake_discarded")].snake_discarded
    assert discarded.seat == 2 and discarded.price == pb.BUBBLE


def test_snake_without_a_price_reaching_five_does_nothing() -> None:
    events, _ = snake_events(tokens(moon=4, snake=1, bubble=4))
    assert "snake_discarded" not in kinds(events)


def test_several_snakes_act_only_once() -> None:
    events, _ = snake_events(tokens(snake=3, silver=7))
    assert kinds(events).count("snake_discarded") == 1
    resolved = events[kinds(events).index("round_resolved")].round_resolved
    assert resolved.tallies[2].silver == 5


def test_snakes_may_be_discarded_as_silver() -> None:
    events, _ = snake_events(tokens(snake=5))
    discarded = events[kinds(events).index("snake_discarded")].snake_discarded
    assert tk.from_pb(discarded.removed) == tokens(snake=5)


def test_snake_discards_leave_the_game() -> None:
    _, after = snake_events(tokens(moon=1, snake=1, bubble=5))
    assert after.out_of_game == tokens(bubble=5)
    in_play = tk.total(after.bag) + sum(tk.total(p.tokens) for p in after.players)
    assert in_play == tk.total(after.pool) - 5


def test_too_few_tokens_left_are_shared_one_at_a_time() -> None:
    # 3 players, 37 tokens, 5 left the game: 32 for 33 places. The starting Magician (the
    # last Mortal, seat 1) and the next player get 11, the third 10.
    _, after = snake_events(tokens(moon=1, snake=1, bubble=5))
    assert [tk.total(p.tokens) for p in after.players] == [10, 11, 11]
    assert tk.total(after.bag) == 0


def test_snake_discard_takes_an_oyster_whole() -> None:
    # 1 Silver + 1 Snake + 1 Oyster = 6 Silver: discarding exactly 5 is the Oyster (4) and
    # one Silver Coin, which leaves the Snake: the tally and the tokens both show 1 Silver.
    assert tk.snake_discard(tokens(silver=1, snake=1, oyster=1), pb.SILVER, None) == tokens(
        silver=1, oyster=1)
    events, _ = snake_events(tokens(silver=1, snake=1, oyster=1))
    resolved = events[kinds(events).index("round_resolved")].round_resolved
    assert resolved.tallies[2].silver == 1
    discarded = events[kinds(events).index("snake_discarded")].snake_discarded
    assert tk.from_pb(discarded.removed) == tokens(silver=1, oyster=1)
    # Only when no one-count token pays the price do two Oysters (8) go for the 5.
    swap = (pb.MOON, pb.SILVER)  # the Crown made the Snake and the Silver Coins Moons
    assert tk.snake_discard(tokens(snake=1, oyster=2), pb.SILVER, swap) == tokens(oyster=2)


def test_snake_discard_is_exactly_five_when_the_tokens_allow() -> None:
    # "discard 5 of them": 3 Silver + 1 Snake + 1 Oyster = 8 Silver; the old way took all
    # four one-count tokens and then the Oyster (8); exactly 5 is the Oyster and one Silver.
    held = tokens(silver=3, snake=1, oyster=1)
    removed = tk.snake_discard(held, pb.SILVER, None)
    assert removed == tokens(silver=1, oyster=1)
    assert tk.tally(tk.sub(held, removed), None)[1] == tk.tally(held, None)[1] - 5
    # Five one-count tokens are still taken first, Oysters kept.
    assert tk.snake_discard(tokens(silver=5, snake=1, oyster=2), pb.SILVER, None) == tokens(
        silver=5)


def test_before_resolution_order_apple_rose_crown_oyster_snake() -> None:
    # Seat 2 holds the Crown, a Snake, 4 Apples and 1 Moon. Apples become Bubbles (4), the
    # Crown swaps Moons and Bubbles (4 Moons, 1 Bubble), so no price reaches 5 for the Snake.
    state = crown_table(2, {0: tokens(moon=1), 1: tokens(silver=1),
                            2: tokens(apple=4, moon=1, snake=1)})
    _, after = finish_turn(state)
    events = crown_then_snakes(after, pb.UseCrown(first=pb.MOON, second=pb.BUBBLE))
    assert "snake_discarded" not in kinds(events)
    resolved = events[kinds(events).index("round_resolved")].round_resolved
    assert (resolved.tallies[2].moons, resolved.tallies[2].silver,
            resolved.tallies[2].bubbles) == (4, 1, 1)
    # The Oyster is added after the Crown: 4 Silver reach 5 only with it, then the Snake bites.
    state = crown_table(2, {0: tokens(moon=1), 1: tokens(silver=1),
                            2: tokens(oyster=1, moon=1, snake=1)})
    _, after = finish_turn(state)
    events = crown_then_snakes(after, pb.UseCrown(first=pb.MOON, second=pb.SILVER))
    # Moon <-> Silver: 1 Moon (the Snake), 1 Silver (the Moon); then the Oyster adds 4.
    discarded = events[kinds(events).index("snake_discarded")].snake_discarded
    assert discarded.price == pb.SILVER
    resolved = events[kinds(events).index("round_resolved")].round_resolved
    assert (resolved.tallies[2].moons, resolved.tallies[2].silver) == (1, 0)
