"""Safe wherever it is turned on, as a user meets it: a streaming query through the shim (each in a driver process of
its own, on the embedded S3) against a store that ignores If-None-Match fails at start naming the store, with
nothing of its checkpoint written; a mistyped checkpointfs setting fails the query at start naming the key it
meant. On the main line: the conformance suite's JVM case (tests/conformance/jvm_cases.py) checks the store check
and the settings in the shim on every line. The check's cost on a store that honours it (3 requests once per
driver) is asserted by tests/spark_e2e/test_streaming.py::test_query_checkpoints_without_copy_or_temp_keys."""

from __future__ import annotations

import pytest

from .conftest import Pipeline

pytestmark = pytest.mark.spark

CANARY = "_checkpointfs-store-check-"


def test_a_store_that_ignores_conditional_writes_fails_the_query_at_start(pipeline: Pipeline) -> None:
    pipeline.server.faults.ignore_conditional_writes = True
    pipeline.add_input(0, list(range(10)))
    outcome = pipeline.start().wait()
    assert outcome["status"] == "failed", outcome
    error = str(outcome["error"])
    assert "accepted a second put-if-absent PutObject" in error, error
    assert pipeline.server.endpoint_url in error and "bucket 'checkpoints'" in error, error
    assert "checkpointfs doctor" in error and "the second PutObject succeeded" in error, error
    assert pipeline.checkpoint_keys() == []  # nothing published, and the canary deleted
    assert pipeline.server.keys(pipeline.output_key + "/") == []
    canaries = [r for r in pipeline.requests(pipeline.checkpoint_key) if CANARY in r.key]
    # headed while missing (404: s3:ListBucket granted), created, read back (what the store keeps: the start line
    # says), created again (accepted here), deleted
    assert [r.operation for r in canaries] == ["HeadObject", "PutObject", "HeadObject", "PutObject", "DeleteObject"], \
        canaries


def test_a_mistyped_setting_fails_the_query_at_start(pipeline: Pipeline) -> None:
    pipeline.add_input(0, list(range(10)))
    outcome = pipeline.start("--conf", "spark.hadoop.checkpointfs.cancel.stratgy=abort").wait()
    assert outcome["status"] == "failed", outcome
    error = str(outcome["error"])
    assert ("unknown setting 'spark.hadoop.checkpointfs.cancel.stratgy': did you mean "
            "'spark.hadoop.checkpointfs.cancel.strategy'?" in error), error
    assert "unknown setting 'checkpointfs.cancel.stratgy'" not in error, error  # not again for Spark's copy
    assert pipeline.checkpoint_keys() == []

