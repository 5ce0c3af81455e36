"""Shadow Council's state and `evolve`: how each recorded event changes the table.

The state is a frozen dataclass of tuples so it compares with == and is never mutated.
Names of identities, cards, suits, zones and events are the proto enum names without their
prefix ("GENERAL", "RALLY", "MILITARY", "SHADOW_ALLEY", "DARK_NIGHT").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.frozen import replace
from services.shadow_council import data

# Phases (the proto Phase names without the prefix); "" before the first round.
PASSIVES = "PASSIVES"
ACTIONS = "ACTIONS"
GUESS = "GUESS"
OVER = "OVER"

NOT_DRAWN = -2  # the AI guess of this round has not been drawn yet
NO_AI_GUESSER = -1


@dataclass(frozen=True)
class Clue:
    """Something one seat learned privately."""

    tick: int
    round: int
    subject: int
    kind: str  # KEYWORD, IDENTITY, NOT_IDENTITY, SUIT, HAND_SUITS
    source: str
    keyword: str = ""
    identity: str = ""
    suit: str = ""
    suits: tuple[str, ...] = ()


@dataclass(frozen=True)
class Fact:
    """A public deduction: REVEALED, WRONG_GUESS or BRAINWASHED (identity -> other)."""

    tick: int
    kind: str
    subject: int
    identity: str
    other: str = ""


@dataclass(frozen=True)
class Result:
    winner: str  # ORDER, CHAOS or "" for a draw
    winners: tuple[int, ...]
    reason: str


@dataclass(frozen=True)
class State:
    ai: tuple[bool, ...]
    rounds: int
    in_play: tuple[str, ...]
    public: tuple[str, ...]
    shadow: tuple[str, ...]
    deck: tuple[str, ...]
    hands: tuple[tuple[str, ...], ...]
    gold: tuple[int, ...]
    alive: tuple[bool, ...]
    guarded: tuple[bool, ...]
    skip_turn: tuple[bool, ...]
    free_peek: tuple[bool, ...]
    free_reflect: tuple[bool, ...]
    guessed: tuple[bool, ...]
    clues: tuple[tuple[Clue, ...], ...]
    discard: tuple[str, ...] = ()
    zones: tuple[int, int, int, int] = (0, 0, 0, 0)  # data.ZONES order
    round: int = 0
    event: str = ""
    phase: str = ""
    current: int = -1  # whose turn (action phase)
    actions: int = 0
    turn_open: bool = False  # the current seat may still act this turn
    passive_next: int = 0  # next seat whose passive resolves
    pending: int = -1  # seat owing a passive decision (the Assassin)
    ai_guesser: int = NOT_DRAWN
    disguises: tuple[tuple[int, int, int], ...] = ()  # (seat, other, round played)
    facts: tuple[Fact, ...] = ()
    tick: int = 0
    result: Result | None = None
    scout_public: bool = False  # Options.scout_public: a Scout's suit is shown to all

    @property
    def seats(self) -> int:
        return len(self.ai)

    def zone(self, name: str) -> int:
        return self.zones[data.ZONES.index(name)]

    def survivors(self) -> list[int]:
        return [s for s in range(self.seats) if self.alive[s]]

    def faction(self, seat: int) -> str:
        return data.FACTION[self.shadow[seat]]

    def guessing_round(self) -> bool:
        """4-player game: guessing only every 2 rounds (even rounds)."""
        return self.seats != 4 or self.round % 2 == 0


def name_of(enum: Any, value: int, prefix: str) -> str:
    return str(enum.Name(value))[len(prefix) :]


def identity_name(value: int) -> str:
    return name_of(pb.Identity, value, "IDENTITY_")


def card_name(value: int) -> str:
    return name_of(pb.Card, value, "CARD_")


def suit_name(value: int) -> str:
    return name_of(pb.Suit, value, "SUIT_")


def zone_name(value: int) -> str:
    return name_of(pb.Zone, value, "ZONE_")


def keyword_name(value: int) -> str:
    return name_of(pb.Keyword, value, "KEYWORD_")


def _set(items: tuple[Any, ...], index: int, value: Any) -> tuple[Any, ...]:
    return items[:index] + (value,) + items[index + 1 :]


def _remove_cards(hand: tuple[str, ...], cards: list[str]) -> tuple[str, ...]:
    out = list(hand)
    for card in cards:
        out.remove(card)
    return tuple(out)


def _swap_public(state: State, a: int, b: int) -> tuple[str, ...]:
    public = list(state.public)
    public[a], public[b] = public[b], public[a]
    return tuple(public)


CLUE_KINDS = {
    pb.CLUE_KEYWORD: "KEYWORD",
    pb.CLUE_IDENTITY: "IDENTITY",
    pb.CLUE_NOT_IDENTITY: "NOT_IDENTITY",
    pb.CLUE_SUIT: "SUIT",
    pb.CLUE_HAND_SUITS: "HAND_SUITS",
}


def start(event: pb.Event) -> State:
    """The game a GameSetUp sets up (every game starts with one)."""
    return _set_up(event.set_up)


def evolve(state: State, event: pb.Event) -> State:
    kind = event.WhichOneof("kind")
    new = _APPLY[kind](state, getattr(event, kind))
    return replace(new, tick=state.tick + 1)


def _set_up(e: pb.GameSetUp) -> State:
    n = len(e.ai)
    return State(
        ai=tuple(e.ai),
        rounds=e.rounds,
        in_play=tuple(identity_name(i) for i in e.in_play),
        public=tuple(identity_name(i) for i in e.public_identities),
        shadow=tuple(identity_name(i) for i in e.shadow_identities),
        deck=tuple(card_name(c) for c in e.deck),
        hands=((),) * n,
        gold=(data.STARTING_GOLD,) * n,
        alive=(True,) * n,
        guarded=(False,) * n,
        skip_turn=(False,) * n,
        free_peek=(False,) * n,
        free_reflect=(False,) * n,
        guessed=(False,) * n,
        clues=((),) * n,
        tick=1,
        scout_public=e.scout_public,
    )


def _round_started(s: State, e: pb.RoundStarted) -> State:
    event = name_of(pb.GlobalEvent, e.event, "EVENT_")
    return replace(
        s,
        round=e.round,
        event=event,
        # Guard lasts until the start of the next round.
        guarded=(False,) * s.seats,
        free_peek=tuple(a and event == "DIVINE_ORACLE" for a in s.alive),
        free_reflect=tuple(a and event == "MEMORY_FRAGMENTS" for a in s.alive),
        guessed=(False,) * s.seats,
        ai_guesser=NOT_DRAWN,
        current=-1,
        actions=0,
    )


def _phase_started(s: State, e: pb.PhaseStarted) -> State:
    phase = name_of(pb.Phase, e.phase, "PHASE_")
    return replace(
        s, phase=phase, current=-1, actions=0, turn_open=False, passive_next=0, pending=-1
    )


def _turn_started(s: State, e: pb.TurnStarted) -> State:
    if e.skipped:
        return replace(
            s,
            current=e.seat,
            actions=0,
            turn_open=False,
            skip_turn=_set(s.skip_turn, e.seat, False),
        )
    return replace(s, current=e.seat, actions=data.ACTIONS_PER_TURN, turn_open=True)


def _turn_ended(s: State, e: pb.TurnEnded) -> State:
    return replace(s, turn_open=False)


def _passive_resolved(s: State, e: pb.PassiveResolved) -> State:
    return replace(s, pending=-1)


def _cards_drawn(s: State, e: pb.CardsDrawn) -> State:
    cards = tuple(card_name(c) for c in e.cards)
    return replace(
        s,
        deck=s.deck[len(cards) :],
        hands=_set(s.hands, e.seat, s.hands[e.seat] + cards),
    )


def _deck_reshuffled(s: State, e: pb.DeckReshuffled) -> State:
    return replace(s, deck=tuple(card_name(c) for c in e.deck), discard=())


def _cards_discarded(s: State, e: pb.CardsDiscarded) -> State:
    cards = [card_name(c) for c in e.cards]
    return replace(
        s,
        hands=_set(s.hands, e.seat, _remove_cards(s.hands[e.seat], cards)),
        discard=s.discard + tuple(cards),
    )


def _card_played(s: State, e: pb.CardPlayed) -> State:
    card = card_name(e.card)
    return replace(
        s,
        hands=_set(s.hands, e.seat, _remove_cards(s.hands[e.seat], [card])),
        discard=s.discard + (card,),
        actions=s.actions - 1,
    )


def _gold_peek_paid(s: State, e: pb.GoldPeekPaid) -> State:
    return replace(s, gold=_set(s.gold, e.seat, s.gold[e.seat] - e.cost), actions=s.actions - 1)


def _free_action_used(s: State, e: pb.FreeActionUsed) -> State:
    if e.peek:
        return replace(s, free_peek=_set(s.free_peek, e.seat, False))
    return replace(s, free_reflect=_set(s.free_reflect, e.seat, False))


def _gold_changed(s: State, e: pb.GoldChanged) -> State:
    return replace(s, gold=_set(s.gold, e.seat, s.gold[e.seat] + e.delta))


def _zone_changed(s: State, e: pb.ZoneChanged) -> State:
    index = data.ZONES.index(zone_name(e.zone))
    zones = list(s.zones)
    zones[index] += e.delta
    return replace(s, zones=(zones[0], zones[1], zones[2], zones[3]))


def _guard_raised(s: State, e: pb.GuardRaised) -> State:
    return replace(s, guarded=_set(s.guarded, e.seat, True))


def _attack_blocked(s: State, e: pb.AttackBlocked) -> State:
    return replace(s, guarded=_set(s.guarded, e.target, False))


def _turn_skip_ordered(s: State, e: pb.TurnSkipOrdered) -> State:
    return replace(s, skip_turn=_set(s.skip_turn, e.target, True))


def _identities_swapped(s: State, e: pb.IdentitiesSwapped) -> State:
    if e.kind == pb.SWAP_DISGUISE:
        return replace(
            s,
            public=_swap_public(s, e.seat, e.other),
            disguises=s.disguises + ((e.seat, e.other, s.round),),
        )
    if e.kind == pb.SWAP_DISGUISE_REVERT:
        kept = tuple(d for d in s.disguises if d[:2] != (e.seat, e.other))
        return replace(s, public=_swap_public(s, e.seat, e.other), disguises=kept)
    # Brainwash: the target's public and shadow identities swap places.
    old_public, old_shadow = s.public[e.seat], s.shadow[e.seat]
    fact = Fact(s.tick, "BRAINWASHED", e.seat, old_shadow, old_public)
    return replace(
        s,
        public=_set(s.public, e.seat, old_shadow),
        shadow=_set(s.shadow, e.seat, old_public),
        facts=s.facts + (fact,),
    )


def clue_of(msg: pb.ClueGained | pb.Clue, tick: int, round_: int) -> Clue:
    """The clue a ClueGained event gives, or a view's Clue shows: the one reading of a clue
    from protobuf, for the state and for the bots alike."""
    return Clue(
        tick=tick,
        round=round_,
        subject=msg.subject,
        kind=CLUE_KINDS[msg.kind],
        source=name_of(pb.ClueSource, msg.source, "SOURCE_"),
        keyword=keyword_name(msg.keyword) if msg.keyword else "",
        identity=identity_name(msg.identity) if msg.identity else "",
        suit=suit_name(msg.suit) if msg.suit else "",
        suits=tuple(suit_name(x) for x in msg.suits),
    )


def _clue_gained(s: State, e: pb.ClueGained) -> State:
    clue = clue_of(e, s.tick, s.round)
    if e.public:  # revealed to the table: every seat gains it
        return replace(s, clues=tuple(held + (clue,) for held in s.clues))
    return replace(s, clues=_set(s.clues, e.seat, s.clues[e.seat] + (clue,)))


def _passive_pending(s: State, e: pb.PassivePending) -> State:
    return replace(s, pending=e.seat, passive_next=e.seat + 1)


def _guess_made(s: State, e: pb.GuessMade) -> State:
    s = replace(s, guessed=_set(s.guessed, e.seat, True))
    if e.correct:
        return s
    fact = Fact(s.tick, "WRONG_GUESS", e.target, identity_name(e.identity))
    return replace(s, facts=s.facts + (fact,))


def _guess_skipped(s: State, e: pb.GuessSkipped) -> State:
    return replace(s, guessed=_set(s.guessed, e.seat, True))


def _ai_guess_drawn(s: State, e: pb.AiGuessDrawn) -> State:
    return replace(s, ai_guesser=e.seat if e.drawn else NO_AI_GUESSER)


def _player_eliminated(s: State, e: pb.PlayerEliminated) -> State:
    # An eliminated player's cards go face up to the discard pile.
    fact = Fact(s.tick, "REVEALED", e.seat, s.shadow[e.seat])
    return replace(
        s,
        alive=_set(s.alive, e.seat, False),
        discard=s.discard + s.hands[e.seat],
        hands=_set(s.hands, e.seat, ()),
        guarded=_set(s.guarded, e.seat, False),
        free_peek=_set(s.free_peek, e.seat, False),
        free_reflect=_set(s.free_reflect, e.seat, False),
        facts=s.facts + (fact,),
        pending=-1 if s.pending == e.seat else s.pending,
    )


def _game_ended(s: State, e: pb.GameEnded) -> State:
    winner = name_of(pb.Faction, e.winner, "FACTION_") if e.winner else ""
    return replace(
        s, phase=OVER, pending=-1, result=Result(winner, tuple(e.winners), e.reason)
    )


_APPLY: dict[str, Any] = {
    "round_started": _round_started,
    "phase_started": _phase_started,
    "turn_started": _turn_started,
    "cards_drawn": _cards_drawn,
    "deck_reshuffled": _deck_reshuffled,
    "cards_discarded": _cards_discarded,
    "card_played": _card_played,
    "gold_peek_paid": _gold_peek_paid,
    "free_action_used": _free_action_used,
    "gold_changed": _gold_changed,
    "zone_changed": _zone_changed,
    "guard_raised": _guard_raised,
    "attack_blocked": _attack_blocked,
    "turn_skip_ordered": _turn_skip_ordered,
    "identities_swapped": _identities_swapped,
    "clue_gained": _clue_gained,
    "passive_pending": _passive_pending,
    "guess_made": _guess_made,
    "guess_skipped": _guess_skipped,
    "ai_guess_drawn": _ai_guess_drawn,
    "player_eliminated": _player_eliminated,
    "game_ended": _game_ended,
    "passive_resolved": _passive_resolved,
    "turn_ended": _turn_ended,
}


# ---- names and their enum values (the rules write events with them, the views show them)


def card_pb(name: str) -> int:
    return int(pb.Card.Value("CARD_" + name))


def identity_pb(name: str) -> int:
    return int(pb.Identity.Value("IDENTITY_" + name))


def suit_pb(name: str) -> int:
    return int(pb.Suit.Value("SUIT_" + name))


def zone_pb(name: str) -> int:
    return int(pb.Zone.Value("ZONE_" + name))


def event_pb(name: str) -> int:
    return int(pb.GlobalEvent.Value("EVENT_" + name))


def keyword_pb(name: str) -> int:
    return int(pb.Keyword.Value("KEYWORD_" + name))


def source_pb(name: str) -> int:
    return int(pb.ClueSource.Value("SOURCE_" + name))


def faction_pb(name: str) -> int:
    return int(pb.Faction.Value("FACTION_" + name)) if name else 0
