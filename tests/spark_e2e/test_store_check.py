"""Safe wherever it is turned on, as a user meets it: a streaming query through the shim (each in a driver process of
its own, on the embedded S3) against a store that ignores If-None-Match fails at start naming the store, with
nothing of its checkpoint written; a mistyped checkpointfs setting fails the query at start naming the key it
meant; on a store that honours it, the store check costs 3 requests once. The first runs on every line (the
conformance suite's JVM case checks the rest of the store check and the settings there too)."""

from __future__ import annotations

from typing import Any

import pytest

from ..conftest import EVERY_LINE
from .conftest import Pipeline

pytestmark = pytest.mark.spark

CANARY = "_checkpointfs-store-check-"


@getattr(pytest.mark, EVERY_LINE)
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
    assert [r.operation for r in canaries] == ["PutObject", "PutObject", "DeleteObject"], canaries


def test_a_mistyped_setting_fails_the_query_at_start(pipeline: Pipeline) -> None:
    pipeline.add_input(0, list(range(10)))
    outcome = pipeline.start("--conf", "spark.hadoop.checkpointfs.cancel.stratgy=abort").wait()
    assert outcome["status"] == "failed", outcome
    error = str(outcome["error"])
    assert ("unknown setting 'checkpointfs.cancel.stratgy': did you mean 'checkpointfs.cancel.strategy'?"
            in error), error
    assert pipeline.checkpoint_keys() == []


def test_the_store_check_costs_three_requests_once_per_driver(pipeline: Pipeline, spark: Any) -> None:
    for b in range(3):
        pipeline.add_input(b, list(range(b * 10, b * 10 + 10)))
    outcome = pipeline.start().wait()
    assert (outcome["status"], outcome["batches"]) == ("ok", 3), outcome
    canaries = [r for r in pipeline.requests(pipeline.checkpoint_key) if CANARY in r.key]
    # local[2]: driver and executors share the JVM; state files are overwrites, which need no check
    assert [(r.operation, r.status) for r in canaries] == [("PutObject", 200), ("PutObject", 412),
                                                           ("DeleteObject", 204)], canaries
    assert len({r.key for r in canaries}) == 1
    assert not any(CANARY in key for key in pipeline.checkpoint_keys())
