"""Bots for Bubble and Shadow. They see only their seat's View and the legal commands.

- "random": any legal command.
- "greedy": values its own tokens the way resolution rewards them (Moons good, Silver Coins
  good up to 6, Bubbles bad), plays the pact whose expected trade (over the Mortal's two
  possible ends) is best for it, signs the end that is best for it, and pays Moons with
  Apples first (they turn into Bubbles) while keeping Roses and Oysters.
"""

from __future__ import annotations

import math

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow import rules
from services.bubble_shadow import tokens as tk
from services.bubble_shadow.state import State
from services.bubble_shadow.view import show
from services.core.decider import Bot, Rng

# The greedy bot's own pay order: give away what resolution punishes, keep what it rewards.
GREEDY_PAY_ORDER = [
    pb.PaySource(token=t, behind=b)
    for b in (False, True)
    for t in (pb.APPLE, pb.MOON, pb.PALETTE_MOON, pb.BUBBLE, pb.CHESS_BUBBLE, pb.ROSE,
              pb.SILVER, pb.CHESS_SILVER, pb.PALETTE_SILVER, pb.SNAKE, pb.OYSTER)
]


def random_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    return rng.choice(legal)


def _my_tokens(view: pb.View) -> tk.Tokens:
    me = view.players[view.seat]
    return tk.add(tk.from_pb(me.front), tk.from_pb(me.behind))


Estimate = list[float]  # expected count of each token kind


def _estimates(view: pb.View) -> list[Estimate]:
    """Each seat's expected tokens: what is in sight, plus the hidden ones in proportion to
    the tokens this seat has not seen (the bag and the other screens)."""
    unseen = [float(x) for x in tk.from_pb(view.pool)]
    fronts = []
    for p in view.players:
        front = tk.from_pb(p.front)
        shown = tk.add(front, tk.from_pb(p.behind)) if p.seat == view.seat or view.revealed \
            else front
        for t, n in enumerate(tk.unfaced(shown)):
            unseen[t] -= n
        fronts.append(shown)
    unseen = [max(0.0, x) for x in unseen]
    share = sum(unseen) or 1.0
    out = []
    for p, shown in zip(view.players, fronts, strict=True):
        est = [float(x) for x in shown]
        if not (p.seat == view.seat or view.revealed):
            for t, expected in enumerate(unseen):
                part = p.behind_count * expected / share
                if t in tk.FACES:
                    est[tk.FACES[t][0]] += part / 2
                    est[tk.FACES[t][1]] += part / 2
                else:
                    est[t] += part
        out.append(est)
    return out


def _tally(est: Estimate) -> tuple[float, float, float]:
    counts = [0.0, 0.0, 0.0]
    for token, price in tk.RESOLVES_AS.items():
        counts[tk.INDEX[price]] += est[token]
    counts[1] += 4 * est[pb.OYSTER]
    return (counts[0], counts[1], counts[2])


def _linear(t: tuple[float, float, float]) -> float:
    moons, silver, bubbles = t
    return 2.0 * moons + 1.5 * min(silver, 6.0) - 3.0 * (bubbles + max(0.0, silver - 6.0))


def _value(ests: list[Estimate], seat: int) -> float:
    """Soul Tokens I would score if the round ended now, plus a smooth tie-breaker."""
    tallies = [_tally(e) for e in ests]
    scoring = tk.resolve_two if len(ests) == 2 else tk.resolve_many
    return scoring(tallies)[seat] + 0.1 * _linear(tallies[seat])  # type: ignore[arg-type]


def estimate(state: State, seat: int) -> float:
    """The chance `seat` wins from here (where a search stops): its lead in Soul Tokens,
    counting what each seat would score if the round ended now."""
    view = show(state, seat)
    view.seat = seat
    ests = _estimates(view)
    souls = [p.soul + _value(ests, s) for s, p in enumerate(state.players)]
    lead = souls[seat] - max(v for s, v in enumerate(souls) if s != seat)
    return 1 / (1 + math.exp(-lead / SOUL_SCALE))


SOUL_SCALE = 1.5  # a lead of 1.5 Soul Tokens is worth about 3 to 1


def _count(est: Estimate, price: int) -> float:
    return sum(est[t] for t in tk.PAYS_AS[price])


