"""Moody Bear Kingdom: the decider (setup, decide, to_act, legal_actions, outcome).

A turn: proclaim victory (only first), or any of one trade and any number of item plays,
then end the turn; a turn in which nothing was done ends by drawing a card (pass). Every
announced item or combo opens a response window in which the other players may Cancel; a
drawn Dark Swallow opens one in which anyone may play a Mace of Light.
"""

from __future__ import annotations

from collections.abc import Sequence

from arbiter.moody_bear.v1 import moody_bear_pb2 as pb

from services.core.decider import Decision, MalformedCommand, Outcome, Rng, RuleError, Seat

from . import cards as C
from .cards import DARK_SWALLOW, DUO_JEWEL, GEM_OF, OPPONENT, SOLO, Card, card_name, combo_of
from .moves import nameable_cards
from .state import (
    ARRANGE,
    MACE_ENTRY,
    OVER,
    PASSING,
    SWALLOW_ENTRY,
    TRADE,
    TURN,
    WINDOW,
    Entry,
    State,
    chain_base,
    evolve,
    neighbour,
    next_seat,
    passers,
    waiting,
)

Events = list[pb.Event]

# ---- setup ------------------------------------------------------------------------------


def setup(options: pb.Options, seats: Sequence[Seat], rng: Rng) -> Events:
    """Deal the team cards face down, 5 item cards each, then shuffle the Dark Swallow into
    the rest, which becomes the drawing deck. The first player is chosen at random."""
    n = len(seats)
    if options.five_player_structure and n != 4:
        raise MalformedCommand(
            "FIVE_PLAYER_STRUCTURE", "the 5-player structure is an option of the 4-player game"
        )
    if options.response_deadline_seconds < 0:
        raise MalformedCommand("DEADLINE", "the response deadline cannot be negative")

    events = [pb.Event(started=pb.Started(options=options, players=n))]

    team_cards = rng.shuffled(C.TEAMS_BY_PLAYERS[5 if options.five_player_structure else n])
    for seat in range(n):
        events.append(pb.Event(team_dealt=pb.TeamDealt(seat=seat, team=team_cards[seat])))
    for team in team_cards[n:]:
        events.append(pb.Event(team_set_aside=pb.TeamSetAside(team=team)))

    items = rng.shuffled([c for c in C.deck_cards(options.duo_jewel) if c != DARK_SWALLOW])
    for seat in range(n):
        hand = sorted(items[seat * C.HAND_SIZE : (seat + 1) * C.HAND_SIZE])
        events.append(pb.Event(hand_dealt=pb.HandDealt(seat=seat, cards=hand, count=len(hand))))
    rest = items[n * C.HAND_SIZE :]
    rest.insert(rng.below(len(rest) + 1), DARK_SWALLOW)
    events.append(pb.Event(deck_formed=pb.DeckFormed(cards=rest, count=len(rest))))
    events.append(pb.Event(first_player=pb.FirstPlayer(seat=rng.below(n))))
    return events


# ---- decide -----------------------------------------------------------------------------


def decide(state: State, seat: int | None, command: pb.Command, rng: Rng) -> Events:
    kind = command.WhichOneof("kind")
    body = getattr(command, kind)
    out = Decision(state, evolve)
    if kind == "close_window":
        close_window(out, seat, body, rng)
        return out.events
    if seat is None:
        raise RuleError("SEAT_REQUIRED", "only a player can send this command")
    DECIDERS[kind](out, seat, body, rng)
    return out.events


# ---- checks shared by the commands ------------------------------------------------------


def check_card(card: int, field: str) -> None:
    if card not in C.ALL_CARDS:
        raise MalformedCommand("NO_CARD", f"{field} names no card", field)


def check_target(state: State, seat: int, target: int, field: str = "target") -> None:
    if not 0 <= target < state.players:
        raise MalformedCommand("TARGET_OUT_OF_RANGE", f"there is no seat {target}", field)
    if target == seat:
        raise RuleError("TARGET_IS_YOU", "choose another player, not yourself", field)


def check_my_turn(state: State, seat: int) -> None:
    if state.phase != TURN or seat != state.turn:
        if seat != state.turn:
            raise RuleError("NOT_YOUR_TURN", "it is not your turn")
        raise RuleError("WAIT", f"wait: {UNDER_WAY.get(state.phase, 'the game is busy')}")


UNDER_WAY = {
    TRADE: "a trade is waiting for an answer",
    WINDOW: "a response window is open",
    ARRANGE: "the top cards are being rearranged",
    PASSING: "the players are choosing cards to pass",
}


