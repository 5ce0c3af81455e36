"""The template game (services/toy/, walked through in docs/adding-a-game.md) is one of the
suite's games (tests/conformance/suite.py): every shared test plays it, gRPC, the terminal,
golden logs, variants and leaks included. The server does not offer it."""

from __future__ import annotations

from services import games as registry
from services.toy import GAME as TEMPLATE
from tests.conformance import suite


def test_the_template_is_played_by_the_suite_but_not_served() -> None:
    assert TEMPLATE.name not in registry.GAME_MODULES
    assert suite.game(TEMPLATE.name) is TEMPLATE and TEMPLATE.name in suite.NAMES


def test_the_template_shows_every_hook_a_game_with_secrets_fills() -> None:
    """What a newcomer copies has an example of each: a seat's secret (redact, redeal,
    view_hidden), commands in words, variants and a playout."""
    for hook in ("redeal", "view_hidden", "describe", "describe_command", "render",
                 "variants", "playout", "deadlines"):
        assert getattr(TEMPLATE, hook) is not None, hook
    assert getattr(TEMPLATE.redact, "__wrapped__", None) is not None, "redact is not marked"
