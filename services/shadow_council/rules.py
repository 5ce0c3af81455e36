"""Shadow Council's decider: setup, decide, to_act, legal_actions and outcome.

A round: event -> passives (from round 2) -> actions (2 per turn) -> shadow phase -> guess
phase. `decide` validates a command, then lets the game run on by itself (`_advance`) until a
seat must choose again or the game is over. Every random outcome is drawn here and recorded
in the event that needs it; `state.evolve` only applies events.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core import decider
from services.core.decider import MalformedCommand, Outcome, Rng, RuleError
from services.shadow_council import data
from services.shadow_council.state import (
    ACTIONS,
    GUESS,
    NOT_DRAWN,
    OVER,
    PASSIVES,
    State,
    card_name,
    card_pb,
    event_pb,
    evolve,
    faction_pb,
    identity_name,
    identity_pb,
    keyword_pb,
    source_pb,
    start,
    suit_name,
    suit_pb,
    zone_pb,
)


class _Finished(Exception):
    """The game ended in the middle of a command: no further effect resolves."""


class Resolution(decider.Decision[State]):
    """Core's Resolution, with the game's rng and its primitive effects (gold, cards, clues):
    how Shadow Council builds the events of a command."""

    __slots__ = ("rng",)

    def __init__(self, state: State, rng: Rng) -> None:
        super().__init__(state, evolve)
        self.rng = rng

    # ---- primitive effects -------------------------------------------------------------

    def gold(self, seat: int, delta: int) -> None:
        """Gain or lose gold; gold never goes below 0."""
        actual = max(delta, -self.state.gold[seat])
        if actual:
            self.emit(pb.Event(gold_changed=pb.GoldChanged(seat=seat, delta=actual)))

    def zone(self, zone: str, delta: int) -> None:
        """Move a zone; zones never go below 0."""
        actual = max(delta, -self.state.zone(zone))
        if actual:
            self.emit(pb.Event(zone_changed=pb.ZoneChanged(zone=zone_pb(zone), delta=actual)))

    def draw(self, seat: int, count: int) -> None:
        """Draw from the deck, reshuffling the discard pile into it when it runs out."""
        while count > 0:
            if not self.state.deck:
                if not self.state.discard:
                    return
                deck = self.rng.shuffled(self.state.discard)
                self.emit(pb.Event(
                    deck_reshuffled=pb.DeckReshuffled(
                        count=len(deck), deck=[card_pb(c) for c in deck]
                    )
                ))
            cards = self.state.deck[:count]
            count -= len(cards)
            self.emit(pb.Event(
                cards_drawn=pb.CardsDrawn(
                    seat=seat, count=len(cards), cards=[card_pb(c) for c in cards]
                )
            ))

    def discard_random(self, seat: int, count: int) -> None:
        """"Target discards" = random cards of the hand, shown face up."""
        hand = list(self.state.hands[seat])
        picked = []
        for _ in range(min(count, len(hand))):
            picked.append(hand.pop(self.rng.below(len(hand))))
        if picked:
            self.discard(seat, picked)

    def discard(self, seat: int, cards: Sequence[str]) -> None:
        self.emit(pb.Event(
            cards_discarded=pb.CardsDiscarded(seat=seat, cards=[card_pb(c) for c in cards])
        ))

    def clue(self, seat: int, subject: int, kind: int, source: str, **content: Any) -> None:
        self.emit(pb.Event(
            clue_gained=pb.ClueGained(
                seat=seat, subject=subject, kind=kind, source=source_pb(source), **content
            )
        ))

    def keyword_clue(self, seat: int, subject: int, source: str) -> None:
        """A random keyword of the subject's shadow identity, for `seat` only."""
        keyword = self.rng.choice(data.KEYWORDS[self.state.shadow[subject]])
        self.clue(seat, subject, pb.CLUE_KEYWORD, source, keyword=keyword_pb(keyword))

    def reflect_clue(self, seat: int, source: str) -> None:
        """"You are not X": X is an identity in play that is neither yours nor one a Reflect
        already excluded (an identity out of play is excluded for everyone from the start)."""
        excluded = {
            c.identity
            for c in self.state.clues[seat]
            if c.subject == seat and c.kind == "NOT_IDENTITY"
        }
        options = [
            i for i in self.state.in_play if i != self.state.shadow[seat] and i not in excluded
        ]
        # Whether a clue comes is public, so it must follow from public counts alone: after a
        # Brainwash an earlier Reflect may have excluded the seat's new identity, which would
        # leave one option more and tell the table what that hidden clue named.
        if len(self.state.in_play) - 1 - len(excluded) > 0:
            not_x = self.rng.choice(options)
            self.clue(seat, seat, pb.CLUE_NOT_IDENTITY, source, identity=identity_pb(not_x))

    def attack_lands(self, target: int, card: str) -> bool:
        """Guard blocks one attack and is used up; on a Dark Night, Dark Assassinate and
        Poison ignore it (and leave it in place)."""
        s = self.state
        if not s.guarded[target]:
            return True
        if s.event == "DARK_NIGHT" and card in ("DARK_ASSASSINATE", "POISON"):
            return True
        self.emit(pb.Event(attack_blocked=pb.AttackBlocked(target=target, card=card_pb(card))))
        return False

    # ---- eliminations and the end ------------------------------------------------------

    def eliminate(self, seat: int, cause: int) -> None:
        self.emit(pb.Event(
            player_eliminated=pb.PlayerEliminated(
                seat=seat, cause=cause, shadow=identity_pb(self.state.shadow[seat])
            )
        ))
        self.check_end()

    def check_broke(self) -> None:
        """Gold <= 0 and an empty hand: immediate elimination (checked after each effect)."""
        for seat in self.state.survivors():
            if self.state.gold[seat] <= 0 and not self.state.hands[seat]:
                self.eliminate(seat, pb.CAUSE_BROKE)

    def check_end(self) -> None:
        """The game ends at once when a faction is wiped out or one player remains."""
        s = self.state
        survivors = s.survivors()
        factions = {s.faction(seat) for seat in survivors}
        if len(survivors) <= 1:
            self.finish("one player remains" if survivors else "no player remains")
        elif len(factions) < 2:
            wiped = data.CHAOS if data.ORDER in factions else data.ORDER
            self.finish(f"the {wiped.lower()} faction has no survivors")

    def finish(self, reason: str) -> None:
        self.emit(pb.Event(game_ended=final_result(self.state, reason)))
        raise _Finished


