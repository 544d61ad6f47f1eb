"""The short reliability campaign (harness.campaign; ``make campaign`` runs the long one): a stateful
streaming query (dropDuplicates) on s3a:// against the session's embedded S3 under the "mixed" fault profile
(consistency lag, 503s, 500s, resets, lost responses, truncated answers), its driver SIGKILLed at varied points of
a micro-batch and restarted on the same checkpoint until all input is processed, then restarted once more with new
input.

The shim must give exactly-once output and a readable, restartable checkpoint. Spark's own managers run the same
campaign (with two kills instead of five, to keep ``make test`` short); how they fare is a result, recorded in the
test report, not a test failure: their test asserts that the campaign ran and its outcome was classified."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.testing import EmbeddedS3
from harness.campaign import KILL_POINTS, SHORT, Campaign, ManagerResult, table

KILLS = "tests/spark_e2e/test_streaming.py::test_kill_9_at_several_points_then_exactly_once"
"""The gate's kill test: the campaign's kills, one by one (its fault profiles: the conformance suite under faults)."""

# `extended` (make test's budget): `make campaign` runs the long campaign; its parts run one by one in make test (the
# kills in test_streaming.py, test_query_shapes.py and the cluster's; the fault profiles in test_shim_under_faults.py).
pytestmark = [pytest.mark.spark, pytest.mark.extended(covered_by=KILLS)]


@pytest.fixture(autouse=True)
def _spark_available() -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")
    if shutil.which("java") is None:
        pytest.skip("no Java runtime on PATH: Spark cannot start")


def _run(manager: str, server: EmbeddedS3, tmp_path: Path, record_property: Any) -> ManagerResult:
    result = Campaign(server, tmp_path, manager, SHORT).run()
    record_property("campaign", result.to_json())
    print(table([result]))
    for run in result.runs:
        print(f"  run {run.index} {run.phase}: {run.status} {run.kill_point} {run.killed_at} {run.error[:200]}")
    return result


def test_shim_survives_kills_and_faults_exactly_once(
    embedded_s3: EmbeddedS3, tmp_path: Path, record_property: Any
) -> None:
    result = _run("shim", embedded_s3, tmp_path, record_property)

    assert result.kills >= 5, result.runs
    killed_at = {run.kill_point.split("#")[0] for run in result.runs if run.status == "killed"}
    assert killed_at == {point.name for point in KILL_POINTS}, killed_at  # five different points of a batch
    assert result.completed and result.final_restart_ok, result.runs
    # Request faults of several kinds were injected, and survived. (Listing lags were in force too; the shim rarely
    # meets one, as it lists no directory it has just written to, so their count is not asserted.)
    injected = result.faults_injected
    assert result.profile == "campaign" and result.faults_total > 0, injected
    assert len([kind for kind in injected if not kind.startswith("consistency")]) >= 3, injected
    # Exactly-once: every input id once in the committed output, new input of the final restart included.
    assert result.output_readable, result.output_error
    assert (result.lost, result.unprocessed, result.duplicates, result.unexpected) == (0, 0, 0, 0), result.to_json()
    assert result.exactly_once
    # A readable checkpoint: metadata, offsets, commits, the source log and the sink log, consistent.
    assert result.checkpoint_readable, result.checkpoint_error
    assert result.last_commit == result.last_offsets
    assert result.outcome() == ["fine"] or all(o.startswith("query failed") for o in result.outcome()), (
        result.outcome())


@pytest.mark.comparison(covered_by=KILLS)
@pytest.mark.parametrize("manager", ["default", "abortable"])
def test_spark_managers_campaign_is_classified(
    embedded_s3: EmbeddedS3, tmp_path: Path, record_property: Any, manager: str
) -> None:
    """Spark's rename-based manager and AbortableStreamBasedCheckpointFileManager under the same campaign: it runs
    to a verdict (exactly-once or not, duplicates, lost ids, failed runs, checkpoint readable), whatever it is."""
    result = _run(manager, embedded_s3, tmp_path, record_property)

    assert result.runs, "no driver was started"
    assert result.kills >= 1 or result.failures or result.hangs, result.runs
    assert result.faults_total > 0
    outcome = result.outcome()
    assert outcome, outcome
    assert (outcome == ["fine"]) == (result.exactly_once and result.checkpoint_readable and result.final_restart_ok
                                     and not result.failures and not result.hangs)
    assert result.expected_ids > 0 and (result.output_readable or result.output_error)  # a verdict was reached
