"""The state of a Moody Bear Kingdom game and `evolve`, which folds one event into it.

States are frozen; hands are sorted tuples so two states holding the same cards compare equal
and a hand never shows the order in which its cards arrived.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.frozen import replace

from .cards import DARK_SWALLOW, Card, Team

Hand = tuple[Card, ...]

SETUP = pb.PHASE_UNSPECIFIED
TURN = pb.TURN
TRADE = pb.TRADE
WINDOW = pb.WINDOW
ARRANGE = pb.ARRANGE
PASSING = pb.PASSING
OVER = pb.OVER

ITEM = pb.ITEM
SWALLOW_ENTRY = pb.DARK_SWALLOW_ENTRY
MACE_ENTRY = pb.MACE
CANCEL_ENTRY = pb.CANCEL_ENTRY


@dataclass(frozen=True)
class Entry:
    """One card (or combo) on the response stack of an open window."""

    kind: int  # EntryKind
    seat: int
    cards: tuple[Card, ...]
    target: int | None = None
    direction: int = 0
    named: Card = 0


@dataclass(frozen=True)
class Trade:
    seat: int
    target: int
    card: Card  # held aside while the target decides


@dataclass(frozen=True)
class State:
    players: int
    five_player_structure: bool = False
    duo_jewel: bool = False
    deadline: int = 0
    teams: tuple[Team, ...] = ()
    set_aside: tuple[Team, ...] = ()
    hands: tuple[Hand, ...] = ()
    deck: tuple[Card, ...] = ()  # top first
    discard: tuple[Card, ...] = ()
    turn: int = 0
    phase: int = SETUP
    acted: bool = False  # a trade or a play happened this turn
    traded: bool = False
    trade: Trade | None = None
    stack: tuple[Entry, ...] = ()
    passed: frozenset[int] = frozenset()
    window_id: int = 0
    swallow_ends_turn: bool = False
    top: tuple[Card, ...] = ()  # cards taken off the deck to be rearranged
    # Per seat: how many of the deck's top cards it knows, in order (it arranged them).
    seen_top: tuple[int, ...] = ()
    direction: int = 0
    choices: tuple[Card, ...] = ()  # per seat, 0 = not chosen yet
    known: tuple[frozenset[int], ...] = ()  # per seat: whose team card it has seen
    public: frozenset[int] = frozenset()  # team cards shown to everyone
    revealed: tuple[tuple[int, Hand], ...] = ()  # hands shown by a proclaim
    winners: tuple[int, ...] | None = None
    winning_team: Team = 0
    reason: str = ""


# ---- small helpers over immutable values ------------------------------------------------


def add_cards(hand: Hand, cards: Iterable[Card]) -> Hand:
    return tuple(sorted((*hand, *cards)))


def remove_cards(hand: Hand, cards: Iterable[Card]) -> Hand:
    rest = list(hand)
    for card in cards:
        rest.remove(card)
    return tuple(rest)


def set_at(items: tuple, index: int, value: object) -> tuple:  # type: ignore[type-arg]
    return (*items[:index], value, *items[index + 1 :])


def with_hand(state: State, seat: int, hand: Hand) -> State:
    return replace(state, hands=set_at(state.hands, seat, tuple(sorted(hand))))


def next_seat(state: State, seat: int) -> int:
    return (seat + 1) % state.players


def neighbour(state: State, seat: int, direction: int) -> int:
    """LEFT is the next player in turn order (clockwise), RIGHT the previous one."""
    step = 1 if direction == pb.LEFT else -1
    return (seat + step) % state.players


def responders(state: State) -> tuple[int, ...]:
    """Who may answer the card on top of the stack: anyone may answer the Dark Swallow with
    a Mace; any other player may answer anything else with a Cancel."""
    top = state.stack[-1]
    if top.kind == SWALLOW_ENTRY:
        return tuple(range(state.players))
    return tuple(s for s in range(state.players) if s != top.seat)


def waiting(state: State) -> tuple[int, ...]:
    return tuple(s for s in responders(state) if s not in state.passed)


def chain_base(stack: tuple[Entry, ...]) -> int:
    """Index of the card the Cancels on top of the stack answer (the last non-Cancel)."""
    i = len(stack) - 1
    while stack[i].kind == CANCEL_ENTRY:
        i -= 1
    return i


def passers(state: State) -> tuple[int, ...]:
    """Seats that still have to choose a card to pass (every seat holding a card)."""
    return tuple(
        s for s in range(state.players) if state.hands[s] and not state.choices[s]
    )


# ---- evolve -----------------------------------------------------------------------------


def start(event: pb.Event) -> State:
    """The game a Started event sets up (every game starts with one)."""
    return started(event.started)


def evolve(state: State, event: pb.Event) -> State:
    kind = event.WhichOneof("kind")
    return EVOLVERS[kind](state, getattr(event, kind))


def started(e: pb.Started) -> State:
    n = e.players
    return State(
        players=n,
        five_player_structure=e.options.five_player_structure,
        duo_jewel=e.options.duo_jewel,
        deadline=e.options.response_deadline_seconds,
        teams=(0,) * n,
        hands=((),) * n,
        choices=(0,) * n,
        known=tuple(frozenset({s}) for s in range(n)),
        seen_top=(0,) * n,
    )


def team_dealt(s: State, e: pb.TeamDealt) -> State:
    return replace(s, teams=set_at(s.teams, e.seat, e.team))


def team_set_aside(s: State, e: pb.TeamSetAside) -> State:
    return replace(s, set_aside=(*s.set_aside, e.team))


def hand_dealt(s: State, e: pb.HandDealt) -> State:
    return with_hand(s, e.seat, tuple(e.cards))


def deck_formed(s: State, e: pb.DeckFormed) -> State:
    return replace(s, deck=tuple(e.cards))


def first_player(s: State, e: pb.FirstPlayer) -> State:
    return replace(s, turn=e.seat, phase=TURN)


def proclaimed(s: State, e: pb.Proclaimed) -> State:
    shown = frozenset(r.seat for r in e.reveals)
    return replace(
        s,
        public=s.public | shown,
        known=tuple(k | shown for k in s.known),
        revealed=tuple((r.seat, tuple(r.cards)) for r in e.reveals),
    )


def game_ended(s: State, e: pb.GameEnded) -> State:
    everyone = frozenset(range(s.players))
    return replace(
        s,
        phase=OVER,
        winners=tuple(e.winners),
        winning_team=e.winning_team,
        reason=e.reason,
        public=everyone,
        known=tuple(everyone for _ in s.known),
    )


def trade_offered(s: State, e: pb.TradeOffered) -> State:
    s = with_hand(s, e.seat, remove_cards(s.hands[e.seat], [e.card]))
    trade = Trade(e.seat, e.target, e.card)
    return replace(s, trade=trade, phase=TRADE, acted=True, traded=True)


def trade_accepted(s: State, e: pb.TradeAccepted) -> State:
    assert s.trade is not None
    t = s.trade
    s = with_hand(s, t.target, add_cards(remove_cards(s.hands[t.target], [e.returned]), [t.card]))
    s = with_hand(s, t.seat, add_cards(s.hands[t.seat], [e.returned]))
    return replace(s, trade=None, phase=TURN)


def trade_rejected(s: State, e: pb.TradeRejected) -> State:
    assert s.trade is not None
    s = with_hand(s, s.trade.seat, add_cards(s.hands[s.trade.seat], [s.trade.card]))
    return replace(s, trade=None, phase=TURN)


def card_drawn(s: State, e: pb.CardDrawn) -> State:
    """The event's card joins the seat's hand; it was the top of the deck."""
    s = with_hand(s, e.seat, add_cards(s.hands[e.seat], [e.card]))
    return off_the_top(s)


def off_the_top(s: State) -> State:
    """The deck's top card is gone: whoever knew it knows one card fewer."""
    return replace(s, deck=s.deck[1:], seen_top=tuple(max(0, k - 1) for k in s.seen_top))


