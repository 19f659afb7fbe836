# Two commands work on a fresh machine: `make demo` and `make test`.
# Each creates ./.venv with the machine's python3 and installs what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test sanitize lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml setup.py $(wildcard src/stagewise/_native/*.c) | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[test,dask]'
	touch $@

demo: $(VENV)/.installed
	$(BIN)/stagewise demo
	@echo "stagewise is installed in $(VENV): run '. $(VENV)/bin/activate' to use the stagewise command directly."

test: $(VENV)/.installed-test
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q

# The C extensions under AddressSanitizer and UBSan (built into build/sanitize), with the tests that drive them.
sanitize: $(VENV)/.installed-test
	PYTHON=$(BIN)/python .ci/sanitize

bench: $(VENV)/.installed-test
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python benchmarks/eval_speed.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .ruff_cache
