# Two commands for a fresh machine (see README):
#   make lab    set up, start the sandbox, open the runbooks in JupyterLab
#   make test   set up and run the whole test suite (what CI runs)
#
# While working: `make check` (lint, types, the fast tests, the runbooks) runs in
# a few minutes; the slow suites have their own targets, and `make test` runs all.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SANDBOX_PORT ?= 8200
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# Debian packages the slow suites need: real servers for the engines, a browser.
SYSTEM_PACKAGES := postgresql rabbitmq-server chromium nginx-light tinyproxy
SLOW_SUITES := tests/real tests/browser tests/binder tests/launch tests/fleet tests/runbooks

.PHONY: setup setup-lab python-version system-deps lab sandbox check test test-fast test-slow \
	test-notebooks test-real test-browser test-binder test-launch test-fleet test-fuzz bench bench-report \
	lint typecheck clean ceremony notebooks screenshots mutation mutation-sample

# What `make lab` needs ([all]: clients, forms, sandbox, JupyterLab), and what the tests
# add (the test, browser and benchmark stacks). Each stamp is remade when pyproject changes.
LAB_STAMP := $(VENV)/.installed-lab

setup: $(STAMP)

setup-lab: $(LAB_STAMP)

python-version:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
		echo "error: the toolkit needs Python 3.11 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>&1). Run: make PYTHON=python3.11 ..." >&2; \
		exit 1; }

