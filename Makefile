# The two README commands: `make serve` and `make test`.
# Each creates .venv when missing and installs the pinned dependencies once;
# a second run finds the stamp newer than its inputs and installs nothing.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.sourcebound-installed

export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HAYSTACK_TELEMETRY_ENABLED := False
export RAGAS_DO_NOT_TRACK := true

.PHONY: install serve test test-fast test-slow eval bench bench-store bench-quick clean

install: $(STAMP)

$(STAMP): requirements.lock constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.lock -c constraints.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m components.embedders.onnx_embedding  # the ONNX embedding model, built once (docs/embeddings.md)
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/python -m hayhooks_app serve

test: $(STAMP)
	$(BIN)/python -m pytest

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

eval: $(STAMP)
	$(BIN)/python -m evaluation

bench-store: $(STAMP)
	$(BIN)/python -m bench.store_bench

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
