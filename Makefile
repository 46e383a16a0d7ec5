# The two commands a new user runs: `make run` and `make test`.
# Both create .venv and install the pinned, hash-checked dependencies first.

PYTHON ?= $(shell scripts/find-python)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The bundled sources, built into the environment's assets by the pinned componentize-py: only
# the first set-up, or a change to their code, pays for it (about 10 s a source).
BUNDLED := $(VENV)/.bundled-sources
BUNDLED_INPUTS := $(wildcard sources/wit/*.wit sources/wit/deps/*/*.wit sources/bundled/*/*.py sources/bundled/*/*.toml)

.PHONY: run test lint format bench clean

$(STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --require-hashes \
		-r requirements.txt -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

$(BUNDLED): $(STAMP) $(BUNDLED_INPUTS)
	$(BIN)/python -m sources.building
	touch $@

run: $(STAMP) $(BUNDLED)
	$(BIN)/memcastle serve

test: $(STAMP) $(BUNDLED) lint
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python bench/hierarchy.py
	$(BIN)/python bench/jobs.py
	$(BIN)/python bench/writes.py
	$(BIN)/python bench/mine.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
