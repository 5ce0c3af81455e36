"""Bubblee Pop bots. They see only their seat's View and the legal commands.

Everything in Bubblee Pop is public, so a bot may rebuild the table from its view
(state_from_view) and look ahead with the real rules.

  random  any legal command
  greedy  one-turn lookahead: every (optional swap, drop) pair is scored by the lines it
          removes, the powers it gains and how safe the planet stays; powers are applied
          when they gain more than they give away, else declined.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from arbiter.bubblee.v1 import bubblee_pb2 as pb

from services.bubblee import board, rules
from services.bubblee.board import BLUE, HEIGHT, LINE_COLOURS, NOT_COLUMN_4, PURPLE, RED, WIDTH
from services.bubblee.state import State, _update, evolve, target_remaining
from services.bubblee.view import state_from_view
from services.core.decider import Bot, Rng, RuleError


def random_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    return rng.choice(legal)


# ---- Greedy -----------------------------------------------------------------------------

LINE_POINT = 10.0  # per Bubblee removed
POWER = 4.0  # per power gained
PAIR = 1.0  # per same-coloured orthogonal pair left (a line half made)
DANGER = 3.0  # per (height - 2)^2 of each column
FULL = 12.0  # per full column
SWAP_COST = 0.01  # prefer not swapping on ties


def pairs(masks: Sequence[int]) -> int:
    """Same-coloured orthogonal neighbours: lines half made."""
    count = 0
    for colour in LINE_COLOURS:
        m = masks[colour - 1]
        count += (m & (m >> 1) & NOT_COLUMN_4).bit_count() + (m & (m >> WIDTH)).bit_count()
    return count


def planet_value(masks: Sequence[int]) -> float:
    """How good a planet is to own: pairs waiting for a third, few tall columns."""
    hs = board.heights(masks)
    danger = sum((h - 2) ** 2 for h in hs if h > 2)
    full = sum(1 for h in hs if h >= HEIGHT)
    return PAIR * pairs(masks) - DANGER * danger - FULL * full


def drop_value(state: State, seat: int, sky: Sequence[int], a: int, b: int) -> float | None:
    """The value of dropping sky cells a and b (None when illegal)."""
    if not sky[a] or not sky[b]:
        return None
    trial = _update(state, sky=tuple(sky))
    if rules.drop_check(trial, seat, a, b) is not None:
        return None
    first, second = rules.landing_order(seat, a, b)
    masks = state.planets[seat]
    landed = rules._land(masks, board.heights(masks), first, second, sky[first], sky[second])
    after, waves = board.resolve(landed)
    removed = sum(group.bit_count() for groups, _ in waves for _, group in groups)
    powers = 0 if state.no_powers else sum(len(groups) for groups, _ in waves)
    return LINE_POINT * removed + POWER * powers + planet_value(after)


def _key(cmd: pb.Command) -> tuple:
    kind = cmd.WhichOneof("kind")
    msg = getattr(cmd, kind)
    if kind in ("swap", "drop"):
        a = msg.a.row * WIDTH + msg.a.column
        b = msg.b.row * WIDTH + msg.b.column
        return (kind, min(a, b), max(a, b))
    if kind == "place":
        return (kind, msg.cell.row * WIDTH + msg.cell.column)
    return (kind, msg.SerializeToString(deterministic=True))


def best_action(state: State, seat: int, legal: list[pb.Command]) -> pb.Command:
    """The best drop, or the swap that leads to it."""
    by_key = {_key(c): c for c in legal}
    options: list[tuple[float, tuple]] = []
    swaps = [k for k in by_key if k[0] == "swap"]
    for swap in [None, *swaps]:
        sky = list(state.sky)
        if swap is not None:
            sky[swap[1]], sky[swap[2]] = sky[swap[2]], sky[swap[1]]
        for a, b in rules._drop_pairs(seat):
            value = drop_value(state, seat, sky, a, b)
            if value is None:
                continue
            if swap is None:
                options.append((value, ("drop", a, b)))
            else:
                options.append((value - SWAP_COST, swap))
    if not options:  # no drop can be made: anything legal will do (it loses)
        return legal[0]
    _, key = max(options, key=lambda o: o[0])
    return by_key[key]


def best_place(state: State, seat: int, legal: list[pb.Command]) -> pb.Command:
    """Put the drawn Bubblee where the best drop (without a swap) becomes best."""
    best, best_value = legal[0], float("-inf")
    for cmd in legal:
        index = _key(cmd)[1]
        sky = list(state.sky)
        sky[index] = state.drawn
        values = [drop_value(state, seat, sky, a, b) for a, b in rules._drop_pairs(seat)]
        value = max((v for v in values if v is not None), default=-100.0)
        if value > best_value:
            best, best_value = cmd, value
    return best


def _standing(state: State, seat: int) -> float:
    """A score of the whole table from `seat`'s side, to compare before/after a power."""
    if state.outcome is not None:
        if seat in state.outcome.winners:
            return 10_000.0
        return -10_000.0
    mine = LINE_POINT * sum(state.zones[seat]) + planet_value(state.planets[seat])
    mine += POWER * len(state.pool)
    if state.solo_level:
        return solo_standing(state)
    other = 1 - seat
    theirs = LINE_POINT * sum(state.zones[other]) + planet_value(state.planets[other])
    return mine - theirs


