"""EMR's ``s3://`` (docs/spark.md, "EMR"): a checkpoint on ``s3://`` whose file system is not S3A, as EMRFS serves it
on EMR, is written directly through the shim's own S3AFileSystem, and delegated to Spark's own manager as before
with ``checkpointfs.s3.own.s3a=false``.

EMRFS itself is not available outside EMR; its stand-in is ``io.checkpointfs.harness.NotS3AOnS3FileSystem``
(harness/jvm/, compiled at test time against the running pyspark by :func:`harness.jvm_shapes.compiled_jar`): a
FilterFileSystem over S3A for the same MinIO bucket, so its class is not S3A and what it reads is what the shim
wrote. The drivers run a stateful (dedup) query on MinIO behind the recording proxy (``minio_pipeline``), whose
request log counts the requests per checkpoint key. Marked ``every_line``, for Spark 3.5 (EMR 7.x) and 4.0 (EMR's
first Spark 4 release) in their own venvs: ``make lines TEST_LINES="3.5 4.0"
LINE_TESTS=tests/backends/test_minio_emr_s3.py`` (the gate's per-line selection, tests/conformance and
tests/spark_e2e, leaves it out); on other lines it skips, saying why.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.store.check import CANARY_PREFIX
from harness.driver import Job, start_job
from harness.job import SHIM_INFO_FLAG
from harness.jvm_shapes import SOURCE_ROOT, compiled_jar
from tests.conftest import EVERY_LINE
from tests.spark_e2e.conftest import Pipeline, committed_ids

from .e2e import TIMEOUT_S, add_inputs

EMR_LINES = ((3, 5), (4, 0))
"""The Spark lines of EMR's releases that can serve s3:// with EMRFS (EMR 7.x before 7.10: 3.5; emr-spark-8.0.0 with
fs.s3.impl set back to EMRFS: 4.0). The shim's code for s3:// is the same on every line of a jar group."""


def _emr_line() -> bool:
    try:
        import pyspark
    except ImportError:  # make check's selection collects without pyspark (and deselects these by their markers)
        return False
    major, minor = pyspark.__version__.split(".")[:2]
    return (int(major), int(minor)) in EMR_LINES


pytestmark = [pytest.mark.minio, pytest.mark.spark, getattr(pytest.mark, EVERY_LINE),
              pytest.mark.skipif(not _emr_line(), reason="EMRFS serves s3:// on EMR's Spark 3.5 and 4.0 lines only; "
                                 "run `make lines TEST_LINES=\"3.5 4.0\" "
                                 "LINE_TESTS=tests/backends/test_minio_emr_s3.py` "
                                 "(the shim's s3:// code is shared per jar group)")]

STAND_IN = "io.checkpointfs.harness.NotS3AOnS3FileSystem"
STAND_IN_SOURCE = SOURCE_ROOT / "io" / "checkpointfs" / "harness" / "NotS3AOnS3FileSystem.java"
OWN_S3A_LINE = "checkpoint files are written, read and listed through checkpointfs's own S3AFileSystem for s3://"
FILES = 5


def _start(pipeline: Pipeline, *conf: str) -> Job:
    """A dedup driver whose checkpoint is ``s3://`` on the stand-in file system (the output stays on s3a://)."""
    extra = ["--extra-jars", str(compiled_jar([STAND_IN_SOURCE], "not-s3a-on-s3.jar")), SHIM_INFO_FLAG,
             "--conf", f"spark.hadoop.fs.s3.impl={STAND_IN}"]
    for setting in conf:
        extra += ["--conf", setting]
    job = start_job(pipeline.server, pipeline.tmp_path / f"job-{len(pipeline.jobs)}.log",
                    input_dir=pipeline.input_dir, output=pipeline.output,
                    checkpoint=pipeline.server.uri(pipeline.checkpoint_key, scheme="s3"), query="dedup", extra=extra)
    pipeline.jobs.append(job)
    return job


def _lines(job: Job) -> list[str]:
    return job.log_path.read_text(errors="replace").splitlines()


