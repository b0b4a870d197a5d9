# The two commands a new machine needs (see README.md):
#   make example   run the example pipeline
#   make test      run every test (what CI runs)
# Everything they need is installed here: Go modules and a Python virtualenv
# (.venv) holding the flinkgo package with its test extras.

PYTHON_BOOTSTRAP ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export FLINKGO_PYTHON := $(abspath $(PY))
# Rounds of the chaos tests: $FLINKGO_CHAOS_ROUNDS when set, else a short round in
# `make test` (what CI runs) and a long one in `make chaos`.
go-test: FLINKGO_CHAOS_ROUNDS ?= 3
chaos: FLINKGO_CHAOS_ROUNDS ?= 50

.PHONY: example example-bridge test setup test-deps-kafka test-deps-chromium go-test py-test tox tox-full lint proto proto-check chaos bench fuzz

setup: $(VENV)/.installed
	go mod download

# The Kafka broker of the tests (scripts/kafka/broker.sh): a Java 17+ runtime and Maven
# from Debian's packages when missing, and the Kafka jars from Maven Central (cached).
# Only the tests need it: `make example` runs without Java.
test-deps-kafka:
	scripts/kafka/broker.sh install >/dev/null

# The dashboard's browser test (integration/dashboard_test.go) drives Debian's headless
# Chromium: installed here when missing (as root, or through sudo). Only the tests need it.
test-deps-chromium:
	@command -v chromium >/dev/null || { \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing Debian's chromium for the dashboard test" >&2; \
	  $$sudo apt-get update -qq >&2 || true; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends chromium >&2; }
	@command -v chromium >/dev/null || { echo "test-deps-chromium: no chromium after installing it" >&2; exit 1; }

# The editable install skips the Go build of setup.py: in this checkout flinkgo builds
# the runtime binary on first use (into ~/.cache/flinkgo), rebuilding it when Go sources change.
$(VENV)/.installed: python/pyproject.toml python/setup.py scripts/genproto-requirements.txt scripts/lint-requirements.txt
	@echo "setup: making the virtualenv $(VENV) and installing flinkgo with its test and lint tools (pip shows each package; about 2 minutes on an idle 2-core machine with an empty pip cache)"
	$(PYTHON_BOOTSTRAP) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install --progress-bar on -e "./python[test]" -r scripts/genproto-requirements.txt -r scripts/lint-requirements.txt "tox>=4.20"
	touch $@

example: setup
	$(PY) examples/python/sensors.py

# The Go API demo: pandas UDFs over generated rows, run on the runtime through the Go API (package pipeline).
example-bridge: setup
	go run ./examples/go/bridge

test: setup lint proto-check go-test py-test tox

# A file over 1 MiB in git is almost always a build output committed by mistake
# (a 74 MB binary once was), and it makes every clone and submission heavy.
MAX_TRACKED_BYTES := 1048576

lint:
	@big=$$(git ls-files -z | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > $(MAX_TRACKED_BYTES) {print $$2 " (" $$1 " bytes)"}'); \
	  if [ -n "$$big" ]; then echo "tracked files over $(MAX_TRACKED_BYTES) bytes (build outputs? remove with git rm --cached): $$big"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	go vet ./...
	go run ./scripts/archcheck
	go tool staticcheck ./...
	$(VENV)/bin/ruff check python examples
	$(VENV)/bin/ruff format --check python examples
	cd python && ../$(VENV)/bin/mypy

proto:
	PYTHON=$(PY) scripts/genproto.sh

proto-check:
	PYTHON=$(PY) scripts/genproto.sh --check

# Tests that need Python skip without one under a plain `go test ./...`; here
# FLINKGO_REQUIRE_PYTHON=1 makes them fail instead, so `make test` runs them all.
go-test: test-deps-kafka test-deps-chromium
	FLINKGO_REQUIRE_PYTHON=1 FLINKGO_CHAOS_ROUNDS=$(FLINKGO_CHAOS_ROUNDS) go test -race -count=1 -timeout 20m ./...

# FLINKGO_REQUIRE_PYTHON=1: a test whose Kafka broker cannot start fails instead of skipping.
py-test: test-deps-kafka
	FLINKGO_REQUIRE_PYTHON=1 $(PY) -m pytest python/tests

# tox finds python3.X on PATH; pyenv's installed versions are added to it when pyenv
# has them but its shims do not serve them (only the global version is shimmed).
PYENV_BINS := $(shell for v in 3.10 3.11 3.12 3.13; do \
  d=$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/$$v.* 2>/dev/null | sort -V | tail -n 1); \
  [ -n "$$d" ] && printf '%s/bin:' "$$d"; done)
# make test's tox: the whole suite with the lowest dependencies, and the smoke subset of the
# installed wheel on every supported Python. tox-full adds py311-newest, the whole suite
# from the wheel with the newest dependencies (py-test runs it in the virtualenv).
# Two envs at a time: the smoke envs (mostly pip) run beside py311-lowest's suite; the
# wheel is built once for all. A failed env's output is printed whole at the end;
# TOX_PARALLEL= runs them one after another, with their output as it comes.
TOX_ENVS := py311-lowest,py310-smoke,py311-smoke,py312-smoke,py313-smoke
TOX_PARALLEL ?= --parallel 2 --parallel-no-spinner
tox:
	PATH="$(PYENV_BINS)$$PATH" $(VENV)/bin/tox $(TOX_PARALLEL) -e $(TOX_ENVS)

tox-full: setup
	PATH="$(PYENV_BINS)$$PATH" $(VENV)/bin/tox $(TOX_PARALLEL) -e $(TOX_ENVS),py311-newest

chaos: setup
	FLINKGO_REQUIRE_PYTHON=1 FLINKGO_CHAOS_ROUNDS=$(FLINKGO_CHAOS_ROUNDS) go test -race -count=1 -timeout 60m -run 'Chaos|Failover' -v ./integration/...

bench: setup
	FLINKGO_REQUIRE_PYTHON=1 go test -run '^$$' -bench . -benchtime 3x ./integration/bench/

# The fuzzers of the runtime's trust boundaries, each for FUZZTIME; then
# FLINKGO_FUZZ_ROUNDS mutated requests against a real `flinkgo serve`. Their
# seeds (and 200 rounds against serve) run in every `go test`, so in CI.
FUZZTIME ?= 30s
fuzz: FLINKGO_FUZZ_ROUNDS ?= 2000
fuzz: setup
	go test -run '^$$' -fuzz '^FuzzDecodeStream$$' -fuzztime $(FUZZTIME) ./internal/arrowipc/
	go test -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME) ./runtime/server/
	FLINKGO_FUZZ_ROUNDS=$(FLINKGO_FUZZ_ROUNDS) go test -count=1 -run '^TestServeSurvivesMutatedRequests$$' -v ./cmd/flinkgo/