def top_unknown(s: State) -> State:
    """The deck's order changed unseen: nobody knows its top any more."""
    return replace(s, seen_top=(0,) * s.players)


def deck_reshuffled(s: State, e: pb.DeckReshuffled) -> State:
    return top_unknown(replace(s, deck=tuple(e.cards), discard=()))


def nothing_to_draw(s: State, e: pb.NothingToDraw) -> State:
    return s


def turn_ended(s: State, e: pb.TurnEnded) -> State:
    return replace(s, turn=e.next, phase=TURN, acted=False, traded=False)


def push(s: State, entry: Entry) -> State:
    """A card joins the stack: the window (re)opens and everyone may answer again."""
    return replace(
        s,
        stack=(*s.stack, entry),
        phase=WINDOW,
        passed=frozenset(),
        window_id=s.window_id + 1,
    )


def announced(s: State, e: pb.Announced) -> State:
    cards = tuple(sorted(e.play.cards))
    s = with_hand(s, e.seat, remove_cards(s.hands[e.seat], cards))
    target = e.play.target if e.play.HasField("target") else None
    entry = Entry(ITEM, e.seat, cards, target, e.play.direction, e.play.named)
    return replace(push(s, entry), acted=True)


def cancel_played(s: State, e: pb.CancelPlayed) -> State:
    s = with_hand(s, e.seat, remove_cards(s.hands[e.seat], [pb.CANCEL]))
    return push(s, Entry(CANCEL_ENTRY, e.seat, (pb.CANCEL,)))


def mace_played(s: State, e: pb.MacePlayed) -> State:
    s = with_hand(s, e.seat, remove_cards(s.hands[e.seat], [pb.MACE_OF_LIGHT]))
    return push(s, Entry(MACE_ENTRY, e.seat, (pb.MACE_OF_LIGHT,)))


def declined(s: State, e: pb.Declined) -> State:
    return replace(s, passed=s.passed | {e.seat})


