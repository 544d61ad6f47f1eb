"""Spark 4.3 streaming queries checkpointing on s3a:// through the shim, each in a driver process of its own, against
the embedded S3 (requests counted at the server): what is written, what it costs, and exactly-once output across
SIGKILLs of the driver and a second query on the same checkpoint."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.testing import Request
from checkpointfs.testing.directory_bucket import PROFILES, SDK_V1_NO_MD5

from ..conftest import EVERY_LINE, INSTALLED_ENV, REPO
from .conftest import Pipeline, read_ids
from .probes import (
    RECORD_ARGS,
    assert_next_batches_were_absent,
    assert_no_directory_probed_as_file,
    exists_records,
    probe_counts,
)

DIRECTORY_BUCKET_PROFILES = PROFILES
"""The embedded S3's profiles of S3 Express One Zone's rules, user metadata kept and dropped."""

DEFAULT_VS_SHIM = pytest.param("default", marks=pytest.mark.comparison(covered_by="[default] -> [shim]"))
"""The same test on Spark's default manager: a comparison; the gate runs the shim's."""

pytestmark = pytest.mark.spark

ROCKSDB_SST = re.compile(r"/state/\d+/\d+/SSTs/[^/]+\.sst$")
"""RocksDB's SST files: uploaded by the state store with ``FileSystem.copyFromLocalFile``, not the manager."""

CONCURRENT_ERROR = re.compile(
    r"CONCURRENT_STREAM_LOG_UPDATE|Multiple streaming queries|concurrent|Race while writing", re.IGNORECASE)


def _is_put(request: Request, key_suffix: str) -> bool:
    return request.operation == "PutObject" and request.key.endswith(key_suffix) and request.status == 200


def _per_batch(pipeline: Pipeline, batches: int) -> tuple[dict[str, float], dict[str, float]]:
    """Requests per micro-batch between the first and the last commit (the steady state, without the query's
    start-up): on checkpoint keys, and in all (checkpoint, output, and listings, which name no key)."""
    requests = pipeline.server.requests.all()
    commit_keys = {f"{pipeline.checkpoint_key}/commits/{n}" for n in (0, batches - 1)}
    marks = [i for i, r in enumerate(requests) if r.key in commit_keys and r.status == 200
             and r.operation in ("PutObject", "CopyObject")]
    window = requests[marks[0] + 1 : marks[-1] + 1]
    checkpoint = Counter(r.operation for r in window if r.key.startswith(pipeline.checkpoint_key + "/"))
    everything = Counter(r.operation for r in window)
    span = batches - 1
    return ({op: round(n / span, 2) for op, n in sorted(checkpoint.items())},
            {op: round(n / span, 2) for op, n in sorted(everything.items())})


