"""The abuse suite's fast cases (loadtests/abuse.py), against a real server process with the
embedded store while a well-behaved client plays from another address: the bounds the HTTP
port's edge sets. Latency ratios are reported by `make abuse`, not asserted here."""

from __future__ import annotations

from typing import Any

import pytest

from loadtests.abuse import run_store

FAST = ["idle_http", "slowloris", "big_play_body", "cross_origin", "bad_tokens"]


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    import asyncio

    return asyncio.run(run_store("embedded", FAST, seconds=2, extra_env={
        "ARBITER_HTTP_IDLE_SECONDS": "1", "ARBITER_HTTP_READ_SECONDS": "1"}))


def test_no_attack_costs_the_well_behaved_client_an_error(run: dict[str, Any]) -> None:
    for name in FAST:
        attack = run["attacks"][name]
        assert attack["alive"], name
        assert attack["errors"] == {}, (name, attack["errors"])
        assert attack["rounds"] > 0, name
        assert "attacker_failed" not in attack["observed"], (name, attack["observed"])


def test_idle_connections_hold_at_most_the_cap_per_address_and_the_log_stays_quiet(
        run: dict[str, Any]) -> None:
    idle = run["attacks"]["idle_http"]
    assert idle["observed"]["opened"] > 1000  # the attacker got its connections accepted...
    # ...but the server held at most 64 of them (ARBITER_HTTP_MAX_CONNECTIONS_PER_CLIENT)
    # beside what it holds anyway, plus the refused ones of the attacker's last burst of 200
    # (each open until its answer is written), and said so in a line or two, not one per
    # connection.
    assert idle["server_fds_max"] <= run["baseline"]["server_fds_max"] + 64 + 200 + 16
    assert idle["server_log_lines"] <= 3


def test_slow_headers_and_slow_bodies_are_closed(run: dict[str, Any]) -> None:
    slow = run["attacks"]["slowloris"]["observed"]
    assert slow["connections"] > 0
    assert slow["answered_or_closed_by_server"] == slow["connections"]


def test_a_580000_command_body_is_refused_unread(run: dict[str, Any]) -> None:
    answers = run["attacks"]["big_play_body"]["observed"]["answers"]
    assert answers and set(answers) == {"413 resource_exhausted"}, answers


def test_cross_origin_posts_and_bad_token_headers_are_refused_with_a_status(
        run: dict[str, Any]) -> None:
    statuses = run["attacks"]["cross_origin"]["observed"]["statuses"]
    assert statuses and all(key.endswith(": 403") for key in statuses), statuses
    tokens = run["attacks"]["bad_tokens"]["observed"]["statuses"]
    assert tokens and set(tokens) == {401}, tokens
