"""Bubble and Shadow's events in words, for one seat (View.happened, `arbiter play`).

Each event is redacted for the seat first: another player's deal reads "seat 2 drew
3 tokens", never which.
"""

from __future__ import annotations

from functools import cache

from arbiter.bubble_shadow.v1 import bubble_shadow_pb2 as pb

from services.bubble_shadow.cards import card_pb
from services.bubble_shadow.view import redact
from services.core.decider import CatalogEntry
from services.core.happened import does, listed, named, plural, who, whose


def token(value: int) -> str:
    return named(pb.Token, value) if value else "a hidden token"


def price(p: pb.Price) -> str:
    return f"{p.quantity} {token(p.token)}" if p.token else "nothing"


def counts(items: list[pb.TokenCount] | tuple[pb.TokenCount, ...]) -> str:
    return listed([f"{c.count} {token(c.token)}" for c in items]) if items else "nothing"


def _deal(d: pb.SeatDeal, s: int | None) -> str:
    if d.tokens or d.hand:
        got = []
        if d.hand:
            got.append(f"pact cards {listed([str(c) for c in d.hand])}")
        if d.tokens:
            got.append(counts(list(d.tokens)))
        text = f"{who(d.seat, s)} got {listed(got)}"
    else:
        got = [plural(d.hand_count, "pact card")] if d.hand_count else []
        got.append(plural(d.token_count, "token"))
        text = f"{who(d.seat, s)} got {listed(got)}"
    return text + (" and the Crown" if d.crown else "")


def _played(e: pb.PactPlayed, s: int | None) -> str:
    where = f" from public slot {e.public_slot + 1}" if e.HasField("public_slot") else ""
    blank = f", naming {price(e.blank_end)} as its blank end" if e.blank_end.token else ""
    return (f"{who(e.magician, s)} offered pact {e.card}{where} to {who(e.mortal, s)}{blank}")


def _signed(e: pb.PactSigned, s: int | None) -> str:
    return (f"{who(e.mortal, s)} signed {whose(e.magician, s)} pact: {who(e.mortal, s)} "
            f"paid {len(e.mortal_paid)} of {price(e.mortal_price)}, {who(e.magician, s)} "
            f"paid {len(e.magician_paid)} of {price(e.magician_price)}")


def _faces(e: pb.FacesChosen, s: int | None) -> str:
    if not e.HasField("faces"):
        return f"{who(e.seat, s)} chose the faces of their Palettes and Chess Pieces"
    f = e.faces
    return (f"{who(e.seat, s)} turned {plural(f.palettes_on_moon, 'Palette')} to the Moon and "
            f"{plural(f.chess_on_bubble, 'Chess Piece')} to the Bubble")


def _resolved(e: pb.RoundResolved, s: int | None) -> str:
    souls = listed([f"{who(t.seat, s)} {t.soul}" for t in e.tallies])
    return f"round {e.round} is resolved; Soul Tokens scored: {souls}"


def _ended(e: pb.GameEnded, s: int | None) -> str:
    winners = listed([who(w, s) for w in e.winners]) if e.winners else "nobody"
    totals = ", ".join(str(t) for t in e.soul_totals)
    return f"the game is over: {winners} won (Soul Tokens {totals})"


