# lakehook - the two commands a new user needs: `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
SAM_VENV := .venv-sam
BIN := $(VENV)/bin
SAM := $(SAM_VENV)/bin/sam
SAM_CLI_VERSION := 1.170.0
# Checkov pins boto3 to an old release, so it lives in a venv of its own (like SAM CLI).
CHECKOV_VENV := .venv-checkov
CHECKOV_VERSION := 3.3.30
# Mutation testing (make mutation) runs mutmut inside .venv: it imports the project and its tests.
MUTMUT_VERSION := 3.8.1
# uv installs the three venvs, pinned (from an empty cache on this kind of machine pip took 148 s one after another;
# uv, .venv and .venv-sam side by side, 36 to 52 s; bench/test-suite.md). It is pip-installed into .venv first.
# .venv is byte-compiled at install, as pip does (35 s of CPU for its 11,000 modules; left to each process, the
# tests' CPU grew by about 70 s in a whole make test, three workers compiling what collection had not imported); the
# tool venvs are not (5,700 modules each, 17 s; the checks import a part of them once). Where PYTHONDONTWRITEBYTECODE
# is set (this kind of machine sets it) the test and demo targets still cache lakehook's own bytecode (PYTEST_ENV:
# test-output/pycache, DEMO_ENV: .venv/pycache).
UV_VERSION := 0.13.10
UV := $(BIN)/uv
UV_INSTALL = $(UV) pip install --quiet --python
UV_INSTALL_COMPILED = $(UV) pip install --quiet --compile-bytecode --python
# sam build needs the Lambda runtime's Python (3.12) on PATH; pyenv has it on this kind of machine.
PY312_BIN ?= $(shell d=$$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.12*/bin 2>/dev/null | head -1); \
	if [ -n "$$d" ]; then echo $$d; else dirname "$$(command -v python3.12 2>/dev/null)" 2>/dev/null; fi)
export SAM_CLI_TELEMETRY := 0
export AWS_DEFAULT_REGION ?= us-east-1
PYTEST_ARGS ?=
# pytest-xdist workers: three on the 2-core machines CI runs on, one more than the cores, because the workers wait
# (on local stacks' functions, a browser, HTTP round trips): with two, the machine sat idle for 190 s of a 675 s
# make test and pytest took 642 s; with three, 47 s idle and 567 s (bench/test-suite.md). A module's tests stay on one
# worker (--dist loadscope), so a module-scoped local stack or moto server starts once. PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 3
# --no-loadscope-reorder: the modules in the order tests/conftest.py gives them (those with a slow test first), where
# xdist would hand out the modules with the most tests first and leave the one-test ones (an e2e story, a state
# machine) for the end, each then the last thing a worker ran.
PYTEST_PARALLEL = $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder)
# Bytecode, pytest's assertion-rewritten test modules among it, is cached under test-output/pycache even where
# PYTHONDONTWRITEBYTECODE is set (the tree stays free of __pycache__): without it every worker compiles and rewrites
# every test module again, 26 s of CPU per worker before the first test (10.5 s cached; bench/test-suite.md).
PYTEST_ENV = PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(abspath test-output/pycache)
DEMO_ENV = PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(abspath $(VENV)/pycache)

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(UV):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

# pip stays in .venv, upgraded: scripts/build-dists.sh builds the wheels with it.
$(BIN)/.installed: pyproject.toml constraints.txt | $(UV)
	$(UV_INSTALL_COMPILED) $(BIN)/python --upgrade pip
	$(UV_INSTALL_COMPILED) $(BIN)/python -c constraints.txt -e ".[dev,lakehouse]"
	touch $@

$(CHECKOV_VENV)/.installed: | $(UV)
	$(PYTHON) -m venv --without-pip $(CHECKOV_VENV)
	$(UV_INSTALL) $(CHECKOV_VENV)/bin/python "checkov==$(CHECKOV_VERSION)"
	touch $@

$(BIN)/.mutmut-installed: $(BIN)/.installed
	$(UV_INSTALL_COMPILED) $(BIN)/python -c constraints.txt "mutmut==$(MUTMUT_VERSION)"
	touch $@

$(SAM_VENV)/.installed: | $(UV)
	$(PYTHON) -m venv --without-pip $(SAM_VENV)
	$(UV_INSTALL) $(SAM_VENV)/bin/python "aws-sam-cli==$(SAM_CLI_VERSION)"
	touch $@

