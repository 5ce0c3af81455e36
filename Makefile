# Arbiter: `make run` serves every game; `make test` sets up everything and runs every test.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PROTOS := $(shell find protos/arbiter -name '*.proto')
GEN_STAMP := gen/.stamp

.PHONY: run test test-fast bench bench-streams loadtest lint typecheck protos clean

$(STAMP): requirements.lock requirements-runtime.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
	@# The generated protobuf code lives in gen/, outside the source tree.
	echo "$(CURDIR)/gen" > $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/arbiter-gen.pth
	touch $@

$(GEN_STAMP): $(STAMP) $(PROTOS)
	rm -rf gen && mkdir -p gen
	@# protos/google/rpc (error details, Play answers) is imported, not generated: Python
	@# has it from googleapis-common-protos.
	$(PY) -m grpc_tools.protoc -I protos --python_out=gen --pyi_out=gen --grpc_python_out=gen $(PROTOS)
	touch $@

protos: $(GEN_STAMP)

run: $(GEN_STAMP)
	$(VENV)/bin/arbiter serve

test: $(GEN_STAMP)
	$(PY) tools/redis_for_tests.py -- $(PY) -m pytest -q $(PYTEST_ARGS)

test-fast: $(GEN_STAMP)
	$(PY) tools/redis_for_tests.py -- $(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

bench: $(GEN_STAMP)
	$(PY) tools/redis_for_tests.py -- $(PY) -m loadtests.bench

# Ten thousand idle Play streams on one server process, on both stores (a few minutes).
bench-streams: $(GEN_STAMP)
	$(PY) tools/redis_for_tests.py -- $(PY) -m loadtests.streams

# The whole topology (Redis and a Redis Cluster, 1 and 2 replicas, workers, Celery on
# RabbitMQ) stepped to its knee; LOADTEST_ARGS="--step-seconds 20 --max-rate 5000" for longer.
loadtest: $(GEN_STAMP)
	$(PY) -m loadtests.loadtest $(LOADTEST_ARGS)

# docs/balance.md's figures and docs/balance/ (on the Celery sim workers with a broker set).
balance: $(GEN_STAMP)
	$(VENV)/bin/arbiter balance --all --games $${BALANCE_GAMES:-100} --workers 2

lint: $(GEN_STAMP)
	$(VENV)/bin/ruff check services tests loadtests tools
	$(VENV)/bin/mypy services/core

clean:
	rm -rf $(VENV) gen var