def check_holds(state: State, seat: int, cards: Sequence[Card]) -> None:
    if not C.holds(state.hands[seat], cards):
        names = " + ".join(card_name(c) for c in cards)
        raise RuleError("CARD_NOT_IN_HAND", f"you do not hold {names}")


# ---- draws ------------------------------------------------------------------------------


def draw(out: Decision[State], seat: int, ends_turn: bool, rng: Rng) -> None:
    """Draw one card; an empty deck is first refilled with the shuffled discard pile. A
    Dark Swallow is shown to all and opens a window instead of joining the hand."""
    state = out.state
    if not state.deck and state.discard:
        cards = rng.shuffled(state.discard)
        out.emit(pb.Event(deck_reshuffled=pb.DeckReshuffled(cards=cards, count=len(cards))))
    deck = out.state.deck
    if not deck:
        out.emit(pb.Event(nothing_to_draw=pb.NothingToDraw(seat=seat)))
    elif deck[0] == DARK_SWALLOW:
        swallow = pb.DarkSwallowDrawn(seat=seat, ends_turn=ends_turn)
        out.emit(pb.Event(dark_swallow_drawn=swallow))
        return
    else:
        out.emit(pb.Event(card_drawn=pb.CardDrawn(seat=seat, card=deck[0])))
    if ends_turn:
        out.emit(end_of_turn(state))


def end_of_turn(state: State) -> pb.Event:
    return pb.Event(turn_ended=pb.TurnEnded(seat=state.turn, next=next_seat(state, state.turn)))


# ---- proclaiming victory ----------------------------------------------------------------


def proclaim(out: Decision[State], seat: int, cmd: pb.Proclaim, rng: Rng) -> None:
    """Name your teammate (if any); both reveal team cards and hands. The team wins if both
    are on the proclaimer's team and together hold the required gems; else the opposing
    colour team wins."""
    state = out.state
    teammate = cmd.teammate if cmd.HasField("teammate") else None
    if teammate is not None:
        check_target(state, seat, teammate, "teammate")
    check_my_turn(state, seat)
    if state.acted:
        raise RuleError("PROCLAIM_FIRST", "victory is proclaimed only before any other action")
    team = state.teams[seat]
    if team == SOLO:
        raise RuleError("SOLO_CANNOT_PROCLAIM", "the Solo team wins only by the Dark Swallow")
    if not any(c in (GEM_OF[team], DUO_JEWEL) for c in state.hands[seat]):
        raise RuleError("NO_GEM", "you may proclaim only while holding one of your gems")

    named = [seat] if teammate is None else [seat, teammate]
    gems = sum(gem_count(state, s, team) for s in named)
    needed = required_gems(state, team)
    same_team = all(state.teams[s] == team for s in named)
    won = same_team and gems >= needed
    winning = team if won else OPPONENT[team]
    reveals = [
        pb.Reveal(seat=s, team=state.teams[s], cards=state.hands[s]) for s in named
    ]
    event = pb.Proclaimed(seat=seat, reveals=reveals, gems=gems, required=needed)
    if teammate is not None:
        event.teammate = teammate
    reason = "proclaimed victory" if won else "wrong proclamation"
    out.emit(pb.Event(proclaimed=event))
    out.emit(game_over(state, winning, reason))


def gem_count(state: State, seat: int, team: int) -> int:
    """The team's gems in a hand; the Duo Jewel stands in for either gem."""
    return sum(1 for c in state.hands[seat] if c in (GEM_OF[team], DUO_JEWEL))


def required_gems(state: State, team: int) -> int:
    """3 gems, or 2 for a colour team of exactly one member."""
    members = sum(1 for t in state.teams if t == team)
    return 2 if members == 1 else 3


def game_over(state: State, winning_team: int, reason: str) -> pb.Event:
    """The game ends for `winning_team`; when no seat holds that team (a Dark Swallow with
    no Solo player), nobody wins and the event names no team."""
    winners = [s for s in range(state.players) if state.teams[s] == winning_team]
    if not winners:
        winning_team = pb.TEAM_UNSPECIFIED
    return pb.Event(
        game_ended=pb.GameEnded(
            winners=winners, winning_team=winning_team, reason=reason, teams=state.teams
        )
    )


# ---- trading ----------------------------------------------------------------------------


def offer(out: Decision[State], seat: int, cmd: pb.Offer, rng: Rng) -> None:
    state = out.state
    check_card(cmd.card, "card")
    check_target(state, seat, cmd.target)
    check_my_turn(state, seat)
    if state.traded:
        raise RuleError("ALREADY_TRADED", "you may trade only once per turn")
    check_holds(state, seat, [cmd.card])
    out.emit(pb.Event(trade_offered=pb.TradeOffered(seat=seat, target=cmd.target, card=cmd.card)))


