"""Price Tokens: what each kind counts as, how a payer picks tokens, and the round's tally.

A player's tokens are a multiset stored as a tuple of counts indexed by the `Token` enum
value, one tuple for the tokens in front of the screen and one for those behind it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.core.decider import Rng

Tokens = tuple[int, ...]
KINDS = 15
EMPTY: Tokens = (0,) * KINDS

MOON, SILVER, BUBBLE = pb.MOON, pb.SILVER, pb.BUBBLE
MAIN = (MOON, SILVER, BUBBLE)

# While pacts are played and signed, every price token counts as one of the three prices.
# Within a price, the default payment order: the main token, a Palette or Chess face, then
# Apple / Rose, then Snake, the Oyster last (it is worth 4 Silver Coins at resolution).
PAYS_AS: dict[int, tuple[int, ...]] = {
    MOON: (pb.MOON, pb.PALETTE_MOON, pb.APPLE),
    SILVER: (pb.SILVER, pb.PALETTE_SILVER, pb.CHESS_SILVER, pb.SNAKE, pb.OYSTER),
    BUBBLE: (pb.BUBBLE, pb.CHESS_BUBBLE, pb.ROSE),
}
PRICE_OF = {token: price for price, tokens in PAYS_AS.items() for token in tokens}

# Before resolution: the Apple becomes a Bubble and the Rose a Moon (the Oyster is apart:
# 4 Silver Coins, untouched by the Crown).
RESOLVES_AS = {**PRICE_OF, pb.APPLE: BUBBLE, pb.ROSE: MOON}
del RESOLVES_AS[pb.OYSTER]

UNFACED = (pb.PALETTE, pb.CHESS)
FACES = {pb.PALETTE: (pb.PALETTE_MOON, pb.PALETTE_SILVER), pb.CHESS: (pb.CHESS_BUBBLE,
                                                                     pb.CHESS_SILVER)}
FACE_OF = {face: token for token, faces in FACES.items() for face in faces}


def make(counts: dict[int, int] | Iterable[tuple[int, int]]) -> Tokens:
    items = counts.items() if isinstance(counts, dict) else counts
    out = [0] * KINDS
    for token, n in items:
        out[token] += n
    return tuple(out)


def add(a: Tokens, b: Tokens) -> Tokens:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def sub(a: Tokens, b: Tokens) -> Tokens:
    out = tuple(x - y for x, y in zip(a, b, strict=True))
    assert min(out) >= 0, "took a token that is not there"
    return out


def total(a: Tokens) -> int:
    return sum(a)


def listed(a: Tokens) -> list[tuple[int, int]]:
    """(token, count) for the kinds present, in enum order."""
    return [(t, n) for t, n in enumerate(a) if n]


def to_pb(a: Tokens) -> list[pb.TokenCount]:
    return [pb.TokenCount(token=t, count=n) for t, n in listed(a)]


def from_pb(counts: Iterable[pb.TokenCount]) -> Tokens:
    return make([(c.token, c.count) for c in counts])


def unfaced(a: Tokens) -> Tokens:
    """The same tokens with every Palette and Chess Piece back to 'no face' (as in the bag)."""
    out = list(a)
    for face, token in FACE_OF.items():
        out[token] += out[face]
        out[face] = 0
    return tuple(out)


def counts_as(a: Tokens, price: int) -> int:
    """How many tokens of `a` pay `price` while pacts are played."""
    return sum(a[t] for t in PAYS_AS[price])


def can_pay(front: Tokens, behind: Tokens, price: int, quantity: int) -> bool:
    return counts_as(front, price) + counts_as(behind, price) >= quantity


def choose_payment(
    front: Tokens,
    behind: Tokens,
    price: int,
    quantity: int,
    pay_order: Sequence[tuple[int, bool]] = (),
) -> list[tuple[int, bool]]:
    """The tokens (kind, from behind?) a payer hands over: as many as they can, up to
    `quantity`, taking the payer's `pay_order` first and then the default order (in front
    of the screen before behind it; within a place, PAYS_AS order)."""
    default = [(t, False) for t in PAYS_AS[price]] + [(t, True) for t in PAYS_AS[price]]
    left = {False: list(front), True: list(behind)}
    paid: list[tuple[int, bool]] = []
    for token, from_behind in list(pay_order) + default:
        if PRICE_OF.get(token) != price:
            continue
        while len(paid) < quantity and left[from_behind][token] > 0:
            left[from_behind][token] -= 1
            paid.append((token, from_behind))
    return paid


def toss(token: int, rng: Rng) -> int:
    """A received Palette or Chess Piece is tossed at once; any other token is unchanged."""
    if token in FACE_OF:
        return rng.choice(FACES[FACE_OF[token]])
    return token


def draw(bag: Tokens, n: int, rng: Rng) -> Tokens:
    """`n` tokens drawn at random from the bag (all of them if it holds fewer)."""
    pool = [t for t, k in enumerate(bag) for _ in range(k)]
    rng.shuffle(pool)
    return make([(t, 1) for t in pool[:n]])


# ---- Before resolution ------------------------------------------------------------------

Tally = tuple[int, int, int]  # moons, silver coins, bubbles
INDEX = {MOON: 0, SILVER: 1, BUBBLE: 2}


def swapped(price: int, swap: tuple[int, int] | None) -> int:
    if swap is None:
        return price
    a, b = swap
    return b if price == a else a if price == b else price


def tally(tokens: Tokens, swap: tuple[int, int] | None) -> Tally:
    """The round's tally after Apple, Rose, Crown and Oyster, in the printed order: Apples
    are Bubbles, Roses are Moons, the Crown swaps two quantities, each Oyster adds 4 Silver
    Coins (the Crown does not touch Oysters)."""
    counts = [0, 0, 0]
    for token, price in RESOLVES_AS.items():
        counts[INDEX[swapped(price, swap)]] += tokens[token]
    counts[INDEX[SILVER]] += 4 * tokens[pb.OYSTER]
    return (counts[0], counts[1], counts[2])


def snake_choices(tokens: Tokens, current: Tally) -> list[int]:
    """The prices a Snake's owner may discard 5 of (none if they hold no Snake)."""
    if tokens[pb.SNAKE] == 0:
        return []
    return [p for p in MAIN if current[INDEX[p]] >= 5]


