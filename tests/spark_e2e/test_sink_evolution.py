"""Sink evolution (``spark.sql.streaming.queryEvolution.enableSinkEvolution``, Spark 4.2 and later) through the shim on
MinIO, across SIGKILLs of the driver: a stateful query (``dropDuplicates``) writes to a file sink named ``first``, is
killed once batch 2 is planned, and restarts on the same checkpoint with a second named sink, ``second``, at another
path; killed again once batch 4 is planned and restarted with ``second``, it runs to the end.

Spark keeps the named sinks in the commit log (version 3, ``sinkMetadataMap``): after the switch it lists both, only
the one in use active. Each sink's output, read through its own ``_spark_metadata``, holds every id it got once, the
two hold every input id between them, none twice (the dedup state carries across the switch), and ``checkpointfs
verify`` finds nothing.

The second sink's log starts at the batch of the switch (``_spark_metadata/2``), and Spark's reader of a sink log
reads from batch 0 (``CompactibleFileStreamLog.allFiles``): ``spark.read`` of that output fails with
"``_spark_metadata/0`` doesn't exist" (pyspark 4.3.0, also on local disk without checkpointfs), and so does
checkpointfs's reader, which follows Spark's. The test reads the second sink's log batch by batch and pins the
failure, so a Spark release that changes it is noticed.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from checkpointfs import DirectWriteManager
from checkpointfs.errors import CorruptLogError
from checkpointfs.log.sink_log import FileStreamSinkLog
from checkpointfs.sink.manifest_paths import from_manifest_path
from tests.backends.e2e import last_commit

from .conftest import Pipeline, committed_ids
from .test_checkpoint_v2 import V2_KILLS, _inputs, _written
from .written import assert_verifies_clean, assert_written_directly, read_text, spark_line

# three drivers, 1.5-4 minutes on the shared machine: outside `make test`'s budget; the gate's kills of a stateful
# file-sink query through the shim on MinIO cover its ground
pytestmark = [pytest.mark.spark, pytest.mark.minio, pytest.mark.extended(covered_by=V2_KILLS)]

SINK_EVOLUTION = ("--conf", "spark.sql.streaming.queryEvolution.enableSinkEvolution=true")
FILES = 6


def logged_ids(pipeline: Pipeline, output_key: str) -> tuple[list[int], list[int]]:
    """The ids in the files each batch of the sink log at ``output_key`` names, read batch by batch (not from batch 0
    on, as Spark's reader does), and the log's batches."""
    server = pipeline.server
    ids: list[int] = []
    with DirectWriteManager(**server.manager_options()) as manager:
        log = FileStreamSinkLog(manager, server.uri(f"{output_key}/_spark_metadata"), read_only=True, deletion=False)
        batches = sorted(log.batch_ids())
        for batch in batches:
            for status in log.iter_batch(batch):
                with manager.open(from_manifest_path(status.path, "s3")) as f:
                    ids += [int(json.loads(line)["id"]) for line in f.read().decode().splitlines() if line]
    return sorted(ids), batches


def test_second_named_sink_added_across_kills_is_exactly_once(minio_pipeline: Pipeline,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after ``offsets/2`` with sink ``first``, restarted with sink ``second`` (another path), killed after
    ``offsets/4``, restarted with ``second`` to the end: each sink's output once per id, both together every id once;
    the last commit (v3) names both sinks, ``second`` the active one; every checkpoint file written by the shim
    directly; ``verify`` clean."""
    if spark_line() < (4, 2):
        pytest.skip("sink evolution (named sinks in the commit log) came with Spark 4.2")
    pipeline = minio_pipeline
    expected = _inputs(pipeline, FILES)
    cp = pipeline.checkpoint_key
    second_key = f"{pipeline.prefix}/output-second"
    first = (*SINK_EVOLUTION, "--sink-name", "first")
    second = (*SINK_EVOLUTION, "--sink-name", "second", "--output", pipeline.server.uri(second_key, scheme="s3a"))

    pipeline.kill_when(pipeline.start(*first, query="dedup"), _written(f"{cp}/offsets/2"))
    pipeline.kill_when(pipeline.start(*second, query="dedup"), _written(f"{cp}/offsets/4"))
    job = pipeline.start(*second, query="dedup")
    outcome = job.wait()
    assert outcome["status"] == "ok", job.tail()

    in_first = committed_ids(pipeline)
    in_second, second_batches = logged_ids(pipeline, second_key)
    assert in_first and in_second, (in_first, in_second)
    assert len(set(in_second)) == len(in_second), Counter(in_second).most_common(3)
    assert sorted(in_first + in_second) == expected, (Counter(in_first + in_second).most_common(3))
    assert second_batches[0] > 0, second_batches  # the switch's batch: the log has no batch 0
    with pytest.raises(CorruptLogError, match="_spark_metadata/0"):
        committed_ids(pipeline, second_key)  # as Spark's reader: from batch 0 on

    keys = assert_written_directly(pipeline.server, cp, pipeline.server.requests.all())
    commit = read_text(pipeline.server, last_commit(keys, cp)).splitlines()
    assert commit[0] == "v3", commit
    sinks: dict[str, Any] = json.loads(commit[1])["sinkMetadataMap"]
    assert {name: s["isActive"] for name, s in sinks.items()} == {"first": False, "second": True}, sinks

    assert_verifies_clean(pipeline.server.minio, cp, monkeypatch)