@dataclass(frozen=True)
class Tally:
    survivors: dict[str, int]
    zone_bonus: str
    gold: dict[str, int]
    winner: str


def tally(s: State) -> Tally:
    """Victory: effective survivors (+1 for the higher zone total), then survivors' gold."""
    survivors = {data.ORDER: 0, data.CHAOS: 0}
    gold = {data.ORDER: 0, data.CHAOS: 0}
    for seat in s.survivors():
        survivors[s.faction(seat)] += 1
        gold[s.faction(seat)] += s.gold[seat]
    order_zones = sum(s.zone(z) for z in data.ORDER_ZONES)
    chaos_zones = sum(s.zone(z) for z in data.CHAOS_ZONES)
    bonus = ""
    if order_zones != chaos_zones:
        bonus = data.ORDER if order_zones > chaos_zones else data.CHAOS
    effective = dict(survivors)
    if bonus:
        effective[bonus] += 1
    winner = ""
    if effective[data.ORDER] != effective[data.CHAOS]:
        winner = max(effective, key=lambda f: effective[f])
    elif gold[data.ORDER] != gold[data.CHAOS]:
        winner = max(gold, key=lambda f: gold[f])
    return Tally(survivors, bonus, gold, winner)


def final_result(s: State, reason: str) -> pb.GameEnded:
    t = tally(s)
    winners = [seat for seat in range(s.seats) if t.winner and s.faction(seat) == t.winner]
    return pb.GameEnded(
        winner=faction_pb(t.winner),
        order_survivors=t.survivors[data.ORDER],
        chaos_survivors=t.survivors[data.CHAOS],
        zone_bonus=faction_pb(t.zone_bonus),
        order_gold=t.gold[data.ORDER],
        chaos_gold=t.gold[data.CHAOS],
        shadows=[identity_pb(i) for i in s.shadow],
        reason=reason if t.winner else reason + "; draw",
        winners=winners,
    )


# ---- setup -------------------------------------------------------------------------------


def _is_ai(seat: Any) -> bool:
    kind = getattr(seat, "kind", "")
    return kind == 2 or str(kind).lower() == "ai"


def identities_in_play(players: int, rng: Rng) -> list[str]:
    """4: 2 Order + 2 Chaos; 5: 3+2 or 2+3 (1/2 each); 6: all six."""
    if players == 6:
        return list(data.IDENTITIES)
    if players == 4:
        order_count = 2
    else:
        order_count = 3 if rng.chance(1, 2) else 2
    chaos_count = players - order_count
    order = rng.shuffled(data.ORDER_IDENTITIES)[:order_count]
    chaos = rng.shuffled(data.CHAOS_IDENTITIES)[:chaos_count]
    return [i for i in data.IDENTITIES if i in order or i in chaos]


