"""Events that hold facts: decide runs the rules once, evolve only applies what changed, a game
replays across content edits while verification shows them, and the logs written before events
held facts (tests/eila/logs, played by the bots) still load, replay and verify."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from arbiter.eila.v1 import eila_pb2 as pb

from services.core import log as gamelog
from services.core.decider import Rng, RuleError, Seat
from services.core.host import Caller, Host
from services.core.store import MemoryStore
from services.eila import GAME, data, engine, facts, legacy, rules
from services.eila.engine import RecordingDice
from services.eila.state import State

LOGS = sorted((Path(__file__).parent / "logs").glob("*.jsonl"))


def legacy_entries(path: Path) -> list[Any]:
    return gamelog.from_json_lines(GAME, path.read_text().splitlines())


def events_of(entries: list[Any]) -> list[Any]:
    return [gamelog.game_event(GAME, e) for e in entries if e.WhichOneof("body") == "event"]


def playout(options: Any, seed: bytes) -> tuple[list[Any], State]:
    """The bots play; returns every event and the state, checking each step on the way: the
    state evolve builds from the facts is the one the rules left."""
    events = GAME.setup(options, [Seat("eila")], Rng(seed, 0))
    state = GAME.replay(events)
    for version in range(1, 400):
        if GAME.outcome(state) is not None:
            break
        legal = GAME.legal_actions(state, 0)
        bot = "greedy" if version % 3 else "random_options"
        command = GAME.bots[bot](GAME.view(state, 0), legal, Rng(b"bot", version))
        new = GAME.decide_now(state, 0, command, Rng(seed, version))
        work = state.clone()
        rules.apply(work, command, RecordingDice(Rng(seed, version)), [])
        if work.play is not None:
            engine.forget_order(work.play)
        for event in new:
            state = GAME.evolve(state, event)
        assert state.play == work.play and state.history == work.history
        assert (state.phase, state.box, state.winners) == (work.phase, work.box, work.winners)
        events += new
    return events, state


CHAPTERS = [  # every chapter, with a pocket watch, the green die and a spell
    pb.Options(first_chapter=c, save_box=["I16", "S01", "S12"], single_chapter=c > 0,
               advanced=c % 2 == 1) for c in range(6)]


@pytest.fixture(scope="module")
def played() -> list[tuple[list[Any], State]]:
    return [playout(o, b"facts-%d" % o.first_chapter) for o in CHAPTERS]


# ---- facts ----------------------------------------------------------------------------------


def test_events_of_each_new_kind_and_the_table_parts_appear_in_play(played: Any) -> None:
    kinds = {e.WhichOneof("kind") for events, _ in played for e in events}
    assert kinds == {"opened", "changed"}
    parts = {f.part for events, _ in played for e in events if e.WhichOneof("kind") == "changed"
             for f in e.changed.facts}
    assert {"play", "phase", "history", "play.res", "play.hp", "play.present", "play.upcoming",
            "play.future", "play.past", "play.combat", "play.queue", "play.day", "play.track",
            "play.submitted", "play.quizzes", "play.mine", "play.offers", "play.location",
            "play.items", "play.result", "play.decks", "play.quiz_decks"} <= parts


def test_facts_hold_no_order_nobody_has_seen(played: Any) -> None:
    for events, _ in played:
        state: State | None = None
        for event in events:
            state = GAME.fold(state, event)
            seen = GAME.redact(event, 0)
            assert seen.WhichOneof("kind") == event.WhichOneof("kind")
            if event.WhichOneof("kind") == "changed":  # all but the decks' contents
                unseen = {"play.decks", "play.quiz_decks"}
                assert [f for f in event.changed.facts if f.part not in unseen and f.part != "play"
                        ] == [f for f in seen.changed.facts if f.part != "play"]
                assert list(seen.changed.log) == list(event.changed.log)
                for fact in seen.changed.facts:
                    if fact.part == "play":
                        table = json.loads(fact.value)
                        assert table["decks"] == table["quiz_decks"] == {}
                        whole = json.loads(next(f.value for f in event.changed.facts
                                                if f.part == "play"))
                        assert {**whole, "decks": {}, "quiz_decks": {}} == table
            else:
                assert seen == event
            p = state.play
            if p is None:
                continue
            end = len(p.upcoming) - (1 if p.bottom else 0)
            assert p.upcoming[p.known:end] == sorted(p.upcoming[p.known:end])
            if p.mine is not None:
                assert all(up or not tile for tile, up in zip(p.mine.tiles, p.mine.faceup,
                                                              strict=True))


def test_evolve_reads_no_content_and_runs_no_rule(played: Any, monkeypatch: Any) -> None:
    def refuse(*_: Any, **__: Any) -> Any:
        raise AssertionError("evolve consulted the content or the rules")

    for module, name in [(rules, "apply"), (rules, "index"), (rules, "start_chapter"),
                         (data, "default_index"), (data, "load_content"), (engine, "Table")]:
        monkeypatch.setattr(module, name, refuse)
    for events, state in played:
        assert GAME.replay(events) == state


async def test_an_act_runs_the_rules_once(monkeypatch: Any) -> None:
    host = Host(MemoryStore(), {GAME.name: GAME})
    made = await host.create(GAME.name, [Seat("eila")], pb.Options())
    game_id, tokens = made.game_id, made.tokens
    runs = []
    apply = rules.apply

    def counted(*args: Any) -> None:
        runs.append(args[1])
        apply(*args)

    monkeypatch.setattr(rules, "apply", counted)
    for n in range(20):
        loaded = await host.load(game_id)
        command = GAME.legal_actions(loaded.state, 0)[0]
        await host.act(game_id, Caller(token=tokens[0]), command, f"c{n}")
        assert len(runs) == n + 1  # decide ran them; storing and caching the events did not
    assert len(runs) == 20


# ---- content edits ---------------------------------------------------------------------------


@pytest.fixture
def edited_content(tmp_path: Path, monkeypatch: Any) -> Any:
    """The content files, copied, with one card of chapter 0 changed (the server's now)."""
    original, copy = data.DATA_DIR, tmp_path / "data"
    shutil.copytree(original, copy)
    chapter = json.loads((copy / "chapter0.json").read_text())
    chapter["cards"][0]["options"][0]["effects"] = [{"gain": {"food": 3}}]
    (copy / "chapter0.json").write_text(json.dumps(chapter))

    def use(path: Path) -> None:
        monkeypatch.setattr(data, "DATA_DIR", path)
        data.reload()

    yield lambda: use(copy)
    use(original)


async def finished_game(options: Any) -> list[Any]:
    from services.core.server import in_process_ai

    host = Host(MemoryStore(), {GAME.name: GAME}, ai_dispatch=in_process_ai)
    game_id = (await host.create(GAME.name, [Seat("eila", "ai", "greedy")], options)).game_id
    for _ in range(200_000):
        if (await host.load(game_id)).finished:
            return (await host.history(game_id))[1]
        await asyncio.sleep(0)
    raise AssertionError("the bot did not finish the game")


async def test_a_content_edit_keeps_a_stored_game_replaying_and_verification_shows_it(
        edited_content: Any) -> None:
    entries = await finished_game(pb.Options(single_chapter=True))
    state = gamelog.verify(GAME, entries).state
    played_with = data.content_version()
    edited_content()
    assert data.content_version() != played_with
    assert GAME.replay(events_of(entries)) == state  # it loads and replays as it was played
    host = Host(MemoryStore(), {GAME.name: GAME})
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.verify(GAME, entries)
    assert bad.value.line == 2 and "differs" in bad.value.reason  # the opening names the content
    from services.core.grpc_api import import_lines

    with pytest.raises(gamelog.BadLog):
        await import_lines(host, gamelog.to_json_lines(GAME, entries))


# ---- logs from before events held facts ------------------------------------------------------


def test_there_are_legacy_logs_of_every_chapter() -> None:
    chapters = set()
    for path in LOGS:
        first = events_of(legacy_entries(path))[0]
        assert first.WhichOneof("kind") == "started"
        chapters.add(first.started.options.first_chapter)
    assert chapters == set(range(6))


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
async def test_a_legacy_log_loads_replays_and_verifies(path: Path) -> None:
    from services.core.grpc_api import import_lines

    entries = legacy_entries(path)
    verified = gamelog.verify(GAME, entries)
    assert verified.finished
    assert GAME.replay(events_of(entries)) == verified.state
    host = Host(MemoryStore(), {GAME.name: GAME})
    game_id, _ = await import_lines(host, path.read_text().splitlines())
    assert (await host.load(game_id)).state == verified.state
    for event in events_of(entries):  # the draws may tell the deck's order: never shown
        kind = event.WhichOneof("kind")
        assert not getattr(GAME.redact(event, 0), kind).draws


@pytest.mark.parametrize("path", LOGS[:3], ids=[p.stem for p in LOGS[:3]])
async def test_a_legacy_game_goes_on_with_facts_and_verifies(path: Path) -> None:
    """Forked halfway, a game from before facts is played on by its bot: the new commands
    write facts, and the whole log (the parent's legacy events, then facts) verifies."""
    from services.core.grpc_api import import_lines
    from services.core.server import in_process_ai

    host = Host(MemoryStore(), {GAME.name: GAME}, ai_dispatch=in_process_ai)
    parent_id, _ = await import_lines(host, path.read_text().splitlines())
    entries = legacy_entries(path)
    cut = gamelog.batches(entries)[len(gamelog.batches(entries)) // 2].last_version
    fork_id = (await host.fork(parent_id, cut)).game_id
    for _ in range(200_000):
        if (await host.load(fork_id)).finished:
            break
        await asyncio.sleep(0)
    loaded, forked = await host.history(fork_id)
    assert loaded.finished
    kinds = [pb.Event.FromString(e.event).WhichOneof("kind") for e in forked
             if e.WhichOneof("body") == "event"]
    assert set(kinds[:len(events_of(entries[:cut]))]) <= {"started", "acted"}
    assert kinds[len(events_of(entries[:cut])):] and set(
        kinds[len(events_of(entries[:cut])):]) == {"changed"}
    imported, _ = await import_lines(host, gamelog.to_json_lines(GAME, forked))
    assert (await host.load(imported)).state == loaded.state
    p = loaded.state.play
    end = len(p.upcoming) - (1 if p.bottom else 0)  # the shuffled order it held is forgotten
    assert p.upcoming[p.known:end] == sorted(p.upcoming[p.known:end])


def test_a_legacy_log_is_verified_by_the_rules_of_its_time() -> None:
    entries = legacy_entries(LOGS[0])
    at = next(i for i, e in enumerate(entries) if e.WhichOneof("body") == "event"
              and pb.Event.FromString(e.event).acted.draws)
    forged = [type(e)() for e in entries]
    for f, e in zip(forged, entries, strict=True):
        f.CopyFrom(e)
    event = pb.Event.FromString(entries[at].event)
    event.acted.draws[0] = (event.acted.draws[0] + 1) % 2
    forged[at].event = event.SerializeToString()
    with pytest.raises(gamelog.BadLog) as bad:
        gamelog.verify(GAME, forged)
    assert bad.value.line == at + 1


def test_a_legacy_batch_meets_the_platform_s_refusals_before_the_rules_of_its_time() -> None:
    entries = legacy_entries(LOGS[0])
    at = next(i for i, e in enumerate(entries) if e.HasField("command"))
    assert pb.Event.FromString(entries[at + 1].event).HasField("acted")  # a legacy batch
    forgeries = {"seat 1 may not act now": lambda c: setattr(c, "seat", 1),
                 "the command names no action": lambda c: c.ClearField("command"),
                 "the server sends no command in this game": lambda c: setattr(c, "system", True)}
    for reason, forge in forgeries.items():
        forged = [type(e)() for e in entries]
        for f, e in zip(forged, entries, strict=True):
            f.CopyFrom(e)
        forge(forged[at].command)
        with pytest.raises(gamelog.BadLog) as bad:
            gamelog.verify(GAME, forged)
        assert (bad.value.line, bad.value.reason) == (at + 1, "the command is illegal here: "
                                                              + reason)


def test_a_legacy_log_played_with_other_content_is_refused_not_replayed_wrongly(
        edited_content: Any) -> None:
    entries = legacy_entries(LOGS[0])
    edited_content()
    with pytest.raises(RuleError) as refused:
        GAME.replay(events_of(entries))
    assert refused.value.code == "RULES_CHANGED"
    played_with = events_of(entries)[0].started.content_version
    assert played_with in refused.value.message and legacy.content_version() != played_with


def test_facts_name_only_parts_of_the_campaign() -> None:
    state = GAME.replay(GAME.setup(pb.Options(), [Seat("eila")], Rng(b"x", 0)))
    for part in ("play.nothing", "log", "nothing"):
        with pytest.raises(ValueError):
            facts.apply(state, [pb.Fact(part=part, value="1")])


# ---- the content's fingerprint is its rules: text edits keep stored games -----------------


@pytest.fixture
def flavour_edited_content(tmp_path: Path, monkeypatch: Any) -> Any:
    """The content files, copied, with one character added to card 001's story text and
    option A's text (no rule changed; the texts of the content before are archived)."""
    original, copy = data.DATA_DIR, tmp_path / "data"
    shutil.copytree(original, copy)
    chapter = json.loads((copy / "chapter0.json").read_text())
    chapter["cards"][0]["text"] += "!"
    chapter["cards"][0]["options"][0]["text"] += "!"
    (copy / "chapter0.json").write_text(json.dumps(chapter))

    def use(path: Path) -> None:
        monkeypatch.setattr(data, "DATA_DIR", path)
        data.reload()

    yield lambda: use(copy)
    use(original)


def test_the_texts_of_todays_content_are_archived() -> None:
    """A text edit must find the texts of the content before it (`arbiter eila texts`)."""
    entry = data.archived(data.content_version())
    assert entry is not None, "run `arbiter eila texts` to keep today's texts"
    assert entry == data.archive_entry()
    assert entry["legacy"] == legacy.content_version()


def test_a_flavour_edit_keeps_every_legacy_log_loading_and_verifying(
        flavour_edited_content: Any) -> None:
    """Issue 25 item 2: a character added to card 001's flavour text made all 6 legacy logs
    answer RULES_CHANGED. The fingerprint is now what the rules read: each still verifies
    and replays to the state it had, with the texts it was played with."""
    before = {path: gamelog.verify(GAME, legacy_entries(path)).state for path in LOGS}
    rules_before = data.current_rules()
    flavour_edited_content()
    assert data.current_rules() == rules_before and legacy.content_version() not in {
        events_of(legacy_entries(p))[0].started.content_version for p in LOGS}
    loaded = 0
    for path in LOGS:
        entries = legacy_entries(path)
        assert gamelog.verify(GAME, entries).state == before[path]
        assert GAME.replay(events_of(entries)) == before[path]
        loaded += 1
    assert loaded == len(LOGS) == 6


def test_a_stored_game_shows_the_texts_it_was_played_with(flavour_edited_content: Any) -> None:
    """Replay of an old game shows its texts; a new game shows today's."""
    old = GAME.replay(GAME.setup(pb.Options(), [Seat("eila")], Rng(b"texts", 0)))
    shown = GAME.view(old, 0).present
    assert shown.id == "001"
    flavour_edited_content()
    assert GAME.view(old, 0).present.text == shown.text
    assert GAME.view(old, 0).present.options[0].text == shown.options[0].text
    new = GAME.replay(GAME.setup(pb.Options(), [Seat("eila")], Rng(b"texts", 0)))
    assert GAME.view(new, 0).present.text == shown.text + "!"


async def test_a_facts_game_verifies_and_imports_after_a_flavour_edit(
        flavour_edited_content: Any) -> None:
    """VerifyLog and ImportLog judge a stored game with the texts it was played with."""
    from services.core.grpc_api import import_lines

    entries = await finished_game(pb.Options(single_chapter=True))
    state = gamelog.verify(GAME, entries).state
    flavour_edited_content()
    assert gamelog.verify(GAME, entries).state == state
    host = Host(MemoryStore(), {GAME.name: GAME})
    game_id, _ = await import_lines(host, gamelog.to_json_lines(GAME, entries))
    assert (await host.load(game_id)).state == state


def test_a_rule_edit_refuses_a_legacy_log_and_names_the_migration(edited_content: Any) -> None:
    entries = legacy_entries(LOGS[0])
    edited_content()
    with pytest.raises(RuleError) as refused:
        GAME.replay(events_of(entries))
    assert refused.value.code == "RULES_CHANGED"
    assert "arbiter eila migrate" in refused.value.message


@pytest.mark.parametrize("path", LOGS, ids=[p.stem for p in LOGS])
def test_a_legacy_log_migrated_to_facts_replays_after_a_rule_edit(
        path: Path, edited_content: Any, tmp_path: Path) -> None:
    """`arbiter eila migrate`, run while the content still has the log's rules, writes its
    events as facts: the log then replays after a rule edit that refuses the legacy one."""
    from services.cli.main import main
    from services.eila.tools.migrate import forgotten

    state = gamelog.verify(GAME, legacy_entries(path)).state
    target = tmp_path / "migrated.jsonl"
    assert main(["eila", "migrate", str(path), str(target)]) == 0
    migrated = gamelog.from_json_lines(GAME, target.read_text().splitlines())
    assert [e.version for e in migrated] == [e.version for e in legacy_entries(path)]
    kinds = {e.WhichOneof("kind") for e in events_of(migrated)}
    assert kinds == {"changed"}
    edited_content()
    with pytest.raises(RuleError):
        GAME.replay(events_of(legacy_entries(path)))
    assert GAME.replay(events_of(migrated)) == forgotten(state)
    assert main(["eila", "migrate", str(path), str(tmp_path / "again.jsonl")]) == 1


@pytest.mark.parametrize("path", [LOGS[0], LOGS[-1]], ids=[LOGS[0].stem, LOGS[-1].stem])
async def test_a_stored_legacy_game_is_carried_over_by_migration(
        path: Path, edited_content: Any, tmp_path: Path) -> None:
    """Issue 25 item 2, the whole path: a legacy game stored here is exported, migrated while
    the content has its rules, and, after a rule edit that refuses the legacy log, imported
    under a new id. It cannot be re-run against its seed (VerifyLog says why), so it is
    imported replay-only, marked so; it replays to the legacy game's state and is served."""
    from services.cli.main import main
    from services.core.grpc_api import import_game, import_lines
    from services.eila.tools.migrate import forgotten

    host = Host(MemoryStore(), {GAME.name: GAME})
    legacy_id, _ = await import_lines(host, path.read_text().splitlines())
    stored, entries = await host.history(legacy_id)
    exported, target = tmp_path / "legacy.jsonl", tmp_path / "facts.jsonl"
    exported.write_text("\n".join(gamelog.to_json_lines(GAME, entries)) + "\n")
    assert main(["eila", "migrate", str(exported), str(target)]) == 0
    edited_content()
    with pytest.raises(RuleError):
        GAME.replay(events_of(entries))
    lines = target.read_text().splitlines()
    with pytest.raises(gamelog.ReplayOnly) as why:
        gamelog.verify(GAME, gamelog.from_json_lines(GAME, lines))
    assert "replay-only" in why.value.reason

    game_id, version, replay_only = await import_game(host, lines)
    assert replay_only and game_id != legacy_id and version == len(lines)
    meta = await host.tables.store.meta(game_id)
    assert meta is not None and meta["imported"] == "replay-only"
    imported = await host.load(game_id)
    assert imported.finished and imported.state == forgotten(stored.state)
    for at in (2, len(lines) // 2, len(lines)):  # served: Replay and every viewer's view
        _, state, version = await host.replay_to(game_id, at)
        for viewer in (None, 0):
            assert host.view_of(imported, viewer, state, version).version == version

    # Replaying is all it is taken on: a log whose events do not replay is still refused.
    rows = [json.loads(line) for line in lines]
    rows[1]["event"]["changed"]["facts"].append({"part": "play.nothing", "value": "1"})
    with pytest.raises(gamelog.BadLog) as bad:
        await import_game(host, [json.dumps(row) for row in rows])
    assert bad.value.line == 2 and "does not apply" in bad.value.reason
    rows = [json.loads(line) for line in lines][:-1]  # no end: not a finished game
    with pytest.raises(gamelog.BadLog):
        await import_game(host, [json.dumps(row) for row in rows])
