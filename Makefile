# The two commands of the quickstart, `make demo` and `make test`, each do their own set-up: a .venv in the repo
# with checkpointfs installed (editable) and its extras, redone only when pyproject.toml changes; then the JVM shim
# jars of every Spark line and the s3a jars per Hadoop version, built by Maven (jvm-shim/build.sh, a no-op while the
# jars are newer than their sources).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup jdk demo test lint unit bench campaign dist clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[spark,test,bench,dev]'
	@touch $(STAMP)

setup: $(STAMP)
	@command -v mvn >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 || $(MAKE) --no-print-directory jdk
	@CHECKPOINTFS_PYTHON=$(PY) bash jvm-shim/build.sh

# Maven and a JDK 17 for the shim, from Debian's packages where this runs as root (CI does); otherwise a hint.
jdk:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven openjdk-17-jdk-headless; \
	else echo "checkpointfs: the JVM shim needs Maven and a JDK 17 (e.g. apt-get install maven openjdk-17-jdk-headless)" >&2; exit 1; fi

# The main job: a Spark streaming query checkpointing through the shim on the embedded S3, killed and resumed,
# after a first look at single checkpoint-file commits.
demo: setup
	$(PY) -m checkpointfs.demo --commits 200
	SPARK_LOCAL_IP=127.0.0.1 $(PY) -m checkpointfs.spark.demo

lint: setup
	$(VENV)/bin/ruff check checkpointfs tests benchmarks
	$(VENV)/bin/mypy

unit: setup
	$(PY) -m pytest

test: lint unit

bench: setup
	$(PY) -m benchmarks.run

campaign: setup
	$(PY) -m checkpointfs.spark.campaign --long

# A wheel (with every line's shim jar, built by setup.py's hook) and an sdist (with the shim's sources) in dist/.
dist: setup
	rm -rf dist build
	$(PY) -m pip install -q --disable-pip-version-check 'setuptools>=77'
	$(PY) -m pip wheel -q --no-deps --disable-pip-version-check -w dist .
	$(PY) -c "from setuptools import build_meta; build_meta.build_sdist('dist')"
	@ls -l dist

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache jvm-shim/target checkpointfs/jars/*.jar
