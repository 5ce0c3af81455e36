"""Bubble and Shadow: the state of a game and evolve, which folds an event into it.

evolve only applies what an event records; the rules that chose it are in rules.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import tokens as tk
from services.bubble_shadow.cards import card, special_ids
from services.core.frozen import replace

Price = tuple[int, int]
PayOrder = tuple[tuple[int, bool], ...]
Paid = tuple[tuple[int, bool, int], ...]  # tokens handed over: (token, from behind, received as)


# ---- State ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Signed:
    """A signed pact, lying in front of its Magician."""

    card: int
    mortal: int
    magician_price: Price  # the end each one owed
    mortal_price: Price
    magician_paid: Paid = ()  # what each one handed over: as much as they could (ruling 10)
    mortal_paid: Paid = ()


@dataclass(frozen=True)
class Player:
    hand: tuple[int, ...] = ()
    front: tk.Tokens = tk.EMPTY
    behind: tk.Tokens = tk.EMPTY
    pacts: tuple[Signed, ...] = ()
    soul: int = 0
    satisfied: bool = False

    @property
    def tokens(self) -> tk.Tokens:
        return tk.add(self.front, self.behind)


@dataclass(frozen=True)
class Pending:
    """A pact played and waiting for its Mortal's signature."""

    magician: int
    mortal: int
    card: int
    slot: int | None
    blank_end: Price | None
    pay_order: PayOrder

    @property
    def ends(self) -> tuple[Price, Price]:
        printed = card(self.card).ends
        if self.blank_end is not None:
            return (printed[0], self.blank_end)
        return (printed[0], printed[1])


@dataclass(frozen=True)
class State:
    n: int
    complacency: bool
    snakes_unseen: bool  # every seat answers the Snake step before the screens open (17)
    crown_holder_only: bool  # the Crown's swap changes only its holder's counts (ruling 16a)
    faces_in_game: bool  # Palettes or Chess Pieces are in the pool
    pool: tk.Tokens  # every Price Token of this game
    players: tuple[Player, ...]
    round: int = 0
    stage: int = pb.STAGE_PLAY
    public: tuple[int, ...] = ()
    specials_left: tuple[int, ...] = ()
    bag: tk.Tokens = tk.EMPTY
    out_of_game: tk.Tokens = tk.EMPTY  # Snake discards
    magician: int = 0
    last_mortal: int = -1
    last_magician: int = -1
    pending: Pending | None = None
    faces_pending: tuple[int, ...] = ()
    phase: int = 1
    final_phase: bool = False
    phase_order: tuple[int, ...] = ()
    satisfied_seat: int = -1
    crown_holder: int = -1
    crown_swap: tuple[int, int] | None = None
    revealed: bool = False
    tallies: tuple[tk.Tally, ...] = ()
    snake_pending: tuple[int, ...] = ()
    snake_chosen: tuple[tuple[int, int], ...] = ()  # (seat, price) answered, screens closed
    last_round: tuple[tuple[tk.Tally, int], ...] = ()  # per seat: tally, souls scored
    last_round_no: int = 0
    winners: tuple[int, ...] | None = None

    def player(self, seat: int) -> Player:
        return self.players[seat]

    def pacts(self, seat: int) -> int:
        return len(self.players[seat].pacts)


def _set_player(state: State, seat: int, **changes: object) -> tuple[Player, ...]:
    players = list(state.players)
    players[seat] = replace(players[seat], **changes)  # type: ignore[arg-type]
    return tuple(players)


def crown_swap_for(state: State, seat: int) -> tuple[int, int] | None:
    """The Crown's swap as it applies to `seat`'s counts: everyone's by default, only the
    holder's with the option (ruling 16a)."""
    if state.crown_holder_only and seat != state.crown_holder:
        return None
    return state.crown_swap


# ---- evolve -----------------------------------------------------------------------------


def start(event: pb.Event) -> State:
    """The game a GameSetUp sets up (every game starts with one)."""
    e = event.game_set_up
    pool = tk.from_pb(e.pool)
    return State(
        n=e.players,
        complacency=e.options.complacency,
        snakes_unseen=e.snakes_choose_unseen,
        crown_holder_only=e.options.crown_swaps_holder_only,
        faces_in_game=pool[pb.PALETTE] + pool[pb.CHESS] > 0,
        pool=pool,
        players=tuple(Player() for _ in range(e.players)),
        specials_left=special_ids(),
        magician=e.first_magician,
    )


def evolve(state: State, event: pb.Event) -> State:
    kind = event.WhichOneof("kind")
    return _EVOLVE[kind](state, getattr(event, kind))