def check_trade_open(state: State) -> None:
    if state.phase != TRADE or state.trade is None:
        raise RuleError("NO_TRADE", "no trade is waiting for an answer")


def accept(out: Decision[State], seat: int, cmd: pb.Accept, rng: Rng) -> None:
    """Keep the offered card and give back one of your own cards, of your choice."""
    state = out.state
    check_card(cmd.give, "give")
    check_trade_open(state)
    assert state.trade is not None
    if not state.hands[seat]:
        raise RuleError("NOTHING_TO_RETURN", "you have no card to give back: reject the trade")
    check_holds(state, seat, [cmd.give])
    t = state.trade
    accepted = pb.TradeAccepted(seat=t.seat, target=t.target, offered=t.card, returned=cmd.give)
    out.emit(pb.Event(trade_accepted=accepted))


def reject(out: Decision[State], seat: int, cmd: pb.Reject, rng: Rng) -> None:
    """The offerer takes the card back and draws one card."""
    state = out.state
    check_trade_open(state)
    assert state.trade is not None
    out.emit(pb.Event(trade_rejected=pb.TradeRejected(seat=state.trade.seat, target=seat)))
    draw(out, state.trade.seat, ends_turn=False, rng=rng)


# ---- playing items and combos -----------------------------------------------------------


def play(out: Decision[State], seat: int, cmd: pb.Play, rng: Rng) -> None:
    """Announce an item or a combo: it opens a response window."""
    state = out.state
    for card in cmd.cards:
        check_card(card, "cards")
    combo = check_play_shape(cmd)
    if cmd.HasField("target"):
        check_target(state, seat, cmd.target)
    if combo is None:
        if len(cmd.cards) == 1 and cmd.cards[0] in (C.CANCEL, C.MACE):
            raise RuleError(
                "NOT_NOW", f"a {card_name(cmd.cards[0])} is played only to answer in a window"
            )
        names = " + ".join(card_name(c) for c in cmd.cards) or "nothing"
        raise MalformedCommand("NOT_A_COMBO", f"{names} is not an item or combo you can play")
    if combo == C.REQUEST and cmd.named not in nameable_cards(state):
        raise MalformedCommand(
            "NAMED", f"no one can hold a {card_name(cmd.named)} in this game", "named"
        )
    check_my_turn(state, seat)
    check_holds(state, seat, list(cmd.cards))
    announced = pb.Play(cards=sorted(cmd.cards), direction=cmd.direction, named=cmd.named)
    if cmd.HasField("target"):
        announced.target = cmd.target
    out.emit(pb.Event(announced=pb.Announced(seat=seat, play=announced)))


def check_play_shape(cmd: pb.Play) -> str | None:
    """The combo the cards make, once its extra fields are exactly the ones it takes."""
    combo = combo_of(cmd.cards)
    if combo is None:
        return None
    if (combo in C.TARGETED) != cmd.HasField("target"):
        word = "needs" if combo in C.TARGETED else "takes no"
        raise MalformedCommand("TARGET", f"this play {word} a target", "target")
    if (combo == C.PASS_AROUND) != (cmd.direction != pb.DIRECTION_UNSPECIFIED):
        word = "needs" if combo == C.PASS_AROUND else "takes no"
        raise MalformedCommand("DIRECTION", f"this play {word} a direction", "direction")
    if cmd.direction not in pb.Direction.values():
        raise MalformedCommand("DIRECTION", "unknown direction", "direction")
    if (combo == C.REQUEST) != (cmd.named != pb.CARD_UNSPECIFIED):
        word = "needs" if combo == C.REQUEST else "takes no"
        raise MalformedCommand("NAMED", f"this play {word} a named card", "named")
    if combo == C.REQUEST:
        check_card(cmd.named, "named")
    return combo


# ---- response windows -------------------------------------------------------------------


def check_window_open(state: State) -> None:
    if state.phase != WINDOW:
        raise RuleError("NO_WINDOW", "no response window is open")


def cancel(out: Decision[State], seat: int, cmd: pb.PlayCancel, rng: Rng) -> None:
    state = out.state
    check_window_open(state)
    if state.stack[-1].kind == SWALLOW_ENTRY:
        raise RuleError("SWALLOW_NOT_CANCELLABLE", "the Dark Swallow cannot be cancelled")
    check_holds(state, seat, [C.CANCEL])
    out.emit(pb.Event(cancel_played=pb.CancelPlayed(seat=seat)))


