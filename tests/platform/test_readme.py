"""The README's client example runs as written against a live server."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from services import games as registry
from tests.platform.serving import make_run_server

ROOT = Path(__file__).resolve().parents[2]


def example(name: str) -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", text, re.S)
    assert match, f"README has no example {name}"
    return match.group(1)


def test_readme_python_client_plays_a_game_and_verifies_it(tmp_path: Path) -> None:
    with make_run_server(tmp_path, http=False) as env:
        script = tmp_path / "example.py"
        script.write_text(example("play-bubblee"))
        run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert "final scores" in run.stdout
        assert "verified: True" in run.stdout
    # The embedded store kept the game on disk.
    assert (tmp_path / "arbiter.aof").stat().st_size > 0


def shell_example(name: str) -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(rf"<!-- example: {name} -->\n```sh\n(.*?)```", text, re.S)
    assert match, f"README has no example {name}"
    return match.group(1)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A server as `make run` starts it (embedded store, gRPC and HTTP), on free ports: the
    environment the examples read their addresses from."""
    with make_run_server(tmp_path_factory.mktemp("data")) as env:
        yield env


@pytest.mark.parametrize("name, tool", [("curl-first-move", "curl"),
                                        ("grpcurl-first-move", "grpcurl")])
def test_readme_first_move_runs_as_written_whoever_starts(server: dict[str, str], name: str,
                                                          tool: str) -> None:
    """The step-by-step example acts once, as Ann, in games where she or the bot starts."""
    missing = [t for t in (tool, "jq") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not installed: the {name} example cannot run")
    for _ in range(6):  # the bot starts about half the games
        run = subprocess.run(["bash", "-e", "-c", shell_example(name)], env=server,
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stdout + run.stderr
        last = [m.start() for m in re.finditer(r"^\{", run.stdout, re.M)][-1]
        answer = json.loads(run.stdout[last:])  # the Act's answer, printed last
        assert int(answer["version"]) > 1, run.stdout


def test_readme_grpcurl_example_makes_the_calls_of_the_curl_one() -> None:
    """grpcurl is not installed everywhere: its example makes the same calls as the curl one,
    which always runs, with the same request bodies."""
    from arbiter.bubblee.v1 import bubblee_pb2
    from google.protobuf import json_format

    grpcurl, curl = shell_example("grpcurl-first-move"), shell_example("curl-first-move")
    methods = re.findall(r"arbiter\.bubblee\.v1\.Game/(\w+)", grpcurl)
    assert methods == re.findall(r"\$HTTP/(\w+)", curl) == ["CreateGame", "ListLegalActions",
                                                             "Act"]
    bodies = re.findall(r"-d ('[^']*'|\"[^\n]*?\"|\"\$\(.*?\)\")\s", grpcurl, re.S)
    assert bodies and bodies == re.findall(r"-d ('[^']*'|\"[^\n]*?\"|\"\$\(.*?\)\")\s",
                                           curl, re.S)
    create = json_format.Parse(bodies[0].strip("'"), bubblee_pb2.CreateGameRequest())
    assert len(create.seats) == 2


def test_readme_metrics_table_names_every_series_the_server_exports() -> None:
    from services.core.metrics import METRICS

    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Metrics"):]
    table = table[:table.index("\n## ")]
    # prometheus_client keeps a counter's name without its `_total`.
    named = {n.removesuffix("_total")
             for n in re.findall(r"`((?:arbiter|grpc_server)_[a-z_]+)`", table)}
    exported = {m.metric._name for m in vars(METRICS).values() if hasattr(m, "metric")}
    # And the series each game declares for its figures (Bubblee's cascades).
    exported |= {f"arbiter_{game.name}_{series}" for game in registry.all_games()
                 for f in game.figures.values() for series in (f.series, f.timed) if series}
    assert len(exported) > 10 and named == exported


def test_readme_names_every_reason_the_platform_sends() -> None:
    """A client can look up every ErrorInfo reason of the platform (the games list theirs in
    docs/rulings)."""
    raised = set()
    for path in [*(ROOT / "services" / "core").glob("*.py"),
                 *(ROOT / "services" / "workers").glob("*.py")]:
        raised |= set(re.findall(
            r'(?:Rejected|MalformedCommand|RuleError)\(\s*(?:grpc\.StatusCode\.[A-Z_]+,\s*)?"'
            r'([A-Z_]{3,})"', path.read_text()))
    text = (ROOT / "README.md").read_text()
    errors = text[text.index("## Errors"):text.index("## Metrics")]
    assert len(raised) > 20
    assert {r for r in raised if f"`{r}`" not in errors} == set()


def test_readme_configuration_table_names_every_variable_the_server_reads() -> None:
    source = (ROOT / "services" / "core" / "server.py").read_text()
    read = set(re.findall(r'env\.get\("(ARBITER_[A-Z_]+)"', source))
    assert "ARBITER_TLS_CERT" in read
    table = (ROOT / "README.md").read_text().split("## Configuration")[1].split("\n## ")[0]
    assert not [v for v in sorted(read) if f"`{v}`" not in table]