def _evolve_round_started(state: State, e: pb.RoundStarted) -> State:
    players = []
    bag = tk.sub(state.pool, state.out_of_game)
    crown_holder = -1
    for deal, old in zip(e.deals, state.players, strict=True):
        drawn = tk.from_pb(deal.tokens)
        bag = tk.sub(bag, drawn)
        front = tk.make({pb.CROWN: drawn[pb.CROWN]})  # the Crown goes in front of the screen
        if deal.crown:
            crown_holder = deal.seat
        players.append(Player(hand=tuple(deal.hand), front=front, behind=tk.sub(drawn, front),
                              soul=old.soul))
    return replace(
        state,
        round=e.round,
        stage=pb.STAGE_PLAY,
        players=tuple(players),
        public=tuple(e.public_pacts),
        specials_left=tuple(c for c in state.specials_left if c not in e.public_pacts),
        bag=bag,
        magician=e.magician,
        last_mortal=-1,
        last_magician=-1,
        pending=None,
        faces_pending=_needs_faces(state, range(state.n)),
        phase=1,
        final_phase=False,
        phase_order=(),
        satisfied_seat=-1,
        crown_holder=crown_holder,
        crown_swap=None,
        revealed=False,
        tallies=(),
        snake_pending=(),
        snake_chosen=(),
    )


def _needs_faces(state: State, seats: Sequence[int]) -> tuple[int, ...]:
    """Every drawer chooses faces when Palettes or Chess Pieces are in the game (even with
    none drawn, so that who acts reveals nothing about hidden tokens)."""
    return tuple(seats) if state.faces_in_game else ()


def _evolve_faces_chosen(state: State, e: pb.FacesChosen) -> State:
    me = state.player(e.seat)
    behind = list(me.behind)
    for token, on_first, (first, second) in (
        (pb.PALETTE, e.faces.palettes_on_moon, tk.FACES[pb.PALETTE]),
        (pb.CHESS, e.faces.chess_on_bubble, tk.FACES[pb.CHESS]),
    ):
        behind[first] += on_first
        behind[second] += behind[token] - on_first
        behind[token] = 0
    return replace(
        state,
        players=_set_player(state, e.seat, behind=tuple(behind)),
        faces_pending=tuple(s for s in state.faces_pending if s != e.seat),
    )


def _evolve_pact_played(state: State, e: pb.PactPlayed) -> State:
    me = state.player(e.magician)
    slot = e.public_slot if e.HasField("public_slot") else None
    hand_card = e.replaced_by if slot is not None else e.card
    public = list(state.public)
    if slot is not None:
        public[slot] = e.replaced_by
    blank = e.blank_end
    return replace(
        state,
        stage=pb.STAGE_SIGN,
        public=tuple(public),
        players=_set_player(state, e.magician, hand=tuple(c for c in me.hand if c != hand_card)),
        pending=Pending(
            magician=e.magician,
            mortal=e.mortal,
            card=e.card,
            slot=slot,
            blank_end=(blank.token, blank.quantity) if blank.token else None,
            pay_order=tuple((p.token, p.behind) for p in e.pay_order),
        ),
    )


def _evolve_pact_signed(state: State, e: pb.PactSigned) -> State:
    assert state.pending is not None
    players = list(state.players)

    def hand_over(payer: int, receiver: int, paid: Sequence[pb.TokenPaid]) -> None:
        for t in paid:
            p = players[payer]
            one = tk.make({t.token: 1})
            if t.behind:
                players[payer] = replace(p, behind=tk.sub(p.behind, one))
            else:
                players[payer] = replace(p, front=tk.sub(p.front, one))
            r = players[receiver]
            players[receiver] = replace(r, front=tk.add(r.front, tk.make({t.received_as: 1})))

    hand_over(e.mortal, e.magician, e.mortal_paid)
    hand_over(e.magician, e.mortal, e.magician_paid)
    signed = Signed(
        card=state.pending.card,
        mortal=e.mortal,
        magician_price=(e.magician_price.token, e.magician_price.quantity),
        mortal_price=(e.mortal_price.token, e.mortal_price.quantity),
        magician_paid=tuple((t.token, t.behind, t.received_as) for t in e.magician_paid),
        mortal_paid=tuple((t.token, t.behind, t.received_as) for t in e.mortal_paid),
    )
    mag = players[e.magician]
    players[e.magician] = replace(mag, pacts=(*mag.pacts, signed))
    return replace(
        state,
        players=tuple(players),
        stage=pb.STAGE_PLAY,
        pending=None,
        magician=e.mortal,
        last_mortal=e.mortal,
        last_magician=e.magician,
    )


def _evolve_phase_ended(state: State, e: pb.PhaseEnded) -> State:
    return replace(state, stage=pb.STAGE_PHASE_END, phase_order=tuple(e.order))


def _evolve_tokens_drawn(state: State, e: pb.TokensDrawn) -> State:
    deal = e.deal
    drawn = tk.from_pb(deal.tokens)
    me = state.player(deal.seat)
    crown = tk.make({pb.CROWN: drawn[pb.CROWN]})
    return replace(
        state,
        bag=tk.sub(state.bag, drawn),
        players=_set_player(
            state,
            deal.seat,
            front=tk.add(me.front, crown),
            behind=tk.add(me.behind, tk.sub(drawn, crown)),
        ),
        crown_holder=deal.seat if deal.crown else state.crown_holder,
        phase_order=state.phase_order[1:],
        faces_pending=_needs_faces(state, [deal.seat]),
    )