def mace(out: Decision[State], seat: int, cmd: pb.PlayMace, rng: Rng) -> None:
    state = out.state
    check_window_open(state)
    if state.stack[-1].kind != SWALLOW_ENTRY:
        raise RuleError("NO_DARK_SWALLOW", "a Mace of Light answers only the Dark Swallow")
    check_holds(state, seat, [C.MACE])
    out.emit(pb.Event(mace_played=pb.MacePlayed(seat=seat)))


def decline(out: Decision[State], seat: int, cmd: pb.Decline, rng: Rng) -> None:
    """Pass in the window; the last pass closes it."""
    check_window_open(out.state)
    out.emit(pb.Event(declined=pb.Declined(seat=seat)))
    if not waiting(out.state):
        resolve_window(out, by_deadline=False, rng=rng)


def close_window(out: Decision[State], seat: int | None, cmd: pb.CloseWindow, rng: Rng) -> None:
    """The response deadline expired: everyone who has not answered passes."""
    state = out.state
    if seat is not None:
        raise RuleError("SYSTEM_ONLY", "only the server closes a window, when its deadline expires")
    if state.deadline <= 0:
        raise RuleError("NO_DEADLINE", "this game has no response deadline")
    if state.phase != WINDOW:
        raise RuleError("NO_WINDOW", "no response window is open")
    if cmd.window_id != state.window_id:
        raise RuleError("STALE_WINDOW", f"window {cmd.window_id} is no longer open")
    resolve_window(out, by_deadline=True, rng=rng)


def resolve_window(out: Decision[State], by_deadline: bool, rng: Rng) -> None:
    """Everyone passed: the chain resolves last-in first-out, so an odd number of Cancels
    voids the card beneath them. An unanswered Dark Swallow ends the game."""
    state = out.state
    top = state.stack[-1]
    if top.kind == SWALLOW_ENTRY:
        out.emit(pb.Event(window_closed=pb.WindowClosed(by_deadline=by_deadline)))
        out.emit(game_over(state, SOLO, "the Dark Swallow"))
        return
    base_index = chain_base(state.stack)
    cancels = len(state.stack) - 1 - base_index
    cancelled = cancels % 2 == 1
    out.emit(pb.Event(
        window_closed=pb.WindowClosed(by_deadline=by_deadline, cancelled=cancelled, cancels=cancels)
    ))
    base = state.stack[base_index]
    if cancelled:
        return
    if base.kind == MACE_ENTRY:
        stop_swallow(out, rng)
    else:
        resolve_item(out, base, rng)


def stop_swallow(out: Decision[State], rng: Rng) -> None:
    """A Mace of Light stopped the Dark Swallow: it goes back into the deck at random."""
    state = out.state
    position = rng.below(len(state.deck) + 1)
    back = pb.DarkSwallowReturned(position=position, deck_count=len(state.deck) + 1)
    out.emit(pb.Event(dark_swallow_returned=back))
    if state.swallow_ends_turn:
        out.emit(end_of_turn(state))


def resolve_item(out: Decision[State], entry: Entry, rng: Rng) -> None:
    """The effect of an item or combo that nobody cancelled."""
    out.emit(item_effect(out.state, entry, rng))
    if combo_of(entry.cards) == C.PASS_AROUND and not passers(out.state):
        out.emit(pb.Event(cards_passed=pb.CardsPassed(direction=entry.direction)))


def item_effect(state: State, entry: Entry, rng: Rng) -> pb.Event:
    """The event of an item's or combo's effect."""
    me = entry.seat
    target = entry.target if entry.target is not None else -1  # set for targeted plays
    combo = combo_of(entry.cards)
    if combo == C.REVEAL_IDENTITY:
        looked = pb.IdentityLooked(seat=me, target=target, team=state.teams[target])
        return pb.Event(identity_looked=looked)
    if combo == C.SWAP_HAND:
        mine, theirs = state.hands[me], state.hands[target]
        swapped = pb.HandsSwapped(
            seat=me,
            target=target,
            seat_cards=mine,
            target_cards=theirs,
            seat_count=len(mine),
            target_count=len(theirs),
        )
        return pb.Event(hands_swapped=swapped)
    if combo == C.SHUFFLE_THE_DECK:
        deck = rng.shuffled(state.deck)
        return pb.Event(deck_shuffled=pb.DeckShuffled(cards=deck, count=len(deck)))
    if combo == C.STEAL:
        victim = state.hands[target]
        if not victim:
            return pb.Event(card_stolen=pb.CardStolen(seat=me, target=target, stolen=False))
        card = victim[rng.below(len(victim))]
        stolen = pb.CardStolen(seat=me, target=target, stolen=True, card=card)
        return pb.Event(card_stolen=stolen)
    if combo == C.LOOK_AT_HAND:
        looked_at = pb.HandLooked(seat=me, target=target, cards=state.hands[target])
        return pb.Event(hand_looked=looked_at)
    if combo == C.TOP_THREE:
        top = state.deck[:3]
        return pb.Event(top_cards_taken=pb.TopCardsTaken(seat=me, cards=top, count=len(top)))
    if combo == C.PASS_AROUND:
        return pb.Event(passing_started=pb.PassingStarted(direction=entry.direction))
    if combo == C.REQUEST:
        given = entry.named in state.hands[target]
        requested = pb.CardRequested(seat=me, target=target, card=entry.named, given=given)
        return pb.Event(card_requested=requested)
    raise AssertionError(f"unknown combo {combo}")


