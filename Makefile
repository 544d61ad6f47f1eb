# The two commands of the quickstart, `make demo` and `make test`, each do their own set-up: a .venv in the repo
# with checkpointfs installed (editable) and its extras, redone only when pyproject.toml changes; then the JVM shim
# jars of every Spark line and the s3a jars per Hadoop version, built by Maven (jvm-shim/build.sh, a no-op while the
# jars are newer than their sources).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# Every supported Spark line (checkpointfs/spark/lines.py, the one place the pins live). The main line runs in .venv;
# every other line gets ~/.cache/checkpointfs/venvs/spark-<line> (harness/line_env.sh: that line's pyspark, the test
# dependencies and checkpointfs), kept outside the checkout like pip's cache so that a fresh clone reuses it: only
# checkpointfs is reinstalled when the wheel differs, everything while the pins or pyproject.toml change.
LINES_TABLE := $(PYTHON) -c "import runpy; t = runpy.run_path('checkpointfs/spark/lines.py');
ALL_LINES := $(shell $(LINES_TABLE) print(' '.join(l.line for l in t['LINES']))")
MAIN_LINE := $(shell $(LINES_TABLE) print(t['DEFAULT_LINE'].line)")
MAIN_PYSPARK := $(shell $(LINES_TABLE) print(t['DEFAULT_LINE'].pyspark)")
OTHER_LINES := $(filter-out $(MAIN_LINE),$(ALL_LINES))
# Lines with the main line's shim jar and Hadoop (4.2 beside 4.3): what the main line's `make unit` runs covers their
# shim; `make test` leaves their per-line run out for its budget (their user path stays in: the wheel, configure()
# fetching its jars, a stateful query), `make lines` runs them.
LINES_LIKE_MAIN := $(shell $(LINES_TABLE) m = t['DEFAULT_LINE']; print(' '.join(l.line for l in t['LINES'] if l != m and (l.group, l.hadoop) == (m.group, m.hadoop)))")
# Lines whose per-line tests `make lines` runs: every line but the main one, whose run is `make unit`.
# `make lines TEST_LINES=4.3` runs the per-line selection on the main line.
TEST_LINES ?= $(OTHER_LINES)
# The per-line tests: the JVM conformance cases (the shim and Spark's own managers), one SIGKILL/restart
# exactly-once test on the embedded S3 and the query shapes on MinIO, all marked every_line (tests/conftest.py). Other selections per line, e.g. the
# Kafka tests (3-4 minutes a line on the shared machine, so not every_line):
# `make lines TEST_LINES=3.5 LINE_TESTS=tests/spark_e2e/test_kafka.py LINE_MARKER=kafka`, or the probe-rule runs
# (2-4 minutes a line): `make lines TEST_LINES=3.5 LINE_TESTS=tests/spark_e2e/test_probes.py LINE_MARKER=spark`, or
# Spark's own CheckpointFileManager suites against the shim and Spark's managers (1.5-3.5 minutes a line):
# `make lines TEST_LINES="3.5 4.1" LINE_TESTS=tests/spark_e2e/test_spark_suites.py LINE_MARKER=spark`.
LINE_TESTS := tests/conformance tests/spark_e2e
LINE_MARKER ?= every_line
# Lines whose per-line run leaves out the query shapes (marker `shapes`), for `make test`'s budget: all but the main
# line, which runs them in `make unit`. `make lines LINES_WITHOUT_SHAPES=` runs them on every line (2-4 minutes a
# line: 3.5 and 4.0 have jars of their own; 4.1 and 4.2 share the main line's spark41 jar).
LINES_WITHOUT_SHAPES ?= $(OTHER_LINES)
# 1: the line venvs install checkpointfs from the wheel `make dist` builds; 0: editable, from this checkout.
LINES_FROM_WHEEL ?= 1
# How many lines run at once (harness/lines.sh): a line keeps about one core busy.
LINES_JOBS ?= 2

.PHONY: setup jdk backends demo test test-all lines-all upgrade-all test-lines check lint unit extended lines upgrade userpath floors line-envs fixtures matrix bench campaign campaign-cluster dist maven comparisons loaded cold clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "checkpointfs: installing $(VENV) (checkpointfs editable, its extras, pyspark $(MAIN_PYSPARK)): a few minutes the first time" >&2
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[spark,test,bench,dev,tools,connect,gcs,azure]' \
	  'pyspark[connect]==$(MAIN_PYSPARK)'
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
	$(PY) -m harness.demo --commits 200
	SPARK_LOCAL_IP=127.0.0.1 $(PY) -m harness.spark_demo

# The real stores of the `minio`, `hdfs`, `gcs` and `emulator` tests and the broker of the `kafka` tests, built once
# into ~/.cache/checkpointfs (outside the repository) and reused: MinIO and fake-gcs-server with `go install` (a few
# minutes each, one time), the MiniDFSCluster launcher with Maven (jvm-hdfs/), the Kubernetes mock API server
# launcher with Maven (jvm-k8s/), Kafka and the main line's Kafka
# connector with Maven (jvm-kafka/), Google's GCS connector jar with Maven, Azurite with npm (the `emulator` tests
# run on fake-gcs-server and Azurite).
backends: setup
	@bash jvm-hdfs/build.sh >/dev/null
	@bash jvm-k8s/build.sh >/dev/null
	@bash jvm-kafka/build.sh broker >/dev/null
	@$(PYTHON) checkpointfs/spark/lines.py kafka | awk '$$1 == "$(MAIN_LINE)" {print $$2, $$3}' \
	  | xargs bash jvm-kafka/build.sh connector >/dev/null
	@$(PY) -m harness.servers.minio >/dev/null
	@$(PY) -m harness.servers.fake_gcs --connector >/dev/null
	@$(PY) -m harness.servers.azurite >/dev/null

# ruff, and mypy strict: everything for the main Python, and the package users install for the oldest Python it
# declares (3.10; harness/ and tests/ run on the main one).
# mypy's cache lives outside the checkout, like the servers' binaries, so a fresh clone checks incrementally (mypy
# takes a cached result only for a file whose size and content hash it recorded).
MYPY := MYPY_CACHE_DIR=$${CHECKPOINTFS_CACHE:-$$HOME/.cache/checkpointfs}/mypy $(VENV)/bin/mypy
lint: $(STAMP)
	$(VENV)/bin/ruff check checkpointfs harness tests benchmarks jvm-shim/maven_repo.py
	$(MYPY)
	$(MYPY) jvm-shim/maven_repo.py
	$(MYPY) --python-version 3.10 -p checkpointfs

# The fast loop: lint and every test that needs no Spark, no JVM (the Kafka broker is one) and no MinIO/HDFS/GCS nor
# store emulator (fake-gcs-server and Azurite: marker emulator, run by `make unit` with the pure-Python tests), less
# the minutes-long fault and memory runs (marker slow, tests/conftest.py; `make unit` runs them).
FAST_TESTS := -m "not spark and not minio and not hdfs and not cluster and not kafka and not gcs and not emulator \
  and not slow" \
  --ignore=tests/user_path
check: lint
	$(PY) -m pytest -q -p no:cacheprovider -n 2 $(FAST_TESTS)

# The shim as a Maven repository (dist/maven/: one artifact per Spark line with its POM, sources and javadoc jars;
# jvm-shim/maven_repo.py), from the jars `make setup` built: a second or so, no wheel. `make dist` writes it too.
maven: setup
	@$(PY) jvm-shim/maven_repo.py --out dist/maven >/dev/null

# Everything but the cross-line upgrade test, which needs the line venvs (`make upgrade`): first the tests that need
# no JVM and no real store, then those that start JVMs and servers, each two at a time (pytest-xdist; each worker
# has its own embedded S3 and SparkSession). The JVM tests are scheduled by server (--dist loadgroup, the
# xdist_group tests/conftest.py gives each test by the server fixture it uses), so that the standalone cluster, the
# MiniDFSCluster and the Kafka broker each start in one worker only.
UNIT_TESTS := not upgrade and not comparison and not extended
JVM_TESTS := spark or minio or hdfs or cluster or kafka or gcs
unit: setup backends maven
	$(PY) -m pytest -n 2 --durations=10 --ignore=tests/user_path -m "($(UNIT_TESTS)) and not ($(JVM_TESTS))"
	$(PY) -m pytest -n 2 --dist loadgroup --durations=25 --ignore=tests/user_path -m "($(UNIT_TESTS)) and ($(JVM_TESTS))"

# The tests that run only Spark's own managers (marker `comparison`, with covered_by as for `extended`); those also
# marked `extended` run in `make extended`.
comparisons: setup backends maven
	$(PY) -m pytest --durations=10 -m "comparison and not extended"

# Variants whose ground another test of `make test` covers, left out of it for its budget: each names its covering
# gate test at its marker (`pytest.mark.extended(covered_by=...)`); docs/testing.md lists them (harness/outside_gate.py).
# The upgrade's extended variant needs the line venvs: `make upgrade-all` runs it.
extended: setup backends maven
	$(PY) -m pytest --durations=10 -m "extended and not upgrade"

# The user's path: tests/user_path (the wheel in each line's venv with configure() fetching its own jars into
# .cache/user-path, empty in a fresh clone; the wheel with no extras in a clean venv beside a user's pytest), two
# at a time: two lines fetch their jars at once, as two jobs on one machine may (the cache takes a lock per Hadoop).
userpath: setup backends dist
	$(PY) -m pytest -p no:cacheprovider -n 2 --dist loadgroup --durations=10 tests/user_path

# The dependency floors of pyproject.toml (each `>=` taken as `==`) on the oldest Python declared, running the fast
# tests that reach each dependency (harness/floors.py): boto3, tenacity and moto through the conformance suite's
# Python managers, the S3 manager's and the embedded S3's own tests; fsspec through the rename manager's; hypothesis
# through the log fuzzing; the log parser's Python-3.10 patterns through Spark's own files of every line; google-auth
# and requests (the gcs extra) through the GCS store's tests on fake-gcs-server (tests/gcs); azure-storage-blob and
# azure-core (the azure extra) through tests/azure and the conformance suite on Azurite; all three stores' clients
# through the store contract (tests/store).
FLOOR_TESTS := tests/conformance tests/s3 tests/rename tests/test_embedded_s3.py tests/test_bad_input.py tests/gcs \
  tests/azure tests/store \
  tests/faults/test_log_fuzz.py tests/faults/test_fault_layer.py tests/log/test_spark_line_fixtures.py \
  tests/log/test_checkpoint_logs.py
floors: $(STAMP)
	$(PY) -m harness.floors -- -n 2 -m "not spark and not minio and not hdfs and not cluster" $(FLOOR_TESTS)

# The gate: every change passes it, CI runs it (.ci/run), a newcomer runs it. harness/parts.sh runs the parts in
# order under one run tag, prints each part's time and fails the run if any process it started is still alive at the
# end (harness/leftovers.py); the tests' and fixtures' durations go to a timings file it names (tests/timings.py),
# which `python -m harness.suite_times FILE` turns into benchmarks/results/suite_times.json and docs/testing.md's
# table.
GATE_PARTS := lint unit test-lines upgrade userpath floors
test:
	@bash harness/parts.sh --name test $(GATE_PARTS)

# The whole matrix: the gate's parts and everything the gate leaves out for its budget: the extended and comparison
# tests, every other line's per-line tests with the query shapes, the upgrade across lines with both state stores.
# Every part runs even when one fails (the failed ones are named). docs/testing.md lists what each covers.
ALL_PARTS := lint unit extended comparisons lines-all upgrade-all userpath floors
test-all:
	@bash harness/parts.sh --name test-all --keep-going $(ALL_PARTS)

# Every other line's per-line tests, query shapes included (the gate's test-lines leaves out the lines like the main
# one and the shapes on other lines).
lines-all:
	@$(MAKE) --no-print-directory lines TEST_LINES="$(OTHER_LINES)" LINES_WITHOUT_SHAPES=

# make test's per-line runs: every other line but those like the main one (LINES_LIKE_MAIN).
# All three at once (LINES_JOBS=3): each line's run waits on its drivers and servers part of the time, and two at
# a time left the third line alone on the machine at the end.
test-lines:
	@$(MAKE) --no-print-directory lines TEST_LINES="$(filter-out $(LINES_LIKE_MAIN),$(OTHER_LINES))" LINES_JOBS=3

# `make test` (LOADED_TARGET) on a fresh clone of HEAD, LOADED_RUNS times in a row, while `stress-ng --cpu 2` keeps
# both cores busy (harness/loaded.sh: stress-ng from Debian's packages; a log line per run with its start, end,
# duration and exit status, in a folder under /tmp that it names). Each run is a whole `make test`, slower under load.
LOADED_RUNS ?= 1
LOADED_TARGET ?= test
LOADED_CPUS ?= 2
loaded:
	@command -v stress-ng >/dev/null 2>&1 || if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng; \
	else echo "checkpointfs: make loaded needs stress-ng (e.g. apt-get install stress-ng)" >&2; exit 1; fi
	bash harness/loaded.sh --runs $(LOADED_RUNS) --cpus $(LOADED_CPUS) $(LOADED_TARGET)

# `make test` as a new machine runs it: a fresh clone of HEAD with an empty home folder (no pip, Maven, Ivy, Go, npm
# or checkpointfs cache), every server, venv and jar fetched and built anew (harness/cold.sh; its log folder under
# /tmp is named at the start). Budget: 75 minutes.
COLD_TARGET ?= test
cold:
	bash harness/cold.sh $(COLD_TARGET)

# Per-line environments only (make lines and make fixtures make them too).
line-envs: $(if $(filter 1,$(LINES_FROM_WHEEL)),dist)
	@for line in $(OTHER_LINES); do CHECKPOINTFS_FROM_WHEEL=$(LINES_FROM_WHEEL) bash harness/line_env.sh $$line >/dev/null || exit 1; done

# The per-line tests, in each line's own environment with that line's pyspark and shim jar. With LINES_FROM_WHEEL=1
# (the default) the line venvs get checkpointfs from the wheel `make dist` builds (what users install; its shim jars
# come from setup.py's hook) and the session checks that it imports that wheel, not this checkout (tests/conftest.py;
# pytest runs with --import-mode=append and PYTHONSAFEPATH so the checkout does not shadow it). The s3a jars come
# from this checkout's build ($CHECKPOINTFS_SPARK_DEPS), as a user's own folder would.
LINES_DIST := $(if $(filter 1,$(LINES_FROM_WHEEL)),$(if $(strip $(TEST_LINES)),dist))
lines: setup backends $(LINES_DIST)
	@MAIN_LINE=$(MAIN_LINE) MAIN_PYTHON=$(PY) LINES_FROM_WHEEL=$(LINES_FROM_WHEEL) \
	  LINES_WITHOUT_SHAPES="$(LINES_WITHOUT_SHAPES)" LINE_MARKER="$(LINE_MARKER)" LINE_TESTS="$(LINE_TESTS)" \
	  LINES_JOBS=$(LINES_JOBS) DEPS_DIR=$(CURDIR)/jvm-shim/target/deps bash harness/lines.sh $(TEST_LINES)

UPGRADE_MARKER ?= not extended
# One checkpoint on MinIO across Spark 3.5 -> 4.0 -> the main line with the shim on (tests/backends/
# test_minio_spark_upgrade.py), driven from .venv: each step's driver runs in its line's venv, which the test finds
# with harness/line_env.sh (the venvs `make lines` made, reused; the same LINES_FROM_WHEEL).
upgrade: setup backends line-envs
	SPARK_LOCAL_IP=127.0.0.1 CHECKPOINTFS_FROM_WHEEL=$(LINES_FROM_WHEEL) \
	  CHECKPOINTFS_SPARK_DEPS=$(CURDIR)/jvm-shim/target/deps \
	  $(PY) -m pytest -p no:cacheprovider --durations=0 -m "upgrade and $(UPGRADE_MARKER)" tests/backends/test_minio_spark_upgrade.py

# Both state stores across the lines (the gate runs RocksDB's; HDFS-backed state is `extended`).
upgrade-all:
	@$(MAKE) --no-print-directory upgrade UPGRADE_MARKER="(extended or not extended)"

# The short reliability campaign on every line, each in its line's environment, results per line in MATRIX_DIR.
# CAMPAIGN_MODULE: the campaign's module (it moves from checkpointfs.spark to the top-level harness package).
CAMPAIGN_MODULE ?= harness.campaign
MATRIX_DIR ?= benchmarks/results/matrix
matrix: setup $(if $(filter 1,$(LINES_FROM_WHEEL)),dist)
	@mkdir -p $(MATRIX_DIR)
	@for line in $(ALL_LINES); do \
	  if [ "$$line" = "$(MAIN_LINE)" ]; then py=$(PY); else py="$$(CHECKPOINTFS_FROM_WHEEL=$(LINES_FROM_WHEEL) bash harness/line_env.sh $$line)" || exit 1; fi; \
	  echo "== Spark $$line: short campaign" >&2; \
	  SPARK_LOCAL_IP=127.0.0.1 CHECKPOINTFS_SPARK_DEPS=$(CURDIR)/jvm-shim/target/deps $$py -m $(CAMPAIGN_MODULE) --json $(MATRIX_DIR)/campaign-short-spark-$$line.json || exit 1; \
	done

# Checkpoint fixtures written by each line's real Spark (tests/fixtures/spark-<line>/; see tests/fixtures/generate.py).
fixtures: setup $(if $(filter 1,$(LINES_FROM_WHEEL)),dist)
	@for line in $(ALL_LINES); do \
	  if [ "$$line" = "$(MAIN_LINE)" ]; then py=$(PY); else py="$$(CHECKPOINTFS_FROM_WHEEL=$(LINES_FROM_WHEEL) bash harness/line_env.sh $$line)" || exit 1; fi; \
	  SPARK_LOCAL_IP=127.0.0.1 $$py tests/fixtures/generate.py || exit 1; \
	done

bench: setup
	$(PY) -m benchmarks.run

campaign: setup
	$(PY) -m harness.campaign --long

# The campaign with its drivers on a standalone cluster (master and 2 workers on 127.0.0.1), executor kills included.
campaign-cluster: setup
	$(PY) -m harness.campaign --cluster --managers shim

# A wheel (with every line's shim jar, built by setup.py's hook), an sdist (with the shim's sources) and the Maven
# repository of the shim (dist/maven/, see `maven`) in dist/.
dist: setup
	rm -rf dist build
	$(PY) -m pip install -q --disable-pip-version-check 'setuptools>=77'
	$(PY) -m pip wheel -q --no-deps --disable-pip-version-check -w dist .
	$(PY) -c "from setuptools import build_meta; build_meta.build_sdist('dist')"
	$(PY) jvm-shim/maven_repo.py --out dist/maven
	@ls -l dist

clean:
	rm -rf $(VENV) .venvs build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache jvm-shim/target jvm-hdfs/target jvm-k8s/target checkpointfs/jars/*.jar