WORDS = {
    "game_set_up": lambda e, s: (f"a game of {e.players} players is set up; "
                                 f"{who(e.first_magician, s)} "
                                 f"{'are' if e.first_magician == s else 'is'} the first "
                                 "Magician"),
    "round_started": lambda e, s: (f"round {e.round} begins with {who(e.magician, s)} as "
                                   f"Magician; " + "; ".join(_deal(d, s) for d in e.deals)),
    "faces_chosen": _faces,
    "pact_played": _played,
    "pact_signed": _signed,
    "phase_ended": lambda e, s: f"phase {e.phase} is over",
    "tokens_drawn": lambda e, s: _deal(e.deal, s),
    "satisfaction_declared": lambda e, s: f"{does(e.seat, s, 'declare', 'declares')} "
                                          "satisfaction",
    "phase_started": lambda e, s: (f"{'the final ' if e.final else ''}phase {e.phase} begins "
                                   f"with {who(e.magician, s)} as Magician"),
    "round_ended": lambda e, s: (f"round {e.round} is over; the screens open"
                                 + (f"; {who(e.crown_holder, s)} "
                                    f"{'hold' if e.crown_holder == s else 'holds'} the Crown"
                                    if e.crown_holder >= 0 else "")),
    "crown_used": lambda e, s: (f"{who(e.seat, s)} used the Crown to swap "
                                f"{token(e.swap.first)} and {token(e.swap.second)}"
                                if e.swap.first else f"{who(e.seat, s)} kept the Crown unused"),
    "tokens_revealed": lambda e, s: "the screens are lifted: " + "; ".join(
        f"{who(x.seat, s)}: {counts(list(x.front) + list(x.behind))}" for x in e.seats),
    "snake_discarded": lambda e, s: (f"{whose(e.seat, s)} Snake discarded 5 "
                                     f"{token(e.price)}: {counts(list(e.removed))} left the "
                                     "game"),
    "round_resolved": _resolved,
    "game_ended": _ended,
    "snake_chosen": lambda e, s: (f"{who(e.seat, s)} answered the Snake step"
                                  + (f": {token(e.price)}" if e.price else "")),
}


def describe(event: pb.Event, seat: int | None) -> str | None:
    shown = redact(event, seat)
    if shown is None:
        return None
    kind = shown.WhichOneof("kind")
    words = WORDS.get(kind or "")
    return words(getattr(shown, kind), seat) if kind and words else None


def view_hidden(view: pb.View) -> list[str]:
    """What the view leaves unset because its seat may not see it (View.hidden)."""
    paths = []
    for i, p in enumerate(view.players):
        if p.behind_count and not p.behind:
            paths.append(f"players[{i}].behind")
        if p.hand_count and not p.hand:
            paths.append(f"players[{i}].hand")
    return paths


# ---- commands in words (LegalActions.words, `arbiter play`) ---------------------------------


@cache
def pact(card_id: int) -> str:
    """"pact 12 (2 moon / 1 silver)": a pact card by its number and printed ends (which never
    change: worded once)."""
    ends = card_pb(card_id).ends
    return f"pact {card_id} ({' / '.join(price(p) for p in ends)})"


def _play_pact(p: pb.PlayPact, view: pb.View | None, s: int | None) -> str:
    blank = f", naming {price(p.blank_end)} as its blank end" if p.blank_end.token else ""
    if not p.HasField("public_slot"):
        return f"offer {pact(p.card)} to {who(p.mortal, s)}{blank}"
    slot = p.public_slot
    public = (view.public_pacts[slot].id if view is not None and slot < len(view.public_pacts)
              else None)
    played = pact(public) if public is not None else f"the pact of public slot {slot + 1}"
    return (f"put {pact(p.card)} in public slot {slot + 1} and offer {played} to "
            f"{who(p.mortal, s)}{blank}")


def _sign(end: int, view: pb.View | None) -> str:
    if view is None or not view.pending.HasField("card"):
        return f"sign the pact, turning end {end + 1} toward you"
    ends = [*view.pending.card.ends]
    if view.pending.blank_end.token:
        ends.append(view.pending.blank_end)
    if len(ends) != 2 or end > 1:
        return f"sign the pact, turning end {end + 1} toward you"
    return f"sign the pact: you pay {price(ends[end])}, the Magician pays {price(ends[1 - end])}"


COMMAND_GROUPS = {"play_pact": "offer a pact", "sign_pact": "sign the pact",
                  "choose_faces": "choose faces", "use_crown": "the Crown",
                  "discard_for_snake": "the Snake", "draw_tokens": "end of the phase",
                  "declare_satisfaction": "end of the phase"}


