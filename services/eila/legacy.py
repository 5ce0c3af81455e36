"""Logs written before Eila's events held facts: the kinds `started` and `acted`.

Such an event held a command (or the options) and the random draws it needed, and was
replayed by running the rules again with those draws. So these logs replay only with the
content and the rules they were played with: in them a shuffle orders a whole deck at once
(`Dice.upfront`). Their content version is the one of that time (rules version 3 and the
content files). A log played with content whose rules differ from today's is refused rather
than replayed wrongly; one whose texts alone differ replays with its own texts, kept in the
content's archive (data/texts). `arbiter eila migrate` turns such a log into facts while
the content still matches, after which no content edit can stop it replaying.

A game from that time goes on with today's rules: its next commands write facts.
"""

from __future__ import annotations

from typing import Any

from arbiter.eila.v1 import eila_pb2 as pb

from services.core import log as gamelog
from services.core.decider import RuleError
from services.eila import rules
from services.eila.data import LEGACY_PREFIX, content_digest, texts_index
from services.eila.engine import RecordingDice, ReplayDice
from services.eila.state import LOG_KEEP, State


def content_version() -> str:
    """The fingerprint those logs name: rules version 3, then the content files."""
    return content_digest(LEGACY_PREFIX)


def check_content(played_with: str) -> None:
    """Refuse a log whose content's rules are not today's (or are unknown here)."""
    if played_with and texts_index(played_with) is None:
        raise RuleError("RULES_CHANGED", f"this game was played before events held facts, "
                        f"with content {played_with}, whose rules this server (content "
                        f"{content_version()}) does not have, so it cannot replay it; "
                        f"migrate it to facts with `arbiter eila migrate` on a server whose "
                        f"content has the rules it was played with")


# Why a migrated log cannot be checked against its seed (docs/eila.md, "Logs written before
# events held facts").
MIGRATED = ("this log was migrated to facts from a log written before events held facts: it "
            "replays, but only the rules of its time give its events from the seed, and "
            "re-running them is verifying the legacy log it came from, which is the one to "
            "verify; imported, it is a replay-only game")


def start(event: Any) -> State:
    """Set the campaign up again with the recorded draws, if the rules are those of its time
    (the texts may differ: the game is shown with its own)."""
    played_with = event.started.content_version
    check_content(played_with)
    log: list[str] = []
    new = rules.new_state(event.started.options, ReplayDice(event.started.draws, True), log,
                          played_with)
    new.log = log[-LOG_KEEP:]
    return new


def evolve(state: State, event: Any) -> State:
    """Run the rules of that time again with the recorded draws."""
    new = state.clone()
    log: list[str] = []
    rules.apply(new, event.acted.command, ReplayDice(event.acted.draws, True), log)
    new.log = (new.log + log)[-LOG_KEEP:]
    return new


def recheck(state: State | None, seat: int | None, message: Any, rng: Any,
            recorded: Any) -> list[Any] | None:
    """For log verification: the event the rules of that time give again from the seed, when
    `recorded` is of a legacy kind (`message` is the options for the set-up, else the
    command); None for today's kinds."""
    kind = recorded.WhichOneof("kind") if recorded is not None else None
    dice = RecordingDice(rng, upfront=True)
    log: list[str] = []
    if kind == "changed" and state is None:  # a legacy log migrated to facts (tools/migrate.py)
        raise gamelog.ReplayOnly(2, 2, MIGRATED)
    if kind == "opened":  # today's kind: judged with its own texts when only they differ
        version = recorded.opened.content_version
        if version and version != rules.content_version() and texts_index(version):
            return rules.open_campaign(message, rng, version)
        return None
    if kind == "started":
        version = recorded.started.content_version or content_version()
        check_content(version)
        rules.check_options(message)
        rules.new_state(message, dice, log, version)
        return [pb.Event(started=pb.CampaignStarted(
            options=message, draws=dice.draws, log=log, content_version=version))]
    if kind == "acted":
        assert state is not None
        rules.apply(state.clone(), message, dice, log)
        return [pb.Event(acted=pb.Acted(command=message, draws=dice.draws, log=log))]
    return None
