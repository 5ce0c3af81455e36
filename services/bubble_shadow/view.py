"""What each seat may see: its own hand and the tokens behind its own screen; of the others,
the tokens in front of their screens and only how many are behind (until the screens open
before resolution). `redeal` re-deals everything a seat cannot see, for the leak test."""

from __future__ import annotations

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import tokens as tk
from services.bubble_shadow.cards import card_pb, regular_ids
from services.bubble_shadow.state import Paid, Player, Signed, State, shown_stage, snake_options
from services.core.decider import Rng
from services.core.frozen import replace


def _price(p: tuple[int, int] | None) -> pb.Price | None:
    return pb.Price(token=p[0], quantity=p[1]) if p else None


def _signed_view(s: Signed) -> pb.SignedPactView:
    """A signed pact: what each side owed and what each actually paid (payments are public)."""

    def tokens(paid: Paid) -> list[pb.TokenPaid]:
        return [pb.TokenPaid(token=t, behind=b, received_as=r) for t, b, r in paid]

    return pb.SignedPactView(
        card=s.card,
        mortal=s.mortal,
        magician_paid=pb.Price(token=s.magician_price[0], quantity=len(s.magician_paid)),
        mortal_paid=pb.Price(token=s.mortal_price[0], quantity=len(s.mortal_paid)),
        magician_price=_price(s.magician_price),
        mortal_price=_price(s.mortal_price),
        magician_tokens=tokens(s.magician_paid),
        mortal_tokens=tokens(s.mortal_paid),
    )


def _player_view(state: State, seat: int, player: Player, viewer: int | None) -> pb.PlayerView:
    mine = viewer == seat
    return pb.PlayerView(
        seat=seat,
        front=tk.to_pb(player.front),
        behind_count=tk.total(player.behind),
        behind=tk.to_pb(player.behind) if mine or state.revealed else [],
        hand_count=len(player.hand),
        hand=[card_pb(c) for c in player.hand] if mine else [],
        pacts=[_signed_view(s) for s in player.pacts],
        soul=player.soul,
        satisfied=player.satisfied,
    )


def show(state: State, seat: int | None) -> pb.View:
    pending = state.pending
    return pb.View(
        round=state.round,
        stage=shown_stage(state),
        magician=state.magician,
        players=[_player_view(state, s, p, seat) for s, p in enumerate(state.players)],
        public_pacts=[card_pb(c) for c in state.public],
        pending=pb.PendingPact(
            magician=pending.magician, mortal=pending.mortal, card=card_pb(pending.card),
            blank_end=_price(pending.blank_end),
        ) if pending else None,
        bag_count=tk.total(state.bag),
        complacency=state.complacency,
        crown_swaps_holder_only=state.crown_holder_only,
        phase=state.phase,
        final_phase=state.final_phase,
        phase_order=state.phase_order,
        revealed=state.revealed,
        crown_swap=pb.UseCrown(first=state.crown_swap[0], second=state.crown_swap[1])
        if state.crown_swap else None,
        last_round=pb.RoundResolved(
            round=state.last_round_no,
            tallies=[pb.Tally(seat=i, moons=t[0], silver=t[1], bubbles=t[2], soul=s)
                     for i, (t, s) in enumerate(state.last_round)],
        ) if state.last_round else None,
        crown_holder=state.crown_holder,
        special_pacts_left=state.specials_left,
        pool=tk.to_pb(tk.sub(state.pool, state.out_of_game)),
    )


def _hide_deal(deal: pb.SeatDeal) -> None:
    deal.ClearField("hand")
    deal.ClearField("tokens")


def redact(event: pb.Event, seat: int | None) -> pb.Event | None:
    kind = event.WhichOneof("kind")
    if kind not in ("round_started", "tokens_drawn", "faces_chosen", "pact_played",
                    "snake_chosen"):
        return event
    out = pb.Event()
    out.CopyFrom(event)
    if kind == "pact_played":
        # The Magician's pay order is a private plan until the payment itself (which is
        # public): naming kinds of token could tell the table what lies behind the screen.
        if out.pact_played.magician != seat:
            out.pact_played.ClearField("pay_order")
    elif kind == "round_started":
        for deal in out.round_started.deals:
            if deal.seat != seat:
                _hide_deal(deal)
    elif kind == "tokens_drawn":
        if out.tokens_drawn.deal.seat != seat:
            _hide_deal(out.tokens_drawn.deal)
    elif kind == "snake_chosen":
        # Answered with the screens closed: the price would tell what is behind the screen.
        if out.snake_chosen.seat != seat:
            out.snake_chosen.ClearField("price")
    elif out.faces_chosen.seat != seat:
        out.faces_chosen.ClearField("faces")
    return out


def redeal(state: State, seat: int, rng: Rng) -> State:
    """The same game with everything `seat` cannot see dealt anew: the other hands (from the
    regular pacts it has not seen), the tokens behind the other screens and the bag."""
    others = [s for s in range(state.n) if s != seat]
    seen = set(state.player(seat).hand) | set(state.public)
    for p in state.players:
        seen |= {s.card for s in p.pacts}
    unseen = rng.shuffled([c for c in regular_ids() if c not in seen])
    players = list(state.players)
    for s in others:
        k = len(players[s].hand)
        players[s] = replace(players[s], hand=tuple(sorted(unseen[:k])))
        unseen = unseen[k:]

    # The bag and the hidden tokens behind other screens (all of it once screens are open
    # is public, and then only the bag, whose content follows, is hidden).
    hidden = [s for s in others if not state.revealed]
    crown = tk.make({pb.CROWN: state.bag[pb.CROWN]})  # the Crown never goes behind a screen
    pool = tk.unfaced(tk.sub(state.bag, crown))
    for s in hidden:
        pool = tk.add(pool, tk.unfaced(players[s].behind))
    bag = pool
    for s in hidden:
        drawn = tk.draw(bag, tk.total(players[s].behind), rng)
        bag = tk.sub(bag, drawn)
        if s not in state.faces_pending:
            drawn = _random_faces(drawn, rng)
        players[s] = replace(players[s], behind=drawn)
    state = replace(state, players=tuple(players), bag=tk.add(bag, crown))
    return replace(state, snake_chosen=tuple(
        (s, price if s == seat else _any_snake_answer(state, s, rng))
        for s, price in state.snake_chosen))


def _any_snake_answer(state: State, seat: int, rng: Rng) -> int:
    """A hidden answer at the Snake step that fits `seat`'s re-dealt tokens."""
    choices = snake_options(state, seat)
    return rng.choice(choices) if len(choices) > 1 else pb.TOKEN_UNSPECIFIED


def _random_faces(tokens: tk.Tokens, rng: Rng) -> tk.Tokens:
    out = list(tokens)
    for token in tk.UNFACED:
        for _ in range(out[token]):
            out[tk.FACES[token][rng.below(2)]] += 1
        out[token] = 0
    return tuple(out)