# ---- after the effects ------------------------------------------------------------------


def arrange(out: Decision[State], seat: int, cmd: pb.Arrange, rng: Rng) -> None:
    """Put the looked-at cards back on top of the deck in the chosen order."""
    state = out.state
    for card in cmd.order:
        check_card(card, "order")
    if state.phase != ARRANGE:
        raise RuleError("NOTHING_TO_ARRANGE", "you are not rearranging cards")
    if sorted(cmd.order) != sorted(state.top):
        raise RuleError("NOT_THOSE_CARDS", "give the order of exactly the cards you looked at")
    arranged = pb.TopCardsArranged(seat=seat, cards=cmd.order, count=len(cmd.order))
    out.emit(pb.Event(top_cards_arranged=arranged))


def choose_pass(out: Decision[State], seat: int, cmd: pb.ChoosePass, rng: Rng) -> None:
    """Choose the card to pass; once everyone has chosen, all the cards move together."""
    state = out.state
    check_card(cmd.card, "card")
    if state.phase != PASSING:
        raise RuleError("NOT_PASSING", "no one is passing cards now")
    check_holds(state, seat, [cmd.card])
    out.emit(pb.Event(pass_card_chosen=pb.PassCardChosen(seat=seat, card=cmd.card)))
    after = out.state
    if passers(after):
        return
    transfers = [
        pb.Transfer(seat=s, to=neighbour(after, s, after.direction), card=card)
        for s, card in enumerate(after.choices)
        if card
    ]
    passed = pb.CardsPassed(direction=after.direction, transfers=transfers)
    out.emit(pb.Event(cards_passed=passed))


def pass_turn(out: Decision[State], seat: int, cmd: pb.PassTurn, rng: Rng) -> None:
    """Doing nothing this turn: draw one card."""
    check_my_turn(out.state, seat)
    if out.state.acted:
        raise RuleError("ALREADY_ACTED", "you have acted this turn: end it without drawing")
    draw(out, seat, ends_turn=True, rng=rng)


def end_turn(out: Decision[State], seat: int, cmd: pb.EndTurn, rng: Rng) -> None:
    check_my_turn(out.state, seat)
    if not out.state.acted:
        raise RuleError("NOTHING_DONE", "you have done nothing this turn: pass by drawing a card")
    out.emit(end_of_turn(out.state))


DECIDERS = {
    "proclaim": proclaim,
    "offer": offer,
    "accept": accept,
    "reject": reject,
    "play": play,
    "cancel": cancel,
    "mace": mace,
    "decline": decline,
    "pass_turn": pass_turn,
    "end_turn": end_turn,
    "arrange": arrange,
    "choose_pass": choose_pass,
}

# ---- who acts, what they may do, how it ended ---------------------------------------------


def outcome(state: State) -> Outcome | None:
    if state.phase != OVER or state.winners is None:
        return None
    return Outcome(winners=state.winners, reason=state.reason)


def deadlines(state: State) -> list[tuple[float, pb.Command]]:
    """Game.deadlines: the open response window's timeout, if the option sets one."""
    pending = deadline(state)
    return [pending] if pending else []


def deadline(state: State) -> tuple[int, pb.Command] | None:
    """The server's pending timeout, for the platform's deadline scheduler: (seconds, the
    command to send as seat None once they have passed). The command names the window: it
    is the scheduler's key for the deadline (answers do not move it), and a late firing, once
    that window has closed, is refused (NO_WINDOW, STALE_WINDOW)."""
    if state.phase != WINDOW or state.deadline <= 0:
        return None
    close = pb.Command(close_window=pb.CloseWindow(window_id=state.window_id))
    return state.deadline, close
