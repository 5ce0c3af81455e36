"""The template game (services/toy/, walked through in docs/adding-a-game.md) passes the suite
every registered game passes: the shared tests run here with the template as their game, and
its playouts keep the contract and reach every kind of command and event."""

from __future__ import annotations

import pytest

from services.core.decider import Game, Variant
from services.toy import GAME as TEMPLATE
from tests.conformance.playouts import play
from tests.conformance.test_conformance import (  # noqa: F401 - collected here, on the template
    test_a_tampered_log_is_caught_at_its_line,
    test_ai_seats_play_to_the_end_through_the_command_path,
    test_export_import_verify_round_trip,
    test_random_play_reaches_the_end,
    test_rejected_commands_change_nothing,
    test_replaying_the_log_gives_the_state_and_nothing_mutates,
    test_the_host_refuses_a_seat_that_may_not_act,
    test_the_platform_refuses_before_the_rules_run,
    test_the_same_seed_gives_the_same_game,
)
from tests.conformance.test_playouts import Contract, kinds

# With a timeout, the playouts also let deadlines pass (the server's `timeout` command).
TABLES = [Variant("default", 2, TEMPLATE.pb.Options()),
          Variant("timeout", 2, TEMPLATE.pb.Options(pile=21, timeout_seconds=30))]


@pytest.fixture
def game() -> Game:
    return TEMPLATE


def test_the_template_is_not_a_registered_game() -> None:
    from services import games

    assert TEMPLATE.name not in games.GAME_MODULES


def test_the_templates_playouts_keep_the_contract_and_reach_every_kind() -> None:
    contract = Contract()
    commands: set[str] = set()
    events: set[str] = set()
    for variant in TABLES:
        for seed in range(4):
            played = play(TEMPLATE, variant, seed, contract)
            commands |= {c.WhichOneof("kind") for _, c in played.commands}
            events |= {e.WhichOneof("kind") for e in played.events}
    assert not contract.broken, contract.broken[:5]
    assert commands == kinds(TEMPLATE.pb.Command)
    assert events == kinds(TEMPLATE.pb.Event)
