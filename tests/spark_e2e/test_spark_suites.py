"""Spark's own CheckpointFileManager suites, unmodified (Spark's test-jars), against the shim on S3: the embedded S3
and MinIO, with Spark's own managers on the same stores beside them as the comparison (harness/spark_suites.py).

The shim passes every test of ``CheckpointFileManagerTests`` and, from 4.1, ``ChecksumCheckpointFileManagerSuite``.
Spark's managers fail where :data:`EXPECTED_FAILURES` says, exactly: a comparison (``make comparisons``), recorded
as what happens, never making the run red while it stays as described. Per line:
``make lines TEST_LINES="3.5 4.1" LINE_TESTS=tests/spark_e2e/test_spark_suites.py LINE_MARKER=spark``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from checkpointfs.spark._jars import running_line
from checkpointfs.spark.config import s3a_settings
from checkpointfs.spark.lines import SPARK_TEST_JARS, SparkLine
from harness import spark_suites
from harness.spark_suites import CHECKSUM_SUITE, TRAIT_SUITE

pytestmark = pytest.mark.spark

TRAIT_TESTS = ("mkdirs, list, createAtomic, open, delete, exists",)
CHECKSUM_TESTS = {
    "4.1.3": (*TRAIT_TESTS, "detect corrupt file", "non sequential read is not allowed",
              "checksum manager can read a file written by other manager",
              "other manager can read a file written by checksum manager",
              "skip checksum creation if file missing checksum"),
    "4.2.0": (*TRAIT_TESTS, "detect corrupt file", "non sequential read is not allowed",
              "checksum manager can read a file written by other manager",
              "other manager can read a file written by checksum manager",
              "skip checksum creation if file missing checksum",
              "numThreads = 0 disables thread pool (sequential mode)", "negative numThreads is invalid"),
}
"""Spark's tests of each suite, by the release of the test-jars (SPARK_TEST_JARS): the checksum suite inherits the
trait's test."""

_OVERWRITE_LOST = ("createAtomic(overwriteIfPossible = true) of an existing file: S3A's rename refuses an existing "
                   "destination (returns false) and Spark's FileSystem manager ignores that because the destination "
                   "exists, so the overwrite is silently lost")
EXPECTED_FAILURES: dict[str, dict[tuple[str, str], str]] = {
    "filecontext": {},
    "filesystem": {
        (TRAIT_SUITE, TRAIT_TESTS[0]): f"{_OVERWRITE_LOST}: the file still holds 5, not 6",
        (CHECKSUM_SUITE, TRAIT_TESTS[0]): f"{_OVERWRITE_LOST}: the file still holds 5, not 6",
        (CHECKSUM_SUITE, "detect corrupt file"):
            f"{_OVERWRITE_LOST}: the test's corrupting overwrite never lands, so no checksum error is raised",
        (CHECKSUM_SUITE, "skip checksum creation if file missing checksum"):
            f"{_OVERWRITE_LOST}: the file keeps its first content",
    },
    "abortable": {},
}
"""manager -> (suite, test) -> why Spark's own manager fails Spark's own test on s3a:// (the embedded S3 and MinIO
alike; docs/testing.md carries the table). Tests of a suite the line's test-jars lack do not apply."""


def expected_tests(line: SparkLine) -> dict[str, tuple[str, ...]]:
    """Spark's tests the line's suites hold, by suite."""
    tests = {TRAIT_SUITE: TRAIT_TESTS}
    if CHECKSUM_SUITE in spark_suites.suites_of(line):
        tests[CHECKSUM_SUITE] = CHECKSUM_TESTS[SPARK_TEST_JARS[line.line][0]]
    return tests


@dataclass(frozen=True)
class Store:
    """A store a fixture started, as the suites reach it: its S3A settings, a fresh root, its request log."""

    name: str
    hadoop_conf: dict[str, str]
    root: str
    server: Any

    def operations(self) -> dict[str, int]:
        """Requests the store answered since the store was taken (the test's own), by operation."""
        return dict(self.server.requests.counts())


@pytest.fixture
def store(request: pytest.FixtureRequest) -> Store:
    """The embedded S3 (``embedded_s3``) or MinIO behind the recording proxy (``logged_minio``), by parameter."""
    name = request.param
    server = request.getfixturevalue("embedded_s3" if name == "embedded-s3" else "logged_minio")
    prefix = f"spark-suites/{uuid.uuid4().hex[:12]}"
    if name != "embedded-s3":
        server.requests.clear()
    return Store(name, s3a_settings(server), server.uri(prefix, scheme="s3a"), server)


STORES = ("embedded-s3", "minio")
MANAGER_PARAMS = [
    pytest.param(manager, store, id=f"{store}-{manager}", marks=[
        *([pytest.mark.minio] if store == "minio" else []),
        *([] if manager == "shim" else [pytest.mark.comparison(covered_by=f"-{manager}] -> -shim]")])])
    for store in STORES for manager in spark_suites.MANAGERS]


@pytest.mark.parametrize(("manager", "store"), MANAGER_PARAMS, indirect=["store"])
def test_sparks_own_checkpoint_file_manager_suites(manager: str, store: Store, record_property: Any) -> None:
    """Spark's suites against ``manager`` on ``store``: every test passes for the shim, with no COPY; Spark's own
    managers fail exactly the tests :data:`EXPECTED_FAILURES` names."""
    line = running_line()
    run = spark_suites.run(line, [manager], store.hadoop_conf, store.root)
    outcomes = run.of(manager)
    requests = store.operations()
    record_property("seconds", round(run.seconds, 1))
    record_property("outcomes", [(o.suite_kind, o.test, o.status) for o in outcomes])
    record_property("requests", requests)
    print(f"{store.name} {manager}: {len(outcomes)} tests in {run.seconds:.1f} s, {run.failed(manager)}, "
          f"requests {requests}")

    ran = {kind: tuple(o.test for o in outcomes if o.suite_kind == kind) for kind in expected_tests(line)}
    assert ran == expected_tests(line), run.output[-4000:]
    expected = {key: why for key, why in EXPECTED_FAILURES.get(manager, {}).items() if key[0] in ran}
    assert set(run.failed(manager)) == set(expected), (run.failed(manager), run.output[-6000:])
    assert run.returncode == (1 if expected else 0), run.output[-4000:]
    if manager == "shim":
        assert requests.get("CopyObject", 0) == 0, requests  # written in place, never renamed
    elif manager in ("filecontext", "filesystem"):
        assert requests.get("CopyObject", 0) > 0, requests  # Spark's rename: a COPY and a DELETE on S3
