"""What each seat may see: show, redact, and redeal (for the leak test).

Hidden from a seat: the other team cards (until looked at or revealed), the other hands,
the order of the deck, a trade offer between two other players, the cards another player is
rearranging or passing, and every looked-at card that was not its own look.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import Rng
from services.core.frozen import replace

from .cards import DARK_SWALLOW, Card
from .moves import may
from .state import ARRANGE, WINDOW, State, set_at, waiting

# ---- view -------------------------------------------------------------------------------


def show(state: State, seat: int | None) -> pb.View:
    v = pb.View(
        options=pb.Options(
            five_player_structure=state.five_player_structure,
            duo_jewel=state.duo_jewel,
            response_deadline_seconds=state.deadline,
        ),
        phase=state.phase,
        turn=state.turn,
        deck_size=len(state.deck),
        discard=state.discard,
        acted=state.acted,
        traded=state.traded,
    )
    known = state.public if seat is None else state.known[seat]
    revealed = dict(state.revealed)
    for s in range(state.players):
        info = pb.PlayerInfo(seat=s, hand_size=len(state.hands[s]))
        if s in known:
            info.team = state.teams[s]
        if s in revealed:
            info.revealed_hand.extend(revealed[s])
        v.players.append(info)
    if seat is not None:
        v.hand.extend(state.hands[seat])
        v.team = state.teams[seat]
        v.may.extend(may(state, seat))
        v.known_top.extend(state.deck[: state.seen_top[seat]])
    if state.trade is not None:
        t = state.trade
        v.trade.seat, v.trade.target = t.seat, t.target
        if seat in (t.seat, t.target):
            v.trade.card = t.card
    if state.phase == WINDOW:
        v.window.id = state.window_id
        v.window.deadline_seconds = state.deadline
        v.window.passed.extend(sorted(state.passed))
        v.window.waiting.extend(waiting(state))
        for entry in state.stack:
            shown = pb.StackEntry(kind=entry.kind, seat=entry.seat)
            shown.play.cards.extend(entry.cards)
            if entry.target is not None:
                shown.play.target = entry.target
            shown.play.direction = entry.direction
            shown.play.named = entry.named
            v.window.stack.append(shown)
    if state.phase == ARRANGE and seat == state.turn:
        v.top_cards.extend(state.top)
    if state.direction:
        v.passing.direction = state.direction
        v.passing.chosen.extend(s for s, c in enumerate(state.choices) if c)
        if seat is not None:
            v.passing.my_choice = state.choices[seat]
    return v


# ---- redact -----------------------------------------------------------------------------


def redact(event: pb.Event, seat: int | None) -> pb.Event:
    """The event as `seat` saw it: hidden cards and teams cleared, counts kept."""
    out = pb.Event()
    out.CopyFrom(event)
    kind = out.WhichOneof("kind")
    if kind is None:
        return out
    body = getattr(out, kind)
    hide = HIDDEN.get(kind)
    if hide is not None:
        hide(body, seat)
    return out


Hider = Callable[[Any, int | None], None]


def only(fields: tuple[str, ...], *who: str) -> Hider:
    """Clear `fields` unless the viewer is one of the seats named by `who`."""

    def hide(body: Any, seat: int | None) -> None:
        if seat is None or seat not in [getattr(body, w) for w in who]:
            for f in fields:
                body.ClearField(f)

    return hide


def nobody(*fields: str) -> Hider:
    """Clear `fields` for every seat and for spectators."""

    def hide(body: Any, seat: int | None) -> None:
        for f in fields:
            body.ClearField(f)

    return hide


def hide_transfers(body: pb.CardsPassed, seat: int | None) -> None:
    for t in body.transfers:
        if seat not in (t.seat, t.to):
            t.ClearField("card")


HIDDEN: dict[str, Hider] = {
    "team_dealt": only(("team",), "seat"),
    "team_set_aside": nobody("team"),
    "hand_dealt": only(("cards",), "seat"),
    "deck_formed": nobody("cards"),
    "deck_reshuffled": nobody("cards"),
    "deck_shuffled": nobody("cards"),
    "dark_swallow_returned": nobody("position"),
    "trade_offered": only(("card",), "seat", "target"),
    "trade_accepted": only(("offered", "returned"), "seat", "target"),
    "card_drawn": only(("card",), "seat"),
    "identity_looked": only(("team",), "seat"),
    "hands_swapped": only(("seat_cards", "target_cards"), "seat", "target"),
    "card_stolen": only(("card",), "seat", "target"),
    "hand_looked": only(("cards",), "seat"),
    "top_cards_taken": only(("cards",), "seat"),
    "top_cards_arranged": only(("cards",), "seat"),
    "pass_card_chosen": only(("card",), "seat"),
    "cards_passed": hide_transfers,
}


# ---- redeal -----------------------------------------------------------------------------


def redeal(state: State, seat: int, rng: Rng) -> State:
    """Deal anew everything `seat` cannot see, keeping every size it can see and the deck's
    top cards it knows. The Dark Swallow stays among the deck's cards it does not know (it
    never sits in a hand)."""
    return redeal_cards(redeal_teams(state, seat, rng), seat, rng)


def redeal_teams(state: State, seat: int, rng: Rng) -> State:
    unknown = [s for s in range(state.players) if s not in state.known[seat]]
    # Sorted before the shuffle: the order the true state holds them in must not show through.
    pool = rng.shuffled(sorted([state.teams[s] for s in unknown] + list(state.set_aside)))
    teams = state.teams
    for s, team in zip(unknown, pool, strict=False):
        teams = set_at(teams, s, team)
    return replace(state, teams=teams, set_aside=tuple(pool[len(unknown) :]))


def redeal_cards(state: State, seat: int, rng: Rng) -> State:
    revealed = dict(state.revealed)
    hidden_hands = [s for s in range(state.players) if s != seat and s not in revealed]
    hidden_choices = [s for s in range(state.players) if s != seat and state.choices[s]]
    trade_hidden = state.trade is not None and seat not in (state.trade.seat, state.trade.target)
    top_hidden = state.phase == ARRANGE and seat != state.turn

    pool: list[Card] = [c for s in hidden_hands for c in state.hands[s]]
    pool += [state.choices[s] for s in hidden_choices]
    known, unknown = state.deck[: state.seen_top[seat]], state.deck[state.seen_top[seat] :]
    pool += [c for c in unknown if c != DARK_SWALLOW]
    if trade_hidden:
        assert state.trade is not None
        pool.append(state.trade.card)
    if top_hidden:
        pool += [c for c in state.top if c != DARK_SWALLOW]
    pool.sort()  # a canonical order first: where each card truly lies must not show through
    rng.shuffle(pool)

    def take(n: int) -> list[Card]:
        taken = pool[:n]
        del pool[:n]
        return taken

    hands = state.hands
    for s in hidden_hands:
        hands = set_at(hands, s, tuple(sorted(take(len(state.hands[s])))))
    choices = state.choices
    for s in hidden_choices:
        choices = set_at(choices, s, take(1)[0])
    trade = state.trade
    if trade_hidden and trade is not None:
        trade = replace(trade, card=take(1)[0])
    top = state.top
    if top_hidden:
        top = tuple(with_swallow(take(len(top) - top.count(DARK_SWALLOW)), top, rng))
    deck_cards = take(len(unknown) - unknown.count(DARK_SWALLOW))
    deck = (*known, *with_swallow(deck_cards, unknown, rng))
    assert not pool
    return replace(state, hands=hands, choices=choices, trade=trade, top=top, deck=deck)


def with_swallow(cards: list[Card], original: tuple[Card, ...], rng: Rng) -> list[Card]:
    """Put the Dark Swallow back at a random place if the original pile held it."""
    if DARK_SWALLOW in original:
        cards.insert(rng.below(len(cards) + 1), DARK_SWALLOW)
    return cards