def setup(options: pb.Options, seats: Sequence[Any], rng: Rng) -> list[pb.Event]:
    if options.rounds < 0 or options.rounds > 20:
        raise MalformedCommand("BAD_ROUNDS", "rounds must be between 1 and 20 (0 = 5)")
    in_play = identities_in_play(len(seats), rng)
    # One set of identities in play; public and shadow identities are dealt from it
    # independently, so a player's shadow may equal their public identity.
    public = rng.shuffled(in_play)
    shadow = rng.shuffled(in_play)
    deck = rng.shuffled(data.full_deck(options.full_deck))
    set_up = pb.Event(
        set_up=pb.GameSetUp(
            rounds=options.rounds or data.ROUNDS,
            ai=[_is_ai(seat) for seat in seats],
            in_play=[identity_pb(i) for i in in_play],
            public_identities=[identity_pb(i) for i in public],
            shadow_identities=[identity_pb(i) for i in shadow],
            deck=[card_pb(c) for c in deck],
            scout_public=options.scout_public,
        )
    )
    out = Resolution(start(set_up), rng)
    for seat in range(len(seats)):
        out.draw(seat, data.STARTING_HAND)
    _run(out)
    return [set_up, *out.events]


# ---- the flow of a round -----------------------------------------------------------------


def _run(out: Resolution) -> None:
    try:
        _advance(out)
    except _Finished:
        pass


def _advance(out: Resolution) -> None:
    """Play on until a seat must choose (or the game is over)."""
    while out.state.phase != OVER and not to_act(out.state):
        s = out.state
        if s.phase == "":
            _start_round(out, 1)
        elif s.phase == PASSIVES:
            _resolve_passives(out)
        elif s.phase == ACTIONS:
            _next_turn(out)
        elif s.phase == GUESS:
            if s.guessing_round() and s.ai_guesser == NOT_DRAWN:
                _draw_ai_guesser(out)
            else:
                _end_round(out)


def _start_round(out: Resolution, round_: int) -> None:
    begin_round(out, round_, out.rng.choice(data.EVENTS))


def begin_round(out: Resolution, round_: int, event: str) -> None:
    """Guards expire, this round's event takes effect, then the passives."""
    out.emit(pb.Event(round_started=pb.RoundStarted(round=round_, event=event_pb(event))))
    EVENT_EFFECTS[event](out)
    out.check_broke()
    out.emit(pb.Event(phase_started=pb.PhaseStarted(phase=pb.PHASE_PASSIVES)))


def _resolve_passives(out: Resolution) -> None:
    """Every survivor's passive, in seat order, from round 2; then last round's disguises
    revert. Stops when the Assassin must choose."""
    s = out.state
    if s.round >= 2:
        for seat in range(s.passive_next, s.seats):
            if not out.state.alive[seat]:
                continue
            identity = out.state.public[seat]
            if identity == "ASSASSIN" and _assassin_can_act(out.state, seat):
                out.emit(pb.Event(
                    passive_pending=pb.PassivePending(
                        seat=seat, identity=identity_pb(identity)
                    )
                ))
                return
            PASSIVES_BY_IDENTITY[identity](out, seat)
            out.check_broke()
    for seat, other, played in reversed(out.state.disguises):
        if played < out.state.round:
            out.emit(pb.Event(
                identities_swapped=pb.IdentitiesSwapped(
                    kind=pb.SWAP_DISGUISE_REVERT, seat=seat, other=other
                )
            ))
    out.emit(pb.Event(phase_started=pb.PhaseStarted(phase=pb.PHASE_ACTIONS)))


def _assassin_can_act(s: State, seat: int) -> bool:
    return bool(s.hands[seat]) and len(s.survivors()) > 1


def _next_turn(out: Resolution) -> None:
    s = out.state
    later = [seat for seat in s.survivors() if seat > s.current]
    if not later:
        _shadow_phase(out)
        _start_guess_phase(out)
        return
    seat = later[0]
    out.emit(pb.Event(turn_started=pb.TurnStarted(seat=seat, skipped=s.skip_turn[seat])))


def _shadow_phase(out: Resolution) -> None:
    """Zero-gold discards, then the zone comparison, then the milestones."""
    for seat in out.state.survivors():
        if out.state.gold[seat] == 0:
            out.discard_random(seat, 1)
    out.check_broke()
    s = out.state
    order = sum(s.zone(z) for z in data.ORDER_ZONES)
    chaos = sum(s.zone(z) for z in data.CHAOS_ZONES)
    for seat in s.survivors():
        if order > chaos:
            out.gold(seat, 1)
        elif chaos > order:
            out.draw(seat, 1)
    gold_bonus = out.state.zone("ECONOMY") // 5
    card_bonus = out.state.zone("STRATEGY") // 5
    for seat in out.state.survivors():
        out.gold(seat, gold_bonus)
        out.draw(seat, card_bonus)