def _evolve_satisfaction(state: State, e: pb.SatisfactionDeclared) -> State:
    return replace(
        state,
        players=_set_player(state, e.seat, satisfied=True),
        satisfied_seat=e.seat,
        phase_order=state.phase_order[1:],
    )


def _evolve_phase_started(state: State, e: pb.PhaseStarted) -> State:
    return replace(
        state,
        stage=pb.STAGE_PLAY,
        phase=e.phase,
        final_phase=e.final,
        magician=e.magician,
        phase_order=(),
    )


def _evolve_round_ended(state: State, e: pb.RoundEnded) -> State:
    # The player who declared satisfaction rejoins for resolution.
    players = tuple(replace(p, satisfied=False) for p in state.players)
    if e.crown_holder >= 0:
        return replace(state, players=players, stage=pb.STAGE_CROWN)
    return replace(state, players=players, stage=pb.STAGE_SNAKE,
                   snake_pending=_snake_step(state))


def _evolve_crown_used(state: State, e: pb.CrownUsed) -> State:
    swap = (e.swap.first, e.swap.second) if e.swap.first else None
    return replace(state, crown_swap=swap, stage=pb.STAGE_SNAKE,
                   snake_pending=_snake_step(state))


def _snake_step(state: State) -> tuple[int, ...]:
    """Who answers the Snake step with the screens closed: every seat while a Snake is in the
    game, so that being asked tells nothing about who holds one (ruling 17)."""
    in_game = tk.sub(state.pool, state.out_of_game)[pb.SNAKE] > 0
    return tuple(range(state.n)) if state.snakes_unseen and in_game else ()


def _evolve_snake_chosen(state: State, e: pb.SnakeChosen) -> State:
    return replace(
        state,
        snake_chosen=(*state.snake_chosen, (e.seat, e.price)),
        snake_pending=tuple(s for s in state.snake_pending if s != e.seat),
    )


def _evolve_tokens_revealed(state: State, e: pb.TokensRevealed) -> State:
    tallies = tuple(
        tk.tally(p.tokens, crown_swap_for(state, s)) for s, p in enumerate(state.players)
    )
    choosing = tuple(
        s for s, p in enumerate(state.players) if len(tk.snake_choices(p.tokens, tallies[s])) > 1
    )
    return replace(
        state, revealed=True, tallies=tallies, snake_pending=choosing, stage=pb.STAGE_SNAKE
    )


def _evolve_snake_discarded(state: State, e: pb.SnakeDiscarded) -> State:
    removed = tk.from_pb(e.removed)
    me = state.player(e.seat)
    from_front = tuple(min(f, r) for f, r in zip(me.front, removed, strict=True))
    from_behind = tk.sub(removed, from_front)
    tallies = list(state.tallies)
    t = list(tallies[e.seat])
    t[tk.INDEX[e.price]] -= 5
    tallies[e.seat] = (t[0], t[1], t[2])
    return replace(
        state,
        players=_set_player(
            state, e.seat, front=tk.sub(me.front, from_front),
            behind=tk.sub(me.behind, from_behind),
        ),
        out_of_game=tk.add(state.out_of_game, tk.unfaced(removed)),
        tallies=tuple(tallies),
        snake_pending=tuple(s for s in state.snake_pending if s != e.seat),
    )


def _evolve_round_resolved(state: State, e: pb.RoundResolved) -> State:
    players = tuple(
        replace(p, soul=total) for p, total in zip(state.players, e.soul_totals, strict=True)
    )
    last = tuple(((t.moons, t.silver, t.bubbles), t.soul) for t in e.tallies)
    return replace(state, players=players, last_round=last, last_round_no=e.round)


def _evolve_game_ended(state: State, e: pb.GameEnded) -> State:
    return replace(state, stage=pb.STAGE_OVER, winners=tuple(e.winners))


_EVOLVE = {
    "round_started": _evolve_round_started,
    "faces_chosen": _evolve_faces_chosen,
    "pact_played": _evolve_pact_played,
    "pact_signed": _evolve_pact_signed,
    "phase_ended": _evolve_phase_ended,
    "tokens_drawn": _evolve_tokens_drawn,
    "satisfaction_declared": _evolve_satisfaction,
    "phase_started": _evolve_phase_started,
    "round_ended": _evolve_round_ended,
    "crown_used": _evolve_crown_used,
    "tokens_revealed": _evolve_tokens_revealed,
    "snake_chosen": _evolve_snake_chosen,
    "snake_discarded": _evolve_snake_discarded,
    "round_resolved": _evolve_round_resolved,
    "game_ended": _evolve_game_ended,
}


def shown_stage(state: State) -> int:
    """The stage a seat is shown: choosing faces while faces are pending."""
    return pb.STAGE_CHOOSE_FACES if state.faces_pending else state.stage


def snake_options(state: State, seat: int) -> list[int]:
    """The prices `seat`'s Snake may discard 5 of, by its counts after the Crown."""
    me = state.player(seat)
    if state.revealed:
        return tk.snake_choices(me.tokens, state.tallies[seat])
    return tk.snake_choices(me.tokens, tk.tally(me.tokens, crown_swap_for(state, seat)))