# The console's browser tests drive headless Chromium from the distribution (Playwright's own browser
# download is not used); installed here where missing, with apt-get on Debian and Ubuntu.
.PHONY: chromium
chromium: ## headless Chromium for the console's browser tests (apt-get install chromium where missing)
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium (apt-get) for the console's browser tests"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; \
	else \
		echo "no chromium and no apt-get: install Chromium yourself, or the console's browser tests skip"; \
	fi

.PHONY: setup
setup: $(BIN)/.installed $(SAM_VENV)/.installed $(CHECKOV_VENV)/.installed chromium ## .venv (pinned by constraints.txt), .venv-sam, .venv-checkov, Chromium

.PHONY: lint
lint: $(BIN)/.installed ## ruff
	$(BIN)/ruff check src/shared functions tests bench
	$(BIN)/ruff format --check src/shared functions tests bench

.PHONY: format
format: $(BIN)/.installed ## ruff format and fix
	$(BIN)/ruff format src/shared functions tests bench
	$(BIN)/ruff check --fix src/shared functions tests bench

.PHONY: typecheck
typecheck: $(BIN)/.installed ## mypy strict on src/shared and tests/fakes
	$(BIN)/mypy

.PHONY: template
template: $(BIN)/.installed $(SAM_VENV)/.installed ## cfn-lint and sam validate --lint (offline)
	$(BIN)/cfn-lint template.yaml
	$(SAM) validate --lint --region $(AWS_DEFAULT_REGION)

.PHONY: scan
scan: $(CHECKOV_VENV)/.installed ## checkov on template.yaml: fails on any failed check not skipped with a reason in the template
	$(CHECKOV_VENV)/bin/checkov --file template.yaml --framework cloudformation --compact --quiet --skip-download

.PHONY: pytest
pytest: $(BIN)/.installed ## the test suites (unit, integration, e2e)
	@mkdir -p test-output
# where the time went, printed at the end: each tier's CPU and the costliest tests (tests/cpu_times.py, the log in
# test-output/cpu-full.tsv) and the 25 longest setups, calls and teardowns (bench/test-suite.md reads both)
	LAKEHOOK_TEST_CPU_LOG=test-output/cpu-full.tsv \
		$(PYTEST_ENV) $(BIN)/pytest $(PYTEST_PARALLEL) --durations=25 $(PYTEST_ARGS)

# pytest's assertion rewriting of the test modules, and the modules they import, cached under test-output/pycache
# once: each xdist worker collects every module, and three workers rewriting them all at once took 28 s of CPU each
# (8 s each with the cache, and 26 s for the one pass that fills it). A collection error is left for pytest's run to
# report.
.PHONY: pytest-bytecode
pytest-bytecode: $(BIN)/.installed
	@mkdir -p test-output
	-@$(PYTEST_ENV) $(BIN)/pytest --collect-only -q -p no:cacheprovider > /dev/null 2>&1

# make test: .venv and .venv-sam (the IAM tests translate the template with it); then mypy, cfn-lint, sam validate
# and Checkov (about 50 s of CPU together, single-threaded; .venv-checkov is installed by the scan that uses it) in
# the background, while ruff, Chromium's install and pytest-bytecode run side by side (the pass is single-threaded:
# the checks fill the other core), then pytest (three workers, which leave the cores idle at times: local stacks
# starting, poll intervals, HTTP round trips). The checks' output is kept in test-output/checks.log and printed after
# pytest's; make test fails if either failed (a ruff failure stops pytest from starting).
.PHONY: test
test: ## everything CI runs
	@$(MAKE) --no-print-directory -j2 $(BIN)/.installed $(SAM_VENV)/.installed
	@mkdir -p test-output
	@( $(MAKE) --no-print-directory typecheck template scan > test-output/checks.log 2>&1; echo $$? > test-output/checks.status ) & \
		checks=$$!; \
		$(MAKE) --no-print-directory -j3 lint chromium pytest-bytecode && $(MAKE) --no-print-directory pytest; tests=$$?; \
		wait $$checks; \
		echo "--- mypy, cfn-lint, sam validate --lint, Checkov (run beside pytest; test-output/checks.log) ---"; \
		cat test-output/checks.log; \
		checked=$$(cat test-output/checks.status); \
		if [ "$$checked" != 0 ]; then echo "make test: the checks failed (mypy, cfn-lint, sam validate or Checkov)"; fi; \
		if [ "$$tests" != 0 ]; then echo "make test: ruff or pytest failed"; fi; \
		[ "$$checked" = 0 ] && [ "$$tests" = 0 ]

