# The two commands of the quickstart, `make demo` and `make test`, each do their own set-up: a .venv in the repo
# with checkpointfs installed (editable) and its extras, redone only when pyproject.toml changes; then the JVM shim
# built by Maven (jvm-shim/build.sh, a no-op while the jar is newer than its sources).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint unit bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[spark,test,bench,dev]'
	@touch $(STAMP)

setup: $(STAMP)
	@bash jvm-shim/build.sh

demo: setup
	$(PY) -m checkpointfs.demo

lint: setup
	$(VENV)/bin/ruff check checkpointfs tests benchmarks
	$(VENV)/bin/mypy

unit: setup
	$(PY) -m pytest

test: lint unit

bench: setup
	$(PY) -m benchmarks.run

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