def describe_command(command: pb.Command, view: pb.View | None = None) -> str:
    """A command in words for the seat the view is for (others named as "seat N")."""
    s = view.seat if view is not None and view.HasField("seat") else None
    kind = command.WhichOneof("kind")
    if kind == "play_pact":
        return _play_pact(command.play_pact, view, s)
    if kind == "sign_pact":
        return _sign(command.sign_pact.end, view)
    if kind == "choose_faces":
        f = command.choose_faces
        return (f"turn {plural(f.palettes_on_moon, 'Palette')} to the Moon and "
                f"{plural(f.chess_on_bubble, 'Chess Piece')} to the Bubble")
    if kind == "use_crown":
        c = command.use_crown
        return (f"use the Crown: swap the {token(c.first)} and {token(c.second)} quantities"
                if c.first else "keep the Crown unused")
    if kind == "discard_for_snake":
        p = command.discard_for_snake.price
        return f"discard 5 {token(p)} for the Snake" if p else "answer the Snake step"
    if kind == "draw_tokens":
        return "draw tokens for the pacts you signed"
    if kind == "declare_satisfaction":
        return "declare satisfaction"
    return "no action"


# ---- the catalog (Arbiter.GetCatalog) ---------------------------------------------------------

# The Price Tokens, from the rulebook (Bubble and Shadow Rulebook: "Resolution" for the three
# main prices, "Special Price Token" for the others, in its words where it has some).
PALETTE = ("Replaces a Moon at setup. Its two sides are the Moon and the Silver Coin: the "
           "drawer chooses the side up, and whoever receives it in a payment tosses it.")
CHESS = ("Replaces a Bubble at setup. Its two sides are the Bubble and the Silver Coin: the "
         "drawer chooses the side up, and whoever receives it in a payment tosses it.")
TOKENS = {
    pb.MOON: ("Moon", "A main price. At resolution the player with the most Moons (among "
              "those still in it) scores 3 Soul Tokens."),
    pb.SILVER: ("Silver Coin", "A main price. At resolution the fewest Silver Coins score 1 "
                "Soul Token and leave it; more than 6 count their excess as Bubbles for the "
                "first step."),
    pb.BUBBLE: ("Bubble", "A main price. At resolution the player(s) with the most Bubbles "
                "are out and score no Soul Token."),
    pb.APPLE: ("Apple", "Replaces a Moon at setup. A Moon while actions are taken; converts "
               "into a Bubble before resolution, and remains a Bubble throughout it."),
    pb.ROSE: ("Rose", "Replaces a Bubble at setup. A Bubble while actions are taken; converts "
              "into a Moon before resolution, and remains a Moon throughout it."),
    pb.SNAKE: ("Snake", "Replaces a Silver Coin at setup and counts as 1 Silver Coin. Before "
               "resolution, if a type of Price Token you hold reaches 5, you must discard 5 of "
               "them (choose one if several qualify); once, however many Snakes you hold."),
    pb.OYSTER: ("Oyster", "Replaces a Silver Coin at setup. 1 Silver Coin when signing and "
                "fulfilling a Pact; converts into 4 Silver Coins before resolution. Not "
                "affected by the Crown."),
    pb.CROWN: ("Crown", "Added at setup without replacing anything, kept in front of the "
               "screen. Before resolution its holder may swap the quantities of two main "
               "prices, or forgo it."),
    pb.PALETTE: ("Palette", PALETTE + " Its side is not chosen yet."),
    pb.PALETTE_MOON: ("Palette (Moon side)", PALETTE),
    pb.PALETTE_SILVER: ("Palette (Silver Coin side)", PALETTE),
    pb.CHESS: ("Chess Piece", CHESS + " Its side is not chosen yet."),
    pb.CHESS_BUBBLE: ("Chess Piece (Bubble side)", CHESS),
    pb.CHESS_SILVER: ("Chess Piece (Silver Coin side)", CHESS),
}


def catalog() -> list[CatalogEntry]:
    return [CatalogEntry(pb.Token.Name(t), "token", name, text)
            for t, (name, text) in TOKENS.items()]
