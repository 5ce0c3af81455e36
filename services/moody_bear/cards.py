"""The components of Moody Bear Kingdom: item cards, team cards and the combos.

The counts are the rulebook's component list, plus 4 Shuffle the Deck: the rulebook describes
that card but leaves it out of the list, and a project ruling settles the deck at 48 cards
(docs/rulings/moody_bear.md, ruling 1).
"""

from __future__ import annotations

from collections.abc import Iterable

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

Card = int
Team = int

LAVA_GEM: Card = pb.LAVA_GEM
SNOW_DIAMOND: Card = pb.SNOW_DIAMOND
DUO_JEWEL: Card = pb.DUO_JEWEL
DARK_SWALLOW: Card = pb.DARK_SWALLOW
MACE: Card = pb.MACE_OF_LIGHT
REVEAL: Card = pb.REVEAL_IDENTITY
SWAP: Card = pb.SWAP_HAND
SHUFFLE: Card = pb.SHUFFLE_THE_DECK
CANCEL: Card = pb.CANCEL
ASSASSIN: Card = pb.THUNDER_ASSASSIN
AMBASSADOR: Card = pb.AMBASSADOR
KNIGHT: Card = pb.FOREST_KNIGHT

RED: Team = pb.RED
BLUE: Team = pb.BLUE
SOLO: Team = pb.SOLO

ITEM_COUNTS: dict[Card, int] = {
    LAVA_GEM: 3,
    SNOW_DIAMOND: 3,
    DARK_SWALLOW: 1,
    MACE: 4,
    REVEAL: 4,
    SWAP: 4,
    CANCEL: 4,
    ASSASSIN: 7,
    AMBASSADOR: 7,
    KNIGHT: 7,
    SHUFFLE: 4,  # missing from the printed list; docs/rulings/moody_bear.md, 1
}

ALL_CARDS: tuple[Card, ...] = tuple(c for c in pb.Card.values() if c != pb.CARD_UNSPECIFIED)

HAND_SIZE = 5

# Team cards in play by number of players; the 4-player advanced rule deals from the
# 5-player set and sets one card aside unseen.
TEAMS_BY_PLAYERS: dict[int, tuple[Team, ...]] = {
    3: (RED, BLUE, SOLO),
    4: (RED, RED, BLUE, BLUE),
    5: (RED, RED, BLUE, BLUE, SOLO),
}

GEM_OF: dict[Team, Card] = {RED: LAVA_GEM, BLUE: SNOW_DIAMOND}
OPPONENT: dict[Team, Team] = {RED: BLUE, BLUE: RED}

# ---- combos -------------------------------------------------------------------------
# What an announced set of cards does. Each play names which extra fields it takes.
REVEAL_IDENTITY = "reveal_identity"
SWAP_HAND = "swap_hand"
SHUFFLE_THE_DECK = "shuffle_the_deck"
STEAL = "steal"  # a pair
LOOK_AT_HAND = "look_at_hand"  # Thunder Assassin + Ambassador
TOP_THREE = "top_three"  # Forest Knight + Ambassador
PASS_AROUND = "pass_around"  # Forest Knight + Thunder Assassin
REQUEST = "request"  # Forest Knight + Thunder Assassin + Ambassador

COMBOS: dict[tuple[Card, ...], str] = {
    (REVEAL,): REVEAL_IDENTITY,
    (SWAP,): SWAP_HAND,
    (SHUFFLE,): SHUFFLE_THE_DECK,
    (KNIGHT, KNIGHT): STEAL,
    (AMBASSADOR, AMBASSADOR): STEAL,
    (ASSASSIN, ASSASSIN): STEAL,
    tuple(sorted((ASSASSIN, AMBASSADOR))): LOOK_AT_HAND,
    tuple(sorted((KNIGHT, AMBASSADOR))): TOP_THREE,
    tuple(sorted((KNIGHT, ASSASSIN))): PASS_AROUND,
    tuple(sorted((KNIGHT, ASSASSIN, AMBASSADOR))): REQUEST,
}

TARGETED = {REVEAL_IDENTITY, SWAP_HAND, STEAL, LOOK_AT_HAND, REQUEST}


def combo_of(cards: Iterable[Card]) -> str | None:
    """The item or combo a set of announced cards makes, or None."""
    return COMBOS.get(tuple(sorted(cards)))


def deck_cards(duo_jewel: bool) -> list[Card]:
    """Every item card in the game, the Dark Swallow included, in a fixed order."""
    cards = [card for card, n in ITEM_COUNTS.items() for _ in range(n)]
    if duo_jewel:
        cards.append(DUO_JEWEL)
    return cards


def holds(hand: Iterable[Card], cards: Iterable[Card]) -> bool:
    """Whether a hand contains all these cards (as a multiset)."""
    have = hand if isinstance(hand, tuple | list) else tuple(hand)
    need = cards if isinstance(cards, tuple | list) else tuple(cards)
    # A play names one to three cards: counting in the hand beats building two Counters (a
    # search bot's playouts ask this about every combo at every turn).
    return all(have.count(c) >= need.count(c) for c in set(need))


def card_name(card: Card) -> str:
    return pb.Card.Name(card).replace("_", " ").title()
