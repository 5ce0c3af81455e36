# Arbiter: `make run` serves every game; `make test` sets up everything and runs every test.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-runtime
PROTOS := $(shell find protos/arbiter -name '*.proto')
GEN_STAMP := gen/.stamp
# The buf CLI, for the tests' lint and breaking-change checks of protos/ (tests/conformance/
# test_protos.py): from the npm registry into .tools/, pinned. Without npm or the registry the
# install says so and those tests skip with the reason; nothing else needs buf.
BUF_VERSION := 1.75.0
BUF := .tools/buf-$(BUF_VERSION)/node_modules/.bin/buf

.PHONY: run test test-fast ts browser router bench bench-streams loadtest abuse lint typecheck protos buf clean balance ladder

# `make run` installs the runtime pins and the two build tools it needs (grpcio-tools for gen/,
# setuptools for the editable install): no test, lint or plotting tools. $(STAMP) adds the rest.
$(RUN_STAMP): requirements.lock requirements-runtime.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-runtime.lock \
		$$(grep -E '^(grpcio-tools|setuptools)==' requirements.lock)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@# The generated protobuf code lives in gen/, outside the source tree.
	echo "$(CURDIR)/gen" > $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/arbiter-gen.pth
	touch $@

$(STAMP): $(RUN_STAMP) requirements.lock
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.lock
	touch $@

$(GEN_STAMP): $(RUN_STAMP) $(PROTOS)
	rm -rf gen && mkdir -p gen
	@# protos/google/rpc (error details, Play answers) is imported, not generated: Python
	@# has it from googleapis-common-protos.
	$(PY) -m grpc_tools.protoc -I protos --python_out=gen --pyi_out=gen --grpc_python_out=gen $(PROTOS)
	touch $@

protos: $(STAMP) $(GEN_STAMP)

$(BUF):
	@mkdir -p .tools/buf-$(BUF_VERSION)
	@npm install --silent --no-audit --no-fund --fetch-retries=1 --fetch-timeout=30000 \
		--prefix .tools/buf-$(BUF_VERSION) @bufbuild/buf@$(BUF_VERSION) \
		|| echo "buf was not installed (npm or the npm registry is not available): the proto checks will skip"

buf: $(BUF)

# The TypeScript client (clients/ts): its npm packages, pinned by its package-lock.json,
# installed once into clients/ts/node_modules, and the code buf and protoc-gen-es generate
# from protos/ into clients/ts/gen. Without npm or the registry its test skips, saying so.
TS_DEPS := clients/ts/node_modules/.installed
TS_GEN  := clients/ts/gen/.stamp
$(TS_DEPS): clients/ts/package-lock.json
	@cd clients/ts && npm ci --silent --no-audit --no-fund --fetch-retries=1 --fetch-timeout=30000 \
		&& touch node_modules/.installed \
		|| echo "the TypeScript client's packages were not installed (npm or the npm registry is not available): its test will skip"

$(TS_GEN): $(TS_DEPS) clients/ts/buf.gen.yaml $(PROTOS)
	@if [ -f $(TS_DEPS) ]; then cd clients/ts && rm -rf gen && npm run --silent generate && touch gen/.stamp; fi

ts: $(TS_GEN)

# gRPC on 127.0.0.1:50051; HTTP (Connect, gRPC-Web, the console) on 127.0.0.1:8080.
run: $(GEN_STAMP)
	$(VENV)/bin/arbiter serve

test: $(STAMP) $(GEN_STAMP) $(BUF) $(TS_GEN) browser router
	$(PY) tools/redis_for_tests.py -- $(PY) -m pytest -q $(PYTEST_ARGS)

# The console's browser tests drive Debian's chromium with Playwright (pip installs Playwright;
# its own browser download is not used). Installed when missing, as root or with sudo -n;
# where neither works the tests say so and are skipped.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo -n)
# $(call apt_install,PACKAGE,what goes without it): Debian's PACKAGE (its command has its
# name) unless it is there, as root or with sudo -n; else a line saying what is skipped.
apt_install = command -v $(1) >/dev/null 2>&1 || $(SUDO) apt-get install -y -q $(1) >/dev/null 2>&1 \
	  || { $(SUDO) apt-get update -q >/dev/null 2>&1 && $(SUDO) apt-get install -y -q $(1) >/dev/null 2>&1; } \
	  || echo "$(1) could not be installed (needs root or sudo): $(2)"
browser:
	@$(call apt_install,chromium,the console's browser tests will be skipped)

# HAProxy, the router of deploy/haproxy.cfg (routing by game id), for its tests and the load
# test: Debian's package, installed when missing as chromium is; without it they skip or omit
# that configuration and say so.
router:
	@$(call apt_install,haproxy,the router's tests will be skipped)

test-fast: $(STAMP) $(GEN_STAMP) $(BUF)
	$(PY) tools/redis_for_tests.py -- $(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

bench: $(STAMP) $(GEN_STAMP)
	$(PY) tools/redis_for_tests.py -- $(PY) -m loadtests.bench

# Ten thousand idle Play streams on one server process, on both stores (a few minutes).
bench-streams: $(STAMP) $(GEN_STAMP)
	$(PY) tools/redis_for_tests.py -- $(PY) -m loadtests.streams

# The whole topology (Redis and a Redis Cluster, 1 and 2 replicas, then 2 behind the router,
# workers, Celery on RabbitMQ) stepped to its knee;
# LOADTEST_ARGS="--step-seconds 20 --max-rate 5000" for longer.
loadtest: $(STAMP) $(GEN_STAMP) router
	$(PY) -m loadtests.loadtest $(LOADTEST_ARGS)

# Every attack of issue 21's list against a real server (embedded store, then Redis) while a
# well-behaved client plays; writes loadtests/results/abuse.json (a few minutes).
abuse: $(STAMP) $(GEN_STAMP)
	ARBITER_TEST_CLUSTER=0 $(PY) tools/redis_for_tests.py -- $(PY) -m loadtests.abuse $(ABUSE_ARGS)

# docs/balance.md's figures and docs/balance/ (on the Celery sim workers with a broker set).
balance: $(STAMP) $(GEN_STAMP)
	$(VENV)/bin/arbiter balance --all --docs --games $${BALANCE_GAMES:-12} --workers 2

# docs/ladder.md and docs/ladder/ (every bot and level; on the sim workers with a broker set).
ladder: $(STAMP) $(GEN_STAMP)
	$(VENV)/bin/arbiter ladder bubble_shadow --docs --seats 2 --games $${LADDER_GAMES:-8} --bots random,greedy,easy,hard --workers 2
	$(VENV)/bin/arbiter ladder bubblee --docs --games $${LADDER_GAMES:-8} --bots random,greedy,easy,hard --workers 2
	$(VENV)/bin/arbiter ladder shadow_council --docs --games $${LADDER_GAMES:-8} --bots random,sleuth,easy,hard --workers 2
	$(VENV)/bin/arbiter ladder moody_bear --docs --games $${LADDER_GAMES:-8} --bots random,keeper,easy,hard --workers 2

lint: $(STAMP) $(GEN_STAMP)
	$(VENV)/bin/ruff check services tests loadtests tools
	$(VENV)/bin/mypy services

clean:
	rm -rf $(VENV) gen var .tools clients/ts/node_modules clients/ts/gen
