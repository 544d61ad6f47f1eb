"""Bad input and faults on a real MinIO: wrong credentials (MinIO verifies signatures, the embedded S3 does not),
a missing bucket, server-side encryption the server cannot do, and the server stopped in the middle of a write.
Each is a clear error naming the path, nothing partial is visible, and no secret appears in any message."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("py4j", reason="drives the JVM shim through py4j, which pyspark brings (extra 'spark')")

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.errors import AccessDeniedError, BucketNotFoundError, StoreError, StoreUnavailableError
from checkpointfs.sink import FileSink
from checkpointfs.spark.jvm_manager import JvmCheckpointFileManager
from harness.servers.minio import MIN_PART_SIZE, MinioServer

from .stores import minio_s3a_conf

pytestmark = pytest.mark.minio

FAST = RetryPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.05, max_elapsed_s=5)
FEW_RETRIES = {"fs.s3a.impl.disable.cache": "true", "fs.s3a.attempts.maximum": "1", "fs.s3a.retry.limit": "2",
               "fs.s3a.retry.interval": "10ms", "fs.s3a.connection.establish.timeout": "2s"}


def _full_text(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


@pytest.mark.parametrize("who", ["wrong-secret", "unknown-key"])
def test_wrong_credentials_are_refused_without_the_secret(minio_server: MinioServer, who: str) -> None:
    secret = "not-the-right-secret-0123456789"
    key = minio_server.access_key if who == "wrong-secret" else "AKIAUNKNOWNKEY000000"
    m = DirectWriteManager(endpoint_url=minio_server.endpoint_url, region=minio_server.region,
                           aws_access_key_id=key, aws_secret_access_key=secret, retry=FAST)
    path = minio_server.uri(f"bad-creds-{who}/offsets/0")
    with pytest.raises(AccessDeniedError) as raised:
        with m.create_atomic(path) as out:
            out.write(b"v1\n{}")
    assert path in str(raised.value) and "credentials" in str(raised.value)
    assert secret not in _full_text(raised.value) and minio_server.secret_key not in _full_text(raised.value)
    assert minio_server.keys(f"bad-creds-{who}/") == []


def test_missing_bucket_is_named_and_nothing_is_written(minio_server: MinioServer) -> None:
    m = DirectWriteManager(**minio_server.manager_options(), part_size=MIN_PART_SIZE, retry=FAST)
    path = "s3://no-such-bucket-here/ck/offsets/0"
    with pytest.raises(BucketNotFoundError) as raised:
        with m.create_atomic(path) as out:
            out.write(b"v1\n{}")
    assert path in str(raised.value) and "'no-such-bucket-here' does not exist" in str(raised.value)
    assert minio_server.secret_key not in _full_text(raised.value)
    large = m.create_atomic("s3://no-such-bucket-here/ck/state/1.snapshot")
    with pytest.raises(BucketNotFoundError):
        large.write(b"x" * (MIN_PART_SIZE + 1))
    large.cancel()
    names = [b["Name"] for b in minio_server.client().list_buckets()["Buckets"]]
    assert "no-such-bucket-here" not in names


def test_the_shim_names_wrong_credentials_and_a_missing_bucket(spark: Any, minio_server: MinioServer) -> None:
    secret = "not-the-right-secret-0123456789"
    root = minio_server.uri("shim-bad", scheme="s3a")
    wrong = JvmCheckpointFileManager(spark, root, hadoop_conf=minio_s3a_conf(
        minio_server, **FEW_RETRIES, **{"fs.s3a.secret.key": secret}))
    with pytest.raises(AccessDeniedError) as raised:
        with wrong.create_atomic(root + "/metadata") as out:
            out.write(b'{"id":"q"}')
    assert secret not in str(raised.value) and minio_server.secret_key not in str(raised.value)
    wrong.close()
    missing = JvmCheckpointFileManager(spark, "s3a://no-such-bucket-here/cp",
                                       hadoop_conf=minio_s3a_conf(minio_server, **FEW_RETRIES))
    with pytest.raises(BucketNotFoundError):
        with missing.create_atomic("s3a://no-such-bucket-here/cp/metadata") as out:
            out.write(b'{"id":"q"}')
    missing.close()
    assert minio_server.keys("shim-bad/") == []


def test_encryption_the_server_cannot_do_is_a_clear_error(minio_server: MinioServer) -> None:
    """MinIO without a KMS refuses SSE-S3 (501 NotImplemented); the embedded S3 accepts it."""
    path = minio_server.uri("sse-out")
    sink = FileSink(path, **minio_server.manager_options(), sse="AES256")
    with pytest.raises(StoreError) as raised:
        sink.write_batch(0, [{"n": 1}])
    assert "sse-out" in str(raised.value) and "NotImplemented" in str(raised.value)
    assert minio_server.secret_key not in _full_text(raised.value)
    sink.close()
    assert minio_server.keys("sse-out/") == []


@pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
def test_server_stopped_mid_write_fails_clearly_and_leaves_nothing(tmp_path: Path, large: bool) -> None:
    """A MinIO of its own, killed (SIGKILL) while a write is open, then restarted on the same data directory: the
    close fails as unavailable, naming the path, and the file never appears."""
    server = MinioServer(["crash"], data_dir=tmp_path / "minio").start()
    try:
        m = DirectWriteManager(**server.manager_options(), part_size=MIN_PART_SIZE, retry=FAST,
                               connect_timeout_s=1)
        path = server.uri("ck/state/1.snapshot")
        out = m.create_atomic(path)
        out.write(b"x" * (2 * MIN_PART_SIZE + 10 if large else 100))  # large: two parts already sent
        server.kill()
        with pytest.raises(StoreUnavailableError) as raised:
            out.close()
        assert path in str(raised.value)
        assert server.secret_key not in _full_text(raised.value)
        m.close()
        server.start()
        assert server.keys("ck/") == []  # nothing visible: not the parts, not a partial object
    finally:
        server.stop()
