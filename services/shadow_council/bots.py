"""Shadow Council's AI players. They decide from their seat's View and legal commands only.

- "random": any legal command.
- "sleuth": keeps a belief over every seat's shadow identity, its own included (rebuilt from
  the view's private clue history and public facts, see belief.py), plays cards toward the
  faction it believes it belongs to, investigates while unsure, attacks likely enemies and
  guesses only when nearly certain.
"""

from __future__ import annotations

import math

from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import Rng
from services.shadow_council import data
from services.shadow_council.belief import Belief
from services.shadow_council.rules import Play
from services.shadow_council.state import (
    Clue,
    Fact,
    State,
    card_name,
    clue_of,
    identity_name,
    name_of,
    suit_name,
)

FACT_KINDS = {pb.FACT_REVEALED: "REVEALED", pb.FACT_WRONG_GUESS: "WRONG_GUESS",
              pb.FACT_BRAINWASHED: "BRAINWASHED"}

GUESS_CONFIDENCE = 0.95  # guess only when the identity is (nearly) certain
ATTACK_CONFIDENCE = 0.7  # Dark Assassinate only a likely enemy


def random_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    return rng.choice(legal)


def clues_seen(view: pb.View) -> list[Clue]:
    """The seat's clues, read back from its view as the state holds them."""
    return [clue_of(c, c.tick, c.round) for c in view.clues]


def belief_from_view(view: pb.View) -> Belief:
    """Rebuild the seat's belief from its view alone."""
    clues = clues_seen(view)
    facts = [
        Fact(
            tick=f.tick,
            kind=FACT_KINDS[f.kind],
            subject=f.subject,
            identity=identity_name(f.identity),
            other=identity_name(f.other) if f.other else "",
        )
        for f in view.facts
    ]
    in_play = [identity_name(i) for i in view.in_play]
    return Belief.build(len(view.seats), in_play, clues, facts)


