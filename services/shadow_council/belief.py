"""What one seat can deduce about every shadow identity, its own included.

Shadow identities start as a uniformly random permutation of the identities in play. A
seat's knowledge is its private clues plus the public facts (revealed identities, wrong
guesses, brainwashes). Every random clue (a keyword, a Reflect exclusion, the Spy's pick) is
equally likely under every permutation it does not contradict, so the exact posterior is the
uniform distribution over the consistent permutations, which we enumerate (at most 6! = 720).

A Brainwash swaps its target's public and shadow identities: the old shadow becomes the new
public identity (seen by all), and the new shadow is the old public identity. Clues earned
before a seat's first Brainwash describe its original shadow; later ones add nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from services.shadow_council import data
from services.shadow_council.state import Clue, Fact


def _first_brainwash(facts: Sequence[Fact]) -> dict[int, int]:
    first: dict[int, int] = {}
    for fact in facts:
        if fact.kind == "BRAINWASHED" and fact.subject not in first:
            first[fact.subject] = fact.tick
    return first


def _current_overrides(facts: Sequence[Fact]) -> dict[int, str]:
    """The known current shadow of every brainwashed seat (the last swap wins)."""
    now: dict[int, str] = {}
    for fact in sorted(facts, key=lambda f: f.tick):
        if fact.kind == "BRAINWASHED":
            now[fact.subject] = fact.other
    return now


def constraints(
    seats: int, clues: Sequence[Clue], facts: Sequence[Fact]
) -> tuple[dict[int, str], dict[int, set[str]]]:
    """(must, must_not): what each seat's original shadow identity is, or is not."""
    first = _first_brainwash(facts)
    must: dict[int, str] = {}
    must_not: dict[int, set[str]] = {s: set() for s in range(seats)}

    def about_original(subject: int, tick: int) -> bool:
        return subject not in first or tick < first[subject]

    for fact in facts:
        if fact.kind == "BRAINWASHED" and fact.tick == first[fact.subject]:
            must[fact.subject] = fact.identity
        elif fact.kind == "REVEALED" and about_original(fact.subject, fact.tick):
            must[fact.subject] = fact.identity
        elif fact.kind == "WRONG_GUESS" and about_original(fact.subject, fact.tick):
            must_not[fact.subject].add(fact.identity)
    for clue in clues:
        if not about_original(clue.subject, clue.tick):
            continue
        if clue.kind == "KEYWORD":
            must[clue.subject] = data.IDENTITY_OF_KEYWORD[clue.keyword]
        elif clue.kind == "IDENTITY":
            must[clue.subject] = clue.identity
        elif clue.kind == "NOT_IDENTITY":
            must_not[clue.subject].add(clue.identity)
    return must, must_not


def consistent_permutations(
    seats: int, in_play: Sequence[str], clues: Sequence[Clue], facts: Sequence[Fact]
) -> list[tuple[str, ...]]:
    """Every assignment of the original shadows consistent with the knowledge."""
    must, must_not = constraints(seats, clues, facts)
    out: list[tuple[str, ...]] = []
    chosen: list[str] = []

    def extend(seat: int, left: list[str]) -> None:
        if seat == seats:
            out.append(tuple(chosen))
            return
        for identity in left:
            if seat in must and must[seat] != identity:
                continue
            if identity in must_not[seat]:
                continue
            chosen.append(identity)
            extend(seat + 1, [i for i in left if i != identity])
            chosen.pop()

    extend(0, list(in_play))
    return out


def current_shadows(original: tuple[str, ...], facts: Sequence[Fact]) -> tuple[str, ...]:
    overrides = _current_overrides(facts)
    return tuple(overrides.get(s, identity) for s, identity in enumerate(original))


@dataclass(frozen=True)
class Belief:
    """The uniform posterior over every seat's current shadow identity."""

    seats: int
    worlds: tuple[tuple[str, ...], ...]  # current shadows, one tuple per consistent world

    @staticmethod
    def build(
        seats: int, in_play: Sequence[str], clues: Sequence[Clue], facts: Sequence[Fact]
    ) -> Belief:
        # What a seat knows changes a few times a game, and the sleuth reads it at every
        # command (its playouts too): the worlds are enumerated once per distinct knowledge.
        return _build(seats, tuple(in_play), tuple(clues), tuple(facts))

    @cached_property
    def _counts(self) -> list[dict[str, int]]:
        counts: list[dict[str, int]] = [{} for _ in range(self.seats)]
        for world in self.worlds:
            for seat, identity in enumerate(world):
                counts[seat][identity] = counts[seat].get(identity, 0) + 1
        return counts

    def p(self, seat: int, identity: str) -> float:
        return self._counts[seat].get(identity, 0) / len(self.worlds)

    def p_faction(self, seat: int, faction: str) -> float:
        return sum(self.p(seat, i) for i in data.IDENTITIES if data.FACTION[i] == faction)

    @cached_property
    def _same_faction(self) -> dict[tuple[int, int], float]:
        return {}  # filled pair by pair as asked: a belief is read again and again

    def p_same_faction(self, a: int, b: int) -> float:
        found = self._same_faction.get((a, b))
        if found is None:
            same = sum(1 for w in self.worlds if data.FACTION[w[a]] == data.FACTION[w[b]])
            found = self._same_faction[(a, b)] = same / len(self.worlds)
        return found

    def best_guess(self, seat: int) -> tuple[str, float]:
        counts = self._counts[seat]
        identity = max(sorted(counts), key=lambda i: counts[i])
        return identity, counts[identity] / len(self.worlds)

    def uncertainty(self, seat: int) -> float:
        """1 - the probability of the most likely identity."""
        return 1.0 - self.best_guess(seat)[1]


@lru_cache(maxsize=4096)
def _build(seats: int, in_play: tuple[str, ...], clues: tuple[Clue, ...],
           facts: tuple[Fact, ...]) -> Belief:
    perms = consistent_permutations(seats, in_play, clues, facts)
    if not perms:  # contradictory knowledge (cannot happen in a real game): know nothing
        perms = consistent_permutations(seats, in_play, (), ())
    return Belief(seats, tuple(current_shadows(p, facts) for p in perms))
