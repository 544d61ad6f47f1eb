"""The probe rule of the shim's ``exists()`` against what Spark really asks: a stateful query run with the shim's
probe record on (tests/spark_e2e/probes.py), then resumed, and every file probe (one HEAD, no LIST) checked against
the store at the end. The record's parsing and the check are tested on their own first, without Spark.

Not ``every_line``: two drivers per state store take 1.5-2 minutes on the shared machine. The every_line tests of
test_streaming.py record and check the same on each line for free (the SIGKILL/restart test, the RocksDB upload
test); this file runs on one line with ``make lines TEST_LINES=3.5 LINE_TESTS=tests/spark_e2e/test_probes.py
LINE_MARKER=spark``."""

from __future__ import annotations

import time
from typing import Any

import pytest

from .conftest import Pipeline
from .probes import (
    RECORD_ARGS,
    ExistsRecord,
    assert_next_batches_were_absent,
    assert_no_directory_probed_as_file,
    directories_probed_as_file,
    exists_records,
    parse_exists_records,
    probe_counts,
)


class _Keys:
    """A store holding fixed keys of one bucket."""

    def __init__(self, *keys: str) -> None:
        self._keys = sorted(keys)

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        return [k for k in self._keys if k.startswith(prefix) and bucket == "b"]


def test_records_are_parsed_from_pattern_and_json_layouts() -> None:
    log = (
        "25/11/24 09:00:01 DEBUG Probes: checkpointfs.exists probe=file answer=false "
        "path=s3a://b/cp/offsets/0 root=s3a://b/cp/offsets\n"
        "25/11/24 09:00:01 INFO MicroBatchExecution: something else\n"
        '{"level":"DEBUG","msg":"checkpointfs.exists probe=full answer=true path=s3a://b/my%20cp/state '
        'root=s3a://b/my%20cp","logger":"Probes"}\n')
    assert parse_exists_records(log) == [
        ExistsRecord("s3a://b/cp/offsets/0", "s3a://b/cp/offsets", "file", False),
        ExistsRecord("s3a://b/my cp/state", "s3a://b/my cp", "full", True),
    ]


def test_check_fails_only_for_a_directory_probed_as_file() -> None:
    store = _Keys("cp/offsets/0", "cp/state/0/1/1.delta", "cp/sources/0/0")
    fine = [
        ExistsRecord("s3a://b/cp/offsets/0", "s3a://b/cp/offsets", "file", True),  # a file
        ExistsRecord("s3a://b/cp/offsets/1", "s3a://b/cp/offsets", "file", False),  # absent
        ExistsRecord("s3a://b/cp/state/0/1", "s3a://b/cp", "full", True),  # a directory, full probe
    ]
    assert_no_directory_probed_as_file(fine, store)
    wrong = ExistsRecord("s3a://b/cp/state/0/1", "s3a://b/cp/state", "file", False)
    assert directories_probed_as_file([*fine, wrong], store) == [wrong]
    with pytest.raises(AssertionError, match="took a directory for a file"):
        assert_no_directory_probed_as_file([*fine, wrong], store)


@pytest.mark.spark
# the every_line kill and SST tests, the query shapes and the Kafka tests check the same
@pytest.mark.extended(covered_by="tests/spark_e2e/test_query_shapes.py::test_no_directory_probed_as_file")
@pytest.mark.parametrize("state_store", ["hdfs", "rocksdb"])
def test_stateful_query_never_probes_a_directory_as_file(
    pipeline: Pipeline, state_store: str, record_property: Any
) -> None:
    """dropDuplicates with the HDFS-backed or the RocksDB state store, through the shim on the embedded S3: a first
    run of two batches, then a resumed run of two more (restart paths: the stream metadata, the logs' last batches,
    the state stores' existing versions). Every exists() is recorded; none may be a file probe of a directory."""
    started = time.monotonic()
    args = (*RECORD_ARGS, "--state-store", state_store)
    for b in range(2):
        pipeline.add_input(b, [b * 10 + i for i in range(5)] + [0])
    first = pipeline.start(*args, query="dedup")
    outcome = first.wait()
    assert outcome["status"] == "ok", first.tail()
    for b in range(2, 4):
        pipeline.add_input(b, [b * 10 + i for i in range(5)] + [10])
    resumed = pipeline.start(*args, query="dedup")
    assert resumed.wait()["status"] == "ok", resumed.tail()

    records = exists_records(first.log_path, resumed.log_path)
    counts = probe_counts(records)
    record_property("exists_records", counts)
    print(f"{state_store}: {len(records)} exists() records {counts} in {time.monotonic() - started:.0f} s "
          f"(checkpointfs of the driver: {outcome['checkpointfs']})")
    assert records, first.tail()
    assert {r.probe for r in records} >= {"file", "full", "next"}, counts
    assert all(r.path.startswith("s3a://") for r in records), records[:5]
    assert_no_directory_probed_as_file(records, pipeline.server)
    assert_next_batches_were_absent(records, pipeline.server.requests.all())
    # each run's second batch: offsets/N and commits/N follow what the run's own managers wrote
    nexts = {r.path.rsplit("/", 2)[-2] + "/" + r.path.rsplit("/", 1)[-1] for r in records if r.probe == "next"}
    assert nexts >= {"offsets/1", "commits/1", "offsets/3", "commits/3"}, sorted(nexts)
    assert f"{pipeline.checkpoint_key}/commits/3" in pipeline.checkpoint_keys()
