"""Moody Bear Kingdom's events in words, for one seat (View.happened, `arbiter play`).

Each event is first redacted for the seat, so a description says only what the seat may see:
"seat 2 stole a card from you: the Lava Gem" for the victim, "seat 2 stole a card from
seat 0" for everyone else.
"""

from __future__ import annotations

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import CatalogEntry
from services.core.happened import does, listed, named, plural, who, whose
from services.moody_bear.view import redact


def card(value: int) -> str:
    return "a hidden card" if not value else f"the {named(pb.Card, value).title()}"


def cards(values: list[int] | tuple[int, ...], count: int = 0) -> str:
    if values:
        return listed([card(c) for c in values])
    return plural(count, "card") if count else "no cards"


def team(value: int) -> str:
    return "a hidden team" if not value else f"the {named(pb.Team, value)} team"


def play_words(p: pb.Play, seat: int | None) -> str:
    parts = [cards(list(p.cards))]
    if p.HasField("target"):
        parts.append(f"on {who(p.target, seat)}")
    if p.named:
        parts.append(f"naming {card(p.named)}")
    if p.direction:
        parts.append(f"passing {named(pb.Direction, p.direction)}")
    return " ".join(parts)


def describe(event: pb.Event, seat: int | None) -> str | None:
    shown = redact(event, seat)
    kind = shown.WhichOneof("kind")
    if kind is None:
        return None
    e = getattr(shown, kind)
    words = WORDS.get(kind)
    return words(e, seat) if words is not None else None


def _proclaimed(e: pb.Proclaimed, seat: int | None) -> str:
    mate = f" with {who(e.teammate, seat)}" if e.HasField("teammate") else ""
    return (f"{does(e.seat, seat, 'proclaim', 'proclaims')} victory{mate}: "
            f"{e.gems} of the {e.required} gems needed")


def _ended(e: pb.GameEnded, seat: int | None) -> str:
    winners = listed([who(w, seat) for w in e.winners]) if e.winners else "nobody"
    why = f" ({e.reason})" if e.reason else ""
    return f"the game is over: {winners} won{why}"


def _stolen(e: pb.CardStolen, seat: int | None) -> str:
    if not e.stolen:
        return f"{who(e.seat, seat)} tried to steal from {who(e.target, seat)}: no card to take"
    what = f": {card(e.card)}" if e.card else ""
    return f"{who(e.seat, seat)} stole a card from {who(e.target, seat)}{what}"


def _passed(e: pb.CardsPassed, seat: int | None) -> str:
    mine = [f"{who(t.seat, seat)} passed {card(t.card)} to {who(t.to, seat)}"
            for t in e.transfers if seat in (t.seat, t.to)]
    head = f"every player passed a card to the {named(pb.Direction, e.direction)}"
    return head + (": " + "; ".join(mine) if mine else "")


