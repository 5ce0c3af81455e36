"""Bots for Moody Bear Kingdom. They see their seat's view and legal commands only.

- "random": any legal command.
- "passive": never plays a card, trades or proclaims: it declines, refuses and passes, and
  makes the choices the rules force on it (a card to pass, an order to arrange) at random.
  The Solo who does nothing but wait for the Dark Swallow, against which the teams' play
  is measured (docs/balance.md).
- "keeper": keeps its team's gems, cancels what hurts it, answers the Dark Swallow with a
  Mace (or, as Solo, cancels the Mace), hunts its gems with combos and trades, gathers its
  team's gems in one hand, and proclaims when its own hand is enough, or with a teammate
  when the two of them likely hold the gems, or, when the next draw is the Dark Swallow and
  it has no Mace, with the likeliest teammate.
"""

from __future__ import annotations

import math
from math import comb

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import Rng

from . import cards as C
from .cards import Card, Team, combo_of
from .state import SWALLOW_ENTRY, State

# Cards the keeper parts with last, most precious first (gems are added per team).
PRECIOUS = (C.MACE, C.CANCEL, C.REVEAL)
# The keeper proclaims with a teammate when the two of them hold the gems with at least this
# chance (a wrong proclamation hands the win to the other colour; waiting lets the Dark
# Swallow come).
PROCLAIM_WITH_TEAMMATE_AT = 0.5
# The teammate who gathers the gems holds a gem I cannot see about this many times as often
# as another card I cannot see (keepers keep their gems and hand them to it); measured over
# keeper games at 4 players.
GATHERER_WEIGHT = 2.0
# With this few cards left in the deck, a keeper with nothing better to do plays a combo
# that draws no card rather than trade or pass (either may draw the Dark Swallow).
STALL_AT = 8


def random_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    return rng.choice(legal)


# The passive bot's choice among the commands of a turn or a window, first found first.
DOING_NOTHING = ("decline", "reject", "close_window", "pass_turn", "end_turn")


