# Two commands for a fresh machine (see README):
#   make lab    set up, start the sandbox, open the runbooks in JupyterLab
#   make test   set up and run the whole test suite (what CI runs)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SANDBOX_PORT ?= 8200
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup lab sandbox test test-fast test-notebooks lint typecheck clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

sandbox: setup
	$(BIN)/python -m toolkit sandbox --port $(SANDBOX_PORT)

lab: setup
	TOOLKIT_SANDBOX_ADDRESS=http://127.0.0.1:$(SANDBOX_PORT) \
	$(BIN)/python -m toolkit.sandbox.lab --port $(SANDBOX_PORT) -- \
	$(BIN)/jupyter lab notebooks/

lint: setup
	$(BIN)/ruff check toolkit widgets tests
	$(BIN)/ruff format --check toolkit widgets tests

typecheck: setup
	$(BIN)/mypy

test-fast: setup
	$(BIN)/python -m pytest -n 2 -q tests

test-notebooks: setup
	$(BIN)/python -m pytest -q -p no:randomly --nbval --nbval-sanitize-with notebooks/sanitize.cfg notebooks

test: setup lint typecheck test-fast test-notebooks

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