def window_closed(s: State, e: pb.WindowClosed) -> State:
    """Resolve the chain on top of the stack: its cards go to the discard pile. A Dark
    Swallow nobody answered stays on show (the game ends); one whose Mace was cancelled
    opens a fresh window."""
    if s.stack[-1].kind == SWALLOW_ENTRY:
        return s
    base = chain_base(s.stack)
    spent = [c for entry in s.stack[base:] for c in entry.cards]
    s = replace(s, stack=s.stack[:base], discard=(*s.discard, *spent))
    if s.stack:
        return replace(s, passed=frozenset(), window_id=s.window_id + 1)
    return replace(s, phase=TURN, passed=frozenset())


def dark_swallow_drawn(s: State, e: pb.DarkSwallowDrawn) -> State:
    s = replace(off_the_top(s), swallow_ends_turn=e.ends_turn)
    return push(s, Entry(SWALLOW_ENTRY, e.seat, (DARK_SWALLOW,)))


def dark_swallow_returned(s: State, e: pb.DarkSwallowReturned) -> State:
    deck = (*s.deck[: e.position], DARK_SWALLOW, *s.deck[e.position :])
    return top_unknown(replace(s, deck=deck, stack=(), phase=TURN, passed=frozenset()))


def identity_looked(s: State, e: pb.IdentityLooked) -> State:
    return replace(s, known=set_at(s.known, e.seat, s.known[e.seat] | {e.target}))


def hands_swapped(s: State, e: pb.HandsSwapped) -> State:
    """Each seat now holds the hand the event records for the other."""
    return with_hand(with_hand(s, e.seat, tuple(e.target_cards)), e.target, tuple(e.seat_cards))


def deck_shuffled(s: State, e: pb.DeckShuffled) -> State:
    return top_unknown(replace(s, deck=tuple(e.cards)))


def card_stolen(s: State, e: pb.CardStolen) -> State:
    if not e.stolen:
        return s
    s = with_hand(s, e.target, remove_cards(s.hands[e.target], [e.card]))
    return with_hand(s, e.seat, add_cards(s.hands[e.seat], [e.card]))


def hand_looked(s: State, e: pb.HandLooked) -> State:
    return s


def top_cards_taken(s: State, e: pb.TopCardsTaken) -> State:
    if e.count == 0:
        return s
    return top_unknown(replace(s, top=tuple(e.cards), deck=s.deck[e.count :], phase=ARRANGE))


def top_cards_arranged(s: State, e: pb.TopCardsArranged) -> State:
    """The arranger puts the cards back in its order, and knows that order."""
    seen_top = set_at((0,) * s.players, e.seat, len(e.cards))
    return replace(s, deck=(*e.cards, *s.deck), top=(), phase=TURN, seen_top=seen_top)


def card_requested(s: State, e: pb.CardRequested) -> State:
    if not e.given:
        return s
    s = with_hand(s, e.target, remove_cards(s.hands[e.target], [e.card]))
    return with_hand(s, e.seat, add_cards(s.hands[e.seat], [e.card]))


def passing_started(s: State, e: pb.PassingStarted) -> State:
    return replace(s, phase=PASSING, direction=e.direction, choices=(0,) * s.players)


def pass_card_chosen(s: State, e: pb.PassCardChosen) -> State:
    s = with_hand(s, e.seat, remove_cards(s.hands[e.seat], [e.card]))
    return replace(s, choices=set_at(s.choices, e.seat, e.card))


def cards_passed(s: State, e: pb.CardsPassed) -> State:
    for t in e.transfers:
        s = with_hand(s, t.to, add_cards(s.hands[t.to], [t.card]))
    return replace(s, choices=(0,) * s.players, direction=0, phase=TURN)


EVOLVERS = {
    "team_dealt": team_dealt,
    "team_set_aside": team_set_aside,
    "hand_dealt": hand_dealt,
    "deck_formed": deck_formed,
    "first_player": first_player,
    "proclaimed": proclaimed,
    "game_ended": game_ended,
    "trade_offered": trade_offered,
    "trade_accepted": trade_accepted,
    "trade_rejected": trade_rejected,
    "card_drawn": card_drawn,
    "deck_reshuffled": deck_reshuffled,
    "nothing_to_draw": nothing_to_draw,
    "turn_ended": turn_ended,
    "announced": announced,
    "cancel_played": cancel_played,
    "mace_played": mace_played,
    "declined": declined,
    "window_closed": window_closed,
    "dark_swallow_drawn": dark_swallow_drawn,
    "dark_swallow_returned": dark_swallow_returned,
    "identity_looked": identity_looked,
    "hands_swapped": hands_swapped,
    "deck_shuffled": deck_shuffled,
    "card_stolen": card_stolen,
    "hand_looked": hand_looked,
    "top_cards_taken": top_cards_taken,
    "top_cards_arranged": top_cards_arranged,
    "card_requested": card_requested,
    "passing_started": passing_started,
    "pass_card_chosen": pass_card_chosen,
    "cards_passed": cards_passed,
}
