"""Shadow Council's events in words, for one seat (View.happened, `arbiter play`).

Each event is redacted for the seat first: another player's clue reads "seat 3 learned
something about seat 1", never what.
"""

from __future__ import annotations

from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import CatalogEntry
from services.core.happened import does, listed, named, plural, who, whose
from services.shadow_council import data
from services.shadow_council.view import redact


def card(value: int) -> str:
    return "a hidden card" if not value else named(pb.Card, value).title()


def identity(value: int) -> str:
    return "a hidden identity" if not value else f"the {named(pb.Identity, value).title()}"


def _played(e: pb.CardPlayed, s: int | None) -> str:
    text = f"{who(e.seat, s)} played {card(e.card)}"
    if e.targets:
        text += " on " + listed([who(t, s) for t in e.targets])
    if e.guess:
        text += f", guessing {identity(e.guess)}"
    if e.suit:
        text += f", naming {named(pb.Suit, e.suit)}"
    return text


def _clue(e: pb.ClueGained, s: int | None) -> str:
    if not e.kind:
        return f"{who(e.seat, s)} learned something about {who(e.subject, s)}"
    source = f" (from {named(pb.ClueSource, e.source)})" if e.source else ""
    about = whose(e.subject, s)
    if e.kind == pb.CLUE_KEYWORD:
        fact = f"a keyword of {about} shadow identity is {named(pb.Keyword, e.keyword)}"
    elif e.kind == pb.CLUE_IDENTITY:
        fact = f"{about} shadow identity is {identity(e.identity)}"
    elif e.kind == pb.CLUE_NOT_IDENTITY:
        fact = f"{about} shadow identity is not {identity(e.identity)}"
    elif e.kind == pb.CLUE_SUIT:
        fact = f"{who(e.subject, s)} holds a {named(pb.Suit, e.suit)} card"
    else:
        suits = listed([named(pb.Suit, x) for x in e.suits])
        fact = f"the suits in {about} hand are {suits}"
    return f"{does(e.seat, s, 'learn', 'learns')} that {fact}{source}"


def _ended(e: pb.GameEnded, s: int | None) -> str:
    side = named(pb.Faction, e.winner) if e.winner else ""
    head = f"the game is over: {side} wins" if side else "the game is over: a draw"
    winners = f" ({listed([who(w, s) for w in e.winners])})" if e.winners else ""
    return head + winners + (f"; {e.reason}" if e.reason else "")


WORDS = {
    "set_up": lambda e, s: (f"a game of {plural(len(e.public_identities), 'player')} and "
                            f"{plural(e.rounds, 'round')} is set up"),
    "round_started": lambda e, s: (f"round {e.round} begins"
                                   + (f" with the {named(pb.GlobalEvent, e.event)} event"
                                      if e.event else "")),
    "phase_started": lambda e, s: f"the {named(pb.Phase, e.phase)} phase begins",
    "turn_started": lambda e, s: (f"{whose(e.seat, s)} turn"
                                  + (" is skipped (a Siege)" if e.skipped else " begins")),
    "cards_drawn": lambda e, s: (f"{who(e.seat, s)} drew "
                                 + (listed([card(c) for c in e.cards]) if e.cards
                                    else plural(e.count, "card"))),
    "deck_reshuffled": lambda e, s: f"the deck was reshuffled ({plural(e.count, 'card')})",
    "cards_discarded": lambda e, s: (f"{who(e.seat, s)} discarded "
                                     f"{listed([card(c) for c in e.cards])}"),
    "card_played": _played,
    "gold_peek_paid": lambda e, s: (f"{who(e.seat, s)} paid {e.cost} gold to peek at "
                                    f"{who(e.target, s)}"),
    "free_action_used": lambda e, s: (f"{who(e.seat, s)} used a free "
                                      f"{'Peek' if e.peek else 'Reflect'}"
                                      + (f" on {who(e.target, s)}" if e.peek else "")),
    "gold_changed": lambda e, s: (f"{who(e.seat, s)} {'gained' if e.delta >= 0 else 'lost'} "
                                  f"{abs(e.delta)} gold"),
    "zone_changed": lambda e, s: (f"the {named(pb.Zone, e.zone)} zone "
                                  f"{'rose' if e.delta >= 0 else 'fell'} by {abs(e.delta)}"),
    "guard_raised": lambda e, s: f"{who(e.seat, s)} raised a guard",
    "attack_blocked": lambda e, s: f"{whose(e.target, s)} guard blocked {card(e.card)}",
    "turn_skip_ordered": lambda e, s: f"{who(e.target, s)} will skip the next turn",
    "identities_swapped": lambda e, s: (
        f"{who(e.seat, s)} and {who(e.other, s)} swapped public identities"
        if e.kind == pb.SWAP_DISGUISE else
        f"{who(e.seat, s)} and {who(e.other, s)} took back their public identities"
        if e.kind == pb.SWAP_DISGUISE_REVERT else
        f"{whose(e.seat, s)} public and shadow identities were swapped (a Brainwash)"),
    "clue_gained": _clue,
    "passive_pending": lambda e, s: f"{who(e.seat, s)} may use {identity(e.identity)}'s power",
    "guess_made": lambda e, s: (f"{who(e.seat, s)} guessed that {who(e.target, s)} "
                                f"{'are' if e.target == s else 'is'} {identity(e.identity)}: "
                                + ("right" if e.correct else "wrong")),
    "guess_skipped": lambda e, s: f"{who(e.seat, s)} made no guess",
    "ai_guess_drawn": lambda e, s: (f"the AI guess was drawn for {who(e.seat, s)}"
                                    if e.drawn else "no AI guesses this round"),
    "player_eliminated": lambda e, s: (f"{who(e.seat, s)} {'are' if e.seat == s else 'is'} "
                                       f"out ({named(pb.Cause, e.cause)}); shadow identity: "
                                       f"{identity(e.shadow)}"),
    "game_ended": _ended,
    "passive_resolved": lambda e, s: (f"{who(e.seat, s)} gave the Assassin's order against "
                                      f"{who(e.target, s)}"),
    "turn_ended": lambda e, s: f"{whose(e.seat, s)} turn ended",
}


