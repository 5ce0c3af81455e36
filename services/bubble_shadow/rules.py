"""Bubble and Shadow: the rules as a pure decider.

A round: each turn the Magician plays a pact to a Mortal among the other players with the
fewest pacts, the Mortal signs an end under the golden rule, both pay, and the Mortal becomes
the next Magician. When everyone has 4 pacts (or, in the Complacency variant, when its final
phase ends) the special tokens act before resolution, then Soul Tokens are scored. The game
ends after round 3 or after a round in which someone holds 6+ Soul Tokens.

Decisions where the rulebook is silent are in docs/rulings/bubble_shadow.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import tokens as tk
from services.bubble_shadow.cards import PRICES, card, regular_ids, special_ids
from services.bubble_shadow.state import (
    PayOrder,
    Price,
    State,
    crown_swap_for,
    evolve,
    shown_stage,
    snake_options,
    start,
)
from services.core.decider import Decision, MalformedCommand, Outcome, Rng, RuleError, Seat

HAND_SIZE = 6
PUBLIC_PACTS = 3
PACTS_PER_ROUND = 4
ROUNDS = 3
SOUL_TO_END = 6  # "more than 5 Soul Tokens"
SOUL_SUPPLY = 30  # "30 Soul Tokens": never runs out (test_soul_supply_cannot_run_out)
TOKENS_DRAWN = 11
TOKENS_DRAWN_COMPLACENCY = 5
PHASE_DRAW = {0: 3, 1: 3, 2: 2, 3: 1, 4: 0}  # Complacency: tokens drawn by pacts signed

# The token table: (Moons, Silver Coins, Bubbles) by player count.
MAIN_TOKENS = {2: (7, 11, 7), 3: (10, 16, 10), 4: (13, 21, 13), 5: (13, 21, 13)}
FIVE_PLAYER_EXTRA = {pb.APPLE: 3, pb.SNAKE: 5, pb.ROSE: 3}
# Special tokens in the box, and the main token each one replaces (the Crown replaces none).
BOX = {pb.APPLE: 3, pb.ROSE: 3, pb.SNAKE: 5, pb.OYSTER: 3, pb.CROWN: 1, pb.PALETTE: 3,
       pb.CHESS: 3}
REPLACES = {pb.APPLE: pb.MOON, pb.PALETTE: pb.MOON, pb.ROSE: pb.BUBBLE, pb.CHESS: pb.BUBBLE,
            pb.SNAKE: pb.SILVER, pb.OYSTER: pb.SILVER}


# ---- Setup ------------------------------------------------------------------------------


def token_pool(players: int, options: pb.Options) -> tk.Tokens:
    """The Price Tokens of this game: the token table, then agreed Special Price Tokens, each
    replacing a main token of its colour (the Crown is added)."""
    moons, silver, bubbles = MAIN_TOKENS[players]
    counts = {pb.MOON: moons, pb.SILVER: silver, pb.BUBBLE: bubbles}
    if players == 5:
        counts.update(FIVE_PLAYER_EXTRA)
    wanted = _special_tokens_wanted(players, options)
    for token, n in wanted.items():
        if not 0 <= n <= BOX[token] - counts.get(token, 0):
            raise MalformedCommand(
                "BAD_SPECIAL_TOKENS",
                f"the box has {BOX[token] - counts.get(token, 0)} more "
                f"{pb.Token.Name(token).title()} tokens to add, not {n}",
                "options.special_tokens",
            )
        counts[token] = counts.get(token, 0) + n
        if token in REPLACES:
            counts[REPLACES[token]] -= n
    if min(counts.values()) < 0:
        raise MalformedCommand(
            "BAD_SPECIAL_TOKENS", "not enough main tokens to replace", "options.special_tokens"
        )
    return tk.make(counts)


def _special_tokens_wanted(players: int, options: pb.Options) -> dict[int, int]:
    if options.all_special_tokens:
        extra = FIVE_PLAYER_EXTRA if players == 5 else {}
        return {t: n - extra.get(t, 0) for t, n in BOX.items()}
    s = options.special_tokens
    return {pb.APPLE: s.apples, pb.ROSE: s.roses, pb.SNAKE: s.snakes, pb.OYSTER: s.oysters,
            pb.CROWN: int(s.crown), pb.PALETTE: s.palettes, pb.CHESS: s.chess}


def setup(options: pb.Options, seats: Sequence[Seat], rng: Rng) -> list[pb.Event]:
    n = len(seats)
    if options.complacency and n < 3:
        raise MalformedCommand("BAD_OPTIONS", "the Complacency variant is for 3-5 players")
    pool = token_pool(n, options)
    if options.crown_swaps_holder_only and not pool[pb.CROWN]:
        raise MalformedCommand(
            "BAD_OPTIONS", "crown_swaps_holder_only needs the Crown in the game",
            "options.crown_swaps_holder_only",
        )
    first = pb.Event(
        game_set_up=pb.GameSetUp(
            players=n, options=options, pool=tk.to_pb(pool), first_magician=rng.below(n),
            snakes_choose_unseen=True,
        )
    )
    state = start(first)
    return [first, _start_round(state, rng)]


def _start_round(state: State, rng: Rng) -> pb.Event:
    """Return every token to the bag, draw 3 new special pacts, deal 6 regular pacts and
    11 tokens (5 in the Complacency variant) to each player."""
    specials = list(state.specials_left)
    public = [specials.pop(rng.below(len(specials))) for _ in range(PUBLIC_PACTS)]
    deck = rng.shuffled(regular_ids())
    bag = tk.sub(state.pool, state.out_of_game)
    per_player = TOKENS_DRAWN_COMPLACENCY if state.complacency else TOKENS_DRAWN
    starter = state.magician if state.round == 0 else state.last_mortal
    counts = _tokens_each(tk.total(bag), per_player, state.n, starter)
    deals = []
    for seat in range(state.n):
        hand = sorted(deck[seat * HAND_SIZE : (seat + 1) * HAND_SIZE])
        drawn = tk.draw(bag, counts[seat], rng)
        bag = tk.sub(bag, drawn)
        deals.append(_deal_pb(seat, drawn, hand))
    return pb.Event(
        round_started=pb.RoundStarted(
            round=state.round + 1, public_pacts=public, deals=deals, magician=starter
        )
    )


def _tokens_each(available: int, wanted: int, n: int, starter: int) -> list[int]:
    """Tokens each player draws: `wanted` each, unless Snakes have left too few in the game;
    then the bag is shared out one token at a time from the starting Magician."""
    if available >= wanted * n:
        return [wanted] * n
    counts = [available // n] * n
    for i in range(available % n):
        counts[(starter + i) % n] += 1
    return counts


def _deal_pb(seat: int, drawn: tk.Tokens, hand: Sequence[int] = ()) -> pb.SeatDeal:
    return pb.SeatDeal(
        seat=seat,
        hand=hand,
        tokens=tk.to_pb(drawn),
        hand_count=len(hand),
        token_count=tk.total(drawn) - drawn[pb.CROWN],
        crown=drawn[pb.CROWN] > 0,
    )


# ---- Who acts ---------------------------------------------------------------------------


def to_act(state: State) -> list[int]:
    if state.stage == pb.STAGE_OVER:
        return []
    if state.faces_pending:
        return list(state.faces_pending)
    if state.stage == pb.STAGE_PLAY:
        return [state.magician]
    if state.stage == pb.STAGE_SIGN:
        assert state.pending is not None
        return [state.pending.mortal]
    if state.stage == pb.STAGE_PHASE_END:
        # Between the last phase-end action and the next phase's start (one batch) nobody acts.
        return list(state.phase_order[:1])
    if state.stage == pb.STAGE_CROWN:
        return [state.crown_holder]
    if state.stage == pb.STAGE_SNAKE:
        return list(state.snake_pending)
    return []


def outcome(state: State) -> Outcome | None:
    if state.winners is None:
        return None
    reason = "three rounds played" if state.round >= ROUNDS else "a player holds 6+ Soul Tokens"
    return Outcome(
        winners=state.winners, scores=tuple(p.soul for p in state.players), reason=reason
    )


# ---- Making a pact ----------------------------------------------------------------------


def playing(state: State) -> list[int]:
    """Players still playing this phase (not the one who declared satisfaction)."""
    return [s for s in range(state.n) if not state.players[s].satisfied]


def eligible_mortals(state: State, magician: int) -> list[int]:
    """The other players with the fewest pacts in front of them (never a satisfied one)."""
    others = [s for s in playing(state) if s != magician]
    fewest = min(state.pacts(s) for s in others)
    return [s for s in others if state.pacts(s) == fewest]


def can_play_blank(state: State, magician: int) -> bool:
    """A Blank Pact cannot become the Magician's 4th pact."""
    return state.pacts(magician) < PACTS_PER_ROUND - 1