WORDS = {
    "started": lambda e, s: f"a game of {e.players} players begins",
    "team_dealt": lambda e, s: f"{who(e.seat, s)} got {team(e.team)} card",
    "team_set_aside": lambda e, s: "a team card was set aside face down",
    "hand_dealt": lambda e, s: f"{who(e.seat, s)} got {cards(list(e.cards), e.count)}",
    "deck_formed": lambda e, s: f"the deck was formed: {plural(e.count, 'card')}",
    "first_player": lambda e, s: f"{does(e.seat, s, 'play', 'plays')} first",
    "proclaimed": _proclaimed,
    "game_ended": _ended,
    "trade_offered": lambda e, s: (f"{who(e.seat, s)} offered {who(e.target, s)} a trade"
                                   + (f" of {card(e.card)}" if e.card else "")),
    "trade_accepted": lambda e, s: (
        f"{who(e.target, s)} accepted {whose(e.seat, s)} trade"
        + (f": {card(e.offered)} for {card(e.returned)}" if e.offered else "")),
    "trade_rejected": lambda e, s: f"{who(e.target, s)} turned down {whose(e.seat, s)} trade",
    "card_drawn": lambda e, s: f"{who(e.seat, s)} drew {card(e.card) if e.card else 'a card'}",
    "deck_reshuffled": lambda e, s: (f"the discard pile was shuffled into a new deck of "
                                     f"{plural(e.count, 'card')}"),
    "nothing_to_draw": lambda e, s: f"{who(e.seat, s)} had nothing to draw",
    "turn_ended": lambda e, s: f"{whose(e.seat, s)} turn ended; now {whose(e.next, s)} turn",
    "announced": lambda e, s: f"{who(e.seat, s)} played {play_words(e.play, s)}",
    "cancel_played": lambda e, s: f"{who(e.seat, s)} answered with a Cancel",
    "mace_played": lambda e, s: f"{who(e.seat, s)} answered with the Mace of Light",
    "declined": lambda e, s: f"{who(e.seat, s)} let it pass",
    "window_closed": lambda e, s: (
        ("the response window closed" + (" at its deadline" if e.by_deadline else "")) + ": "
        + (f"cancelled by {plural(e.cancels, 'Cancel')}" if e.cancelled else "it takes effect")),
    "dark_swallow_drawn": lambda e, s: (f"{who(e.seat, s)} drew the Dark Swallow"
                                        + (", which ends the turn" if e.ends_turn else "")),
    "dark_swallow_returned": lambda e, s: (f"the Dark Swallow went back into the deck "
                                           f"({plural(e.deck_count, 'card')})"),
    "identity_looked": lambda e, s: (f"{who(e.seat, s)} looked at {whose(e.target, s)} team card"
                                     + (f": {team(e.team)}" if e.team else "")),
    "hands_swapped": lambda e, s: f"{who(e.seat, s)} swapped hands with {who(e.target, s)}",
    "deck_shuffled": lambda e, s: "the deck was shuffled",
    "card_stolen": _stolen,
    "hand_looked": lambda e, s: (f"{who(e.seat, s)} looked at {whose(e.target, s)} hand"
                                 + (f": {cards(list(e.cards))}" if e.cards else "")),
    "top_cards_taken": lambda e, s: (f"{who(e.seat, s)} took "
                                     f"{cards(list(e.cards), e.count)} from the top of the deck"),
    "top_cards_arranged": lambda e, s: (f"{who(e.seat, s)} put "
                                        f"{cards(list(e.cards), e.count)} back on the deck"),
    "card_requested": lambda e, s: (f"{who(e.seat, s)} asked {who(e.target, s)} for "
                                    f"{card(e.card)}: "
                                    + ("given" if e.given else "they had none")),
    "passing_started": lambda e, s: (f"every player passes a card to the "
                                     f"{named(pb.Direction, e.direction)}"),
    "pass_card_chosen": lambda e, s: (f"{who(e.seat, s)} chose "
                                      + (card(e.card) if e.card else "a card") + " to pass"),
    "cards_passed": _passed,
}


def view_hidden(view: pb.View) -> list[str]:
    """What the view leaves unset because its seat may not see it (View.hidden)."""
    paths = [f"players[{i}].team" for i, p in enumerate(view.players) if not p.team]
    if not view.HasField("seat"):
        paths += ["team", "hand"]
    if view.HasField("trade") and not view.trade.card:
        paths.append("trade.card")
    return paths


# ---- commands in words (LegalActions.words, `arbiter play`) ---------------------------------


COMMAND_GROUPS = {"proclaim": "proclaim victory", "offer": "offer a trade",
                  "accept": "answer a trade", "reject": "answer a trade", "play": "play cards",
                  "cancel": "answer the card played", "mace": "answer the card played",
                  "decline": "answer the card played", "pass_turn": "end the turn",
                  "end_turn": "end the turn", "arrange": "arrange the top cards",
                  "choose_pass": "pass a card", "close_window": "close the window"}