def _start_guess_phase(out: Resolution) -> None:
    out.emit(pb.Event(phase_started=pb.PhaseStarted(phase=pb.PHASE_GUESS)))
    for seat in out.state.survivors():
        out.draw(seat, data.GUESS_PHASE_DRAW)


def _draw_ai_guesser(out: Resolution) -> None:
    """After the humans, with probability 1/2 one random surviving AI seat may guess."""
    s = out.state
    ai_seats = [seat for seat in s.survivors() if s.ai[seat]]
    if ai_seats and out.rng.chance(1, 2):
        drawn = pb.AiGuessDrawn(drawn=True, seat=out.rng.choice(ai_seats))
        out.emit(pb.Event(ai_guess_drawn=drawn))
    else:
        out.emit(pb.Event(ai_guess_drawn=pb.AiGuessDrawn(drawn=False)))


def _end_round(out: Resolution) -> None:
    if out.state.round >= out.state.rounds:
        out.finish(f"after round {out.state.round}")
    _start_round(out, out.state.round + 1)


# ---- events ------------------------------------------------------------------------------


def _tax_collector(out: Resolution) -> None:
    """All players lose 1 Gold (or Military Zone -1 if broke)."""
    for seat in out.state.survivors():
        if out.state.gold[seat] > 0:
            out.gold(seat, -1)
        else:
            out.zone("MILITARY", -1)


def _market_boom(out: Resolution) -> None:
    for seat in out.state.survivors():
        out.gold(seat, 1)


def _donation_season(out: Resolution) -> None:
    _market_boom(out)
    out.zone("ECONOMY", 1)


def _plague(out: Resolution) -> None:
    """Player with most cards discards 2 (every player tied for most)."""
    s = out.state
    most = max(len(s.hands[seat]) for seat in s.survivors())
    for seat in s.survivors():
        if most and len(s.hands[seat]) == most:
            out.discard_random(seat, 2)


def _judgment_day(out: Resolution) -> None:
    """Player with fewest cards discards all, draws 3 (every player tied for fewest)."""
    s = out.state
    fewest = min(len(s.hands[seat]) for seat in s.survivors())
    for seat in s.survivors():
        if len(s.hands[seat]) == fewest:
            if s.hands[seat]:
                out.discard(seat, out.state.hands[seat])
            out.draw(seat, 3)


def _no_immediate_effect(out: Resolution) -> None:
    """Riot, Banquet, Arms Race and Dark Night modify the round; Oracle and Memory
    Fragments grant their free actions when the round starts (state.evolve)."""


EVENT_EFFECTS: dict[str, Callable[[Resolution], None]] = {
    "TAX_COLLECTOR": _tax_collector,
    "DARK_ALLEY_RIOT": _no_immediate_effect,
    "DIPLOMATIC_BANQUET": _no_immediate_effect,
    "BORDER_CONFLICT": lambda out: out.zone("MILITARY", 2),
    "MARKET_BOOM": _market_boom,
    "DIVINE_ORACLE": _no_immediate_effect,
    "PLAGUE": _plague,
    "ARMS_RACE": _no_immediate_effect,
    "DONATION_SEASON": _donation_season,
    "DARK_NIGHT": _no_immediate_effect,
    "MEMORY_FRAGMENTS": _no_immediate_effect,
    "JUDGMENT_DAY": _judgment_day,
}


# ---- passives ----------------------------------------------------------------------------


def _spy_passive(out: Resolution, seat: int) -> None:
    """View 1 random surviving player's shadow keyword (another player)."""
    others = [o for o in out.state.survivors() if o != seat]
    if others:
        out.keyword_clue(seat, out.rng.choice(others), "SPY")


PASSIVES_BY_IDENTITY: dict[str, Callable[[Resolution, int], None]] = {
    "GENERAL": lambda out, seat: out.zone("MILITARY", 1),
    "MERCHANT": lambda out, seat: out.gold(seat, 1),
    "PROPHET": lambda out, seat: out.draw(seat, 1),
    "ASSASSIN": lambda out, seat: None,  # only when it cannot act (no card or no target)
    "ALCHEMIST": lambda out, seat: out.zone("ECONOMY", 1),
    "SPY": _spy_passive,
}


