"""No leak of shadow identities through the event feed (Shadow Council's own, stronger check).

The conformance suite re-deals at the start of a game and follows one world until any other
seat plays a card (other hands are re-dealt too, so the same command is soon illegal in the
other world). Here only the shadow identities are re-dealt, at many moments of whole games,
so the same commands stay legal in both worlds and the feeds can be compared for long
stretches: through Peeks, Poisons, Eavesdrops, Reflects, Spy passives, Prophecies, Brainwashes,
guesses and eliminations.

The criterion is per event: while a seat's views of the two worlds are equal, each event it is
shown must be equal too, unless that very event makes its views differ (a private result of its
own, or a public consequence such as a Prophecy's gold or a guess's verdict). Anything the feed
shows must therefore also be something the seat's view shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from arbiter.shadow_council.v1 import shadow_council_pb2 as pb

from services.core.decider import Rng
from services.shadow_council import GAME, belief
from services.shadow_council.rules import legal_actions, to_act
from services.shadow_council.state import GUESS, State
from services.shadow_council.view import redact, redeal
from tests.shadow_council.helpers import new_game

view = GAME.view


def pick(state: State, seat: int, rng: Rng, sleuth: bool) -> pb.Command:
    """A sleuth, or a random player that guesses rarely (so that games last)."""
    legal = legal_actions(state, seat)
    if sleuth:
        return GAME.bots["sleuth"](view(state, seat), legal, rng)
    if state.phase == GUESS and rng.below(8):
        return pb.Command(skip_guess=pb.SkipGuess())
    return rng.choice(legal)


def games(seeds: range) -> Iterator[tuple[int, list[State], list[pb.Command]]]:
    """Whole games of mixed human and AI seats: (seed, the state before each command, the
    commands)."""
    for seed in seeds:
        n = 4 + seed % 3
        ai = [k % 2 == 0 for k in range(n)]
        state, _ = new_game(n, seed, ai=ai)
        states, commands = [], []
        version = 1
        while GAME.outcome(state) is None:
            seat = to_act(state)[0]
            rng = Rng(b"feed-leak-%d" % seed, version)
            cmd = pick(state, seat, rng, sleuth=(seat + seed) % 3 != 0)
            states.append(state)
            commands.append(cmd)
            for e in GAME.decide_now(state, seat, cmd, Rng(b"feed-leak-%d" % seed, version)):
                state = GAME.evolve(state, e)
            version += 1
        yield seed, states, commands


def shadows_only(state: State, seat: int, rng: Rng) -> State:
    """Every shadow identity `seat` cannot see dealt anew (its own included); hands and deck
    kept, so the same commands stay legal."""
    return replace(state, shadow=redeal(state, seat, rng).shadow)


def compare_feeds(real: State, other: State, seat: int | None, commands: list[pb.Command],
                  seed: int, start: int, counts: dict[str, int]) -> None:
    """Send the same commands to both worlds; check what `seat` is shown, event by event."""
    for step, cmd in enumerate(commands):
        if GAME.outcome(real) is not None:
            return
        actor = to_act(real)[0]
        assert to_act(other) == to_act(real)
        version = start + step + 1
        mine = GAME.decide_now(real, actor, cmd, Rng(b"feed-leak-%d" % seed, version))
        theirs = GAME.decide_now(other, actor, cmd, Rng(b"feed-leak-%d" % seed, version))
        for a, b in zip(mine, theirs, strict=False):
            real, other = GAME.evolve(real, a), GAME.evolve(other, b)
            differs = view(real, seat) != view(other, seat)
            if redact(a, seat) != redact(b, seat):
                assert differs, (
                    f"seat {seat} is shown {a.WhichOneof('kind')} differently in worlds "
                    f"it cannot tell apart, and its view does not show why")
            counts["events"] += 1
            if a.WhichOneof("kind") == "clue_gained" and a.clue_gained.seat != seat:
                subject = a.clue_gained.subject
                if real.shadow[subject] != other.shadow[subject]:
                    counts["others' clues on a re-dealt shadow"] += 1
            if differs:
                return
        if len(mine) != len(theirs):
            return  # the longer batch ran on past an event whose difference the seat saw


def test_re_dealing_the_shadow_identities_changes_no_feed_a_seat_or_spectator_sees() -> None:
    counts = {"events": 0, "others' clues on a re-dealt shadow": 0, "own shadow re-dealt": 0,
              "worlds": 0}
    for seed, states, commands in games(range(9)):
        for at in range(0, len(states), 5):
            state = states[at]
            for seat in range(state.seats):
                other = shadows_only(state, seat, Rng(b"feed-other-%d" % seed, at * 10 + seat))
                if other.shadow == state.shadow:
                    continue
                assert view(other, seat) == view(state, seat)
                assert view(other, None) == view(state, None)
                counts["worlds"] += 1
                counts["own shadow re-dealt"] += other.shadow[seat] != state.shadow[seat]
                tail = commands[at:at + 40]
                compare_feeds(state, other, seat, tail, seed, at, counts)
                # A spectator knows less than any seat: the same worlds look alike to it.
                compare_feeds(state, other, None, tail, seed, at, counts)
    assert counts["worlds"] > 100, counts
    assert counts["own shadow re-dealt"] > 50, counts
    assert counts["others' clues on a re-dealt shadow"] > 20, counts
    assert counts["events"] > 5000, counts


def test_redeal_resamples_every_shadow_a_seat_cannot_pin_down_its_own_included() -> None:
    """Over many re-deals, each seat's shadow takes every value the seat's knowledge allows;
    the ones it knows (its Eavesdrop target, the revealed, the brainwashed) never move."""
    for seed, states, _ in games(range(3)):
        state = states[len(states) // 2]
        for seat in range(state.seats):
            worlds = belief.consistent_permutations(
                state.seats, state.in_play, state.clues[seat], state.facts)
            brainwashed = {f.subject for f in state.facts if f.kind == "BRAINWASHED"}
            seen: list[set[str]] = [set() for _ in range(state.seats)]
            for k in range(200):
                other = redeal(state, seat, Rng(b"resample-%d" % seed, k))
                for subject in range(state.seats):
                    seen[subject].add(other.shadow[subject])
            for subject in range(state.seats):
                if subject in brainwashed:
                    assert seen[subject] == {state.shadow[subject]}
                else:
                    assert seen[subject] == {w[subject] for w in worlds}, (seed, seat, subject)