def describe_command(command: pb.Command, view: pb.View | None = None) -> str:
    """A command in words for the seat the view is for (others named as "seat N")."""
    s = view.seat if view is not None and view.HasField("seat") else None
    kind = command.WhichOneof("kind")
    if kind == "proclaim":
        mate = command.proclaim
        return ("proclaim victory with " + who(mate.teammate, s) if mate.HasField("teammate")
                else "proclaim victory alone")
    if kind == "offer":
        return f"offer {card(command.offer.card)} to {who(command.offer.target, s)}"
    if kind == "accept":
        return f"accept the trade, giving {card(command.accept.give)}"
    if kind == "reject":
        return "reject the trade"
    if kind == "play":
        return f"play {play_words(command.play, s)}"
    if kind == "cancel":
        return "answer with a Cancel"
    if kind == "mace":
        return "answer the Dark Swallow with the Mace of Light"
    if kind == "decline":
        return "let it happen (no answer)"
    if kind == "pass_turn":
        return "pass: draw one card and end your turn"
    if kind == "end_turn":
        return "end your turn"
    if kind == "arrange":
        return f"put back, from the top: {cards(list(command.arrange.order))}"
    if kind == "choose_pass":
        return f"pass {card(command.choose_pass.card)} to your neighbour"
    if kind == "close_window":
        return "close the response window"
    return "no action"


# ---- the catalog (Arbiter.GetCatalog) ---------------------------------------------------------

# Each card's text, from the rulebook (Moody Bear Kingdom Rulebook, "2. Play Item Cards",
# "Combo Cards" and "End of the Game"); a combo card's text names its combos.
COMBOS = ("Combos: two of a kind steal one card from a player; Forest Knight + Thunder "
          "Assassin: everyone passes a card left or right; Thunder Assassin + Ambassador of "
          "Earth: look at a player's hand; Forest Knight + Ambassador of Earth: look at and "
          "rearrange the top 3 cards; all three: request a card from a player.")
CARD_TEXTS = {
    pb.LAVA_GEM: ("Lava Gem", "If the Red Team can collect 3 of these cards, they can announce "
                  "the victory to win the game."),
    pb.SNOW_DIAMOND: ("Snow Diamond", "If the Blue Team can collect 3 of these cards, they can "
                      "announce the victory to win the game."),
    pb.DUO_JEWEL: ("Duo Jewel", "This jewel can be a substitute for Lava Gem or Snow Diamond."),
    pb.DARK_SWALLOW: ("Dark Swallow", "Shown to all when drawn. If no one uses the Mace of "
                      "Light, the game ends and the Solo team wins; if someone does, it returns "
                      "to the drawing deck at random."),
    pb.MACE_OF_LIGHT: ("Mace of Light", "Use this card to eliminate the Dark Swallow."),
    pb.REVEAL_IDENTITY: ("Reveal Identity", "Secretly look at one player's team card. You can "
                         "say anything after looking at it, but cannot show it to anyone."),
    pb.SWAP_HAND: ("Swap Hand", "Swap your hand with a target player's."),
    pb.SHUFFLE_THE_DECK: ("Shuffle the Deck", "Shuffle the drawing deck."),
    pb.CANCEL: ("Cancel the Curse", "Cancel any effect of another item. It can be used anytime "
                "and can break combo cards."),
    pb.THUNDER_ASSASSIN: ("Thunder Assassin", "This card alone cannot do anything. " + COMBOS),
    pb.AMBASSADOR: ("Ambassador of Earth", "This card alone cannot do anything. " + COMBOS),
    pb.FOREST_KNIGHT: ("Forest Knight", "This card alone cannot do anything. " + COMBOS),
}
TEAM_TEXTS = {
    pb.RED: ("Red team", "Collect all 3 Lava Gems and proclaim victory to win."),
    pb.BLUE: ("Blue team", "Collect all 3 Snow Diamonds and proclaim victory to win."),
    pb.SOLO: ("Solo team", "Win when the Dark Swallow happens before Red or Blue proclaims "
              "victory; no proclamation needed."),
}


def catalog() -> list[CatalogEntry]:
    return [*(CatalogEntry(pb.Card.Name(c), "card", name, text)
              for c, (name, text) in CARD_TEXTS.items()),
            *(CatalogEntry(pb.Team.Name(t), "team", name, text)
              for t, (name, text) in TEAM_TEXTS.items())]