class _Mind:
    """The sleuth's reading of the table for one decision."""

    def __init__(self, view: pb.View) -> None:
        self.view = view
        self.me = view.seat
        self.belief = belief_from_view(view)
        self.p_order = self.belief.p_faction(self.me, data.ORDER)
        self.faction = data.ORDER if self.p_order >= 0.5 else data.CHAOS
        self.confidence = max(self.p_order, 1 - self.p_order)
        self.event = name_of(pb.GlobalEvent, view.event, "EVENT_") if view.event else ""
        me = view.seats[self.me]
        self.gold = me.gold
        self.hand = [card_name(c) for c in view.hand]

    def p_enemy(self, seat: int) -> float:
        return 1.0 - self.belief.p_same_faction(self.me, seat)

    def hostility(self, seat: int) -> float:
        """+1 for a sure enemy, -1 for a sure friend."""
        return 2 * self.p_enemy(seat) - 1

    def zone_value(self, zone: str, points: int) -> float:
        """Points pushed toward my believed faction (negative toward the other)."""
        mine = data.ORDER_ZONES if self.faction == data.ORDER else data.CHAOS_ZONES
        sign = 1 if zone in mine else -1
        return sign * points * (2 * self.confidence - 1)

    def guarded(self, seat: int) -> bool:
        return self.view.seats[seat].guarded

    # ---- scoring commands ------------------------------------------------------------

    def score(self, cmd: pb.Command) -> float:
        kind = cmd.WhichOneof("kind")
        if kind == "end_turn":
            return 0.0
        if kind == "free_reflect":
            return 50.0 if self.belief.uncertainty(self.me) > 0 else 0.5
        if kind in ("free_peek", "gold_peek"):
            target = getattr(cmd, kind).target
            value = 10 * self.belief.uncertainty(target)
            if kind == "gold_peek":
                cost = self.view.gold_peek_cost
                value -= 1.0 + (20 if self.gold - cost < 2 else cost / 2)
            else:
                value += 5
            return value
        if kind == "play":
            return self.score_card(cmd.play)
        return 0.0

    def score_card(self, play: pb.PlayCard) -> float:
        card = card_name(play.card)
        spec = data.CARDS[card]
        suit = suit_name(play.suit) if card == "FORGE" else spec.suit
        targets = [play.target] if play.HasField("target") else []
        if play.HasField("second_target"):
            targets.append(play.second_target)
        p = Play(self.me, card, suit, tuple(targets), "", self.event)
        value = 0.0
        # Survival first: never spend the last card while broke.
        if self.gold == 0 and len(self.hand) == 1 and card not in ("TAX", "BOUNTY", "INVEST",
                                                                   "CONSPIRACY", "BRIBE"):
            return -100.0
        value += self._zones(card, p)
        value += self._resources(card, p)
        value += self._against(card, p, targets)
        value += self._intelligence(card, play, targets)
        return value - 0.4  # a card in hand is worth something too

    def _zones(self, card: str, p: Play) -> float:
        points = {
            "RALLY": [("MILITARY", 3)],
            "SIEGE": [("MILITARY", 2)],
            "CHARGE": [("MILITARY", 4)],
            "MUTINY": [("MILITARY", 2), ("ECONOMY", -1)],
            "MONOPOLY": [("ECONOMY", 3)],
            "INVEST": [("ECONOMY", 2)],
            "THRIFT": [("ECONOMY", 1)],
            "FORGE": [(data.ZONE_OF_SUIT[p.suit], 2)],
            "PROPAGANDA": [("SHADOW_ALLEY", 2)],
            "SCHEME": [("STRATEGY", 3)],
            "SECRET_ORDER": [("STRATEGY", 2)],
            "DARK_ALLEY": [("SHADOW_ALLEY", 3)],
            "CONSPIRACY": [("SHADOW_ALLEY", 2)],
        }.get(card, [])
        return sum(self.zone_value(zone, p.amount(n)) for zone, n in points)

    def _resources(self, card: str, p: Play) -> float:
        gold = {"TAX": 2, "INVEST": 1, "BOUNTY": 3, "CONSPIRACY": 1}.get(card, 0)
        cards = {"CONSCRIPT": 2, "TRADE": 1, "THRIFT": 1, "SECRET_ORDER": 1}.get(card, 0)
        gold_worth = 1.0 if self.gold <= 2 else 0.3
        card_worth = 0.9 if len(self.hand) <= 3 else 0.3
        return p.amount(gold) * gold_worth + p.amount(cards) * card_worth

    def _against(self, card: str, p: Play, targets: list[int]) -> float:
        value = 0.0
        for t in targets:
            blocked = self.guarded(t) and not (
                self.event == "DARK_NIGHT" and card in ("DARK_ASSASSINATE", "POISON")
            )
            h = self.hostility(t)
            if card == "DARK_ASSASSINATE":
                if blocked or self.p_enemy(t) < ATTACK_CONFIDENCE:
                    value -= 3
                else:
                    value += 8 * h
            elif card in ("ASSASSINATE", "SOW_DISCORD", "BANKRUPT", "BRIBE", "SIEGE"):
                value += 0.1 if blocked else 0.8 * h
            elif card == "TRADE":
                value -= 0.4 * h
            elif card == "BRAINWASH":
                # The target's new shadow is its public identity, which everyone sees.
                public = identity_name(self.view.seats[t].public_identity)
                becomes_friend = data.FACTION[public] == self.faction
                now_friend = 1 - self.p_enemy(t)
                value += 5 * ((1.0 if becomes_friend else 0.0) - now_friend) * self.confidence
            elif card == "DISGUISE":
                value -= 0.5
        if card == "GUARD":
            value += 0.3 if any(v.guarded for v in self.view.seats if v.seat == self.me) else 1.2
        if card == "CHAOS":
            value -= 0.3
        return value

    def _intelligence(self, card: str, play: pb.PlayCard, targets: list[int]) -> float:
        if card == "REFLECT":
            return 6 * self.belief.uncertainty(self.me) + 0.2
        if card in ("PEEK", "POISON", "EAVESDROP"):
            t = targets[0]
            blocked = card == "POISON" and self.guarded(t) and self.event != "DARK_NIGHT"
            if blocked:
                return -0.5
            weight = 5 if card == "EAVESDROP" else 3
            return weight * self.belief.uncertainty(t)
        if card == "PROPHECY":
            p = self.belief.p(targets[0], identity_name(play.guess))
            return 2 * p - (1 - p) + self.belief.uncertainty(targets[0])
        if card in ("SCOUT", "INSIGHT"):
            return 0.2
        return 0.0

    # ---- the other decisions ---------------------------------------------------------

    def guess_value(self, cmd: pb.Command) -> float:
        if cmd.WhichOneof("kind") == "skip_guess":
            return 0.0
        g = cmd.guess
        p = self.belief.p(g.target, identity_name(g.identity))
        if p < GUESS_CONFIDENCE:
            return -1.0
        # A correct guess eliminates the target: worth it against an enemy only.
        return p * self.hostility(g.target) - (1 - p) * 2

    def assassin_value(self, cmd: pb.Command) -> float:
        card = card_name(cmd.assassin.discard)
        keep = {"DARK_ASSASSINATE": 3, "EAVESDROP": 2, "REFLECT": 2, "GUARD": 1.5}.get(card, 0)
        return self.hostility(cmd.assassin.target) - keep