def describe(event: pb.Event, seat: int | None) -> str | None:
    shown = redact(event, seat)
    kind = shown.WhichOneof("kind")
    words = WORDS.get(kind or "")
    return words(getattr(shown, kind), seat) if kind and words else None


def view_hidden(view: pb.View) -> list[str]:
    """What the view leaves unset because its seat may not see it (View.hidden)."""
    paths = [f"seats[{i}].shadow_identity" for i, s in enumerate(view.seats)
             if not s.shadow_identity]
    if not view.HasField("seat"):
        paths.append("hand")
    return paths


# ---- commands in words (LegalActions.words, `arbiter play`) ---------------------------------


def _play_words(p: pb.PlayCard, s: int | None) -> str:
    text = f"play {card(p.card)}"
    if p.HasField("target"):
        text += f" on {who(p.target, s)}"
    if p.HasField("second_target"):
        text += f" and {who(p.second_target, s)}"
    if p.guess:
        text += f", guessing {identity(p.guess)}"
    if p.suit:
        text += f", faking a {named(pb.Suit, p.suit)} card"
    return text


COMMAND_GROUPS = {"play": "play a card", "gold_peek": "peek for gold", "free_peek": "free peek",
                  "free_reflect": "free reflect", "end_turn": "end the turn",
                  "assassin": "the Assassin's order", "guess": "guess an identity",
                  "skip_guess": "guess an identity"}


def describe_command(command: pb.Command, view: pb.View | None = None) -> str:
    """A command in words for the seat the view is for (others named as "seat N")."""
    s = view.seat if view is not None and view.HasField("seat") else None
    kind = command.WhichOneof("kind")
    if kind == "play":
        return _play_words(command.play, s)
    if kind == "gold_peek":
        cost = f"{view.gold_peek_cost} gold" if view is not None else "gold"
        return f"pay {cost} to peek at {who(command.gold_peek.target, s)}"
    if kind == "free_peek":
        return f"use your free Peek on {who(command.free_peek.target, s)}"
    if kind == "free_reflect":
        return "use your free Reflect"
    if kind == "end_turn":
        return "end your turn"
    if kind == "assassin":
        order = command.assassin
        return (f"discard {card(order.discard)} so that {who(order.target, s)} discards a "
                "random card")
    if kind == "guess":
        return (f"guess that {who(command.guess.target, s)} is "
                f"{identity(command.guess.identity)}")
    if kind == "skip_guess":
        return "make no guess"
    return "no action"


# ---- the catalog (Arbiter.GetCatalog) ---------------------------------------------------------


def _title(name: str) -> str:
    return name.replace("_", " ").title()


def _zone(zone: str) -> str:
    return "Shadow Alley" if zone == "SHADOW_ALLEY" else f"{_title(zone)} Zone"


def _side(zone: str) -> str:
    return "Order" if zone in data.ORDER_ZONES else "Chaos"


# Zone Effects (the Game Manual, "Zones & Gold System").
ZONES = ("Each Shadow Phase the Order zones (Military and Economy) are compared with the Chaos "
         "zones (Strategy and Shadow Alley): on an Order lead every survivor gains 1 gold, on "
         "a Chaos lead every survivor draws 1 card.")


def catalog() -> list[CatalogEntry]:
    """The cards, identities, keywords, suits, zones and events, as the Game Manual prints
    them (services/shadow_council/data.py holds its words)."""
    cards = [CatalogEntry(f"CARD_{name}", "card", _title(name),
                          f"{_title(spec.suit)} card: {spec.text}")
             for name, spec in data.CARDS.items()]
    identities = [CatalogEntry(
        f"IDENTITY_{name}", "identity", f"the {_title(name)}",
        f"{_title(data.FACTION[name])} faction. Passive (from round 2): {data.PASSIVES[name]}. "
        f"Shadow keywords: {listed([_title(k) for k in data.KEYWORDS[name]])}.")
        for name in data.IDENTITIES]
    keywords = [CatalogEntry(f"KEYWORD_{k}", "keyword", _title(k),
                             f"A shadow keyword of the {_title(identity)}.")
                for k, identity in data.IDENTITY_OF_KEYWORD.items()]
    suits = [CatalogEntry(f"SUIT_{suit}", "suit", _title(suit),
                          f"{_title(suit)} cards feed the {_zone(zone)} ({_side(zone)}).")
             for suit, zone in data.ZONE_OF_SUIT.items()]
    zones = [CatalogEntry(f"ZONE_{zone}", "zone", _zone(zone), f"{_side(zone)} zone. " + ZONES)
             for zone in data.ZONES]
    events = [CatalogEntry(f"EVENT_{name}", "event", _title(name), text)
              for name, text in data.EVENT_TEXTS.items()]
    return cards + identities + keywords + suits + zones + events