# Spark's default manager: a comparison (`make comparisons`), left out of `make test` for its budget.
@pytest.mark.parametrize("manager", ["shim", DEFAULT_VS_SHIM])
def test_query_checkpoints_without_copy_or_temp_keys(
    pipeline: Pipeline, spark: Any, manager: str, record_property: Any
) -> None:
    batches = 4
    for b in range(batches):
        pipeline.add_input(b, list(range(b * 10, b * 10 + 10)))
    job = pipeline.start(manager=manager)
    outcome = job.wait()
    assert (outcome["status"], outcome["batches"]) == ("ok", batches), job.tail()

    keys = pipeline.checkpoint_keys()
    root = pipeline.checkpoint_key
    for n in range(batches):
        for log in ("offsets", "commits", "sources/0"):
            assert f"{root}/{log}/{n}" in keys, (log, n, keys)
    assert f"{root}/metadata" in keys
    assert read_ids(spark, pipeline.output) == list(range(batches * 10))

    checkpoint_requests = pipeline.requests(root)
    copies = [r for r in checkpoint_requests if r.operation in ("CopyObject", "UploadPartCopy")]
    temp_keys = sorted({r.key for r in checkpoint_requests if r.key.rsplit("/", 1)[-1].startswith(".")})
    per_batch_checkpoint, per_batch_all = _per_batch(pipeline, batches)
    record_property("checkpoint_requests_per_batch", per_batch_checkpoint)
    record_property("all_requests_per_batch", per_batch_all)
    print(f"{manager}: requests per batch on checkpoint keys {per_batch_checkpoint}, in all {per_batch_all}")
    if manager == "shim":
        assert copies == [], copies
        assert temp_keys == [], temp_keys
        # A checkpoint file costs one PutObject: the offsets, commits and sources entries of each batch.
        assert per_batch_checkpoint.get("PutObject") == 3, per_batch_checkpoint
        # The store check (docs/spark.md): 5 requests once per driver before the first put-if-absent, on a canary
        # whose key is headed while missing, then read back (what the store keeps) and deleted after; no other
        # delete. (local[2]: driver and executors share the JVM's one check.)
        canaries = [r for r in checkpoint_requests if "/_checkpointfs-store-check-" in r.key]
        assert [(r.operation, r.status) for r in canaries] == [("HeadObject", 404), ("PutObject", 200),
                                                               ("HeadObject", 200), ("PutObject", 412),
                                                               ("DeleteObject", 204)], canaries
        assert len({r.key for r in canaries}) == 1 and not [k for k in keys if "_checkpointfs-store-check-" in k]
        assert [r for r in checkpoint_requests if r.operation == "DeleteObject" and r not in canaries] == []
    else:
        # Spark's default manager renames a temp file onto every checkpoint file: COPY + DELETE on S3.
        assert copies and temp_keys, (copies, temp_keys)


@pytest.mark.parametrize("manager", [pytest.param("shim", marks=getattr(pytest.mark, EVERY_LINE)),
                                     DEFAULT_VS_SHIM])
def test_rocksdb_uploads_each_sst_file_with_one_put(pipeline: Pipeline, spark: Any, manager: str) -> None:
    """RocksDB uploads its SST files with ``FileSystem.copyFromLocalFile``, not the manager. With the shim,
    ``configure()`` selects ``CheckpointS3AFileSystem``: each SST file costs one PutObject and nothing else, from the
    query's first batch on. Spark's default manager keeps S3A's own copy, which probes the destination first."""
    batches = 4
    for b in range(batches):
        pipeline.add_input(b, list(range(b * 10, b * 10 + 10)))
    job = pipeline.start("--state-store", "rocksdb", *RECORD_ARGS, manager=manager, query="dedup")
    outcome = job.wait()
    assert (outcome["status"], outcome["batches"]) == ("ok", batches), job.tail()
    assert read_ids(spark, pipeline.output) == list(range(batches * 10))
    records = exists_records(job.log_path)
    assert_no_directory_probed_as_file(records, pipeline.server)  # the probe rule held
    assert_next_batches_were_absent(records, pipeline.server.requests.all())
    if manager == "shim":  # batches 1 to 3: offsets and commits answered from what the shim wrote
        assert "next" in {r.probe for r in records}, probe_counts(records)

    sst_keys = [k for k in pipeline.checkpoint_keys() if ROCKSDB_SST.search(k)]
    assert sst_keys, pipeline.checkpoint_keys()
    on_ssts = Counter(r.operation for r in pipeline.requests(pipeline.checkpoint_key)
                      if ROCKSDB_SST.search(r.key.rstrip("/")))
    print(f"{manager}: requests on {len(sst_keys)} SST files: {dict(on_ssts)}")
    if manager == "shim":
        assert on_ssts == {"PutObject": len(sst_keys)}, on_ssts
    else:
        assert on_ssts["PutObject"] == len(sst_keys) and on_ssts["HeadObject"] >= len(sst_keys), on_ssts