def sleuth_bot(view: pb.View, legal: list[pb.Command], rng: Rng) -> pb.Command:
    mind = _Mind(view)
    kind = legal[0].WhichOneof("kind")
    if kind in ("guess", "skip_guess"):
        scorer = mind.guess_value
    elif kind == "assassin":
        scorer = mind.assassin_value
    else:
        scorer = mind.score
    scored = [(scorer(cmd), i) for i, cmd in enumerate(legal)]
    best = max(score for score, _ in scored)
    ties = [i for score, i in scored if score == best]
    return legal[rng.choice(ties)]


BOTS = {"random": random_bot, "sleuth": sleuth_bot}


# ---- the search bots' estimate ------------------------------------------------------------

# Weights of a logistic model of "the seat's faction wins", fitted to 114,100 (position,
# seat) pairs from 1,500 five-seat games of the sleuth against itself (log loss 0.446 on the
# odd games when fitted to the even ones, against 0.643 for the base rate; 78.5% of outcomes
# called right). In the order of _features.
# Regenerate: .venv/bin/python -m loadtests.fit_estimates shadow_council --games 1500
ESTIMATE_WEIGHTS = (-0.145, 0.737, 0.067, -0.048, 0.026, 0.197,
                    0.18, -0.021, 0.296, 0.146, 0.496, 0.702)


def _features(state: State, seat: int) -> tuple[float, ...]:
    """What decides the tally, from the seat's faction's side (+ mine, - theirs): survivors,
    the zone lead and margin, survivors' gold and cards; the same again weighted by how far
    the game has gone (a lead late is worth more); whether the seat itself is alive."""
    mine = state.faction(seat)
    survivors = gold = cards = 0
    for other in state.survivors():
        sign = 1 if state.faction(other) == mine else -1
        survivors += sign
        gold += sign * state.gold[other]
        cards += sign * len(state.hands[other])
    order = sum(state.zone(z) for z in data.ORDER_ZONES)
    chaos = sum(state.zone(z) for z in data.CHAOS_ZONES)
    zones = (order - chaos) if mine == data.ORDER else (chaos - order)
    lead = (zones > 0) - (zones < 0)
    gone = max(0, state.round - 1) / state.rounds
    return (1.0, survivors, lead, zones / 5, gold / 10, cards / 10,
            survivors * gone, lead * gone, zones / 5 * gone, gold / 10 * gone,
            cards / 10 * gone, 1.0 if state.alive[seat] else 0.0)


def estimate(state: State, seat: int) -> float:
    """How likely the seat's faction is to win from here (Game.estimate), in (0, 1)."""
    x = sum(w * f for w, f in zip(ESTIMATE_WEIGHTS, _features(state, seat), strict=True))
    return 1 / (1 + math.exp(-x))
