"""Simulations: deterministic from the seed, Wilson intervals, per-game figures, the RPC."""

from __future__ import annotations

import json
import os
import socket
from typing import Any

import grpc
import pytest
from arbiter.v1 import arbiter_pb2 as apb
from arbiter.v1 import arbiter_pb2_grpc as apb_grpc

from services.core.server import Config
from services.core.store import MemoryStore
from services.process import build
from services.workers import gameset
from services.workers.simulate import Plan, play_one, run, wilson
from tests.workers.conftest import TOY

os.environ.setdefault("ARBITER_EXTRA_GAMES", "toy=services.toy")


def without_timing(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "timing"}


def test_wilson_interval_matches_the_textbook_values() -> None:
    lo, hi = wilson(5, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and round(hi, 4) == 0.2775
    assert wilson(0, 0) == (0.0, 1.0)


def test_the_same_seed_gives_the_same_report() -> None:
    a = run(Plan("toy", 150, ["perfect", "random"], seed="s"))
    b = run(Plan("toy", 150, ["perfect", "random"], seed="s"))
    assert without_timing(a) == without_timing(b)
    c = run(Plan("toy", 150, ["random", "random"], seed="s"))
    d = run(Plan("toy", 150, ["random", "random"], seed="t"))
    assert without_timing(c) != without_timing(d)


def test_the_report_does_not_depend_on_the_number_of_workers() -> None:
    one = run(Plan("toy", 120, ["random", "perfect"], seed="w"))
    two = run(Plan("toy", 120, ["random", "perfect"], seed="w", workers=2))
    assert without_timing(one) == without_timing(two)


def test_a_game_is_a_pure_function_of_seed_and_index() -> None:
    first = play_one(TOY, ["random", "random"], "x", 7)
    again = play_one(TOY, ["random", "random"], "x", 7)
    first.pop("seconds")
    again.pop("seconds")
    assert first == again


def test_the_report_has_win_rates_intervals_lengths_and_observations() -> None:
    report = run(Plan("toy", 200, ["perfect", "random"], seed="r"))
    perfect, rnd = report["bots"]
    assert perfect["wins"] + rnd["wins"] + report["draws"] == report["finished"] == 200
    assert perfect["ci95"][0] <= perfect["win_rate"] <= perfect["ci95"][1]
    assert perfect["win_rate"] > 0.9  # the perfect strategy beats random play
    assert sum(report["seat_wins"]) == 200
    assert report["length"]["min"] <= report["length"]["mean"] <= report["length"]["max"]
    assert set(report["observed"]["take"]) <= {"1", "2", "3"}
    assert sum(report["observed"]["take"].values()) == report["events"]["took"]
    assert report["timing"]["games_per_second"] > 0


def test_seats_rotate_unless_fixed() -> None:
    rotating = run(Plan("toy", 100, ["perfect", "perfect"], seed="f"))
    fixed = run(Plan("toy", 100, ["perfect", "perfect"], seed="f", rotate=False))
    assert rotating["bots"][0]["wins"] != 100 or fixed["bots"][0]["wins"] != 100
    assert rotating["finished"] == fixed["finished"] == 100
    # With rotation, bot entry k does not always sit at seat k: its wins are not seat k's.
    assert [b["wins"] for b in rotating["bots"]] != rotating["seat_wins"]
    # With fixed seats, bot entry k always sits at seat k.
    assert [b["wins"] for b in fixed["bots"]] == fixed["seat_wins"]


def test_bad_plans_are_refused_with_a_reason() -> None:
    with pytest.raises(ValueError, match="no bot named"):
        run(Plan("toy", 10, ["perfect", "genius"]))
    with pytest.raises(ValueError, match="seats"):
        run(Plan("toy", 10, ["perfect"]))
    with pytest.raises(ValueError, match="no bot named genius"):
        run(Plan("moody_bear", 2, ["keeper"] * 5, side_bots={"solo": "genius"}))
    with pytest.raises(ValueError, match="no sides"):
        run(Plan("toy", 2, ["perfect", "random"], side_bots={"solo": "random"}))
    with pytest.raises(ValueError, match="no side purple; its sides are red, blue, solo"):
        run(Plan("moody_bear", 2, ["keeper"] * 5, side_bots={"purple": "passive"}))


def test_side_bots_play_every_seat_the_deal_puts_on_their_side(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Solo plays the passive bot wherever the deal seats it; every other seat its own."""
    from services.workers import simulate

    game = gameset.game("moody_bear")
    asked: list[tuple[int, str, str]] = []
    solo_kinds: set[str] = set()
    choose = simulate.choose_command

    def recording(game: Any, state: Any, seat: int, bot: str, rng: Any) -> Any:
        side = simulate.SIDES["moody_bear"](state)[seat]
        asked.append((seat, bot, side))
        command = choose(game, state, seat, bot, rng)
        if side == "solo":
            solo_kinds.add(command.WhichOneof("kind"))
        return command

    monkeypatch.setattr(simulate, "choose_command", recording)
    solo_seats = set()
    for index in range(6):
        play_one(game, ["keeper"] * 5, "sides", index, side_bots={"solo": "passive"})
        solo_seats |= {seat for seat, _, side in asked if side == "solo"}
    assert len(solo_seats) > 1  # the deal moves the Solo: the override follows it
    assert {side for _, _, side in asked} == set(simulate.SIDE_NAMES["moody_bear"])
    assert {(bot, side == "solo") for _, bot, side in asked} == {("passive", True),
                                                                ("keeper", False)}
    # A passive Solo never plays a card, trades or proclaims: it passes, declines, refuses,
    # and makes the choices the rules force on it.
    assert "pass_turn" in solo_kinds
    assert solo_kinds <= {"pass_turn", "decline", "reject", "close_window", "end_turn",
                          "choose_pass", "arrange"}


def test_the_side_names_are_the_sides_games_deal() -> None:
    """A side bot must name a side the game deals: SIDE_NAMES is what SIDES reads."""
    from services.workers import simulate

    for name, bots in (("shadow_council", ["sleuth"] * 5), ("moody_bear", ["keeper"] * 5)):
        dealt = {side for i in range(8)
                 for side in play_one(gameset.game(name), bots, "names", i)["sides"]}
        assert dealt == set(simulate.SIDE_NAMES[name])


def test_a_side_bot_that_is_the_seats_own_changes_no_game() -> None:
    game = gameset.game("moody_bear")
    for index in range(3):
        plain = play_one(game, ["keeper"] * 5, "same", index)
        same = play_one(game, ["keeper"] * 5, "same", index, side_bots={"solo": "keeper"})
        other = play_one(game, ["keeper"] * 5, "same", index, side_bots={"solo": "passive"})
        assert plain["digest"] == same["digest"]
        assert other["digest"] != plain["digest"]


def test_bubblee_reports_its_cascade_depth_histogram() -> None:
    report = run(Plan("bubblee", 6, ["greedy", "random"], seed="b"))
    assert report["finished"] == 6
    assert sum(report["observed"]["cascade_depth"].values()) > 0
    again = run(Plan("bubblee", 6, ["greedy", "random"], seed="b"))
    assert without_timing(report) == without_timing(again)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_simulate_over_grpc() -> None:
    config = Config(grpc_addr=f"127.0.0.1:{free_port()}")
    process = build(config, {"toy": TOY}, MemoryStore())
    server, port = process.server, process.port
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = apb_grpc.ArbiterStub(channel)
        reply = await stub.Simulate(apb.SimulateRequest(
            game="toy", games=80, bots=["perfect", "random"], seed="g"))
        local = run(Plan("toy", 80, ["perfect", "random"], seed="g"))
        assert [b.wins for b in reply.bots] == [b["wins"] for b in local["bots"]]
        assert reply.bots[0].ci95_low <= reply.bots[0].win_rate <= reply.bots[0].ci95_high
        assert without_timing(json.loads(reply.report_json)) == without_timing(local)
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Simulate(apb.SimulateRequest(game="toy", games=5, bots=["nobody", "x"]))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.Simulate(apb.SimulateRequest(game="chess", games=5, bots=["a"]))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    await server.stop(None)
