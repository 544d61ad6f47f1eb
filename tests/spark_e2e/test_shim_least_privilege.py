"""The shim without s3:ListBucket, on the embedded S3's ``denied`` option (S3 answers a HEAD or GET of a missing key
403, which MinIO does not show): the store check fails at start naming s3:ListBucket and the bucket, before anything
is written; with the check off, a probe and the read-back of a lost answer fail naming it, never as a missing file
or a conflict. The Python manager's twin: tests/s3/test_least_privilege.py."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

pytest.importorskip("py4j", reason="drives the JVM shim through py4j, which pyspark brings (extra 'spark')")

from checkpointfs.errors import AccessDeniedError, CheckpointFsError, FileAlreadyExistsError
from checkpointfs.spark.jvm_manager import JvmCheckpointFileManager
from checkpointfs.testing import EmbeddedS3, Fault

pytestmark = pytest.mark.spark

FEW_RETRIES = {"fs.s3a.impl.disable.cache": "true", "fs.s3a.attempts.maximum": "1", "fs.s3a.retry.limit": "2",
               "fs.s3a.retry.interval": "10ms"}
CHECK_OFF = {"checkpointfs.store.check": "false"}


def _manager(spark: Any, s3: EmbeddedS3, prefix: str, **conf: str) -> JvmCheckpointFileManager:
    return JvmCheckpointFileManager(spark, s3.uri(prefix, scheme="s3a"), hadoop_conf={**FEW_RETRIES, **conf})


def _write(manager: JvmCheckpointFileManager, path: str, data: bytes) -> None:
    out = manager.create_atomic(path)
    out.write(data)
    out.close()


def _names_list_bucket(error: BaseException, s3: EmbeddedS3) -> None:
    text = str(error)
    assert "s3:ListBucket" in text and f"'{s3.buckets[0]}'" in text, text
    assert not isinstance(error, FileAlreadyExistsError)


def test_the_store_check_refuses_at_start_without_list_bucket(spark: Any, embedded_s3: EmbeddedS3) -> None:
    prefix = f"shim-lp/{uuid.uuid4().hex[:8]}"
    manager = _manager(spark, embedded_s3, prefix)
    embedded_s3.denied = ["s3:ListBucket"]
    embedded_s3.requests.clear()
    with pytest.raises(AccessDeniedError) as raised:
        _write(manager, manager.root + "/offsets/0", b"v1\n{}")
    _names_list_bucket(raised.value, embedded_s3)
    assert "the store check's head of its canary key" in str(raised.value)
    assert embedded_s3.keys(prefix + "/") == []  # nothing written, not even the canary
    sent = [(r.operation, r.status) for r in embedded_s3.requests.all()]
    assert ("HeadObject", 403) in sent and not any(op == "PutObject" for op, _ in sent), sent


def test_with_the_check_off_a_probe_names_list_bucket(spark: Any, embedded_s3: EmbeddedS3) -> None:
    prefix = f"shim-lp/{uuid.uuid4().hex[:8]}"
    manager = _manager(spark, embedded_s3, prefix, **CHECK_OFF)
    _write(manager, manager.root + "/metadata", b"{}")
    embedded_s3.denied = ["s3:ListBucket"]
    other = _manager(spark, embedded_s3, prefix, **CHECK_OFF)  # knows nothing this one wrote: it probes
    assert other.exists(other.root + "/metadata")
    with pytest.raises(AccessDeniedError) as raised:
        other.exists(other.root + "/offsets/7")  # a missing one: 403, not "absent"
    _names_list_bucket(raised.value, embedded_s3)


def test_with_the_check_off_a_lost_answer_is_not_read_as_missing(spark: Any, embedded_s3: EmbeddedS3) -> None:
    """Every attempt of the PutObject is dropped unapplied; the read-back is refused 403: the write fails, neither
    as a success nor as a conflict, naming s3:ListBucket, and nothing was written."""
    prefix = f"shim-lp/{uuid.uuid4().hex[:8]}"
    manager = _manager(spark, embedded_s3, prefix, **CHECK_OFF)
    embedded_s3.denied = ["s3:ListBucket"]
    embedded_s3.faults.add(Fault("reset", operations=frozenset({"PutObject"})))
    with pytest.raises(CheckpointFsError) as raised:
        _write(manager, manager.root + "/offsets/0", b"v1\n{}")
    _names_list_bucket(raised.value, embedded_s3)
    assert embedded_s3.keys(prefix + "/") == []
    assert ("HeadObject", 403) in [(r.operation, r.status) for r in embedded_s3.requests.all()]