def estimate(state: State, seat: int) -> float:
    """The chance `seat` wins from here, read from its standing (where a search stops)."""
    return 1 / (1 + math.exp(-_standing(state, seat) / STANDING_SCALE))


STANDING_SCALE = 30.0  # a lead of three Bubblees scored is worth about 3 to 1
SOLO_POWERS = (RED, PURPLE, BLUE)  # the powers that reach the target


def solo_standing(state: State) -> float:
    """Solo: fewer coloured Bubblees on the target, a big clear one power away, powers that
    reach the target in hand, and a safe planet of your own."""
    target = state.planets[1]
    value = -2 * LINE_POINT * target_remaining(state)
    value += 0.6 * LINE_POINT * best_single_clear(state)
    value += PAIR * pairs(target)
    value += 1.5 * POWER * sum(1 for p in state.pool if p in SOLO_POWERS)
    return value + planet_value(state.planets[0])


def best_single_clear(state: State) -> int:
    """How many coloured Bubblees one red swap or one sent Bubblee would clear from the
    target (sent: any colour on top of your planet or in the target's sky row)."""
    target = state.planets[1]
    occ = board.occupied(target)
    best = 0
    for a, b in rules.PLANET_PAIRS:
        if occ >> a & 1 and occ >> b & 1:
            ca, cb = board.colour_at(target, a), board.colour_at(target, b)
            if ca != cb:
                masks = list(target)
                masks[ca - 1] ^= (1 << a) | (1 << b)
                masks[cb - 1] ^= (1 << a) | (1 << b)
                best = max(best, _cleared(masks))
    own = state.planets[0]
    hs_own = board.heights(own)
    hs = board.heights(target)
    for column in range(WIDTH):
        if hs[column] >= HEIGHT:
            continue
        sources = {state.sky[WIDTH + column]}
        if hs_own[column]:
            sources.add(board.colour_at(own, (hs_own[column] - 1) * WIDTH + column))
        for colour in sources - {0, board.BLACK}:
            masks = list(target)
            masks[colour - 1] |= 1 << (hs[column] * WIDTH + column)
            best = max(best, _cleared(masks) - 1)
    return best


def _cleared(masks: list[int]) -> int:
    """How many Bubblees the lines of a planet would remove (chain reactions included)."""
    after, _ = board.resolve(masks)
    return board.occupied(masks).bit_count() - board.occupied(after).bit_count()


def best_power(state: State, seat: int, legal: list[pb.Command]) -> pb.Command:
    """Apply the power that improves the table most; decline when none improves it."""
    base = _standing(state, seat)
    best, best_gain = None, 0.0
    for cmd in legal:
        if cmd.WhichOneof("kind") != "apply_power":
            continue
        after = state
        try:
            for ev in rules.decide(state, seat, cmd, Rng.for_test(0)):
                after = evolve(after, ev)
        except RuleError:
            continue
        gain = _standing(after, seat) - base
        if gain > best_gain:
            best, best_gain = cmd, gain
    if best is not None:
        return best
    return next(c for c in legal if c.WhichOneof("kind") == "decline_power")


def greedy_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    state = state_from_view(view)
    seat = view.seat if view.HasField("seat") else state.turn
    if view.phase == pb.PHASE_PLACE:
        return best_place(state, seat, legal)
    if view.phase == pb.PHASE_ACTION:
        return best_action(state, seat, legal)
    return best_power(state, seat, legal)


BOTS: dict[str, Bot] = {"random": random_bot, "greedy": greedy_bot}