@pytest.mark.parametrize(("state_store", "every_kill", "store_profile"), [
    pytest.param("hdfs", False, None, marks=getattr(pytest.mark, EVERY_LINE), id="hdfs"),
    # the directory-bucket profiles on the main line (Spark 4.3: Hadoop 3.4.2, AWS SDK v2)
    *(pytest.param("hdfs", False, profile, marks=pytest.mark.directory_bucket, id=f"hdfs-{profile.replace(':', '-')}")
      for profile in DIRECTORY_BUCKET_PROFILES),
    pytest.param("hdfs", True, None, marks=pytest.mark.extended(covered_by="-three-kills] -> ]"),
                 id="hdfs-three-kills"),
    pytest.param("rocksdb", True, None, marks=pytest.mark.extended(covered_by="[rocksdb-three-kills] -> [hdfs]"),
                 id="rocksdb-three-kills")], indirect=["store_profile"])
def test_kill_9_at_several_points_then_exactly_once(pipeline: Pipeline, spark: Any, state_store: str,
                                                   every_kill: bool, store_profile: str | None) -> None:
    """A stateful query (dropDuplicates: state store files written through the manager) is SIGKILLed at different
    points of a micro-batch and restarted on the same checkpoint each time; with Spark's default (HDFS-backed) state
    store and with RocksDB. On every line (`make test`: the main line in `make unit`, the others in `make lines`) the
    kill in the middle of a batch's sink write, whose restart rewrites the most; the three kills (also after a batch
    was planned and right after a commit) in `make extended`, for make test's budget: there, the query shapes kill at
    a planned batch (offsets/1) and in a state upload, the cluster test kills executors, a worker and the driver.
    On S3 Standard's rules, and on the main line on the directory-bucket profile (S3 Express One Zone's: unordered
    listings, `/`-only prefixes, random ETags, no Content-MD5, empty parents removed), with user metadata kept and
    dropped: where it is dropped, the checksum the shim sent with each small write is what the store keeps of it."""
    files = 8
    expected: set[int] = set()
    for b in range(files):
        ids = [*range(b * 5, b * 5 + 5), b * 5 - 1, 0]  # duplicates of earlier batches
        ids = [i for i in ids if i >= 0]
        pipeline.add_input(b, ids)
        expected.update(ids)
    cp = pipeline.checkpoint_key

    stateful = ("--state-store", state_store, *RECORD_ARGS)  # the shim's exists() answers, checked at the end
    if store_profile is not None:
        # as on a real directory bucket (docs/contract.md): AWS SDK v1 (Spark 3.5's Hadoop 3.3.4) sends Content-MD5
        # with S3A's file uploads and checks each PutObject's ETag against its MD5, unless told not to (a no-op for
        # SDK v2); local[2]: the executors are the driver's JVM
        stateful = (*stateful, "--conf", f"spark.driver.extraJavaOptions=-D{SDK_V1_NO_MD5}=true")
    # 1: batch 1 planned (offsets written), not committed.
    if every_kill:
        job = pipeline.start(*stateful, query="dedup")
        pipeline.kill_when(job, lambda r: _is_put(r, f"{cp}/offsets/1"))
    # 2: in the middle of the sink's write of a later batch (data files are up, the sink log entry not yet).
    job = pipeline.start(*stateful, query="dedup")
    sink_puts = [0]

    def third_data_file(r: Request) -> bool:
        if r.operation == "PutObject" and r.key.startswith(pipeline.output_key + "/part-"):
            sink_puts[0] += 1
        return sink_puts[0] == 3

    pipeline.kill_when(job, third_data_file)
    # 3: right after a commit: the batch is done, the next one not started.
    if every_kill:
        job = pipeline.start(*stateful, query="dedup")
        pipeline.kill_when(job, lambda r: _is_put(r, f"{cp}/commits/5"))
    # 4: run to the end.
    job = pipeline.start(*stateful, query="dedup")
    outcome = job.wait()
    assert outcome["status"] == "ok", job.tail()
    if os.environ.get(INSTALLED_ENV) == "1":  # a line's venv with the wheel: the driver ran the wheel, not the checkout
        assert Path(outcome["checkpointfs"]) != REPO / "checkpointfs", outcome

    ids = read_ids(spark, pipeline.output)
    assert ids == sorted(expected), Counter(ids).most_common(3)
    records = exists_records(*(j.log_path for j in pipeline.jobs))
    assert records, job.tail()
    assert_no_directory_probed_as_file(records, pipeline.server)  # across the kills and restarts too
    assert_next_batches_were_absent(records, pipeline.server.requests.all())
    keys = pipeline.checkpoint_keys()
    state_file = ".delta" if state_store == "hdfs" else ".zip"  # written through the manager (createAtomic)
    assert any(k.startswith(f"{cp}/state/0/") and k.endswith(state_file) for k in keys), keys
    assert f"{cp}/commits/{files - 1}" in keys
    checkpoint_requests = pipeline.requests(cp)
    assert not [r for r in checkpoint_requests if r.operation == "CopyObject"]
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".") or k.endswith(".tmp")], keys
    # Written directly: every checkpoint and state file the manager wrote carries a write id.
    client = pipeline.server.client(admin=True)
    through_manager = [k for k in keys if not ROCKSDB_SST.search(k)]
    assert any("/state/" in k for k in through_manager), through_manager
    heads = {k: client.head_object(Bucket=pipeline.server.buckets[0], Key=k, ChecksumMode="ENABLED")
             for k in through_manager}
    if store_profile is not None and store_profile.endswith(":no-metadata"):
        # no write id kept: every small file the manager wrote carries the SHA-256 the shim sent with it
        without_sum = [k for k, h in heads.items() if not h.get("ChecksumSHA256")]
        assert without_sum == [], without_sum
        assert not [k for k, h in heads.items() if WRITE_ID_KEY in h["Metadata"]]
    else:
        without_id = [k for k, h in heads.items() if WRITE_ID_KEY not in h["Metadata"]]
        assert without_id == [], without_id


