"""The shim in a real query (the dedup job, HDFS-backed state) on MinIO with credentials whose session policy lacks
what one feature needs (harness/servers/least_privilege.py; docs/operations.md, "Permissions"): without
s3:DeleteObject the query fails at start naming it and the bucket, with no checkpoint file written; without the
upload clean-up (s3:AbortMultipartUpload, s3:ListBucketMultipartUploads) it runs exactly-once (its files are all
below the part size, so the multipart check, whose clean-up warns, never runs: tests/backends/
test_least_privilege_minio.py shows the warning); without s3:ListBucket it fails at start naming it (the file sink
and the checkpoint's logs are probed and listed before the first batch)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from checkpointfs import DirectWriteManager
from checkpointfs.sink import committed_files
from checkpointfs.store.check import CANARY_PREFIX
from harness.servers.least_privilege import POLICIES, assume
from harness.servers.minio import MinioServer

from .e2e import TIMEOUT_S, add_inputs, last_commit, start
from .stores import minio_s3a_conf

pytestmark = [pytest.mark.minio, pytest.mark.spark]


def _run(minio: MinioServer, tmp_path: Path, policy: str) -> tuple[dict[str, object], str, str, set[int], str]:
    """One uninterrupted run under ``policy``: its outcome, log, checkpoint key, expected ids and output key."""
    prefix = f"lp-spark-{policy}-{uuid.uuid4().hex[:8]}"
    creds = assume(minio, POLICIES[policy])
    expected = add_inputs(tmp_path / "input", 3)
    job = start(tmp_path / "job.log", input_dir=tmp_path / "input", output=minio.uri(f"{prefix}/output", scheme="s3a"),
                checkpoint=minio.uri(f"{prefix}/checkpoint", scheme="s3a"), state_store="hdfs",
                s3=minio_s3a_conf(minio, **creds.hadoop_conf()))
    try:
        outcome = job.wait(timeout=TIMEOUT_S)
    finally:
        job.kill()
    return outcome, (tmp_path / "job.log").read_text(errors="replace"), f"{prefix}/checkpoint", expected, \
        f"{prefix}/output"


def _checkpoint_files(minio: MinioServer, cp_key: str) -> list[str]:
    return [k for k in minio.keys(cp_key + "/") if CANARY_PREFIX not in k]


def test_without_delete_the_query_fails_at_start_naming_it(minio_server: MinioServer, tmp_path: Path) -> None:
    outcome, log, cp_key, _, _ = _run(minio_server, tmp_path, "no-delete")
    assert outcome["status"] != "ok", log[-4000:]
    bucket = f"'{minio_server.buckets[0]}'"
    refused = [line for line in log.splitlines() if "s3:DeleteObject" in line and bucket in line]
    assert refused, log[-4000:]
    assert _checkpoint_files(minio_server, cp_key) == []  # not even the metadata file


def test_without_list_bucket_the_query_fails_at_start_naming_it(minio_server: MinioServer, tmp_path: Path) -> None:
    outcome, log, cp_key, _, _ = _run(minio_server, tmp_path, "no-list")
    assert outcome["status"] != "ok", log[-4000:]
    assert [line for line in log.splitlines() if "s3:ListBucket" in line], log[-4000:]
    assert [k for k in _checkpoint_files(minio_server, cp_key) if "/offsets/" in k or "/commits/" in k] == []


def test_without_upload_clean_up_the_query_runs_exactly_once(minio_server: MinioServer, tmp_path: Path) -> None:
    outcome, log, cp_key, expected, out_key = _run(minio_server, tmp_path, "no-upload-cleanup")
    assert outcome["status"] == "ok", log[-4000:]
    last_commit(minio_server.keys(cp_key + "/"), cp_key)
    with DirectWriteManager(**minio_server.manager_options()) as manager:
        ids = [int(json.loads(line)["id"])
               for path in committed_files(minio_server.uri(out_key), manager=manager)
               for line in manager.open(path).read().decode().splitlines() if line]
    assert sorted(ids) == sorted(expected)
