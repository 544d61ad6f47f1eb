# The two commands of the quickstart, `make demo` and `make test`, each do their own set-up: a .venv in the repo
# with checkpointfs installed (editable) and its extras, redone only when pyproject.toml changes; then the JVM shim
# built by Maven (jvm-shim/build.sh, a no-op while the jar is newer than its sources).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup jdk demo test lint unit bench campaign clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[spark,test,bench,dev]'
	@touch $(STAMP)

setup: $(STAMP)
	@command -v mvn >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 || $(MAKE) --no-print-directory jdk
	@bash jvm-shim/build.sh

# Maven and a JDK 17 for the shim, from Debian's packages where this runs as root (CI does); otherwise a hint.
jdk:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven openjdk-17-jdk-headless; \
	else echo "checkpointfs: the JVM shim needs Maven and a JDK 17 (e.g. apt-get install maven openjdk-17-jdk-headless)" >&2; exit 1; fi

# The main job: a Spark streaming query checkpointing through the shim on the embedded S3, killed and resumed,
# after a first look at single checkpoint-file commits.
demo: setup
	$(PY) -m harness.demo --commits 200
	SPARK_LOCAL_IP=127.0.0.1 $(PY) -m harness.spark_demo

lint: setup
	$(VENV)/bin/ruff check checkpointfs harness tests benchmarks
	$(VENV)/bin/mypy

unit: setup
	$(PY) -m pytest

test: lint unit

bench: setup
	$(PY) -m benchmarks.run

campaign: setup
	$(PY) -m harness.campaign --long

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache jvm-shim/target checkpointfs/jars/*.jar
