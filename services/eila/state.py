"""Eila and Something Shiny: the state of a campaign, and evolve, which applies an event's
facts to it (no content is read and no rule is run: see facts.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from services.eila.data import Index, Json, default_index, texts_index

LOG_KEEP = 30


@dataclass
class Combat:
    enemy: str
    value: int  # the enemy's combat value after weaknesses
    red: int
    red_shield: bool
    green: int  # -1: no green die
    green_shield: bool
    boost: int  # from items, Energy and spells (Eila's value)
    spec: Json  # the combat effect being resolved
    keep_cards: bool = False  # the player keeps the shield support cards for later

    # Parts added after facts were first written, left out of a fact at their default so
    # that games played before write the same bytes (facts.py).
    LATE: ClassVar[dict[str, Any]] = {"keep_cards": False}

    def total(self, double_green: bool) -> int:
        green = max(self.green, 0) * (2 if double_green else 1)
        return self.red + self.boost + green


@dataclass
class Mine:
    """Chapter 3: nine tiles of 2x2 grids; `tiles[ty * 3 + tx]`, "" until turned over."""

    tiles: list[str]
    faceup: list[bool]
    x: int = 0
    y: int = 0
    covered: list[int] = field(default_factory=list)
    pool: list[str] = field(default_factory=list)  # tiles not laid yet (drawn when turned over)

    def clone(self) -> Mine:
        return Mine(list(self.tiles), list(self.faceup), self.x, self.y, list(self.covered),
                    list(self.pool))


@dataclass
class Play:
    """One attempt at one chapter: everything on the table."""

    chapter: int
    advanced: bool
    hp: int
    max_hp: int
    res: dict[str, int]
    items: list[str]
    supports: list[str]
    habits: list[str]
    upcoming: list[str]  # index 0 is the top card
    known: int  # how many top cards of the upcoming deck the player knows the order of
    future: list[str]
    past: list[str]
    decks: dict[str, list[str]]  # red, blue, habit: cards waiting to be fetched
    day: int = 1
    present: str = ""
    phase: str = "day"  # day, resolve, combat, moving, picking, room, meal, night, peek, over
    queue: list[Json] = field(default_factory=list)
    place: str = ""
    submitted: dict[str, int] = field(default_factory=dict)
    tonight: int = 0
    track: int = 0
    combat: Combat | None = None
    shields: int = 0  # HP losses the dice's shield faces still cancel in this combat round
    shield_cards_used: int = 0  # HP losses the shield support cards prevented this chapter
    result: str = ""  # "", "won", "lost"
    ending: str = ""
    reason: str = ""
    quizzes: list[str] = field(default_factory=list)  # drawn, not yet answered
    quiz_decks: dict[str, list[str]] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    endings: list[str] = field(default_factory=list)  # earlier chapters' endings: "2B"
    nested: str = ""  # a location event or location card being resolved inside the present
    saved: list[Json] = field(default_factory=list)  # the present card's remaining effects
    mine: Mine | None = None
    moves: int = 0
    offers: dict[str, list[str]] = field(default_factory=dict)  # contracts, privileges
    picking: str = ""
    location: str = ""  # chapter 5: the current location card
    bottom: str = ""  # a card the player knows is at the bottom of the upcoming deck
    fear_due: int = 0  # Fear waiting for the player to discard Knowledge or Energy for room
    resume: str = ""  # the phase to go back to once it is placed (resolve or moving)

    def clone(self) -> Play:
        c = Play(**self.__dict__)
        c.res = dict(self.res)
        for name in ("items", "supports", "habits", "upcoming", "future", "past", "queue",
                     "quizzes", "flags"):
            setattr(c, name, list(getattr(self, name)))
        c.decks = {k: list(v) for k, v in self.decks.items()}
        c.quiz_decks = {k: list(v) for k, v in self.quiz_decks.items()}
        c.submitted = dict(self.submitted)
        c.endings = list(self.endings)
        c.saved = list(self.saved)
        c.offers = {k: list(v) for k, v in self.offers.items()}
        if self.mine is not None:
            c.mine = self.mine.clone()
        if self.combat is not None:
            c.combat = Combat(**self.combat.__dict__)
        return c


@dataclass
class State:
    """The campaign: its options, the save box, the chapter being played and the history."""

    advanced: bool
    single: bool
    chapter: int
    box: list[str]  # items, habits and support cards kept between chapters
    play: Play | None
    phase: str = "playing"  # playing, between, over
    history: list[tuple[int, bool, str, int, str]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    winners: tuple[int, ...] | None = None
    reason: str = ""
    # The content version the campaign is played with (its opening event names it): its
    # texts are shown and judged with today's rules while those rules are the same.
    content: str = ""

    def clone(self) -> State:
        c = State(**self.__dict__)
        c.box = list(self.box)
        c.history = list(self.history)
        c.log = list(self.log)
        c.play = self.play.clone() if self.play else None
        return c


def opening_state(options: Any) -> State:
    """The campaign before its first chapter is set up: the options and the save box."""
    return State(advanced=options.advanced, single=options.single_chapter,
                 chapter=options.first_chapter, box=sorted(set(options.save_box)), play=None)


def start(event: Any) -> State:
    """The campaign its first event opens."""
    kind = event.WhichOneof("kind")
    if kind == "started":  # a log from before events held facts
        from services.eila import legacy

        return legacy.start(event)
    if kind == "changed":  # such a log migrated to facts: its first event holds everything
        from services.eila import facts

        blank = State(advanced=False, single=False, chapter=0, box=[], play=None)
        state = facts.apply(blank, event.changed.facts)
        state.log = list(event.changed.log)[-LOG_KEEP:]
        return state
    state = opening_state(event.opened.options)
    state.content = event.opened.content_version
    return state


def evolve(state: State, event: Any) -> State:
    """Apply the facts: no content is read and no rule is run (see facts.py)."""
    kind = event.WhichOneof("kind")
    if kind == "acted":  # a log from before events held facts
        from services.eila import legacy

        return legacy.evolve(state, event)
    from services.eila import facts  # it builds these classes back from facts

    assert kind == "changed", f"an Eila event of no kind: {kind}"
    new = facts.apply(state, event.changed.facts)
    new.log = (new.log + list(event.changed.log))[-LOG_KEEP:]
    return new


def index(state: State | None = None) -> Index:
    """Today's rules, with the texts of the content `state` is played with (when archived and
    played by these rules; else today's texts)."""
    return (texts_index(state.content) if state is not None else None) or default_index()