def signable_ends(state: State) -> list[int]:
    """The golden rule: the Mortal must take an end they can pay in full, if there is one."""
    assert state.pending is not None
    mortal = state.player(state.pending.mortal)
    payable = [
        i for i, (price, qty) in enumerate(state.pending.ends)
        if tk.can_pay(mortal.front, mortal.behind, price, qty)
    ]
    return payable or [0, 1]


def _pay_order(entries: Sequence[pb.PaySource]) -> PayOrder:
    for entry in entries:
        if entry.token not in pb.Token.values() or entry.token == pb.TOKEN_UNSPECIFIED:
            raise MalformedCommand("BAD_PAY_ORDER", "pay_order names an unknown token")
    return tuple((e.token, e.behind) for e in entries)


def _decide_play(out: Decision[State], seat: int, cmd: pb.PlayPact) -> None:
    state = out.state
    if not 0 <= cmd.mortal < state.n:
        raise MalformedCommand("BAD_SEAT", f"there is no seat {cmd.mortal}", "mortal")
    if cmd.HasField("public_slot") and not 0 <= cmd.public_slot < PUBLIC_PACTS:
        raise MalformedCommand("BAD_SLOT", "public_slot must be 0, 1 or 2", "public_slot")
    if cmd.card not in card_ids():
        raise MalformedCommand("BAD_CARD", f"there is no pact card {cmd.card}", "card")
    _pay_order(cmd.pay_order)
    if state.stage != pb.STAGE_PLAY:
        raise RuleError("NOT_YOUR_TURN", "only the Magician plays a pact now")
    me = state.player(seat)
    if cmd.card not in me.hand:
        raise RuleError("CARD_NOT_IN_HAND", f"pact card {cmd.card} is not in your hand")
    slot = cmd.public_slot if cmd.HasField("public_slot") else None
    played = state.public[slot] if slot is not None else cmd.card
    if cmd.mortal == seat:
        raise RuleError("MORTAL_IS_MAGICIAN", "you cannot offer a pact to yourself")
    if state.player(cmd.mortal).satisfied:
        raise RuleError("MORTAL_SATISFIED", "that player declared satisfaction this round")
    if cmd.mortal not in eligible_mortals(state, seat):
        raise RuleError(
            "MORTAL_NOT_FEWEST", "the Mortal must be a player with the fewest pacts"
        )
    blank_end = _blank_end(state, seat, played, cmd)
    out.emit(
        pb.Event(
            pact_played=pb.PactPlayed(
                magician=seat,
                mortal=cmd.mortal,
                card=played,
                public_slot=slot,
                replaced_by=cmd.card if slot is not None else 0,
                blank_end=pb.Price(token=blank_end[0], quantity=blank_end[1])
                if blank_end
                else None,
                pay_order=cmd.pay_order,
            )
        )
    )