# ---- cards -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Play:
    seat: int
    card: str
    suit: str  # the suit the card counts as (Forge: the faked suit)
    targets: tuple[int, ...]
    guess: str
    event: str

    def amount(self, base: int) -> int:
        """A card's number under this round's event: Dark Alley Riot doubles Shadow cards,
        Arms Race adds 1 to Military cards (to the size of each number)."""
        if self.suit == "SHADOW" and self.event == "DARK_ALLEY_RIOT":
            return base * 2
        if self.suit == "MILITARY" and self.event == "ARMS_RACE":
            return base + (1 if base > 0 else -1)
        return base

    @property
    def target(self) -> int:
        return self.targets[0]


def _discard_attack(out: Resolution, p: Play) -> None:
    for target in p.targets:
        if out.attack_lands(target, p.card):
            out.discard_random(target, p.amount(1))


def _siege(out: Resolution, p: Play) -> None:
    out.zone("MILITARY", p.amount(2))
    if out.attack_lands(p.target, p.card):
        out.emit(pb.Event(turn_skip_ordered=pb.TurnSkipOrdered(target=p.target)))


def _scout(out: Resolution, p: Play) -> None:
    hand = out.state.hands[p.target]
    if hand:
        card = hand[out.rng.below(len(hand))]
        suit = data.CARDS[card].suit
        # Ruling 22a: the player's alone, or, with the option, revealed to the table.
        public = {"public": True} if out.state.scout_public else {}
        out.clue(p.seat, p.target, pb.CLUE_SUIT, "SCOUT", suit=suit_pb(suit), **public)


def _mutiny(out: Resolution, p: Play) -> None:
    out.zone("MILITARY", p.amount(2))
    out.zone("ECONOMY", p.amount(-1))


def _bribe(out: Resolution, p: Play) -> None:
    if out.attack_lands(p.target, p.card):
        stolen = min(p.amount(1), out.state.gold[p.target])
        out.gold(p.target, -stolen)
        out.gold(p.seat, stolen)


def _bankrupt(out: Resolution, p: Play) -> None:
    if out.attack_lands(p.target, p.card):
        out.gold(p.target, -p.amount(2))


def _trade(out: Resolution, p: Play) -> None:
    out.draw(p.seat, p.amount(1))
    out.draw(p.target, p.amount(1))


def _invest(out: Resolution, p: Play) -> None:
    out.zone("ECONOMY", p.amount(2))
    out.gold(p.seat, p.amount(1))


def _thrift(out: Resolution, p: Play) -> None:
    out.zone("ECONOMY", p.amount(1))
    out.draw(p.seat, p.amount(1))


def _forge(out: Resolution, p: Play) -> None:
    out.zone(data.ZONE_OF_SUIT[p.suit], p.amount(2))


def _prophecy(out: Resolution, p: Play) -> None:
    """Correct: +2 gold, wrong: -1 gold; the player alone learns which."""
    correct = out.state.shadow[p.target] == p.guess
    out.gold(p.seat, p.amount(2) if correct else -p.amount(1))
    kind = pb.CLUE_IDENTITY if correct else pb.CLUE_NOT_IDENTITY
    out.clue(p.seat, p.target, kind, "PROPHECY", identity=identity_pb(p.guess))


def _insight(out: Resolution, p: Play) -> None:
    suits = sorted(
        (data.CARDS[c].suit for c in out.state.hands[p.target]), key=data.SUITS.index
    )
    out.clue(p.seat, p.target, pb.CLUE_HAND_SUITS, "INSIGHT", suits=[suit_pb(x) for x in suits])


def _secret_order(out: Resolution, p: Play) -> None:
    out.zone("STRATEGY", p.amount(2))
    out.draw(p.seat, p.amount(1))


def _disguise(out: Resolution, p: Play) -> None:
    out.emit(pb.Event(
        identities_swapped=pb.IdentitiesSwapped(
            kind=pb.SWAP_DISGUISE, seat=p.seat, other=p.target
        )
    ))


def _poison(out: Resolution, p: Play) -> None:
    if out.attack_lands(p.target, p.card):
        out.keyword_clue(p.seat, p.target, "POISON")


def _chaos(out: Resolution, p: Play) -> None:
    """All discard 1, then all draw 1."""
    for seat in out.state.survivors():
        out.discard_random(seat, p.amount(1))
    for seat in out.state.survivors():
        out.draw(seat, p.amount(1))


def _dark_assassinate(out: Resolution, p: Play) -> None:
    if out.attack_lands(p.target, p.card):
        out.eliminate(p.target, pb.CAUSE_DARK_ASSASSINATED)


def _eavesdrop(out: Resolution, p: Play) -> None:
    identity = identity_pb(out.state.shadow[p.target])
    out.clue(p.seat, p.target, pb.CLUE_IDENTITY, "EAVESDROP", identity=identity)


