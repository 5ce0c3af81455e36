"""Shadow Council's printed content: identities, keywords, the 32 cards and the 12 events.

Everything here is transcribed from the rulebook (Shadow Council — Game Manual); names are the
proto enum names without their prefix (CARD_RALLY -> "RALLY").
"""

from __future__ import annotations

from dataclasses import dataclass

ORDER = "ORDER"
CHAOS = "CHAOS"

IDENTITIES = ("GENERAL", "MERCHANT", "PROPHET", "ASSASSIN", "ALCHEMIST", "SPY")
ORDER_IDENTITIES = ("GENERAL", "MERCHANT", "PROPHET")
CHAOS_IDENTITIES = ("ASSASSIN", "ALCHEMIST", "SPY")

FACTION = {identity: ORDER for identity in ORDER_IDENTITIES} | {
    identity: CHAOS for identity in CHAOS_IDENTITIES
}

# Each public identity's passive (the Game Manual, "Character System": "auto-triggers each
# round from Round 2").
PASSIVES = {
    "GENERAL": "Military Zone +1",
    "MERCHANT": "Gain 1 gold",
    "PROPHET": "Draw 1 extra card",
    "ASSASSIN": "Discard 1 card to make any 1 player discard 1",
    "ALCHEMIST": "Economy Zone +1",
    "SPY": "View 1 random surviving player's shadow identity keyword",
}

KEYWORDS = {
    "GENERAL": ("BLADE", "SWORD", "HALBERD", "ARMOR"),
    "MERCHANT": ("SCALE", "GOLD", "COIN", "LEDGER"),
    "PROPHET": ("EYE", "STAR", "MOON", "DREAM"),
    "ASSASSIN": ("POISON", "DAGGER", "SHADOW", "NIGHT"),
    "ALCHEMIST": ("BOTTLE", "FURNACE", "FLAME", "MERCURY"),
    "SPY": ("MASK", "MIRROR", "VEIL", "WIND"),
}
IDENTITY_OF_KEYWORD = {kw: identity for identity, kws in KEYWORDS.items() for kw in kws}

SUITS = ("MILITARY", "ECONOMY", "STRATEGY", "SHADOW")
# Each suit feeds its zone; Order owns Military + Economy, Chaos owns Strategy + Shadow Alley.
ZONE_OF_SUIT = {
    "MILITARY": "MILITARY",
    "ECONOMY": "ECONOMY",
    "STRATEGY": "STRATEGY",
    "SHADOW": "SHADOW_ALLEY",
}
ZONES = ("MILITARY", "ECONOMY", "STRATEGY", "SHADOW_ALLEY")
ORDER_ZONES = ("MILITARY", "ECONOMY")
CHAOS_ZONES = ("STRATEGY", "SHADOW_ALLEY")


@dataclass(frozen=True)
class CardSpec:
    name: str
    suit: str
    text: str
    targets: int = 0  # how many other players it names
    attack: bool = False  # blocked (and consumed) by Guard


