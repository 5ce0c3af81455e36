"""Moody Bear Kingdom: who may act now and what they may send (to_act, legal_actions).

The rules check commands against these, and a view shows a seat the kinds it may send
(`may`): both build on the state, so this module sits beside them, not inside the rules.
"""

from __future__ import annotations

from itertools import permutations

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from . import cards as C
from .cards import DARK_SWALLOW, DUO_JEWEL, GEM_OF, SOLO, Card
from .state import ARRANGE, PASSING, SWALLOW_ENTRY, TRADE, TURN, WINDOW, State, passers, waiting


def to_act(state: State) -> list[int]:
    if state.phase == TURN or state.phase == ARRANGE:
        return [state.turn]
    if state.phase == TRADE:
        assert state.trade is not None
        return [state.trade.target]
    if state.phase == WINDOW:
        return list(waiting(state))
    if state.phase == PASSING:
        return list(passers(state))
    return []


def nameable_cards(state: State) -> list[Card]:
    """Cards worth naming with the three-card combo: any that can be in a hand."""
    return [
        c for c in C.ALL_CARDS if c != DARK_SWALLOW and (c != DUO_JEWEL or state.duo_jewel)
    ]


def legal_actions(state: State, seat: int) -> list[pb.Command]:
    if seat not in to_act(state):
        return []
    hand = state.hands[seat]
    if state.phase == TURN:
        return turn_actions(state, seat)
    if state.phase == TRADE:
        gives = [pb.Command(accept=pb.Accept(give=c)) for c in sorted(set(hand))]
        return [*gives, pb.Command(reject=pb.Reject())]
    if state.phase == WINDOW:
        answers = [pb.Command(decline=pb.Decline())]
        swallow = state.stack[-1].kind == SWALLOW_ENTRY
        if swallow and C.MACE in hand:
            answers.append(pb.Command(mace=pb.PlayMace()))
        if not swallow and C.CANCEL in hand:
            answers.append(pb.Command(cancel=pb.PlayCancel()))
        return answers
    if state.phase == ARRANGE:
        orders = sorted(set(permutations(state.top)))
        return [pb.Command(arrange=pb.Arrange(order=order)) for order in orders]
    if state.phase == PASSING:
        return [pb.Command(choose_pass=pb.ChoosePass(card=c)) for c in sorted(set(hand))]
    return []


def turn_actions(state: State, seat: int) -> list[pb.Command]:
    hand = state.hands[seat]
    others = [s for s in range(state.players) if s != seat]
    commands: list[pb.Command] = []
    team = state.teams[seat]
    if not state.acted and team != SOLO and any(c in (GEM_OF[team], DUO_JEWEL) for c in hand):
        commands.append(pb.Command(proclaim=pb.Proclaim()))
        commands += [pb.Command(proclaim=pb.Proclaim(teammate=s)) for s in others]
    if not state.traded:
        for card in sorted(set(hand)):
            commands += [pb.Command(offer=pb.Offer(target=s, card=card)) for s in others]
    for cards, combo in C.COMBOS.items():
        if not C.holds(hand, cards):
            continue
        if combo == C.PASS_AROUND:
            for direction in (pb.LEFT, pb.RIGHT):
                commands.append(pb.Command(play=pb.Play(cards=cards, direction=direction)))
        elif combo == C.REQUEST:
            for s in others:
                for named in nameable_cards(state):
                    commands.append(pb.Command(play=pb.Play(cards=cards, target=s, named=named)))
        elif combo in C.TARGETED:
            commands += [pb.Command(play=pb.Play(cards=cards, target=s)) for s in others]
        else:
            commands.append(pb.Command(play=pb.Play(cards=cards)))
    if state.acted:
        commands.append(pb.Command(end_turn=pb.EndTurn()))
    else:
        commands.append(pb.Command(pass_turn=pb.PassTurn()))
    return commands


def may(state: State, seat: int) -> list[str]:
    """The kinds of command a seat may send now (shown in its view): those of
    legal_actions, in its order, told from the state without building every command (every
    view asks, and a search bot's playouts build thousands of views a move)."""
    if seat not in to_act(state):
        return []
    hand = state.hands[seat]
    if state.phase == TURN:
        team = state.teams[seat]
        kinds = []
        if not state.acted and team != SOLO and any(c in (GEM_OF[team], DUO_JEWEL) for c in hand):
            kinds.append("proclaim")
        if not state.traded and hand:
            kinds.append("offer")
        if any(C.holds(hand, cards) for cards in C.COMBOS):
            kinds.append("play")
        kinds.append("end_turn" if state.acted else "pass_turn")
        return kinds
    if state.phase == TRADE:
        return ["accept", "reject"] if hand else ["reject"]
    if state.phase == WINDOW:
        swallow = state.stack[-1].kind == SWALLOW_ENTRY
        if swallow:
            return ["decline", "mace"] if C.MACE in hand else ["decline"]
        return ["decline", "cancel"] if C.CANCEL in hand else ["decline"]
    if state.phase == ARRANGE:
        return ["arrange"]
    if state.phase == PASSING:
        return ["choose_pass"] if hand else []
    return []