def _conspiracy(out: Resolution, p: Play) -> None:
    out.zone("SHADOW_ALLEY", p.amount(2))
    out.gold(p.seat, p.amount(1))


def _brainwash(out: Resolution, p: Play) -> None:
    swapped = pb.IdentitiesSwapped(kind=pb.SWAP_BRAINWASH, seat=p.target)
    out.emit(pb.Event(identities_swapped=swapped))
    # A Brainwash changes a faction: turning the last survivor of a faction wipes it out.
    out.check_end()


CARD_EFFECTS: dict[str, Callable[[Resolution, Play], None]] = {
    "RALLY": lambda out, p: out.zone("MILITARY", p.amount(3)),
    "ASSASSINATE": _discard_attack,
    "SIEGE": _siege,
    "GUARD": lambda out, p: out.emit(pb.Event(guard_raised=pb.GuardRaised(seat=p.seat))),
    "CONSCRIPT": lambda out, p: out.draw(p.seat, p.amount(2)),
    "CHARGE": lambda out, p: out.zone("MILITARY", p.amount(4)),
    "SCOUT": _scout,
    "MUTINY": _mutiny,
    "TAX": lambda out, p: out.gold(p.seat, p.amount(2)),
    "BRIBE": _bribe,
    "MONOPOLY": lambda out, p: out.zone("ECONOMY", p.amount(3)),
    "INVEST": _invest,
    "BANKRUPT": _bankrupt,
    "TRADE": _trade,
    "BOUNTY": lambda out, p: out.gold(p.seat, p.amount(3)),
    "THRIFT": _thrift,
    "PEEK": lambda out, p: out.keyword_clue(p.seat, p.target, "PEEK"),
    "FORGE": _forge,
    "PROPAGANDA": lambda out, p: out.zone("SHADOW_ALLEY", p.amount(2)),
    "PROPHECY": _prophecy,
    "SOW_DISCORD": _discard_attack,
    "INSIGHT": _insight,
    "SCHEME": lambda out, p: out.zone("STRATEGY", p.amount(3)),
    "SECRET_ORDER": _secret_order,
    "REFLECT": lambda out, p: out.reflect_clue(p.seat, "REFLECT"),
    "DISGUISE": _disguise,
    "POISON": _poison,
    "CHAOS": _chaos,
    "DARK_ASSASSINATE": _dark_assassinate,
    "EAVESDROP": _eavesdrop,
    "DARK_ALLEY": lambda out, p: out.zone("SHADOW_ALLEY", p.amount(3)),
    "CONSPIRACY": _conspiracy,
    "BRAINWASH": _brainwash,
}


# ---- commands ----------------------------------------------------------------------------


def _seat_index(s: State, value: int, what: str) -> int:
    if not 0 <= value < s.seats:
        raise MalformedCommand("NO_SUCH_SEAT", f"there is no seat {value}", what)
    return value


def _other_survivor(s: State, seat: int, msg: Any, field: str) -> int:
    """A target: another surviving player."""
    if not msg.HasField(field):
        raise MalformedCommand("TARGET_REQUIRED", "this needs a target player", field)
    target = _seat_index(s, getattr(msg, field), field)
    if target == seat:
        raise RuleError("TARGET_IS_SELF", "you cannot target yourself", field)
    if not s.alive[target]:
        raise RuleError("TARGET_ELIMINATED", f"seat {target} has been eliminated", field)
    return target


def _identity_field(value: int, field: str) -> str:
    if value == 0 or value not in pb.Identity.values():
        raise MalformedCommand("IDENTITY_REQUIRED", "name an identity", field)
    return identity_name(value)


def _require_action_phase(s: State) -> None:
    if s.phase != ACTIONS:
        raise RuleError("NOT_ACTION_PHASE", "this can only be done in the action phase")


def _require_action(s: State) -> None:
    if s.actions <= 0:
        raise RuleError("NO_ACTIONS_LEFT", "you have no actions left this turn")