CARDS: dict[str, CardSpec] = {
    c.name: c
    for c in (
        # Military
        CardSpec("RALLY", "MILITARY", "Military Zone +3"),
        CardSpec("ASSASSINATE", "MILITARY", "Target discards 1 card", 1, True),
        CardSpec("SIEGE", "MILITARY", "Military Zone +2, target skips next turn", 1, True),
        CardSpec("GUARD", "MILITARY", "Block 1 attack (until next round)"),
        CardSpec("CONSCRIPT", "MILITARY", "Draw 2 cards"),
        CardSpec("CHARGE", "MILITARY", "Military Zone +4"),
        CardSpec("SCOUT", "MILITARY", "Reveal 1 card suit from target", 1),
        CardSpec("MUTINY", "MILITARY", "Military Zone +2, Economy Zone -1"),
        # Economy
        CardSpec("TAX", "ECONOMY", "Gain 2 gold"),
        CardSpec("BRIBE", "ECONOMY", "Steal 1 gold from target", 1, True),
        CardSpec("MONOPOLY", "ECONOMY", "Economy Zone +3"),
        CardSpec("INVEST", "ECONOMY", "Economy Zone +2, Gain 1 gold"),
        CardSpec("BANKRUPT", "ECONOMY", "Target loses 2 gold", 1, True),
        CardSpec("TRADE", "ECONOMY", "Both you and target draw 1 card", 1),
        CardSpec("BOUNTY", "ECONOMY", "Gain 3 gold"),
        CardSpec("THRIFT", "ECONOMY", "Economy Zone +1, draw 1 card"),
        # Strategy
        CardSpec("PEEK", "STRATEGY", "View 1 player's Shadow Keyword (only you see)", 1),
        CardSpec("FORGE", "STRATEGY", "Fake playing any suit, +2 to that zone"),
        CardSpec("PROPAGANDA", "STRATEGY", "Shadow Alley +2"),
        CardSpec(
            "PROPHECY",
            "STRATEGY",
            "Guess 1 player's Shadow Identity (correct: +2 Gold, wrong: -1 Gold)",
            1,
        ),
        CardSpec("SOW_DISCORD", "STRATEGY", "2 targets each discard 1 card", 2, True),
        CardSpec("INSIGHT", "STRATEGY", "See all suits in target's hand", 1),
        CardSpec("SCHEME", "STRATEGY", "Strategy Zone +3"),
        CardSpec("SECRET_ORDER", "STRATEGY", "Strategy Zone +2, draw 1 card"),
        CardSpec("REFLECT", "STRATEGY", "Gain 1 clue about your own Shadow Identity"),
        # Shadow
        CardSpec("DISGUISE", "SHADOW", "Swap public identity with target (reverts)", 1),
        CardSpec("POISON", "SHADOW", "View 1 player's Shadow Keyword (only you see)", 1, True),
        CardSpec("CHAOS", "SHADOW", "All discard 1, then all draw 1"),
        CardSpec("DARK_ASSASSINATE", "SHADOW", "Attempt to eliminate 1 player", 1, True),
        CardSpec("EAVESDROP", "SHADOW", "View 1 player's Shadow Identity (only you see)", 1),
        CardSpec("DARK_ALLEY", "SHADOW", "Shadow Alley +3"),
        CardSpec("CONSPIRACY", "SHADOW", "Shadow Alley +2, Gain 1 gold"),
        CardSpec("BRAINWASH", "SHADOW", "Swap target's public & shadow identity", 1),
    )
}
COPIES_PER_CARD = 2
# The rulebook prints 33 cards (Strategy has 9, the other suits 8) but says "Each card type
# has 2 copies in the deck (64 total)". Ruling: the default deck keeps 64 cards, 16 per suit,
# by holding one copy only of two Strategy cards: Peek (Poison prints the same effect) and
# Forge (it fakes another suit). Option full_deck: two copies of all 33 (66 cards).
SINGLE_COPY_IN_64_DECK = ("PEEK", "FORGE")

# The global events and their effects (Shadow Council — Game Manual, "Event System").
EVENT_TEXTS = {
    "TAX_COLLECTOR": "All players lose 1 Gold (or Military Zone -1 if broke)",
    "DARK_ALLEY_RIOT": "Shadow Cards have double effect this round",
    "DIPLOMATIC_BANQUET": "Military Cards cannot be used this round",
    "BORDER_CONFLICT": "Military Zone auto +2",
    "MARKET_BOOM": "All players gain 1 Gold",
    "DIVINE_ORACLE": "Each player gets 1 free Peek",
    "PLAGUE": "Player with most cards discards 2",
    "ARMS_RACE": "Military Cards +1 effect this round",
    "DONATION_SEASON": "All +1 Gold, Economy Zone +1",
    "DARK_NIGHT": "Dark Assassinate/Poison ignores Guard",
    "MEMORY_FRAGMENTS": "Each player gets 1 free Reflect",
    "JUDGMENT_DAY": "Player with fewest cards discards all, draws 3",
}
EVENTS = tuple(EVENT_TEXTS)

ROUNDS = 5
STARTING_GOLD = 4
STARTING_HAND = 6
ACTIONS_PER_TURN = 2
GUESS_PHASE_DRAW = 2


def gold_peek_cost(round_: int) -> int:
    """Round 1: 3 Gold, +2 per round (R2: 5, R3: 7, R4: 9, R5: 11)."""
    return 3 + 2 * (round_ - 1)


def full_deck(all_copies: bool = False) -> list[str]:
    deck = [name for name in CARDS for _ in range(COPIES_PER_CARD)]
    if not all_copies:
        for name in SINGLE_COPY_IN_64_DECK:
            deck.remove(name)
    return deck
