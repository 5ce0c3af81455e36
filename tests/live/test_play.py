"""Play: a seat's session stream, on the embedded store and on Redis."""

from __future__ import annotations

import asyncio

import grpc
from arbiter.bubblee.v1 import bubblee_pb2 as bpb
from arbiter.moody_bear.v1 import moody_bear_pb2 as mpb
from arbiter.v1 import arbiter_pb2 as apb
from google.rpc import error_details_pb2

from tests.live.playing import (
    ADMIN,
    Seat,
    Served,
    check_against_watch_and_views,
    drive,
    method,
    play_stream,
    served,
)

__all__ = ["served"]  # the fixture


async def create(s: Served, game: str, seats: list[apb.Seat], options: object = None) -> object:
    pb = bpb if game == "bubblee" else mpb
    request = pb.CreateGameRequest(seats=seats)
    if options is not None:
        request.options.CopyFrom(options)
    return await method(s.channel, game, "CreateGame", apb.CreateGameResponse)(request)


async def test_a_whole_bubblee_game_against_a_bot_over_play(served: Served) -> None:
    created = await create(served, "bubblee", [apb.Seat(name="ann"), apb.Seat(
        name="bot", kind=apb.AI, bot="greedy")])
    ann = Seat(0, created.tokens[0].token)
    await drive(served.channel, "bubblee", created.game_id, [ann])
    assert ann.messages[-1].updates[-1].HasField("finished"), "the stream ends after the end"
    assert ann.sent == len(ann.answers) > 5
    assert all(not a.HasField("error") and a.version > 0 for a in ann.answers)
    assert await check_against_watch_and_views(served.channel, "bubblee", created.game_id,
                                               ann) > ann.sent


def moody_choice(seat: int | None, commands: list[object]) -> object | None:
    """Play cards (they open response windows); seat 3 never answers a window, so the
    server's deadline closes it; proclaiming (which ends the game) only when nothing else."""
    kinds = [c.WhichOneof("kind") for c in commands]  # type: ignore[attr-defined]
    if "decline" in kinds:
        return None if seat == 3 else commands[kinds.index("decline")]
    for wanted in ("play", "end_turn", "pass_turn", "reject", "accept", "choose_pass",
                   "arrange", "offer"):
        if wanted in kinds:
            return commands[kinds.index(wanted)]
    return None if kinds == ["proclaim"] * len(kinds) else commands[0]


async def test_a_moody_bear_game_with_a_response_window_over_play(served: Served) -> None:
    options = mpb.Options(response_deadline_seconds=1)
    created = await create(served, "moody_bear", [apb.Seat(name=f"p{i}") for i in range(4)],
                           options)
    seats = [Seat(t.seat, t.token) for t in created.tokens]

    def closed_by_deadline(message: object) -> bool:
        return any(u.event.window_closed.by_deadline for u in message.updates)  # type: ignore

    await drive(served.channel, "moody_bear", created.game_id, seats, max_commands=80,
                choose=moody_choice, stop=closed_by_deadline)
    kinds = {u.event.WhichOneof("kind") for s in seats for m in s.messages for u in m.updates
             if u.HasField("event")}
    assert {"announced", "declined", "window_closed"} <= kinds, kinds
    # The server's deadline closed a window: every seat's stream was told, seat 3's too.
    assert all(any(closed_by_deadline(m) for m in s.messages) for s in seats)
    for seat in seats:
        await check_against_watch_and_views(served.channel, "moody_bear", created.game_id, seat)
    # Several seats may answer one window: a command sent at a version another seat moved past
    # gets ABORTED on the stream, which goes on.
    errors = [a.error for s in seats for a in s.answers if a.HasField("error")]
    assert all(e.code == grpc.StatusCode.ABORTED.value[0] for e in errors)


async def test_an_error_is_an_answer_with_acts_status_and_the_stream_goes_on(
        served: Served) -> None:
    created = await create(served, "bubblee", [apb.Seat(name="a"), apb.Seat(name="b")])
    view = await method(served.channel, "bubblee", "GetView", bpb.View)(
        apb.GetViewRequest(game_id=created.game_id))
    mover = view.to_act[0]
    call = play_stream(served.channel, "bubblee", created.tokens[mover].token)
    await call.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=created.game_id,
                                                       from_version=created.version)))
    first = await call.read()
    assert list(first.updates) == [] and first.view.version == created.version
    command = first.legal.commands[0]
    await call.write(bpb.PlayRequest(act=bpb.ActRequest(command=command, command_id="x",
                                                        expected_version=created.version - 1)))
    stale = (await call.read()).answer
    assert stale.command_id == "x" and stale.error.code == grpc.StatusCode.ABORTED.value[0]
    info = error_details_pb2.ErrorInfo()
    stale.error.details[0].Unpack(info)
    assert info.reason == "STALE_VERSION"
    assert info.metadata["current_version"] == str(created.version)
    await call.write(bpb.PlayRequest(act=bpb.ActRequest(command=command, command_id="y",
                                                        expected_version=created.version)))
    done = await call.read()
    assert done.answer.command_id == "y" and done.answer.version > created.version
    assert done.view.version == done.answer.version and done.updates
    assert [u.version for u in done.updates] == list(range(created.version + 1,
                                                           done.answer.version + 1))
    # The same id again: its first result, nothing applied, no entry pushed twice.
    await call.write(bpb.PlayRequest(act=bpb.ActRequest(command=command, command_id="y",
                                                        expected_version=created.version)))
    again = await call.read()
    assert again.answer.version == done.answer.version and not again.updates
    # A reserved id is refused as Act refuses it.
    await call.write(bpb.PlayRequest(act=bpb.ActRequest(command=command, command_id="ai:x")))
    reserved = (await call.read()).answer.error
    reserved.details[0].Unpack(info)
    assert info.reason == "COMMAND_ID_RESERVED"
    call.cancel()


