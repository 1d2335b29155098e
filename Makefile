# The two commands a newcomer needs: `make demo` and `make test`.
# Both create .venv at the repo root if it is missing and install everything
# into it from the package registries (no other network access needed).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: install demo test lint clean-venv

$(STAMP): setup.py pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first: the pinned CPU build (a plain 'torch' pulls GBs of CUDA).
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev,distributed,models]" "transformers==4.53.2"
	$(PY) -m spacy_rhetoric ensure-parser en_core_web_sm
	touch $(STAMP)

install: $(STAMP)

# spacy-rhetoric demo (spacy_rhetoric/cli/demo.py); options: $(PY) -m spacy_rhetoric demo --help
# `make demo GPU_ID=0`: train and annotate on GPU 0 (needs cupy and a CUDA torch); -1 = the CPU.
GPU_ID ?= -1
demo: install
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-$$(nproc)} $(PY) -m spacy_rhetoric demo --gpu-id $(GPU_ID)

# ruff first (lint + import order, pyproject.toml), then every test, slow ones
# included (`pytest -m "not slow"` is the inner loop), with the 15 slowest
# tests listed at the end (--durations=15). pytest exits 5 when it
# collected no tests, which fails here like any other non-zero code.
TESTS ?= tests
test: install
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q --durations=15 $(TESTS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; fi; exit $$rc

lint: install
	$(VENV)/bin/ruff check .

clean-venv:
	rm -rf $(VENV)
