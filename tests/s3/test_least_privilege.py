"""Least privilege on the embedded S3, for what MinIO does not show (docs/operations.md, "Permissions"): without
s3:ListBucket, S3 answers a HEAD or GET of a missing key 403, not 404 (the embedded S3's ``denied`` option). The
store check heads its canary's key before creating it and fails at start naming s3:ListBucket and the bucket; with
the check off, a probe and the read-back of a lost answer fail naming it, never as a missing file or a conflict."""

from __future__ import annotations

import uuid

import pytest

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.errors import AccessDeniedError, CheckpointFsError, FileAlreadyExistsError
from checkpointfs.store.check import PUT_CHECK_REQUESTS, forget_verdicts
from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.faults import Fault, FaultPlan

FAST = RetryPolicy(max_attempts=2, initial_backoff_s=0.01, max_backoff_s=0.05, max_elapsed_s=5)


def _manager(s3: EmbeddedS3, *, store_check: bool = True) -> DirectWriteManager:
    forget_verdicts()
    return DirectWriteManager(**s3.manager_options(), retry=FAST, store_check=store_check)


def _names_list_bucket(error: BaseException, s3: EmbeddedS3) -> None:
    text = str(error)
    assert "s3:ListBucket" in text and f"'{s3.buckets[0]}'" in text, text
    assert not isinstance(error, FileAlreadyExistsError)


def test_the_store_check_refuses_at_start_without_list_bucket(s3: EmbeddedS3) -> None:
    s3.denied = ["s3:ListBucket"]
    m = _manager(s3)
    prefix = f"lp-{uuid.uuid4().hex[:8]}"
    path = s3.uri(f"{prefix}/offsets/0")
    with pytest.raises(AccessDeniedError) as raised:
        with m.create_atomic(path) as out:
            out.write(b"v1\n{}")
    _names_list_bucket(raised.value, s3)
    assert path in str(raised.value)
    assert s3.keys(prefix + "/") == []  # nothing written, not even the canary
    assert [(r.operation, r.status) for r in s3.requests.all()] == [("HeadObject", 403)]


def test_with_list_bucket_the_check_heads_the_missing_key_first(s3: EmbeddedS3) -> None:
    m = _manager(s3)
    base = s3.uri(f"lp-{uuid.uuid4().hex[:8]}")
    with m.create_atomic(f"{base}/offsets/0") as out:
        out.write(b"v1\n{}")
    operations = [(r.operation, r.status) for r in s3.requests.all()]
    assert operations[:2] == [("HeadObject", 404), ("PutObject", 200)]
    assert len(operations) == PUT_CHECK_REQUESTS + 1  # the check, then the file's one PutObject


def test_with_the_check_off_a_probe_names_list_bucket(s3: EmbeddedS3) -> None:
    m = _manager(s3, store_check=False)
    base = s3.uri(f"lp-{uuid.uuid4().hex[:8]}")
    with m.create_atomic(f"{base}/metadata") as out:
        out.write(b"{}")
    s3.denied = ["s3:ListBucket"]
    assert m.exists(f"{base}/metadata")  # an existing key is read as before
    with pytest.raises(AccessDeniedError) as raised:
        m.exists(f"{base}/offsets/7")  # a missing one: 403, not "absent"
    _names_list_bucket(raised.value, s3)


def test_with_the_check_off_a_lost_answer_is_not_read_as_missing(s3: EmbeddedS3) -> None:
    """Every attempt of the PutObject is dropped unapplied; the read-back is refused 403: the write fails, naming
    s3:ListBucket, neither as a success nor as a conflict, and nothing was written."""
    m = _manager(s3, store_check=False)
    prefix = f"lp-{uuid.uuid4().hex[:8]}"
    path = s3.uri(f"{prefix}/offsets/0")
    s3.denied = ["s3:ListBucket"]
    s3.faults = FaultPlan([Fault("reset", operations=frozenset({"PutObject"}))])
    with pytest.raises(CheckpointFsError) as raised:
        with m.create_atomic(path) as out:
            out.write(b"v1\n{}")
    _names_list_bucket(raised.value, s3)
    assert s3.keys(prefix + "/") == []
    assert ("HeadObject", 403) in [(r.operation, r.status) for r in s3.requests.all()]
