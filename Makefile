# Two commands on a fresh machine:  make run  |  make test
# Everything is installed into .venv from the pinned lock file; downloads are cached under .cache/.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
LOCK   := requirements/dev.lock
UV_VERSION := 0.13.8
export UV_CACHE_DIR ?= $(CURDIR)/.cache/uv
export PIP_CACHE_DIR ?= $(CURDIR)/.cache/pip
export HF_HUB_OFFLINE := 1
# Python caches the bytecode it compiles (__pycache__, git-ignored) for everything make starts: with
# PYTHONDONTWRITEBYTECODE set, as on our machines, every process compiled torch, transformers and mlflow from source
# again (13 s per import instead of 6 s), paid by each consumer process, CLI call and test worker.
unexport PYTHONDONTWRITEBYTECODE
# Four pytest workers on 2 cores: most of the suite waits on servers, subprocesses, group joins and outages it
# injects, not on the CPU (with three workers, 1.3 of the 2 cores were busy), and each test process runs torch on one
# thread (tests/conftest.py), so more workers fill idle time instead of oversubscribing the cores. A file's tests stay on
# one worker (loadfile), so a module's fixtures and its ordering hold. Files are handed out in the order
# tests/conftest.py sorts them, longest first (--no-loadscope-reorder: xdist's default puts files with few tests last).
PYTEST_WORKERS ?= 4
PYTEST_ARGS ?=

.PHONY: run test test-fast lint fmt install lock stack-up stack-down bench clean help system-packages

help:
	@echo "make run    - install into .venv and run the main job on the embedded default (no servers)"
	@echo "make test   - install, start the real local stack (Kafka, SeaweedFS, MLflow), run every test, stop the stack"
	@echo "make test-fast - unit tests and the contract suites on the embedded adapters: no servers, 2-5 minutes"
	@echo "make lint   - ruff (lint + format check) and mypy, as CI runs them"
	@echo "make fmt    - ruff format and the safe ruff fixes, in place"
	@echo "make bench  - run the benchmarks (needs the stack for the Kafka rows: make stack-up)"
	@echo "make lock   - re-resolve requirements/*.lock from pyproject.toml"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml $(LOCK) requirements/plugins-nodeps.txt
	$(BIN)/python -m pip install -q "uv==$(UV_VERSION)"
	$(BIN)/uv pip install -q --python $(BIN)/python -r $(LOCK)
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e .
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -r requirements/plugins-nodeps.txt
	@touch $@

install: $(VENV)/.installed

lock: $(BIN)/python
	$(BIN)/python -m pip install -q "uv==$(UV_VERSION)"
	$(BIN)/uv pip compile -q pyproject.toml --extra test --extra ml --extra device --python-version 3.11 -o $(LOCK)

run: install
	$(BIN)/flywheel run

stack-up: install
	$(BIN)/flywheel stack up

stack-down: install
	$(BIN)/flywheel stack down

# System packages some tests drive, from Debian: adb (a real adb server, no device) and chromium with its driver
# (the MLflow UI checked in a headless browser). Installed when missing and we are root; otherwise those tests
# are skipped with a reason.
system-packages:
	@missing=""; command -v adb >/dev/null || missing="adb"; \
	{ command -v chromium >/dev/null && command -v chromedriver >/dev/null; } || missing="$$missing chromium chromium-driver"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "installing Debian packages: $$missing"; \
			{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } \
				|| echo "could not install $$missing: the tests that need them will be skipped"; \
		else echo "not root, so not installing $$missing: the tests that need them will be skipped"; fi; \
	fi

# The stack is stopped whatever pytest does; pytest's exit code 5 (no tests collected) fails the target.
# pytest cannot hang the target: past TEST_TIMEOUT_S it gets SIGABRT, which makes faulthandler print every
# thread's stack (PYTHONFAULTHANDLER keeps it on after pytest's own session ends), then SIGKILL 60 s later.
# The ini's session_timeout stops scheduling tests well before that, so a slow run still reports its results.
TEST_TIMEOUT_S ?= 4800
test: install system-packages
	@status=0; \
	$(BIN)/flywheel stack up || status=$$?; \
	if [ $$status -eq 0 ]; then \
		PYTHONFAULTHANDLER=1 timeout --signal=ABRT --kill-after=60 $(TEST_TIMEOUT_S) \
			$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 $(PYTEST_ARGS) || status=$$?; \
		if [ $$status -eq 124 ] || [ $$status -eq 134 ] || [ $$status -eq 137 ]; then \
			echo "pytest did not exit within $(TEST_TIMEOUT_S) s: killed (thread stacks above)"; fi; \
	fi; \
	$(BIN)/flywheel stack down || true; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests: that is a failure"; fi; \
	exit $$status

test-fast: install
	$(BIN)/pytest -m "(unit or contract) and not integration" -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The same checks as .pre-commit-config.yaml and CI; configured in pyproject.toml.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

fmt: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: install
	$(BIN)/python bench/bus_throughput.py
	$(BIN)/python bench/schemas.py
	$(BIN)/python bench/learner_sft.py
	$(BIN)/python bench/torch_threads.py

clean:
	rm -rf .flywheel runs
