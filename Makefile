# Two commands for a newcomer: `make demo` (start the platform on its embedded default) and
# `make test` (run the test suite). Everything else here serves those two.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1:8000

.PHONY: demo test install browser agents lint serve clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch is pinned for the CPU install path: on these machines pip takes the CPU wheel of exactly
# this version from local disk, while an open range pulls several GB of CUDA packages.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[engine,dev]'
	touch $@

install: $(VENV)/.installed

# Browser tests drive Debian's Chromium through Playwright's Python package.
browser:
	@test -x /usr/bin/chromium || (apt-get update -qq && apt-get install -y -qq chromium) \
		|| (echo "Install Debian's chromium package (/usr/bin/chromium) for the browser tests" && exit 1)

# The agent CLIs `arena run` launches, pinned, from the npm registry (tests/launcher drives the
# real binaries against a scripted model server).
CLAUDE_CODE_VERSION := 2.1.332
CODEX_VERSION := 0.171.0
GEMINI_CLI_VERSION := 0.61.0
OPENCODE_VERSION := 1.18.33
$(VENV)/npm/.installed: Makefile | $(BIN)/python
	@command -v npm >/dev/null || (echo "Install Node.js and npm for the launcher tests" && exit 1)
	npm install --prefix $(VENV)/npm --no-audit --no-fund --loglevel=error \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @openai/codex@$(CODEX_VERSION) \
		@google/gemini-cli@$(GEMINI_CLI_VERSION) opencode-ai@$(OPENCODE_VERSION)
	touch $@

agents: $(VENV)/npm/.installed

demo: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_registry
	$(BIN)/python manage.py sync_problems
	$(BIN)/python manage.py load_graded_runs submissions/demo/kernelbench_hard_h100.json
	@echo "Serving at http://$(HOST)/ while the example runs are graded on the CPU in the background (log: var/demo_runs.log; /runs/ shows them as they finish)."
	mkdir -p var; $(BIN)/python manage.py demo_runs > var/demo_runs.log 2>&1 & grading=$$!; \
	trap 'kill $$grading 2>/dev/null' EXIT INT TERM; \
	$(BIN)/python manage.py runserver $(HOST)

test: install browser agents
	$(BIN)/pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python manage.py makemigrations --check --dry-run

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
