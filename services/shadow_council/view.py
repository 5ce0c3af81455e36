"""What each seat may see: view, redact and redeal.

Hidden: every unrevealed shadow identity (from its owner too), the deck, other players'
hands, and private results (a keyword, an identity, a clue, a suit, a hand, a Prophecy guess),
which reach only the seat that earned them.
"""

from __future__ import annotations

from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import Rng
from services.core.frozen import replace
from services.shadow_council import belief, data
from services.shadow_council.state import (
    ACTIONS,
    OVER,
    Clue,
    Fact,
    State,
    card_pb,
    identity_pb,
    keyword_pb,
    source_pb,
    suit_pb,
)

FACT_KINDS = {
    "REVEALED": pb.FACT_REVEALED,
    "WRONG_GUESS": pb.FACT_WRONG_GUESS,
    "BRAINWASHED": pb.FACT_BRAINWASHED,
}
CLUE_KINDS = {
    "KEYWORD": pb.CLUE_KEYWORD,
    "IDENTITY": pb.CLUE_IDENTITY,
    "NOT_IDENTITY": pb.CLUE_NOT_IDENTITY,
    "SUIT": pb.CLUE_SUIT,
    "HAND_SUITS": pb.CLUE_HAND_SUITS,
}


def _clue_pb(c: Clue) -> pb.Clue:
    return pb.Clue(
        tick=c.tick,
        round=c.round,
        subject=c.subject,
        kind=CLUE_KINDS[c.kind],
        source=source_pb(c.source),
        keyword=keyword_pb(c.keyword) if c.keyword else 0,
        identity=identity_pb(c.identity) if c.identity else 0,
        suit=suit_pb(c.suit) if c.suit else 0,
        suits=[suit_pb(x) for x in c.suits],
    )


def _fact_pb(f: Fact) -> pb.Fact:
    return pb.Fact(
        tick=f.tick,
        kind=FACT_KINDS[f.kind],
        subject=f.subject,
        identity=identity_pb(f.identity),
        other=identity_pb(f.other) if f.other else 0,
    )


def _seat_view(s: State, seat: int) -> pb.SeatView:
    revealed = not s.alive[seat] or s.phase == OVER
    return pb.SeatView(
        seat=seat,
        ai=s.ai[seat],
        public_identity=identity_pb(s.public[seat]),
        alive=s.alive[seat],
        gold=s.gold[seat],
        hand_size=len(s.hands[seat]),
        guarded=s.guarded[seat],
        skips_next_turn=s.skip_turn[seat],
        disguised=any(seat in d[:2] for d in s.disguises),
        shadow_identity=identity_pb(s.shadow[seat]) if revealed else 0,
    )


def show(s: State, seat: int | None) -> pb.View:
    v = pb.View(
        round=s.round,
        rounds=s.rounds,
        phase=pb.Phase.Value("PHASE_" + s.phase) if s.phase else 0,
        event=pb.GlobalEvent.Value("EVENT_" + s.event) if s.event else 0,
        seats=[_seat_view(s, k) for k in range(s.seats)],
        military=s.zone("MILITARY"),
        economy=s.zone("ECONOMY"),
        strategy=s.zone("STRATEGY"),
        shadow_alley=s.zone("SHADOW_ALLEY"),
        deck_size=len(s.deck),
        discard_pile=[card_pb(c) for c in s.discard],
        current_seat=s.current if s.phase == ACTIONS else -1,
        actions_left=s.actions if s.phase == ACTIONS else 0,
        gold_peek_cost=data.gold_peek_cost(max(s.round, 1)),
        in_play=[identity_pb(i) for i in s.in_play],
        facts=[_fact_pb(f) for f in s.facts],
        tick=s.tick,
        guessing_round=s.guessing_round(),
        ai_guesser=max(s.ai_guesser, -1),
    )
    if seat is not None:
        v.hand.extend(card_pb(c) for c in s.hands[seat])
        v.free_peek = s.free_peek[seat]
        v.free_reflect = s.free_reflect[seat]
        v.clues.extend(_clue_pb(c) for c in s.clues[seat])
    return v


def redact(event: pb.Event, seat: int | None) -> pb.Event:
    """The event as `seat` (None: a spectator) may see it."""
    out = pb.Event()
    out.CopyFrom(event)
    kind = event.WhichOneof("kind")
    if kind == "set_up":
        del out.set_up.shadow_identities[:]
        del out.set_up.deck[:]
    elif kind == "deck_reshuffled":
        del out.deck_reshuffled.deck[:]
    elif kind == "cards_drawn" and seat != event.cards_drawn.seat:
        del out.cards_drawn.cards[:]
    elif kind == "card_played" and seat != event.card_played.seat:
        out.card_played.guess = 0
    elif kind == "clue_gained" and seat != event.clue_gained.seat and \
            not event.clue_gained.public:
        c = out.clue_gained
        c.kind = 0  # e.g. whether a Prophecy guessed right: the clue is its player's alone
        c.keyword = 0
        c.identity = 0
        c.suit = 0
        del c.suits[:]
    return out


def redeal(s: State, seat: int, rng: Rng) -> State:
    """The same game with everything `seat` cannot see dealt anew: the deck and the other
    hands (same sizes), and every shadow identity the seat cannot pin down, resampled among
    those consistent with the seat's own clues and the public facts."""
    pool = list(s.deck)
    for other in range(s.seats):
        if other != seat:
            pool += s.hands[other]
    pool.sort()  # a canonical order first: where each card truly lies must not show through
    rng.shuffle(pool)
    hands = list(s.hands)
    for other in range(s.seats):
        if other != seat:
            size = len(s.hands[other])
            hands[other], pool = tuple(pool[:size]), pool[size:]
    new = replace(s, hands=tuple(hands), deck=tuple(pool))
    if s.phase == OVER:
        return new
    worlds = belief.consistent_permutations(s.seats, s.in_play, s.clues[seat], s.facts)
    brainwashed = {f.subject for f in s.facts if f.kind == "BRAINWASHED"}
    original = rng.choice(worlds)
    shadow = tuple(
        s.shadow[k] if k in brainwashed else original[k] for k in range(s.seats)
    )
    return replace(new, shadow=shadow)