def passive_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    for kind in DOING_NOTHING:
        found = next((c for c in legal if c.WhichOneof("kind") == kind), None)
        if found is not None:
            return found
    return rng.choice(legal)  # a choice the rules force: which card to pass, how to arrange


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
        gift = self.gem_to_teammate(rng)
        if gift is not None:
            return gift
        plays = [c for c in self.legal if c.WhichOneof("kind") == "play"]
        # Find the teammate first: proclaiming together and gathering gems need it.
        picks = (self.request, self.steal, self.reveal)
        if self.teammate() is None and len(self.view.players) > 3:
            picks = (self.reveal, self.request, self.steal)
        for pick in picks:
            chosen = pick(plays, rng)
            if chosen is not None:
                return chosen
        # A turn with nothing played ends with a draw, and every draw may be the Dark
        # Swallow: fish instead, which draws only when refused.
        if self.view.acted:
            return None
        stall = self.stall(plays) if self.view.deck_size <= STALL_AT else None
        return stall or self.fish(rng)

    def stall(self, plays: list[pb.Command]) -> pb.Command | None:
        """A play that draws no card: looking at the top three (a Dark Swallow among them
        goes last), else looking at a hand."""
        if self.team == C.SOLO:
            return None
        for combo in (C.TOP_THREE, C.LOOK_AT_HAND):
            chosen = next((c for c in plays if combo_of(c.play.cards) == combo), None)
            if chosen is not None:
                return chosen
        return None

    def proclaim(self) -> pb.Command | None:
        if not self.find("proclaim"):
            return None
        needed, _ = self.team_structure()
        mine = self.my_gems()
        mate = self.teammate()
        if mine >= needed:
            # Name the teammate when known: "s/he and his/her teammate ... has all the
            # requirements" (the gems are in my hand, so naming it risks nothing).
            together = pb.Proclaim() if mate is None else pb.Proclaim(teammate=mate)
            return pb.Command(proclaim=together)
        # Only the gatherer's partner counts on the gatherer's hand: the gatherer's partner
        # hands its gems over, so the gatherer cannot count on it.
        if mate is not None and mate < self.me:
            if self.holds_at_least(mate, needed - mine) >= PROCLAIM_WITH_TEAMMATE_AT:
                return pb.Command(proclaim=pb.Proclaim(teammate=mate))
        if self.cornered():
            # Waiting all but loses: proclaim with the seat likeliest to be a teammate
            # holding the missing gems, however small that chance.
            chances = {s: self.holds_at_least(s, needed - mine, 1.0)
                       for s in self.team_structure()[1]}
            best = max(chances, key=lambda s: chances[s], default=None)
            if best is not None and chances[best] > 0:
                return pb.Command(proclaim=pb.Proclaim(teammate=best))
        return None

    def cornered(self) -> bool:
        """The Dark Swallow is the only card left in the deck (outside a window it is
        always in the deck) and I hold no Mace of Light: the next draw brings it, and
        only someone else's Mace can stop it."""
        return self.view.deck_size <= 1 and C.MACE not in self.view.hand

    def teammate(self) -> int | None:
        """My teammate when the view tells: a team card seen, or the only seat left."""
        needed, candidates = self.team_structure()
        known = [s for s in candidates if self.view.players[s].team == self.team]
        if known:
            return known[0]
        sure = len(self.view.players) in (4, 5) and not self.view.options.five_player_structure
        return candidates[0] if sure and len(candidates) == 1 else None

    def gem_to_teammate(self, rng: Rng) -> pb.Command | None:
        """Gather the team's gems in one hand. With a known teammate, the one with the
        lower seat collects and the other offers it each gem it holds. While the teammate
        is unknown, a keeper holding a single gem offers it to a seat that may be the
        teammate, and one holding more keeps them (it collects): a keeper accepts a gem of
        its team and refuses any other, and a refused offerer draws a card instead, so a
        wrong guess costs no more than a pass."""
        mate = self.teammate()
        gems = [c for c in self.view.hand if c in self.gems]
        if mate is not None:
            seats = [mate] if mate < self.me else []
        else:
            seats = self.team_structure()[1] if len(gems) == 1 else []
        if not seats or not gems:
            return None
        offer = pb.Command(offer=pb.Offer(target=rng.choice(seats), card=gems[0]))
        return offer if offer in self.legal else None

    def fish(self, rng: Rng) -> pb.Command | None:
        """Offer a card of little worth to a player who is not a known teammate, known
        opponents first: one who holds a card it values less (a gem that is not its team's)
        may hand it back, and a refusal draws a card, as passing the turn would."""
        if self.team == C.SOLO:
            return None
        baits = [c for c in self.view.hand if self.value(c) == 1]
        targets = self.targets()
        rivals = [s for s in targets if self.view.players[s].team != pb.TEAM_UNSPECIFIED]
        if not baits or not targets:
            return None
        offer = pb.Command(offer=pb.Offer(target=rng.choice(rivals or targets), card=min(baits)))
        return offer if offer in self.legal else None

    def team_structure(self) -> tuple[int, list[int]]:
        """The gems my team needs and the seats that may be my teammate. The team cards are
        Red, Blue, Solo at 3 players (no teammate: 2 gems); Red, Red, Blue, Blue at 4 and
        with a Solo at 5 (one teammate); with the 4-player advanced structure one of Red,
        Red, Blue, Blue, Solo is set aside unseen, so my colour may have no other member."""
        players = self.view.players
        if len(players) == 3:
            return 2, []
        others = [p for p in players if p.seat != self.me]
        known = [p.seat for p in others if p.team == self.team]
        if known:
            return 3, known
        candidates = [p.seat for p in others if p.team == pb.TEAM_UNSPECIFIED]
        if self.view.options.five_player_structure and not candidates:
            return 2, []  # everyone else is known to be on another team: I am alone
        return 3, candidates

    def holds_at_least(self, seat: int, missing: int, weight: float = GATHERER_WEIGHT
                       ) -> float:
        """The chance that `seat` holds `missing` of my team's gems I cannot see: each of
        them is in its hand with its share of the cards I cannot see (other hands and the
        deck), its hand weighted by `weight` (the gatherer's, GATHERER_WEIGHT)."""
        total = 3 + (1 if self.view.options.duo_jewel else 0)
        seen = sum(1 for c in (*self.view.hand, *self.view.discard) if c in self.gems)
        unseen = total - seen
        hand = self.view.players[seat].hand_size
        rest = self.view.deck_size + sum(
            p.hand_size for p in self.view.players if p.seat not in (self.me, seat))
        if missing > min(unseen, hand) or hand + rest <= 0:
            return 0.0
        share = weight * hand / (weight * hand + rest)
        return sum(comb(unseen, k) * share**k * (1 - share) ** (unseen - k)
                   for k in range(missing, unseen + 1))

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


BOTS = {"random": random_bot, "keeper": keeper_bot, "passive": passive_bot}


# ---- the search bots' estimate ------------------------------------------------------------