def _play_card(out: Resolution, seat: int, cmd: pb.PlayCard) -> None:
    s = out.state
    if cmd.card == 0 or cmd.card not in pb.Card.values():
        raise MalformedCommand("CARD_REQUIRED", "name a card to play", "card")
    card = card_name(cmd.card)
    spec = data.CARDS[card]
    suit = spec.suit
    if card == "FORGE":
        if cmd.suit == 0 or cmd.suit not in pb.Suit.values():
            raise MalformedCommand("SUIT_REQUIRED", "Forge needs a suit to fake", "suit")
        suit = suit_name(cmd.suit)
    _require_action_phase(s)
    _require_action(s)
    if card not in s.hands[seat]:
        raise RuleError("CARD_NOT_IN_HAND", f"you have no {card.replace('_', ' ').title()}")
    if suit == "MILITARY" and s.event == "DIPLOMATIC_BANQUET":
        raise RuleError("MILITARY_BANNED", "Military cards cannot be used this round")
    targets = _card_targets(s, seat, spec, cmd)
    guess = _identity_field(cmd.guess, "guess") if card == "PROPHECY" else ""
    out.emit(pb.Event(
        card_played=pb.CardPlayed(
            seat=seat,
            card=cmd.card,
            targets=targets,
            guess=identity_pb(guess) if guess else 0,
            suit=suit_pb(suit) if card == "FORGE" else 0,
        )
    ))
    CARD_EFFECTS[card](out, Play(seat, card, suit, tuple(targets), guess, s.event))
    out.check_broke()


def _card_targets(s: State, seat: int, spec: data.CardSpec, cmd: pb.PlayCard) -> list[int]:
    if spec.targets == 0:
        return []
    first = _other_survivor(s, seat, cmd, "target")
    if spec.targets == 1:
        return [first]
    # Sow Discord: two different targets, or the only other survivor.
    others = [o for o in s.survivors() if o != seat]
    if len(others) == 1 and not cmd.HasField("second_target"):
        return [first]
    second = _other_survivor(s, seat, cmd, "second_target")
    if second == first:
        raise RuleError("SAME_TARGET_TWICE", "Sow Discord needs two different targets")
    return [first, second]


def _gold_peek(out: Resolution, seat: int, cmd: pb.GoldPeek) -> None:
    s = out.state
    target = _other_survivor(s, seat, cmd, "target")
    _require_action_phase(s)
    _require_action(s)
    cost = data.gold_peek_cost(s.round)
    if s.gold[seat] < cost:
        raise RuleError("NOT_ENOUGH_GOLD", f"a keyword costs {cost} gold this round")
    out.emit(pb.Event(gold_peek_paid=pb.GoldPeekPaid(seat=seat, target=target, cost=cost)))
    out.keyword_clue(seat, target, "GOLD_PEEK")
    out.check_broke()


def _free_peek(out: Resolution, seat: int, cmd: pb.FreePeek) -> None:
    s = out.state
    target = _other_survivor(s, seat, cmd, "target")
    _require_action_phase(s)
    if not s.free_peek[seat]:
        raise RuleError("NO_FREE_PEEK", "you have no free Peek this round")
    out.emit(pb.Event(free_action_used=pb.FreeActionUsed(seat=seat, peek=True, target=target)))
    out.keyword_clue(seat, target, "FREE_PEEK")


def _free_reflect(out: Resolution, seat: int, cmd: pb.FreeReflect) -> None:
    s = out.state
    _require_action_phase(s)
    if not s.free_reflect[seat]:
        raise RuleError("NO_FREE_REFLECT", "you have no free Reflect this round")
    out.emit(pb.Event(free_action_used=pb.FreeActionUsed(seat=seat, peek=False, target=seat)))
    out.reflect_clue(seat, "FREE_REFLECT")


def _end_turn(out: Resolution, seat: int, cmd: pb.EndTurn) -> None:
    _require_action_phase(out.state)
    out.emit(pb.Event(turn_ended=pb.TurnEnded(seat=seat)))


def _assassin_order(out: Resolution, seat: int, cmd: pb.AssassinOrder) -> None:
    s = out.state
    if cmd.discard == 0 or cmd.discard not in pb.Card.values():
        raise MalformedCommand("CARD_REQUIRED", "name the card to discard", "discard")
    target = _other_survivor(s, seat, cmd, "target")
    if s.phase != PASSIVES:
        raise RuleError("NO_PASSIVE_PENDING", "no passive of yours is waiting for a choice")
    card = card_name(cmd.discard)
    if card not in s.hands[seat]:
        raise RuleError("CARD_NOT_IN_HAND", f"you have no {card.replace('_', ' ').title()}")
    out.emit(pb.Event(passive_resolved=pb.PassiveResolved(seat=seat, target=target)))
    out.discard(seat, [card])
    out.discard_random(target, 1)
    out.check_broke()


def _require_guess_phase(s: State) -> None:
    if s.phase != GUESS:
        raise RuleError("NOT_GUESS_PHASE", "guesses are made in the guess phase")


def _guess(out: Resolution, seat: int, cmd: pb.Guess) -> None:
    s = out.state
    identity = _identity_field(cmd.identity, "identity")
    target = _other_survivor(s, seat, cmd, "target")
    _require_guess_phase(s)
    correct = s.shadow[target] == identity
    out.emit(pb.Event(
        guess_made=pb.GuessMade(
            seat=seat, target=target, identity=cmd.identity, correct=correct
        )
    ))
    if correct:
        out.eliminate(target, pb.CAUSE_GUESSED)
    else:
        out.eliminate(seat, pb.CAUSE_WRONG_GUESS)