def card_ids() -> frozenset[int]:
    return frozenset(regular_ids() + special_ids())


def _blank_end(state: State, seat: int, played: int, cmd: pb.PlayPact) -> Price | None:
    named = cmd.blank_end
    named_something = named.token != pb.TOKEN_UNSPECIFIED or named.quantity != 0
    pact = card(played)
    if not pact.blank:
        if named_something:
            raise RuleError("NOT_A_BLANK_PACT", "only a Blank Pact takes a named end")
        return None
    if not can_play_blank(state, seat):
        raise RuleError(
            "BLANK_AS_FOURTH_PACT", "a Blank Pact cannot be played with 3 pacts in front of you"
        )
    printed = pact.ends[0][0]
    if named.token not in PRICES or named.token == printed or not 1 <= named.quantity <= 3:
        raise RuleError(
            "BAD_BLANK_END",
            "name the Blank Pact's missing end: a price other than "
            f"{_price_name(printed)} and a quantity from 1 to 3",
        )
    return (named.token, named.quantity)


def _price_name(price: int) -> str:
    return {pb.MOON: "Moon", pb.SILVER: "Silver Coin", pb.BUBBLE: "Bubble"}[price]


def _decide_sign(out: Decision[State], seat: int, cmd: pb.SignPact, rng: Rng) -> None:
    state = out.state
    if cmd.end not in (0, 1):
        raise MalformedCommand("BAD_END", "end must be 0 or 1", "end")
    pay_order = _pay_order(cmd.pay_order)
    pending = state.pending
    if state.stage != pb.STAGE_SIGN or pending is None:
        raise RuleError("NOT_YOUR_TURN", "only the Mortal signs the pact now")
    if cmd.end not in signable_ends(state):
        price, qty = pending.ends[1 - cmd.end]
        raise RuleError(
            "GOLDEN_RULE",
            f"you can pay the other end ({qty} {_price_name(price)}) in full, so you must "
            "take it (golden rule)",
        )
    mortal_price = pending.ends[cmd.end]
    magician_price = pending.ends[1 - cmd.end]
    mortal, magician = state.player(seat), state.player(pending.magician)
    mortal_paid = tk.choose_payment(mortal.front, mortal.behind, *mortal_price, pay_order)
    magician_paid = tk.choose_payment(
        magician.front, magician.behind, *magician_price, pending.pay_order
    )

    def handed(paid: list[tuple[int, bool]]) -> list[pb.TokenPaid]:
        return [pb.TokenPaid(token=t, behind=b, received_as=tk.toss(t, rng)) for t, b in paid]

    signed = pb.Event(
        pact_signed=pb.PactSigned(
            magician=pending.magician,
            mortal=seat,
            end=cmd.end,
            mortal_price=pb.Price(token=mortal_price[0], quantity=mortal_price[1]),
            magician_price=pb.Price(token=magician_price[0], quantity=magician_price[1]),
            mortal_paid=handed(mortal_paid),
            magician_paid=handed(magician_paid),
        )
    )
    out.emit(signed)
    _after_turn(out, rng)