# Weights of logistic models of "the seat's team wins", one for a colour team and one for
# the Solo, fitted to 174,215 (position, seat) pairs from 1,000 five-seat games of the keeper
# against itself (log loss 0.568 on the odd games when fitted to the even ones, against 0.625
# for the base rate). In the order of _colour_features and _solo_features.
# Regenerate: .venv/bin/python -m loadtests.fit_estimates moody_bear --games 1000
COLOUR_WEIGHTS = (-0.831, 1.051, 0.24, 1.223, 0.732, -0.644, -0.339, -0.697, -0.792, -0.783,
                  0.005, 0.051)
SOLO_WEIGHTS = (0.265, 0.976, -0.556, 0.235, -0.642, -0.482, -0.505, 0.287)


def _swallow_near(state: State) -> float:
    """1 when the Dark Swallow is on the stack or next to draw, 1/(k+1) with k cards above
    it."""
    if any(e.kind == SWALLOW_ENTRY for e in state.stack):
        return 1.0
    for cards in (state.top, state.deck):
        if C.DARK_SWALLOW in cards:
            return 1.0 / (1 + cards.index(C.DARK_SWALLOW))
    return 0.0


def _side(state: State, team: Team) -> tuple[float, float, float, float, int]:
    """A colour team's standing: one hand holds the gems it needs; the most gems in one hand
    and in all its hands (over the need); it could proclaim now (a full hand, or two
    members who know each other and hold enough together); its Maces."""
    members = [p for p in range(state.players) if state.teams[p] == team]
    if not members:
        return 0.0, 0.0, 0.0, 0.0, 0
    gems = (C.GEM_OF[team], C.DUO_JEWEL)
    need = 2 if len(members) == 1 else 3
    counts = [sum(1 for c in state.hands[p] if c in gems) for p in members]
    ready = 1.0 if max(counts) >= need else 0.0
    knows = len(members) == 1 or any(set(members) <= state.known[p] for p in members)
    together = 1.0 if knows and sum(counts) >= need else 0.0
    maces = sum(state.hands[p].count(C.MACE) for p in members)
    return ready, max(counts) / need, sum(counts) / need, max(ready, together), maces


def _solo_features(state: State) -> tuple[float, ...]:
    solo = [p for p in range(state.players) if state.teams[p] == C.SOLO]
    maces = sum(h.count(C.MACE) for h in state.hands)
    red, blue = _side(state, C.RED), _side(state, C.BLUE)
    return (1.0, _swallow_near(state),
            maces - sum(state.hands[p].count(C.MACE) for p in solo),
            sum(state.hands[p].count(C.CANCEL) for p in solo),
            red[0] + blue[0], red[3] + blue[3], max(red[1], blue[1]), len(state.deck) / 40)


def _colour_features(state: State, team: Team) -> tuple[float, ...]:
    mine, theirs = _side(state, team), _side(state, C.OPPONENT[team])
    solo = any(t == C.SOLO for t in state.teams)
    return (1.0, *mine[:4], *theirs[:4], _swallow_near(state) if solo else 0.0,
            mine[4] - theirs[4], 1.0 if state.teams[state.turn] == team else 0.0)


def estimate(state: State, seat: int) -> float:
    """How likely the seat's team is to win from here (Game.estimate), in (0, 1). It reads
    the whole state: the search hands it a world re-dealt from the seat's view."""
    team = state.teams[seat]
    weights: tuple[float, ...]
    features: tuple[float, ...]
    if team == C.SOLO:
        weights, features = SOLO_WEIGHTS, _solo_features(state)
    else:
        weights, features = COLOUR_WEIGHTS, _colour_features(state, team)
    x = sum(w * f for w, f in zip(weights, features, strict=True))
    return 1 / (1 + math.exp(-x))


# ---- what the search bots weigh ------------------------------------------------------------

# Cards worth naming with the three-card combo besides the team's gems: those a hand needs to
# answer the Dark Swallow and to keep a card from taking effect.
WORTH_NAMING = (C.MACE, C.CANCEL)


def candidates(view: pb.View, legal: list[pb.Command]) -> list[pb.Command]:
    """The commands a search bot weighs (Game.candidates): a turn offers every card to every
    seat and names any card with the three-card combo, up to 81 commands, most of which
    differ only in a card nobody cares about. Kept: offers of the team's gems and of the
    card the keeper values least, and requests naming a gem of the team or a card in
    WORTH_NAMING; every other command."""
    keeper = Keeper(view, legal)
    hand = list(view.hand)
    cheapest = keeper.cheapest(hand) if hand else None
    named = (*keeper.gems, *WORTH_NAMING)
    kept = []
    for command in legal:
        kind = command.WhichOneof("kind")
        if kind == "offer" and command.offer.card not in (*keeper.gems, cheapest):
            continue
        if (kind == "play" and combo_of(command.play.cards) == C.REQUEST
                and command.play.named not in named):
            continue
        kept.append(command)
    return kept