async def test_a_spectator_only_receives(served: Served) -> None:
    created = await create(served, "bubblee", [apb.Seat(name="a"), apb.Seat(name="b")])
    watcher = play_stream(served.channel, "bubblee")
    await watcher.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=created.game_id,
                                                          from_version=created.version)))
    first = await watcher.read()
    assert not first.HasField("legal") and not first.view.HasField("seat")
    await watcher.write(bpb.PlayRequest(act=bpb.ActRequest(command=bpb.Command())))
    refused = (await watcher.read()).answer.error
    assert refused.code == grpc.StatusCode.UNAUTHENTICATED.value[0]
    # A seat plays with Act: the spectator's stream pushes it.
    mover = first.view.to_act[0]
    legal = await method(served.channel, "bubblee", "ListLegalActions", bpb.LegalActions)(
        apb.ListLegalActionsRequest(game_id=created.game_id),
        metadata=[("x-seat-token", created.tokens[mover].token)])
    reply = await method(served.channel, "bubblee", "Act", bpb.ActResponse)(
        bpb.ActRequest(game_id=created.game_id, command=legal.commands[0]),
        metadata=[("x-seat-token", created.tokens[mover].token)])
    pushed = await asyncio.wait_for(watcher.read(), 5)
    assert pushed.view.version == reply.version and not pushed.HasField("answer")
    assert [u.version for u in pushed.updates] == [e.version for e in reply.events]
    watcher.cancel()


async def test_reopening_from_a_version_resumes_with_no_gap_and_no_duplicate(
        served: Served) -> None:
    created = await create(served, "bubblee", [apb.Seat(name="a"), apb.Seat(name="b")])
    seats = [Seat(t.seat, t.token) for t in created.tokens]
    await drive(served.channel, "bubblee", created.game_id, seats, max_commands=6)
    # Others play on while seat 0 is away (Act), then seat 0 comes back from what it had.
    had = max(m.view.version for m in seats[0].messages)
    for _ in range(4):
        view = await method(served.channel, "bubblee", "GetView", bpb.View)(
            apb.GetViewRequest(game_id=created.game_id))
        token = created.tokens[view.to_act[0]].token
        legal = await method(served.channel, "bubblee", "ListLegalActions", bpb.LegalActions)(
            apb.ListLegalActionsRequest(game_id=created.game_id),
            metadata=[("x-seat-token", token)])
        await method(served.channel, "bubblee", "Act", bpb.ActResponse)(
            bpb.ActRequest(game_id=created.game_id, command=legal.commands[0]),
            metadata=[("x-seat-token", token)])
    back = Seat(0, created.tokens[0].token)
    await drive(served.channel, "bubblee", created.game_id, [back], max_commands=0,
                from_version=had)
    together = Seat(0, created.tokens[0].token, seats[0].messages + back.messages)
    await check_against_watch_and_views(served.channel, "bubblee", created.game_id, together)


async def test_opening_needs_open_first_and_a_seat_token_of_the_game(served: Served) -> None:
    created = await create(served, "bubblee", [apb.Seat(name="a"), apb.Seat(name="b")])
    call = play_stream(served.channel, "bubblee")
    await call.write(bpb.PlayRequest(act=bpb.ActRequest(game_id=created.game_id)))
    try:
        await call.read()
        raise AssertionError("opened without `open`")
    except grpc.aio.AioRpcError as e:
        assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    call = play_stream(served.channel, "bubblee", "not-a-token")
    await call.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=created.game_id)))
    try:
        await call.read()
        raise AssertionError("opened with a stranger's token")
    except grpc.aio.AioRpcError as e:
        assert e.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_the_admin_plays_any_seat_it_names(served: Served) -> None:
    created = await create(served, "bubblee", [apb.Seat(name="a"), apb.Seat(name="b")])
    view = await method(served.channel, "bubblee", "GetView", bpb.View)(
        apb.GetViewRequest(game_id=created.game_id))
    mover = view.to_act[0]
    open_call = served.channel.stream_stream(
        "/arbiter.bubblee.v1.Game/Play", request_serializer=bpb.PlayRequest.SerializeToString,
        response_deserializer=bpb.PlayResponse.FromString)
    call = open_call(metadata=[("x-admin-token", ADMIN)])
    await call.write(bpb.PlayRequest(open=apb.PlayOpen(game_id=created.game_id, seat=mover,
                                                       from_version=created.version)))
    first = await call.read()
    assert first.view.seat == mover and first.legal.commands
    await call.write(bpb.PlayRequest(act=bpb.ActRequest(command=first.legal.commands[0])))
    assert (await call.read()).answer.version > created.version
    call.cancel()
