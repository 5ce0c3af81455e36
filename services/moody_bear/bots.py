"""Bots for Moody Bear Kingdom. They see their seat's view and legal commands only.

- "random": any legal command.
- "keeper": keeps its team's gems, cancels what hurts it, answers the Dark Swallow with a
  Mace (or, as Solo, cancels the Mace), hunts its gems with combos and proclaims only when
  its own hand is enough.
"""

from __future__ import annotations

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import Rng

from . import cards as C
from .cards import Card, combo_of

# Cards the keeper parts with last, most precious first (gems are added per team).
PRECIOUS = (C.MACE, C.CANCEL, C.REVEAL)


def random_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    return rng.choice(legal)


def keeper_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    return Keeper(view, legal).choose(rng)


class Keeper:
    def __init__(self, view: pb.View, legal: list[pb.Command]) -> None:
        self.view = view
        self.legal = legal
        self.me = view.seat
        self.team = view.team
        gem = C.GEM_OF.get(self.team)
        self.gems: tuple[Card, ...] = (gem, C.DUO_JEWEL) if gem else ()

    # ---- helpers ------------------------------------------------------------------------

    def find(self, kind: str) -> pb.Command | None:
        return next((c for c in self.legal if c.WhichOneof("kind") == kind), None)

    def value(self, card: Card) -> int:
        """How much the keeper wants to keep a card (higher: keep)."""
        if card in self.gems:
            return 10
        if card == C.DARK_SWALLOW:
            return -1
        if card in PRECIOUS:
            return 5 - PRECIOUS.index(card)
        if card in (C.LAVA_GEM, C.SNOW_DIAMOND):
            return 0  # the other team's gem: worth giving away only to non-owners
        return 1

    def cheapest(self, cards: list[Card]) -> Card:
        return min(cards, key=lambda c: (self.value(c), c))

    def teammate_known(self, seat: int) -> bool:
        return self.view.players[seat].team == self.team and self.team != C.SOLO

    def my_gems(self) -> int:
        return sum(1 for c in self.view.hand if c in self.gems)

    # ---- decisions ----------------------------------------------------------------------

    def choose(self, rng: Rng) -> pb.Command:
        phase = self.view.phase
        chosen: pb.Command | None = None
        if phase == pb.WINDOW:
            chosen = self.answer()
        elif phase == pb.TRADE:
            chosen = self.answer_trade()
        elif phase == pb.ARRANGE:
            chosen = self.arrange()
        elif phase == pb.PASSING:
            chosen = self.pass_card()
        elif phase == pb.TURN:
            chosen = self.turn(rng)
        if chosen is None or chosen not in self.legal:
            chosen = self.find("decline") or self.find("pass_turn") or self.find("end_turn")
        return chosen if chosen is not None else rng.choice(self.legal)

    def answer(self) -> pb.Command | None:
        stack = list(self.view.window.stack)
        top = stack[-1]
        if top.kind == pb.DARK_SWALLOW_ENTRY:
            return self.find("mace") if self.team != C.SOLO else None
        base = len(stack) - 1
        while stack[base].kind == pb.CANCEL_ENTRY:
            base -= 1
        happens = (len(stack) - 1 - base) % 2 == 0
        if happens != self.wants(stack[base]):
            return self.find("cancel")
        return None

    def wants(self, entry: pb.StackEntry) -> bool:
        """Whether the keeper wants this card to take effect."""
        if entry.kind == pb.MACE:
            return self.team != C.SOLO
        if entry.seat == self.me or self.teammate_known(entry.seat):
            return True
        play = entry.play
        if not play.HasField("target") or play.target != self.me:
            return True
        combo = combo_of(play.cards)
        if combo in (C.STEAL, C.SWAP_HAND):
            return self.my_gems() == 0
        if combo == C.REQUEST:
            return play.named not in self.gems or play.named not in self.view.hand
        return True

    def answer_trade(self) -> pb.Command | None:
        offered = self.view.trade.card
        hand = list(self.view.hand)
        if hand and self.value(offered) > self.value(self.cheapest(hand)):
            return pb.Command(accept=pb.Accept(give=self.cheapest(hand)))
        return self.find("reject")

    def arrange(self) -> pb.Command:
        # Solo wants the Dark Swallow drawn soon; everyone else wants it buried.
        first = self.team == C.SOLO
        top = sorted(self.view.top_cards, key=lambda c: (c == C.DARK_SWALLOW) != first)
        return pb.Command(arrange=pb.Arrange(order=top))

    def pass_card(self) -> pb.Command:
        return pb.Command(choose_pass=pb.ChoosePass(card=self.cheapest(list(self.view.hand))))

    def turn(self, rng: Rng) -> pb.Command | None:
        claim = self.proclaim()
        if claim is not None:
            return claim
        plays = [c for c in self.legal if c.WhichOneof("kind") == "play"]
        for pick in (self.request, self.steal, self.reveal):
            chosen = pick(plays, rng)
            if chosen is not None:
                return chosen
        return None

    def proclaim(self) -> pb.Command | None:
        alone = len(self.view.players) == 3  # a colour team of one needs 2 gems
        if self.find("proclaim") and self.my_gems() >= (2 if alone else 3):
            return pb.Command(proclaim=pb.Proclaim())
        return None

    def targets(self) -> list[int]:
        """Other players, not known teammates, biggest hands first."""
        players = [p for p in self.view.players if p.seat != self.me]
        players = [p for p in players if not self.teammate_known(p.seat)]
        return [p.seat for p in sorted(players, key=lambda p: -p.hand_size) if p.hand_size]

    def request(self, plays: list[pb.Command], rng: Rng) -> pb.Command | None:
        if not self.gems:
            return None
        targets = self.targets()
        for c in plays:
            p = c.play
            if combo_of(p.cards) == C.REQUEST and p.named == self.gems[0] and targets:
                if p.target == targets[0]:
                    return c
        return None

    def steal(self, plays: list[pb.Command], rng: Rng) -> pb.Command | None:
        targets = self.targets()
        for c in plays:
            p = c.play
            if combo_of(p.cards) == C.STEAL and targets and p.target == targets[0]:
                return c
        return None

    def reveal(self, plays: list[pb.Command], rng: Rng) -> pb.Command | None:
        unknown = {p.seat for p in self.view.players if p.team == pb.TEAM_UNSPECIFIED}
        for c in plays:
            p = c.play
            if combo_of(p.cards) == C.REVEAL_IDENTITY and p.target in unknown:
                return c
        return None


BOTS = {"random": random_bot, "keeper": keeper_bot}