# the cluster runs the same two drivers (tests/spark_cluster/test_cluster.py)
@pytest.mark.extended(
    covered_by="tests/spark_cluster/test_cluster.py::test_two_queries_on_one_checkpoint_exactly_one_proceeds")
def test_two_queries_on_one_checkpoint(pipeline: Pipeline, spark: Any) -> None:
    """Two drivers on one checkpoint: the conditional creates let one win each checkpoint file, the other query
    fails with Spark's concurrent-update error, the checkpoint stays usable and the output is exactly-once."""
    files = 10
    for b in range(files):
        pipeline.add_input(b, list(range(b * 3, b * 3 + 3)))
    first = pipeline.start()
    second = pipeline.start()
    outcomes = [first.wait(), second.wait()]
    failed = [o for o in outcomes if o["status"] == "failed"]
    assert len(failed) >= 1, (outcomes, first.tail(), second.tail())
    assert all(CONCURRENT_ERROR.search(o["error"]) for o in failed), failed

    # The checkpoint is readable and consistent: a new run picks up where the survivor stopped, with new input.
    pipeline.add_input(files, [1000, 1001])
    third = pipeline.start()
    assert third.wait()["status"] == "ok", third.tail()
    assert read_ids(spark, pipeline.output) == sorted([*range(files * 3), 1000, 1001])


def test_store_without_conditional_writes_fails_at_start(pipeline: Pipeline) -> None:
    """Bad input: S3A with conditional create disabled. The query fails at start, with Spark's error naming the
    setting to fix, and no checkpoint file is written."""
    pipeline.add_input(0, [1, 2, 3])
    job = pipeline.start(s3_overrides={"fs.s3a.create.conditional.enabled": "false"})
    outcome = job.wait()
    assert outcome["status"] == "failed", job.tail()
    assert "CANNOT_LOAD_CHECKPOINT_FILE_MANAGER" in outcome["error"]
    assert "fs.s3a.create.conditional.enabled=true" in outcome["error"]
    assert pipeline.checkpoint_keys() == []