def _after_turn(out: Decision[State], rng: Rng) -> None:
    """The round ends when everyone has 4 pacts; in the Complacency variant a phase ends when
    everyone still playing has the same number of pacts."""
    state = out.state
    counts = {state.pacts(s) for s in playing(state)}
    if not state.complacency:
        if counts == {PACTS_PER_ROUND}:
            _end_round(out, rng)
        return
    if len(counts) > 1:
        return
    if state.final_phase or state.phase >= PACTS_PER_ROUND:
        _end_round(out, rng)
        return
    first = state.last_mortal
    order = [(first + i) % state.n for i in range(state.n)]  # clockwise = rising seat numbers
    out.emit(pb.Event(phase_ended=pb.PhaseEnded(phase=state.phase, order=order)))


# ---- Complacency: the end of a phase ----------------------------------------------------


def _decide_phase_action(out: Decision[State], seat: int, cmd: pb.Command, rng: Rng) -> None:
    state = out.state
    if state.stage != pb.STAGE_PHASE_END:
        raise RuleError("NOT_YOUR_TURN", "it is not your turn to act at this phase end")
    if cmd.WhichOneof("kind") == "declare_satisfaction":
        if state.satisfied_seat >= 0:
            raise RuleError(
                "SATISFACTION_TAKEN", "only one player may declare satisfaction in a round"
            )
        event = pb.Event(satisfaction_declared=pb.SatisfactionDeclared(seat=seat))
    else:
        n = PHASE_DRAW[state.pacts(seat)]
        drawn = tk.draw(state.bag, n, rng)
        event = pb.Event(tokens_drawn=pb.TokensDrawn(deal=_deal_pb(seat, drawn)))
    out.emit(event)
    if not out.state.phase_order:
        out.emit(_next_phase(out.state))


def _next_phase(state: State) -> pb.Event:
    """Everyone has acted: the next phase starts, with the last Mortal as Magician (the last
    Magician if that Mortal declared satisfaction). It is final after a declaration and
    always for phase 4."""
    satisfied = state.satisfied_seat >= 0
    starter = state.last_mortal
    if starter == state.satisfied_seat:
        starter = state.last_magician
    nxt = state.phase + 1
    return pb.Event(
        phase_started=pb.PhaseStarted(
            phase=nxt, final=satisfied or nxt >= PACTS_PER_ROUND, magician=starter
        )
    )


# ---- Palettes and Chess Pieces ----------------------------------------------------------


def _decide_faces(out: Decision[State], seat: int, cmd: pb.ChooseFaces) -> None:
    state = out.state
    if seat not in state.faces_pending:
        raise RuleError("NOT_YOUR_TURN", "you have no face to choose now")
    me = state.player(seat)
    if not 0 <= cmd.palettes_on_moon <= me.behind[pb.PALETTE]:
        raise RuleError("BAD_FACES", f"you drew {me.behind[pb.PALETTE]} Palettes")
    if not 0 <= cmd.chess_on_bubble <= me.behind[pb.CHESS]:
        raise RuleError("BAD_FACES", f"you drew {me.behind[pb.CHESS]} Chess Pieces")
    out.emit(pb.Event(faces_chosen=pb.FacesChosen(seat=seat, faces=cmd)))