$(VENV)/bin/python: | python-version
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(LAB_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e ".[all]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(LAB_STAMP)

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install --quiet -e ".[test,real,browser,bench]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(LAB_STAMP) $(STAMP)

sandbox: setup-lab
	$(BIN)/python -m toolkit sandbox --port $(SANDBOX_PORT)

lab: setup-lab
	TOOLKIT_SANDBOX_ADDRESS=http://127.0.0.1:$(SANDBOX_PORT) \
	$(BIN)/python -m toolkit.sandbox.lab --port $(SANDBOX_PORT) -- \
	$(BIN)/jupyter lab notebooks/

lint: setup
	$(BIN)/ruff check toolkit widgets tests
	$(BIN)/ruff format --check toolkit widgets tests
	$(BIN)/lint-imports --no-logo
	$(BIN)/python -m toolkit check-notebooks notebooks

typecheck: setup
	$(BIN)/mypy

# The fast suite: every test not marked slow (tests/conftest.py marks the slow folders'
# tests slow too; ignoring them here only saves their collection).
test-fast: setup
	$(BIN)/python -m pytest -n 2 -q -m "not slow" tests $(addprefix --ignore=,$(SLOW_SUITES))

# The tests outside the slow folders that start processes or servers (a real tinyproxy,
# the bao binary, a sandbox killed with SIGKILL, subprocesses): marked slow.
test-slow: setup system-deps
	$(BIN)/python -m pytest -n 2 -q -m slow tests $(addprefix --ignore=,$(SLOW_SUITES))

# The fuzz suites with many more examples each than the fast suite draws (FUZZ_EXAMPLES):
# the sandbox's endpoints, every view's answers spoiled, every name a call takes. `make test`
# runs them; FUZZ_EXAMPLES=1000 for a long hunt.
FUZZ_EXAMPLES ?= 100
test-fuzz: setup
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/python -m pytest -n 2 -q -p no:randomly \
		tests/test_fuzz.py tests/test_answer_fuzz.py tests/test_paths.py

# The runbooks as saved, under nbval; then each run headless by papermill
# against a sandbox (evidence filed, drift kept, no secret in any output).
test-notebooks: setup
	$(BIN)/python -m pytest -q -p no:randomly --nbval --nbval-sanitize-with notebooks/sanitize.cfg notebooks
	$(BIN)/python -m pytest -n 2 -q tests/runbooks

# Re-executes every runbook and rehearsal against a fresh sandbox of its own and saves
# the outputs that test-notebooks compares (after a change to what the runbooks show).
# NOTEBOOKS=notebooks/05_lease_audit.ipynb picks some.
notebooks: setup
	$(BIN)/python -m tests.regenerate_notebooks $(NOTEBOOKS)

# Installs the Debian packages (as root, or with sudo) unless they are there already.
system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:" $$missing; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

check: setup lint typecheck test-fast test-notebooks

# The whole suite, as CI runs it. The Debian packages come first, before any test that
# needs them (tests/test_makefile.py reads `make -n test` to hold that order). The
# benchmark reports its goals here without failing the run (timings on a shared machine
# vary); `make bench` fails on a miss.
test: setup system-deps check mutation-sample test-slow test-fuzz test-real test-browser test-binder \
	test-launch test-fleet bench-report

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache mutants

# Mutation testing (tests/mutation/run.py, mutmut) of the modules in tests/mutation/modules.toml,
# each mutant against the listed fast tests that call its function: `make mutation` runs every
# mutant, module by module, and takes long (the README has the scores); `make mutation-sample`
# a fixed, seeded sample of each module (it leaves its copy of the tree in mutants/). Both fail
# below the score. `make test` (so CI) runs the sample, after the fast tests; each module's
# wall time is printed (README, "Mutation testing", has them).
MUTATION_CHILDREN ?= 2
mutation: setup
	nice -n 15 $(BIN)/python -m tests.mutation.run --max-children $(MUTATION_CHILDREN)

mutation-sample: setup
	$(BIN)/python -m tests.mutation.run --sample --max-children $(MUTATION_CHILDREN)

# Slow suites (each owned by its issue's work; see README).
# Starts OpenBao, PostgreSQL, RabbitMQ and nginx itself (tests/servers); in CI a missing one fails.
test-real: setup system-deps
	$(BIN)/python -m pytest -q -p no:randomly tests/real

# JupyterLab, Voila and Debian's Chromium driven by Playwright (never `playwright install`);
# screenshots of each scenario's end state go to artifacts/screenshots/.
test-browser: setup system-deps
	$(BIN)/python -m pytest -q -p no:randomly tests/browser

# The README's pictures (docs/screenshots/), taken afresh by the browser tests that show
# them and copied from artifacts/screenshots/ (the mapping is tests/browser/screenshots.py).
screenshots: setup system-deps
	$(BIN)/python -m tests.browser.screenshots --run

# The rekey ceremony as a page without code, for key holders, beside a sandbox.
ceremony: setup
	$(BIN)/python -m toolkit.sandbox.lab --port $(SANDBOX_PORT) -- \
	$(BIN)/voila notebooks/04_rekey_ceremony.ipynb

# binder/ without Docker: repo2docker's build plan, then a fresh virtual environment
# that follows Binder's steps and runs every runbook under nbval beside binder/start's sandbox.
test-binder: setup
	$(BIN)/python -m pytest -q -p no:randomly tests/binder

# The README's first command headless: `make lab` and `make ceremony` start their
# Jupyter server beside a sandbox, answer, and stop on Ctrl-C.
test-launch: setup
	$(BIN)/python -m pytest -q -p no:randomly tests/launch

# `python -m toolkit fleet` over several sandboxes, each target's runbook run by
# papermill (the Dask cluster is in test-real).
test-fleet: setup
	$(BIN)/python -m pytest -q -p no:randomly tests/fleet

# Side by side with hvac, pytfe and raw clients on real servers; fails when a goal ratio is missed.
# Then the access truth test on a larger draw (tests/real/test_access_truth.py).
bench: setup system-deps
	$(BIN)/python -m benchmarks.run
	ACCESS_TRUTH_SIZE=large ACCESS_TRUTH_SEEDS=1,2,3,4,5 \
		$(BIN)/python -m pytest -q -p no:randomly tests/real/test_access_truth.py

bench-report: setup system-deps
	$(BIN)/python -m benchmarks.run --report-only