.PHONY: test-fast
test-fast: $(BIN)/.installed ## the fast tier while you work: ruff, then the tests not marked slow, hypothesis's fast profile (make test stays the gate)
	$(BIN)/ruff check src/shared functions tests bench
	@mkdir -p test-output
# each test's CPU time, and the unit tier's total beside its budget (tests/cpu_times.py), are printed at the end
	LAKEHOOK_TEST_CPU_LOG=test-output/cpu-fast.tsv LAKEHOOK_TEST_CPU_BUDGET=60 \
		$(PYTEST_ENV) $(BIN)/pytest $(PYTEST_PARALLEL) -m "not slow" --hypothesis-profile=fast $(PYTEST_ARGS)

# Opt-in, not part of `make test`: the example deferrable sensor (docs/examples/sensors) in a real Airflow 3.3.2,
# brought up and stopped by the shared airflow-real harness (about 2 minutes; AIRFLOW_SENSOR_WORK reuses a work dir).
AIRFLOW_REAL_TOOLS ?= ../shared/tools/airflow-real
.PHONY: test-airflow-sensor
test-airflow-sensor: $(BIN)/.installed ## opt-in: the Airflow sensor example against a real Airflow 3 (AIRFLOW_REAL_TOOLS=dir)
	LAKEHOOK_AIRFLOW_REAL_TOOLS="$(abspath $(AIRFLOW_REAL_TOOLS))" LAKEHOOK_AIRFLOW_SENSOR_WORK="$(AIRFLOW_SENSOR_WORK)" \
		$(BIN)/pytest -m airflow_real tests/integration/test_airflow_sensor_real.py $(PYTEST_ARGS)

.PHONY: build
build: setup ## sam build without Docker, then each function's unzipped size (limit 250 MB)
	@test -n "$(PY312_BIN)" || { echo "no Python 3.12 found (pyenv install 3.12)"; exit 1; }
	PATH="$(PY312_BIN):$$PATH" $(SAM) build --region $(AWS_DEFAULT_REGION)
# boto3 and botocore come with the Lambda runtime; aws-xray-sdk (Powertools' tracer extra) pulls a second one.
	rm -rf .aws-sam/build/CoreDependenciesLayer/python/botocore .aws-sam/build/CoreDependenciesLayer/python/botocore-*.dist-info
# Lambda's code directory is read-only: ship bytecode for the runtime's Python, used without checking
# the sources' timestamps (a deployment zip does not keep them exactly).
	$(PY312_BIN)/python3.12 -m compileall -q -j 0 --invalidation-mode unchecked-hash .aws-sam/build
	$(BIN)/python -m lakehook.local.sizes .aws-sam/build

.PHONY: local
local: $(BIN)/.installed ## run the local stack (Ctrl-C stops it)
	$(BIN)/lakehook local up --port 3000 --admin-token local-admin

.PHONY: demo
demo: $(BIN)/.installed ## the local stack, its demo and the console (KEEP=1: stay up until Ctrl-C)
	$(DEMO_ENV) $(BIN)/python -m lakehook.demo $(if $(filter-out 0,$(KEEP)),--keep)

.PHONY: bench
bench: $(BIN)/.installed ## benchmarks -> bench/results.md
	$(BIN)/python -m bench.run

.PHONY: mutation
mutation: $(BIN)/.mutmut-installed ## mutmut over the modules that guard the promises -> bench/results.md (over an hour on 2 cores; not in make test)
	$(BIN)/python -m bench.mutation

.PHONY: dists
dists: $(BIN)/.installed ## the three wheels (lakehook, lakehook-tools, lakehook-client) -> dist/
	scripts/build-dists.sh dist $(BIN)/pip

.PHONY: vendor
vendor: ## re-vendor the console's JavaScript (needs npm; the result is committed)
	scripts/vendor-console.sh

.PHONY: clean
clean: ## remove build output and caches (keeps the venvs)
	rm -rf .aws-sam .pytest_cache .mypy_cache .ruff_cache .hypothesis test-output