# ---- Before resolution and resolution ---------------------------------------------------


def _end_round(out: Decision[State], rng: Rng) -> None:
    state = out.state
    out.emit(pb.Event(round_ended=pb.RoundEnded(round=state.round,
                                                crown_holder=state.crown_holder)))
    if out.state.stage != pb.STAGE_CROWN and not out.state.snake_pending:
        _reveal(out, rng)


def _decide_crown(out: Decision[State], seat: int, cmd: pb.UseCrown, rng: Rng) -> None:
    state = out.state
    if state.stage != pb.STAGE_CROWN:
        raise RuleError("NOT_YOUR_TURN", "only the Crown's holder acts now")
    forgo = cmd.first == pb.TOKEN_UNSPECIFIED and cmd.second == pb.TOKEN_UNSPECIFIED
    if not forgo and (cmd.first not in PRICES or cmd.second not in PRICES
                      or cmd.first == cmd.second):
        raise RuleError("BAD_CROWN_SWAP", "name two different main prices, or none to forgo")
    out.emit(pb.Event(crown_used=pb.CrownUsed(seat=seat, swap=cmd)))
    if not out.state.snake_pending:
        _reveal(out, rng)


def _reveal(out: Decision[State], rng: Rng) -> None:
    """Screens open; the Snakes bite: by the answers given with the screens closed, or (in
    games from before ruling 17 changed) automatically where only one price reaches 5."""
    state = out.state
    revealed = pb.Event(
        tokens_revealed=pb.TokensRevealed(
            seats=[
                pb.SeatTokens(seat=s, front=tk.to_pb(p.front), behind=tk.to_pb(p.behind))
                for s, p in enumerate(state.players)
            ]
        )
    )
    chosen = dict(state.snake_chosen)
    out.emit(revealed)
    for seat, player in enumerate(out.state.players):
        choices = tk.snake_choices(player.tokens, out.state.tallies[seat])
        if len(choices) == 1 or (choices and seat in chosen):
            price = choices[0] if len(choices) == 1 else chosen[seat]
            out.emit(_snake_event(out.state, seat, price))
    if not out.state.snake_pending:
        _resolve(out, rng)


def _snake_event(state: State, seat: int, price: int) -> pb.Event:
    removed = tk.snake_discard(state.player(seat).tokens, price, crown_swap_for(state, seat))
    return pb.Event(
        snake_discarded=pb.SnakeDiscarded(seat=seat, price=price, removed=tk.to_pb(removed))
    )


def _decide_snake(out: Decision[State], seat: int, cmd: pb.DiscardForSnake, rng: Rng) -> None:
    state = out.state
    if state.stage != pb.STAGE_SNAKE:
        raise RuleError("NOT_YOUR_TURN", "you have no Snake to resolve now")
    if not state.revealed:
        _decide_snake_unseen(out, seat, cmd, rng)
        return
    choices = tk.snake_choices(state.player(seat).tokens, state.tallies[seat])
    if cmd.price not in choices:
        names = " or ".join(_price_name(p) for p in choices)
        raise RuleError("BAD_SNAKE_DISCARD", f"discard 5 of a price that reaches 5: {names}")
    out.emit(_snake_event(state, seat, cmd.price))
    if not out.state.snake_pending:
        _resolve(out, rng)


def _decide_snake_unseen(out: Decision[State], seat: int, cmd: pb.DiscardForSnake, rng: Rng
                         ) -> None:
    """Every seat answers with the screens closed; the last answer opens them."""
    state = out.state
    choices = snake_options(state, seat)
    if len(choices) > 1 and cmd.price not in choices:
        names = " or ".join(_price_name(p) for p in choices)
        raise RuleError("BAD_SNAKE_DISCARD", f"discard 5 of a price that reaches 5: {names}")
    if len(choices) < 2 and cmd.price not in (pb.TOKEN_UNSPECIFIED, *choices):
        raise RuleError("BAD_SNAKE_DISCARD",
                        "your Snake has no choice to make: send no price")
    out.emit(pb.Event(snake_chosen=pb.SnakeChosen(seat=seat, price=cmd.price)))
    if not out.state.snake_pending:
        _reveal(out, rng)


