"""Eila and Something Shiny in words: an event, and a command as its view shows it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from arbiter.eila.v1 import eila_pb2 as pb

from services.core.decider import CatalogEntry
from services.core.happened import plural
from services.eila.data import default_index


def describe(event: Any, seat: int | None) -> str | None:
    """An event in words: the public log lines it wrote (the draws stay hidden)."""
    kind = event.WhichOneof("kind")
    if kind is None:
        return None
    body = getattr(event, kind)
    lines = [line for line in getattr(body, "log", ()) if line]
    if lines and lines[0].startswith("option "):  # a choice: told as the player's
        lines[0] = ("you chose " if seat is not None else "Eila chose ") + lines[0]
    if lines:
        return "; ".join(lines)
    if kind in ("started", "opened"):  # the opening event has no log lines of its own
        return "the campaign begins"
    command = body.command.WhichOneof("kind") if hasattr(body, "command") else None
    return f"you chose to {command.replace('_', ' ')}" if command else "you acted"


# ---- commands in words (LegalActions.words, `arbiter play`) ---------------------------------

RESOURCE_WORDS = {pb.FOOD: "Food", pb.COIN: "Coin", pb.STONE: "Magical Stone",
                  pb.KNOWLEDGE: "Knowledge", pb.ENERGY: "Energy", pb.FEAR: "Fear"}
DIRECTION_WORDS = {pb.NORTH: "north", pb.EAST: "east", pb.SOUTH: "south", pb.WEST: "west"}
STEPS = {pb.NORTH: (0, 1), pb.EAST: (1, 0), pb.SOUTH: (0, -1), pb.WEST: (-1, 0)}

COMMAND_GROUPS = {"choose": "choose an option", "discard": "discard", "convert": "convert",
                  "submit": "submit to the goal", "end_night": "end the night",
                  "boost": "combat", "cast": "cast a spell", "fight": "combat",
                  "start_chapter": "the campaign", "abandon": "the campaign",
                  "use_item": "use an item", "answer": "answer a quiz", "move": "move",
                  "stop": "move", "pick": "pick a card", "done_picking": "pick a card",
                  "peek": "the pocket watch", "night_meal": "the night meal"}


def _card(cards: Sequence[pb.CardView], card_id: str) -> str:
    """A card by its title and text, as the view shows it (else by its id)."""
    for c in cards:
        if c.id == card_id:
            return f"{c.title}: {c.text}" if c.text else c.title
    return card_id


def _option(view: pb.View | None, option: int) -> str:
    """An option of the card being played (in chapter 5 between days: of the location)."""
    label = chr(ord("A") + option)
    if view is not None:
        for card in (view.present, view.location):
            if option < len(card.options) and card.options[option].label == label:
                return f"{card.title}, option {label}: {card.options[option].text}"
    return f"option {label}"


def _answer(view: pb.View | None, quiz_id: str, answer: str) -> str:
    """"answer b) eleven to "How many teeth has the lost brass gear?" (quiz EQ-5)"."""
    for quiz in view.quizzes if view is not None else ():
        if quiz.id == quiz_id:
            question, *_ = re.split(r" [a-z]\) ", quiz.question, maxsplit=1)
            said = re.search(rf"(?:^| ){re.escape(answer)}\) (.*?)(?= [a-z]\) |$)",
                             quiz.question)
            choice = f"{answer}) {said.group(1)}" if said else answer
            return f'answer {choice} to "{question}" (quiz {quiz_id})'
    return f"answer {answer} to quiz {quiz_id}"


def _square(x: int, y: int) -> str:
    return f"column {x + 1}, row {y + 1}"


def _move(view: pb.View | None, move: pb.Move) -> str:
    way = DIRECTION_WORDS.get(move.direction, "nowhere")
    toll = ", paying 1 HP instead of 1 Energy for the cliff" if move.pay_hp else ""
    if view is None or not view.HasField("mine"):
        return f"move {way}{toll}"
    mine = view.mine
    dx, dy = STEPS.get(move.direction, (0, 0))
    x, y = mine.x + dx, mine.y + dy
    there = next((c for c in mine.cells if (c.x, c.y) == (x, y)), None)
    if there is None:
        what = "a face-down tile"
    else:
        found = [f for f in ("shelter" if there.shelter else "",
                             f"location {there.location}" if there.location else "",
                             there.feature.replace(":", " ").replace(",", ", ")) if f]
        what = ", ".join(found) or "an open passage"
    return (f"move {way} from {_square(mine.x, mine.y)} to {_square(x, y)} ({what}; "
            f"{plural(mine.moves_left, 'move')} left){toll}")


def describe_command(command: pb.Command, view: pb.View | None = None) -> str:
    """A command in words, from the view it is sent from: an option's text, the quiz's
    question and answer, the mine and Eila's place on it, the cards on offer, what a
    conversion converts."""
    kind = command.WhichOneof("kind")
    if kind == "choose":
        return _option(view, command.choose.option)
    if kind in ("discard", "submit"):
        amount = getattr(command, kind)
        what = f"{amount.count} {RESOURCE_WORDS.get(amount.resource, 'of nothing')}"
        return f"discard {what}" if kind == "discard" else f"put {what} on the goal card"
    if kind == "convert":
        index = command.convert.conversion
        texts = {c.index: c.text for c in view.conversions} if view is not None else {}
        return (f"convert {texts[index].replace(' -> ', ' into ')}" if index in texts
                else f"conversion {index + 1}")
    if kind == "end_night":
        return "end the night: the time track moves on and a new day begins"
    if kind == "boost":
        return f"spend {command.boost.energy} Energy for +{2 * command.boost.energy} combat value"
    if kind == "cast":
        return "cast " + _card(view.support_cards if view else (), command.cast.card)
    if kind == "fight":
        against = f" {view.combat.enemy}" if view is not None and view.combat.enemy else ""
        keep = ", keeping the shield cards for later" if command.fight.keep_shield_cards else ""
        return f"fight{against}{keep}"
    if kind == "start_chapter":
        chapter = command.start_chapter.chapter
        again = view is not None and view.chapter == chapter and bool(view.history) and \
            not view.history[-1].won
        return f"{'play chapter' if not again else 'retry chapter'} {chapter}"
    if kind == "abandon":
        return "end the campaign here"
    if kind == "use_item":
        return "use " + _card(view.item_cards if view else (), command.use_item.card)
    if kind == "answer":
        return _answer(view, command.answer.quiz, command.answer.answer)
    if kind == "move":
        return _move(view, command.move)
    if kind == "stop":
        return "stop moving here (the location's event happens)"
    if kind == "pick":
        return "take " + _card(view.offers if view else (), command.pick.card)
    if kind == "done_picking":
        return "take no more cards"
    if kind == "peek":
        return ("resolve the previewed card as the day's last event" if command.peek.delay
                else "resolve the previewed card in its turn")
    if kind == "night_meal":
        return ("pay 1 HP for the night meal" if command.night_meal.pay_hp
                else "eat 1 Food for the night meal")
    return "no action"


# ---- the catalog (Arbiter.GetCatalog) ---------------------------------------------------------


def catalog() -> list[CatalogEntry]:
    """Every card, item, support card, quiz and mine tile of the current content, with its
    title and text as the content files hold them (an advanced side shares its card's id: the
    view's CardView carries the side being played)."""
    ix = default_index()
    cards = [CatalogEntry(card_id, "habit" if c.get("color") == "habit"
                          else f"{c.get('color', 'event')} card", c.get("title", card_id),
                          c.get("text", "")) for card_id, c in ix.cards.items()]
    items = [CatalogEntry(i, "item", c["name"], c.get("text", "")) for i, c in ix.items.items()]
    supports = [CatalogEntry(i, "support card", c["name"], c.get("text", ""))
                for i, c in ix.supports.items()]
    extra = []
    for thing_id, c in ix.extra.items():
        if "question" in c:
            extra.append(CatalogEntry(thing_id, "quiz", f"quiz {thing_id}", c["question"]))
        elif "cells" in c:
            extra.append(CatalogEntry(thing_id, "mine tile", f"mine tile {thing_id}",
                                      "A map tile of the mine (chapter 3): it consists of 4 "
                                      "grids; a face-down tile is flipped over when Eila is "
                                      "about to enter it."))
        else:
            extra.append(CatalogEntry(thing_id, c.get("color", "card"),
                                      c.get("title", thing_id), c.get("text", "")))
    return cards + items + supports + extra