def test_s3_behind_a_non_s3a_file_system_is_written_directly_and_exactly_once_across_a_kill(
        minio_pipeline: Pipeline) -> None:
    """The driver is SIGKILLed once MinIO has answered ``PutObject <checkpoint>/offsets/2``, then restarted on the
    same ``s3://`` path: every id once in the output; every offsets, commits and state file carries the shim's write
    id and was sent as one PutObject; no copy, no temporary key; the start line says the own S3A writes it."""
    expected = add_inputs(minio_pipeline.input_dir, FILES)
    cp = minio_pipeline.checkpoint_key
    offsets_2 = f"{cp}/offsets/2"
    job = _start(minio_pipeline)
    minio_pipeline.kill_when(job, lambda r: r.operation == "PutObject" and r.key == offsets_2 and r.status == 200,
                             timeout=TIMEOUT_S)
    assert job.killed, job.tail()
    restarted = _start(minio_pipeline)
    outcome = restarted.wait(timeout=TIMEOUT_S)
    assert outcome["status"] == "ok", restarted.tail()
    assert committed_ids(minio_pipeline) == sorted(expected)  # nothing lost, nothing duplicated

    keys = minio_pipeline.checkpoint_keys()
    written = [k for k in keys if k.rsplit("/", 2)[-2] in ("offsets", "commits") or
               (k.startswith(f"{cp}/state/") and k.endswith(".delta")) or k == f"{cp}/metadata"]
    assert f"{cp}/commits/{FILES - 1}" in written and any(k.endswith(".delta") for k in written), keys
    admin = minio_pipeline.server.client(admin=True)
    bucket = minio_pipeline.server.buckets[0]
    for key in written:
        assert WRITE_ID_KEY in admin.head_object(Bucket=bucket, Key=key)["Metadata"], key
    requests = minio_pipeline.requests(cp)
    everything = minio_pipeline.server.requests.all()
    for run in (everything[job.first_request:restarted.first_request], everything[restarted.first_request:]):
        puts = Counter(r.key for r in run if r.operation == "PutObject" and r.key.startswith(cp + "/") and
                       CANARY_PREFIX not in r.key)  # the store check puts its canary twice, by design
        assert [key for key, count in puts.items() if count > 1] == []  # one request per small file, in each run
    puts = Counter(r.key for r in requests if r.operation == "PutObject")
    assert [key for key in written if puts[key] == 0] == []
    assert [key for key in written if "/state/" not in key and puts[key] != 1] == []  # logs: written once in all
    assert not [r for r in requests if r.operation in ("CopyObject", "UploadPartCopy", "CreateMultipartUpload")]
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".")], keys
    for driver in (job, restarted):
        said = [line for line in _lines(driver) if OWN_S3A_LINE in line and STAND_IN in line]
        assert said, driver.tail(80)
        assert not [line for line in _lines(driver) if "delegating to Spark" in line and "s3://" in line], \
            driver.tail(80)


def test_s3_behind_a_non_s3a_file_system_is_delegated_with_the_opt_out(minio_pipeline: Pipeline) -> None:
    """``checkpointfs.s3.own.s3a=false``: the ``s3://`` checkpoint goes through Spark's own manager on the stand-in,
    as before the own S3A (no write id, Spark's rename: a copy per file), the output still every id once, and the
    start line says it delegates and why."""
    expected = add_inputs(minio_pipeline.input_dir, 3)
    cp = minio_pipeline.checkpoint_key
    job = _start(minio_pipeline, "spark.hadoop.checkpointfs.s3.own.s3a=false")
    outcome = job.wait(timeout=TIMEOUT_S)
    assert outcome["status"] == "ok", job.tail()
    assert committed_ids(minio_pipeline) == sorted(expected)
    admin = minio_pipeline.server.client(admin=True)
    commit = f"{cp}/commits/2"
    assert commit in minio_pipeline.checkpoint_keys()
    assert WRITE_ID_KEY not in admin.head_object(Bucket=minio_pipeline.server.buckets[0], Key=commit)["Metadata"]
    assert [r for r in minio_pipeline.requests(cp) if r.operation == "CopyObject" and r.key == commit]  # rename
    delegated = [line for line in _lines(job) if "is not written directly by checkpointfs" in line and
                 "checkpointfs.s3.own.s3a=false" in line and STAND_IN in line]
    assert delegated, job.tail(80)
    assert not [line for line in _lines(job) if OWN_S3A_LINE in line], job.tail(80)


def test_the_stand_in_is_not_s3a() -> None:
    """The stand-in must not be S3A to any check by class: not S3AFileSystem, nor a subclass of it."""
    assert "extends FilterFileSystem" in STAND_IN_SOURCE.read_text(encoding="utf-8")
    assert Path(compiled_jar([STAND_IN_SOURCE], "not-s3a-on-s3.jar")).is_file()