def _resolve(out: Decision[State], rng: Rng) -> None:
    state = out.state
    scoring = tk.resolve_two if state.n == 2 else tk.resolve_many
    souls = scoring(state.tallies)
    totals = [p.soul + s for p, s in zip(state.players, souls, strict=True)]
    resolved = pb.Event(
        round_resolved=pb.RoundResolved(
            round=state.round,
            tallies=[
                pb.Tally(seat=i, moons=t[0], silver=t[1], bubbles=t[2], soul=souls[i])
                for i, t in enumerate(state.tallies)
            ],
            soul_totals=totals,
        )
    )
    out.emit(resolved)
    if state.round >= ROUNDS or max(totals) >= SOUL_TO_END:
        best = max(totals)
        winners = [i for i, t in enumerate(totals) if t == best]
        out.emit(pb.Event(game_ended=pb.GameEnded(winners=winners, soul_totals=totals)))
        return
    out.emit(_start_round(out.state, rng))


# ---- decide -----------------------------------------------------------------------------


def decide(state: State, seat: int | None, command: pb.Command, rng: Rng) -> list[pb.Event]:
    assert seat is not None  # the server sends no command in this game
    kind = command.WhichOneof("kind")
    if state.faces_pending and kind != "choose_faces":  # those seats alone act now
        raise RuleError("CHOOSE_FACES_FIRST", "choose the faces of the tokens you drew")
    out = Decision(state, evolve)
    if kind == "choose_faces":
        _decide_faces(out, seat, command.choose_faces)
    elif kind == "play_pact":
        _decide_play(out, seat, command.play_pact)
    elif kind == "sign_pact":
        _decide_sign(out, seat, command.sign_pact, rng)
    elif kind in ("draw_tokens", "declare_satisfaction"):
        _decide_phase_action(out, seat, command, rng)
    elif kind == "use_crown":
        _decide_crown(out, seat, command.use_crown, rng)
    else:
        _decide_snake(out, seat, command.discard_for_snake, rng)
    return out.events


# ---- Legal actions ----------------------------------------------------------------------


def legal_actions(state: State, seat: int) -> list[pb.Command]:
    if seat not in to_act(state):
        return []
    stage = shown_stage(state)
    if stage == pb.STAGE_CHOOSE_FACES:
        me = state.player(seat)
        return [
            pb.Command(choose_faces=pb.ChooseFaces(palettes_on_moon=p, chess_on_bubble=c))
            for p in range(me.behind[pb.PALETTE] + 1)
            for c in range(me.behind[pb.CHESS] + 1)
        ]
    if stage == pb.STAGE_PLAY:
        return _legal_plays(state, seat)
    if stage == pb.STAGE_SIGN:
        return [pb.Command(sign_pact=pb.SignPact(end=e)) for e in signable_ends(state)]
    if stage == pb.STAGE_PHASE_END:
        out = [pb.Command(draw_tokens=pb.DrawTokens())]
        if state.satisfied_seat < 0:
            out.append(pb.Command(declare_satisfaction=pb.DeclareSatisfaction()))
        return out
    if stage == pb.STAGE_CROWN:
        pairs = [(pb.TOKEN_UNSPECIFIED, pb.TOKEN_UNSPECIFIED), (pb.MOON, pb.SILVER),
                 (pb.MOON, pb.BUBBLE), (pb.SILVER, pb.BUBBLE)]
        return [pb.Command(use_crown=pb.UseCrown(first=a, second=b)) for a, b in pairs]
    if stage == pb.STAGE_SNAKE:
        choices = snake_options(state, seat)
        if not state.revealed and len(choices) < 2:
            return [pb.Command(discard_for_snake=pb.DiscardForSnake())]
        return [pb.Command(discard_for_snake=pb.DiscardForSnake(price=p)) for p in choices]
    return []


def _legal_plays(state: State, seat: int) -> list[pb.Command]:
    out = []
    mortals = eligible_mortals(state, seat)
    for hand_card in state.player(seat).hand:
        for slot in (None, *range(len(state.public))):
            played = hand_card if slot is None else state.public[slot]
            for blank_end in _blank_ends(state, seat, played):
                for mortal in mortals:
                    out.append(pb.Command(play_pact=pb.PlayPact(
                        card=hand_card, public_slot=slot, mortal=mortal, blank_end=blank_end
                    )))
    return out


def _blank_ends(state: State, seat: int, played: int) -> list[pb.Price | None]:
    pact = card(played)
    if not pact.blank:
        return [None]
    if not can_play_blank(state, seat):
        return []
    printed = pact.ends[0][0]
    return [pb.Price(token=t, quantity=q) for t in PRICES if t != printed for q in (1, 2, 3)]