def snake_discard(tokens: Tokens, price: int, swap: tuple[int, int] | None) -> Tokens:
    """The physical tokens that leave the game when 5 of `price` are discarded: one-count
    tokens first (main ones before special ones); short of 5 of those, an Oyster (4 Silver
    Coins) and one one-count token, exactly 5; with no one-count token, two Oysters."""
    order = [pb.MOON, pb.SILVER, pb.BUBBLE, pb.PALETTE_MOON, pb.PALETTE_SILVER,
             pb.CHESS_BUBBLE, pb.CHESS_SILVER, pb.APPLE, pb.ROSE, pb.SNAKE]
    ones = [t for t in order if swapped(RESOLVES_AS[t], swap) == price]
    removed = [0] * KINDS
    need = 5
    if price == SILVER and tokens[pb.OYSTER] and sum(tokens[t] for t in ones) < 5:
        removed[pb.OYSTER] = min(tokens[pb.OYSTER], 1 if any(tokens[t] for t in ones) else 2)
        need -= 4 * removed[pb.OYSTER]
    for token in ones:
        take = max(0, min(tokens[token], need))
        removed[token] += take
        need -= take
    return tuple(removed)


# ---- Resolution -------------------------------------------------------------------------


def bubbles_with_excess(t: Tally) -> int:
    """Silver Coins beyond 6 count as Bubbles (only when Bubbles are compared)."""
    return t[2] + max(0, t[1] - 6)


def resolve_many(tallies: Sequence[Tally]) -> list[int]:
    """Soul Tokens scored by each player at 3-5 players, step by step."""
    souls = [0] * len(tallies)
    remaining = list(range(len(tallies)))

    def lone_survivor() -> bool:
        if len(remaining) == 1:
            souls[remaining[0]] += 3
        return len(remaining) <= 1

    most_bubbles = max(bubbles_with_excess(tallies[p]) for p in remaining)
    remaining = [p for p in remaining if bubbles_with_excess(tallies[p]) < most_bubbles]
    if lone_survivor():
        return souls
    fewest_silver = min(tallies[p][1] for p in remaining)
    for p in remaining:
        if tallies[p][1] == fewest_silver:
            souls[p] += 1
    remaining = [p for p in remaining if tallies[p][1] > fewest_silver]
    if lone_survivor():
        return souls
    most_moons = max(tallies[p][0] for p in remaining)
    for p in remaining:
        souls[p] += 3 if tallies[p][0] == most_moons else 2
    return souls


def resolve_two(tallies: Sequence[Tally]) -> list[int]:
    """Soul Tokens at 2 players: 1 each for most Moons, most Silver, fewest Bubbles (ties
    included), and 1 more for all three."""
    souls = []
    for i, me in enumerate(tallies):
        other = tallies[1 - i]
        met = [
            me[0] >= other[0],
            me[1] >= other[1],
            bubbles_with_excess(me) <= bubbles_with_excess(other),
        ]
        souls.append(sum(met) + (1 if all(met) else 0))
    return souls