def _after_trade(ests: list[Estimate], me: int, other: int, mine: tk.Tokens,
                 i_pay: pb.Price, they_pay: pb.Price) -> list[Estimate]:
    """Estimates after I pay `i_pay` (with my pay order) and they pay `they_pay`."""
    out = [list(e) for e in ests]
    order = [(p.token, False) for p in GREEDY_PAY_ORDER]
    for token, _ in tk.choose_payment(mine, tk.EMPTY, i_pay.token, i_pay.quantity, order):
        out[me][token] -= 1
        out[other][token] += 1
    theirs = min(_count(ests[other], they_pay.token), float(they_pay.quantity))
    kinds = tk.PAYS_AS[they_pay.token]
    have = _count(ests[other], they_pay.token) or 1.0
    for t in kinds:  # they pay in proportion to what they are expected to hold
        part = theirs * ests[other][t] / have
        out[other][t] -= part
        out[me][t] += part
    return out


def _ends(view: pb.View, play: pb.PlayPact) -> tuple[pb.Price, pb.Price]:
    me = view.players[view.seat]
    if play.HasField("public_slot"):
        card = view.public_pacts[play.public_slot]
    else:
        card = next(c for c in me.hand if c.id == play.card)
    if card.blank:
        return card.ends[0], play.blank_end
    return card.ends[0], card.ends[1]


def _with_pay_order(cmd: pb.Command, field: str) -> pb.Command:
    out = pb.Command()
    out.CopyFrom(cmd)
    getattr(out, field).pay_order.extend(GREEDY_PAY_ORDER)
    return out


def greedy_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    kind = legal[0].WhichOneof("kind")
    mine = _my_tokens(view)
    seat = view.seat
    if kind == "play_pact":
        ests = _estimates(view)
        cache: dict[tuple[int, int, int, int, int], float] = {}

        def as_magician(cmd: pb.Command) -> float:
            play = cmd.play_pact
            ends = _ends(view, play)
            key = (play.mortal, ends[0].token, ends[0].quantity, ends[1].token,
                   ends[1].quantity)
            if key not in cache:
                m = play.mortal
                # The Mortal must take an end they can pay in full, if one; else either.
                payable = [k for k in (0, 1) if _count(ests[m], ends[k].token) >= ends[k].quantity]
                options = payable if len(payable) == 1 else [0, 1]
                cache[key] = sum(
                    _value(_after_trade(ests, seat, m, mine, ends[1 - k], ends[k]), seat)
                    for k in options
                ) / len(options)
            return cache[key]

        scores = [as_magician(c) for c in legal]
        best = max(scores)
        choice = rng.choice([c for c, score in zip(legal, scores, strict=True) if score == best])
        return _with_pay_order(choice, "play_pact")
    if kind == "sign_pact":
        ests = _estimates(view)
        pending = view.pending
        ends = (pending.card.ends[0],
                pending.blank_end if pending.card.blank else pending.card.ends[1])

        def as_mortal(cmd: pb.Command) -> float:
            e = cmd.sign_pact.end
            after = _after_trade(ests, seat, pending.magician, mine, ends[e], ends[1 - e])
            return _value(after, seat)

        return _with_pay_order(max(legal, key=as_mortal), "sign_pact")
    if kind == "choose_faces":
        return max(
            legal,
            key=lambda c: (c.choose_faces.palettes_on_moon, -c.choose_faces.chess_on_bubble),
        )
    if kind == "use_crown":
        def after_crown(cmd: pb.Command) -> float:
            swap = (cmd.use_crown.first, cmd.use_crown.second) if cmd.use_crown.first else None
            return _linear(tk.tally(mine, swap))

        return max(legal, key=after_crown)
    if kind == "discard_for_snake":
        def after_snake(cmd: pb.Command) -> float:
            swap = (view.crown_swap.first, view.crown_swap.second) if view.crown_swap.first \
                else None
            if view.crown_swaps_holder_only and seat != view.crown_holder:
                swap = None  # the Crown changed only its holder's counts
            t = list(tk.tally(mine, swap))
            if cmd.discard_for_snake.price:  # no price: the Snake has no choice to make
                t[tk.INDEX[cmd.discard_for_snake.price]] -= 5
            return _linear((t[0], t[1], t[2]))

        return max(legal, key=after_snake)
    # Complacency phase end: drawing is the safe choice.
    return next(c for c in legal if c.WhichOneof("kind") == "draw_tokens")


def search_commands(state: State, seat: int) -> list[pb.Command]:
    """The legal commands as the greedy bot sends them (Game.search_commands): a pact played
    or signed carries its pay order. Without it the search bot paid by the default order,
    its Moons before its Apples (which resolve as Bubbles), where the greedy bot keeps them.
    The greedy bot's own choice is then one of these, the search's first candidate."""
    out = []
    for cmd in rules.legal_actions(state, seat):
        field = cmd.WhichOneof("kind")
        out.append(_with_pay_order(cmd, field) if field in ("play_pact", "sign_pact") else cmd)
    return out


BOTS: dict[str, Bot] = {"random": random_bot, "greedy": greedy_bot}
