"""Least privilege on a real MinIO (docs/operations.md, "Permissions"): DirectWriteManager with credentials whose
session policy lacks what one feature needs. Each either works, at the cost the docs state, or fails at its first
write with an error naming the missing permission and the bucket; never with a wrong conflict.

MinIO answers a HEAD of a missing key 404 even without s3:ListBucket (S3 answers 403); the probe's 403 handling is
covered by tests/s3/test_least_privilege.py on the embedded S3 (its ``denied`` option)."""

from __future__ import annotations

import logging
import uuid

import pytest

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.errors import AccessDeniedError, FileAlreadyExistsError
from checkpointfs.store.check import forget_verdicts
from harness.servers.least_privilege import POLICIES, assume
from harness.servers.minio import MIN_PART_SIZE, MinioServer

pytestmark = pytest.mark.minio

FAST = RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.05, max_elapsed_s=5)


def _manager(server: MinioServer, policy: str) -> DirectWriteManager:
    forget_verdicts()  # each policy's manager runs its own store check
    creds = assume(server, POLICIES[policy])
    return DirectWriteManager(**creds.manager_options(server.endpoint_url, server.region), part_size=MIN_PART_SIZE,
                              retry=FAST)


def _small_checkpoint(m: DirectWriteManager, base: str) -> None:
    """What a query's first batch does: write offsets/0, read it back, probe the next, list, write it again."""
    with m.create_atomic(f"{base}/offsets/0") as out:
        out.write(b"v1\n{}")
    assert m.open(f"{base}/offsets/0").read() == b"v1\n{}"
    assert not m.exists(f"{base}/offsets/1")
    assert [s.path.rsplit("/", 1)[-1] for s in m.list(f"{base}/offsets")] == ["0"]
    with pytest.raises(FileAlreadyExistsError):
        with m.create_atomic(f"{base}/offsets/0") as out:
            out.write(b"v1\n{\"other\": 1}")


def test_full_policy_writes_a_checkpoint(minio_server: MinioServer) -> None:
    m = _manager(minio_server, "full")
    base = minio_server.uri(f"lp-full-{uuid.uuid4().hex[:8]}")
    _small_checkpoint(m, base)
    m.delete(f"{base}/offsets/0")
    assert not m.exists(f"{base}/offsets/0")


def test_without_list_bucket_the_first_listing_names_it(minio_server: MinioServer) -> None:
    m = _manager(minio_server, "no-list")
    prefix = f"lp-nolist-{uuid.uuid4().hex[:8]}"
    base = minio_server.uri(prefix)
    with pytest.raises(AccessDeniedError) as raised:
        m.list(f"{base}/offsets")  # Spark lists offsets/ and commits/ before its first batch
    text = str(raised.value)
    assert "s3:ListBucket" in text and f"'{minio_server.buckets[0]}'" in text
    assert minio_server.keys(prefix + "/") == []


def test_without_delete_the_first_write_fails_naming_it(minio_server: MinioServer) -> None:
    m = _manager(minio_server, "no-delete")
    prefix = f"lp-nodelete-{uuid.uuid4().hex[:8]}"
    path = minio_server.uri(f"{prefix}/offsets/0")
    with pytest.raises(AccessDeniedError) as raised:
        with m.create_atomic(path) as out:
            out.write(b"v1\n{}")
    text = str(raised.value)
    assert "s3:DeleteObject" in text and f"'{minio_server.buckets[0]}'" in text and path in text
    assert not isinstance(raised.value, FileAlreadyExistsError)
    # nothing of the checkpoint was written: only the store check's canary, which could not be deleted
    assert [k for k in minio_server.keys(prefix + "/") if "/offsets/0" in k] == []


def test_without_upload_clean_up_writes_work_and_warn(minio_server: MinioServer,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    m = _manager(minio_server, "no-upload-cleanup")
    prefix = f"lp-nocleanup-{uuid.uuid4().hex[:8]}"
    base = minio_server.uri(prefix)
    _small_checkpoint(m, base)
    big = b"s" * (MIN_PART_SIZE + 1024)
    with caplog.at_level(logging.WARNING, logger="checkpointfs.store.check"):
        with m.create_atomic(f"{base}/state/0/1.snapshot") as out:
            out.write(big)
    assert m.open(f"{base}/state/0/1.snapshot").read() == big
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "s3:AbortMultipartUpload" in warned or "s3:ListBucketMultipartUploads" in warned