def _skip_guess(out: Resolution, seat: int, cmd: pb.SkipGuess) -> None:
    _require_guess_phase(out.state)
    out.emit(pb.Event(guess_skipped=pb.GuessSkipped(seat=seat)))


HANDLERS: dict[str, Callable[[Resolution, int, Any], None]] = {
    "play": _play_card,
    "gold_peek": _gold_peek,
    "free_peek": _free_peek,
    "free_reflect": _free_reflect,
    "end_turn": _end_turn,
    "assassin": _assassin_order,
    "guess": _guess,
    "skip_guess": _skip_guess,
}


def decide(state: State, seat: int | None, command: pb.Command, rng: Rng) -> list[pb.Event]:
    assert seat is not None  # the server sends no command in this game
    kind = command.WhichOneof("kind")
    out = Resolution(state, rng)
    try:
        HANDLERS[kind](out, seat, getattr(command, kind))
        _advance(out)
    except _Finished:
        pass
    return out.events


# ---- who acts, and what they may do ------------------------------------------------------


def to_act(s: State) -> list[int]:
    if s.phase == PASSIVES:
        return [s.pending] if s.pending >= 0 else []
    if s.phase == ACTIONS:
        c = s.current
        if c >= 0 and s.alive[c] and s.turn_open:
            if s.actions > 0 or s.free_peek[c] or s.free_reflect[c]:
                return [c]
        return []
    if s.phase == GUESS and s.guessing_round():
        for seat in s.survivors():
            if not s.ai[seat] and not s.guessed[seat]:
                return [seat]
        g = s.ai_guesser
        if g >= 0 and s.alive[g] and not s.guessed[g]:
            return [g]
    return []


def legal_actions(s: State, seat: int) -> list[pb.Command]:
    if seat not in to_act(s):
        return []
    others = [o for o in s.survivors() if o != seat]
    if s.phase == PASSIVES:
        return [
            pb.Command(assassin=pb.AssassinOrder(discard=card_pb(card), target=t))
            for card in _distinct(s.hands[seat])
            for t in others
        ]
    if s.phase == GUESS:
        guesses = [
            pb.Command(guess=pb.Guess(target=t, identity=identity_pb(i)))
            for t in others
            for i in data.IDENTITIES
        ]
        return guesses + [pb.Command(skip_guess=pb.SkipGuess())]
    commands: list[pb.Command] = []
    if s.actions > 0:
        for card in _distinct(s.hands[seat]):
            commands += _card_commands(s, seat, card, others)
        if s.gold[seat] >= data.gold_peek_cost(s.round):
            commands += [pb.Command(gold_peek=pb.GoldPeek(target=t)) for t in others]
    if s.free_peek[seat]:
        commands += [pb.Command(free_peek=pb.FreePeek(target=t)) for t in others]
    if s.free_reflect[seat]:
        commands.append(pb.Command(free_reflect=pb.FreeReflect()))
    commands.append(pb.Command(end_turn=pb.EndTurn()))
    return commands


def _distinct(cards: Sequence[str]) -> list[str]:
    return sorted(set(cards), key=list(data.CARDS).index)


def _card_commands(s: State, seat: int, card: str, others: list[int]) -> list[pb.Command]:
    spec = data.CARDS[card]
    banned = s.event == "DIPLOMATIC_BANQUET"
    if spec.suit == "MILITARY" and banned:
        return []
    c = card_pb(card)
    if card == "FORGE":
        suits = [x for x in data.SUITS if not (x == "MILITARY" and banned)]
        return [pb.Command(play=pb.PlayCard(card=c, suit=suit_pb(x))) for x in suits]
    if card == "PROPHECY":
        return [
            pb.Command(play=pb.PlayCard(card=c, target=t, guess=identity_pb(i)))
            for t in others
            for i in data.IDENTITIES
        ]
    if spec.targets == 0:
        return [pb.Command(play=pb.PlayCard(card=c))]
    if spec.targets == 2 and len(others) >= 2:
        return [
            pb.Command(play=pb.PlayCard(card=c, target=a, second_target=b))
            for i, a in enumerate(others)
            for b in others[i + 1 :]
        ]
    return [pb.Command(play=pb.PlayCard(card=c, target=t)) for t in others]


def outcome(s: State) -> Outcome | None:
    if s.result is None:
        return None
    return Outcome(winners=s.result.winners, reason=s.result.reason)
