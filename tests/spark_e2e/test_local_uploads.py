"""``CheckpointS3AFileSystem`` (``fs.s3a.impl``, set by ``configure()`` with the shim): a local file uploaded with
``copyFromLocalFile`` into a directory a shim manager writes (what RocksDB does with every new SST file) is one
PutObject with no probe; everywhere else it is S3A's own copy, unchanged. In the session's Spark JVM (py4j) against
the embedded S3, counting requests at the server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("py4j", reason="drives the JVM shim through py4j, which pyspark brings (extra 'spark')")
from py4j.protocol import Py4JJavaError

from checkpointfs.spark import S3A_CLASS
from checkpointfs.spark.jvm_manager import JvmCheckpointFileManager
from checkpointfs.testing import EmbeddedS3, Fault

from ..conftest import EVERY_LINE

pytestmark = [pytest.mark.spark, getattr(pytest.mark, EVERY_LINE)]  # each jar group has its own S3A and SDK


class Uploads:
    """A shim manager on ``<prefix>/state/0/0`` (as RocksDB has one per state store partition) and the S3A file
    system of the session, with ``copyFromLocalFile`` and the requests the server saw for a key."""

    def __init__(self, spark: Any, server: EmbeddedS3, tmp_path: Path, prefix: str = "uploads",
                 manager_conf: dict[str, str] | None = None) -> None:
        self.spark = spark
        self.server = server
        self.tmp_path = tmp_path
        self.root = server.uri(f"{prefix}/state/0/0", scheme="s3a")
        self.manager = JvmCheckpointFileManager(spark, self.root, hadoop_conf=manager_conf)
        jvm = spark.sparkContext._jvm
        self.jvm = jvm
        self.fs = jvm.org.apache.hadoop.fs.Path(self.root).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())

    def local(self, name: str, data: bytes) -> Path:
        path = self.tmp_path / name
        path.write_bytes(data)
        return path

    def copy(self, local: Path, dst: str, *, delete_source: bool = False, overwrite: bool = True) -> None:
        """``fs.copyFromLocalFile(delSrc, overwrite, file:<local>, dst)`` as RocksDBFileManager calls it."""
        src = self.jvm.org.apache.hadoop.fs.Path(local.as_uri())
        self.fs.copyFromLocalFile(delete_source, overwrite, src, self.jvm.org.apache.hadoop.fs.Path(dst))

    def key(self, uri: str) -> str:
        return uri.split("/", 3)[3]

    def bucket(self, uri: str) -> str:
        return uri.split("/", 3)[2]

    def requests_on(self, uri: str) -> list[str]:
        """The operations sent on the key of ``uri``, itself or as a directory prefix (S3A's probes)."""
        key = self.key(uri)
        return [r.operation for r in self.server.requests.all() if r.key in (key, key + "/")]

    def content(self, uri: str) -> bytes:
        body: bytes = self.server.client().get_object(Bucket=self.bucket(uri), Key=self.key(uri))["Body"].read()
        return body


@pytest.fixture
def uploads(spark: Any, embedded_s3: EmbeddedS3, tmp_path: Path) -> Uploads:
    return Uploads(spark, embedded_s3, tmp_path)


def test_configure_selects_the_checkpoint_s3a_class(uploads: Uploads) -> None:
    assert uploads.fs.getClass().getName() == S3A_CLASS


def test_an_sst_upload_below_a_shim_root_is_one_put(uploads: Uploads) -> None:
    data = os.urandom(100_000)
    local = uploads.local("000008-3f1c.sst", data)
    dst = f"{uploads.root}/SSTs/000008-3f1c.sst"
    uploads.server.requests.clear()
    uploads.copy(local, dst)
    assert uploads.requests_on(dst) == ["PutObject"]
    assert [r.operation for r in uploads.server.requests.all()] == ["PutObject"]
    assert uploads.content(dst) == data
    assert local.read_bytes() == data  # delSrc = false keeps the local file


def test_an_upload_replaces_the_file_and_can_delete_its_source(uploads: Uploads) -> None:
    dst = f"{uploads.root}/SSTs/000009-aa.sst"
    uploads.copy(uploads.local("first.sst", b"first"), dst)
    second = uploads.local("second.sst", b"second version")
    uploads.server.requests.clear()
    uploads.copy(second, dst, delete_source=True)
    assert uploads.requests_on(dst) == ["PutObject"]
    assert uploads.content(dst) == b"second version"
    assert not second.exists()


def test_an_empty_file_is_uploaded_empty(uploads: Uploads) -> None:
    dst = f"{uploads.root}/logs/000001.log"
    uploads.server.requests.clear()
    uploads.copy(uploads.local("empty.log", b""), dst)
    assert uploads.requests_on(dst) == ["PutObject"]
    assert uploads.content(dst) == b""


def test_outside_any_shim_root_s3a_copies_as_it_always_did(uploads: Uploads) -> None:
    """A destination no shim manager writes below: S3A's own copy, with its probes of the destination."""
    data = b"data file"
    dst = uploads.server.uri("elsewhere/part-0001.bin", scheme="s3a")
    uploads.server.requests.clear()
    uploads.copy(uploads.local("part.bin", data), dst)
    sent = uploads.requests_on(dst)
    assert "HeadObject" in sent and sent[-1] == "PutObject", sent
    assert uploads.content(dst) == data


def test_without_overwrite_s3a_refuses_an_existing_destination(uploads: Uploads) -> None:
    """``overwrite = false`` is S3A's copy, which checks the destination: an existing file is refused, unchanged."""
    dst = f"{uploads.root}/SSTs/000010-bb.sst"
    uploads.copy(uploads.local("a.sst", b"kept"), dst)
    with pytest.raises(Py4JJavaError, match=r"already exists|PathExistsException|FileAlreadyExists"):
        uploads.copy(uploads.local("b.sst", b"refused"), dst, overwrite=False)
    assert uploads.content(dst) == b"kept"


def test_a_file_larger_than_one_put_goes_through_s3a(uploads: Uploads) -> None:
    """Above the shim's one-PutObject size (the session's 5 MiB part size) S3A uploads it from the file, in parts."""
    data = os.urandom(6 * 1024 * 1024)
    dst = f"{uploads.root}/SSTs/000011-cc.sst"
    uploads.server.requests.clear()
    uploads.copy(uploads.local("big.sst", data), dst)
    assert "HeadObject" in uploads.requests_on(dst)
    assert uploads.content(dst) == data


def test_after_the_manager_is_closed_s3a_copies(uploads: Uploads) -> None:
    uploads.manager.close()
    dst = f"{uploads.root}/SSTs/000012-dd.sst"
    uploads.server.requests.clear()
    uploads.copy(uploads.local("late.sst", b"late"), dst)
    assert "HeadObject" in uploads.requests_on(dst)
    assert uploads.content(dst) == b"late"


def test_a_source_that_is_not_a_local_file_is_s3as_error(uploads: Uploads) -> None:
    missing = uploads.tmp_path / "no-such.sst"
    with pytest.raises(Py4JJavaError, match=r"no-such\.sst"):
        uploads.copy(missing, f"{uploads.root}/SSTs/000013-ee.sst")
    assert uploads.server.keys("uploads/") == []


def test_a_failed_put_names_the_key_and_leaves_nothing(spark: Any, embedded_s3: EmbeddedS3, tmp_path: Path) -> None:
    """Every PutObject attempt answers 500: the copy fails with S3A's error for the destination and no object. The
    upload goes through the manager's file system: here one of its own with few retries (S3A on Hadoop 3.3.4 lets
    the SDK try 20 times)."""
    few_retries = {"fs.s3a.impl.disable.cache": "true", "fs.s3a.attempts.maximum": "1", "fs.s3a.retry.limit": "2",
                   "fs.s3a.retry.interval": "10ms"}
    uploads = Uploads(spark, embedded_s3, tmp_path, manager_conf=few_retries)
    dst = f"{uploads.root}/SSTs/000014-ff.sst"
    uploads.server.faults.add(Fault("server-error", operations=frozenset({"PutObject"})))
    with pytest.raises(Py4JJavaError) as failure:
        uploads.copy(uploads.local("fails.sst", b"never visible"), dst)
    uploads.server.faults.clear()
    assert uploads.key(dst) in str(failure.value.java_exception)
    assert uploads.server.keys("uploads/") == []
    assert set(uploads.requests_on(dst)) == {"PutObject"}
