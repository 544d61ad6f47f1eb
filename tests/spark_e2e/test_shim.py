"""The shim's own promises beyond the conformance suite, in the session's Spark JVM (py4j) against the embedded S3:
ambiguous outcomes settled by the write id, close-then-delete cancels, delegation on file://, and bad input that
fails at start with a message saying what to fix."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("py4j", reason="drives the JVM shim through py4j, which pyspark brings (extra 'spark')")

from checkpointfs.errors import (
    AbortFailedError,
    AccessDeniedError,
    BucketNotFoundError,
    FileAlreadyExistsError,
    InvalidPathError,
    WriteOutcomeUnknownError,
)
from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.spark import hadoop_version
from checkpointfs.spark.jvm_manager import FILE_SYSTEM_MANAGER, JvmCheckpointFileManager
from checkpointfs.testing import EmbeddedS3, Fault, FaultPlan
from checkpointfs.testing.directory_bucket import PROFILES
from checkpointfs.testing.embedded_s3 import DIRECTORY_BUCKET
from checkpointfs.testing.faults import Latency

from ..conftest import EVERY_LINE

pytestmark = pytest.mark.spark

FRESH_FS = {"fs.s3a.impl.disable.cache": "true"}
"""A file system of its own for settings that S3A reads once, at initialization."""
FEW_RETRIES = {**FRESH_FS, "fs.s3a.attempts.maximum": "1", "fs.s3a.retry.limit": "2", "fs.s3a.retry.interval": "10ms"}


def _manager(spark: Any, server: EmbeddedS3, name: str = "shim", **conf: str) -> JvmCheckpointFileManager:
    """A shim manager under ``shim-tests/<name>``, after the JVM's store check for the bucket was paid by a first
    file elsewhere (removed again, its requests forgotten): the tests fault and count their own writes."""
    manager = JvmCheckpointFileManager(spark, server.uri(f"shim-tests/{name}", scheme="s3a"), hadoop_conf=conf or None)
    first = JvmCheckpointFileManager(spark, server.uri("shim-tests-checked", scheme="s3a"))
    _write(first, first.root + "/0", b"x")
    first.close()
    server.client(admin=True).delete_object(Bucket="checkpoints", Key="shim-tests-checked/0")
    server.requests.clear()
    return manager


def _write(manager: JvmCheckpointFileManager, path: str, data: bytes, overwrite: bool = False) -> str:
    out = manager.create_atomic(path, overwrite_if_possible=overwrite)
    out.write(data)
    write_id = str(out.write_id)  # type: ignore[attr-defined]
    out.close()
    return write_id


def test_each_object_carries_the_write_id_of_its_create(spark: Any, embedded_s3: EmbeddedS3) -> None:
    manager = _manager(spark, embedded_s3)
    write_id = _write(manager, manager.root + "/offsets/0", b"v1\n{}")
    head = embedded_s3.client(admin=True).head_object(Bucket="checkpoints", Key="shim-tests/shim/offsets/0")
    assert head["Metadata"] == {"checkpointfs-write-id": write_id}
    assert len(write_id) == 32


def test_lost_answer_to_a_conditional_put_is_settled_as_success(spark: Any, embedded_s3: EmbeddedS3) -> None:
    """The PUT lands but its answer is lost; the retry meets 412 from our own first attempt. The object carries
    our write id, so the close succeeds instead of reporting a conflict."""
    manager = _manager(spark, embedded_s3)
    path = manager.root + "/commits/0"
    embedded_s3.faults.add(Fault("lost-response", operations=frozenset({"PutObject"}), times=1))
    _write(manager, path, b"v1\nmine")
    statuses = [r.status for r in embedded_s3.requests.all() if r.operation == "PutObject"]
    assert statuses[0] == 0 and 412 in statuses  # the lost answer, then our own object refusing the retry
    with manager.open(path) as f:
        assert f.read() == b"v1\nmine"


def test_another_writer_during_a_retry_is_a_conflict(spark: Any, embedded_s3: EmbeddedS3) -> None:
    """Our PUT fails (500, not applied); meanwhile another writer creates the file; the retry meets 412 and the
    object carries another id: FileAlreadyExistsError, and the other writer's file stays."""
    manager = _manager(spark, embedded_s3)
    path = manager.root + "/offsets/5"
    admin = embedded_s3.client(admin=True)

    def other_writer() -> None:
        admin.put_object(Bucket="checkpoints", Key="shim-tests/shim/offsets/5", Body=b"theirs",
                         Metadata={"checkpointfs-write-id": "someone-else"})

    embedded_s3.faults.add(Fault("server-error", operations=frozenset({"PutObject"}), times=1, then=other_writer))
    with pytest.raises(FileAlreadyExistsError):
        _write(manager, path, b"ours")
    with manager.open(path) as f:
        assert f.read() == b"theirs"


def test_a_write_that_keeps_failing_after_it_may_have_landed_is_unknown(spark: Any, embedded_s3: EmbeddedS3) -> None:
    """Every PUT attempt answers 500 (the store may have applied it) and the object never shows our write id: the
    outcome is unknown, never success and never a conflict."""
    manager = _manager(spark, embedded_s3, name="unknown", **FEW_RETRIES)
    embedded_s3.faults.add(Fault("server-error", operations=frozenset({"PutObject"})))
    with pytest.raises(WriteOutcomeUnknownError, match="may or may not become visible"):
        _write(manager, manager.root + "/offsets/0", b"v1\n{}")


def test_a_write_throttled_to_the_end_is_unknown(spark: Any, embedded_s3: EmbeddedS3) -> None:
    """Every PUT attempt is throttled (503). A 503 itself applied nothing, but S3A retries out of the shim's sight,
    and an earlier attempt whose answer was lost may have landed (protocol.json: hidden attempts); with no object
    carrying this write's id, the outcome is unknown, never success and never a conflict. Nothing was written."""
    throttle = {"fs.s3a.retry.throttle.limit": "2", "fs.s3a.retry.throttle.interval": "10ms"}
    manager = _manager(spark, embedded_s3, name="throttled", **FEW_RETRIES, **throttle)
    embedded_s3.faults.add(Fault("slowdown", operations=frozenset({"PutObject"})))
    with pytest.raises(WriteOutcomeUnknownError, match="may or may not become visible"):
        _write(manager, manager.root + "/offsets/0", b"v1\n{}")
    assert embedded_s3.keys() == []


def test_close_then_delete_cancel_leaves_nothing(spark: Any, embedded_s3: EmbeddedS3) -> None:
    manager = _manager(spark, embedded_s3, **{"checkpointfs.cancel.strategy": "close-then-delete"})
    for name, size in (("small", 10), ("large", 6 * 1024 * 1024)):
        out = manager.create_atomic(f"{manager.root}/state/{name}")
        out.write(b"x" * size)
        out.cancel()
        assert not manager.exists(f"{manager.root}/state/{name}")
    assert embedded_s3.open_uploads() == []
    assert embedded_s3.requests.counts().get("DeleteObject", 0) >= 2


@pytest.mark.directory_bucket
@pytest.mark.parametrize("profile", PROFILES)
def test_close_then_delete_cancel_on_a_directory_bucket_deletes_its_own_write(spark: Any, embedded_s3: EmbeddedS3,
                                                                              profile: str) -> None:
    """On S3 Express One Zone's rules, user metadata kept and dropped, in a bucket named as a directory bucket: the
    cancel recognises the object its close published as the settle rule does (its write id, or where the store keeps
    none, the checksum and size the close sent; a multipart upload sends no checksum, so there the close's success
    is the evidence) and deletes it. Nothing stays visible, no upload stays open."""
    embedded_s3.profile = profile
    embedded_s3.create_bucket(DIRECTORY_BUCKET)
    root = embedded_s3.uri("shim-tests/cancel", bucket=DIRECTORY_BUCKET, scheme="s3a")
    manager = JvmCheckpointFileManager(spark, root, hadoop_conf={"checkpointfs.cancel.strategy": "close-then-delete"})
    try:
        for name, size in (("small", 10), ("large", 6 * 1024 * 1024)):
            out = manager.create_atomic(f"{root}/state/{name}")
            out.write(b"x" * size)
            out.cancel()
            assert not manager.exists(f"{root}/state/{name}")
    finally:
        manager.close()
    files = [k for k in embedded_s3.keys("shim-tests/cancel/", bucket=DIRECTORY_BUCKET) if not k.endswith("/")]
    assert files == []  # (S3A's delete leaves the parent's directory marker, "state/")
    assert embedded_s3.open_uploads(bucket=DIRECTORY_BUCKET) == []
    deleted = [r.key for r in embedded_s3.requests.all() if r.operation == "DeleteObject" and "/state/" in r.key
               and "_checkpointfs-store-check-" not in r.key]  # (the store check's canaries, deleted too)
    assert sorted(deleted) == ["shim-tests/cancel/state/large", "shim-tests/cancel/state/small"], deleted


def test_close_then_delete_that_cannot_delete_fails_loudly(spark: Any, embedded_s3: EmbeddedS3) -> None:
    manager = _manager(spark, embedded_s3, **{"checkpointfs.cancel.strategy": "close-then-delete",
                                              "checkpointfs.cancel.delete.attempts": "2", **FEW_RETRIES})
    embedded_s3.faults.add(Fault("server-error", operations=frozenset({"DeleteObject"})))
    out = manager.create_atomic(manager.root + "/state/1.delta")
    out.write(b"partial")
    with pytest.raises(AbortFailedError, match="partial data is visible"):
        out.cancel()


def test_file_scheme_delegates_to_sparks_rename_manager(spark: Any, tmp_path: Path) -> None:
    root = (tmp_path / "cp").as_uri()
    manager = JvmCheckpointFileManager(spark, root)
    assert manager.is_local
    assert not manager.jvm_manager.isDirect()
    assert "FileContextBasedCheckpointFileManager" in str(manager.jvm_manager.toString())
    manager.mkdirs(root + "/offsets")  # as Spark's logs do: its FileContext manager needs the parent directory
    _write(manager, root + "/offsets/0", b"v1\n{}")
    with pytest.raises(FileAlreadyExistsError):
        _write(manager, root + "/offsets/0", b"v1\nagain")
    assert sorted(p.name for p in (tmp_path / "cp" / "offsets").iterdir() if not p.name.startswith(".")) == ["0"]


def test_s3_scheme_served_by_s3a_is_written_directly(spark: Any, embedded_s3: EmbeddedS3) -> None:
    """``s3://`` whose file system is S3AFileSystem (``fs.s3.impl``, as many clusters set it) is written like
    ``s3a://``: one PutObject per small file, carrying the write id."""
    conf = {"fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem", "fs.s3.impl.disable.cache": "true"}
    _manager(spark, embedded_s3)  # pays the JVM's store check for the bucket (the same endpoint and bucket)
    manager = JvmCheckpointFileManager(spark, embedded_s3.uri("shim-tests/s3-scheme", scheme="s3"), hadoop_conf=conf)
    assert manager.jvm_manager.isDirect()
    write_id = _write(manager, manager.root + "/offsets/0", b"v1\n{}")
    assert embedded_s3.requests.counts() == {"PutObject": 1}
    head = embedded_s3.client(admin=True).head_object(Bucket="checkpoints", Key="shim-tests/s3-scheme/offsets/0")
    assert head["Metadata"][WRITE_ID_KEY] == write_id


def test_a_mistyped_setting_fails_at_construction_naming_the_key_meant(spark: Any, embedded_s3: EmbeddedS3) -> None:
    with pytest.raises(InvalidPathError, match=r"did you mean 'checkpointfs\.exists\.probe'\?"):
        JvmCheckpointFileManager(spark, embedded_s3.uri("shim-tests/typo", scheme="s3a"),
                                 hadoop_conf={"checkpointfs.exists.prob": "full"})
    with pytest.raises(InvalidPathError, match=r"checkpointfs\.store\.check='sometimes': expected true or false"):
        JvmCheckpointFileManager(spark, embedded_s3.uri("shim-tests/typo", scheme="s3a"),
                                 hadoop_conf={"checkpointfs.store.check": "sometimes"})


# -- bad input: the manager refuses at construction, or the first request fails with a precise error --------------
def test_store_without_conditional_create_is_refused(spark: Any, embedded_s3: EmbeddedS3) -> None:
    with pytest.raises(InvalidPathError, match=r"fs\.s3a\.create\.conditional\.enabled=true"):
        _manager(spark, embedded_s3, **{"fs.s3a.create.conditional.enabled": "false", **FRESH_FS})


def test_missing_s3a_connector_names_hadoop_aws(spark: Any, embedded_s3: EmbeddedS3) -> None:
    expected = re.escape(f"hadoop-aws-{hadoop_version()}.jar")  # the Hadoop of the running Spark line
    with pytest.raises(InvalidPathError, match=expected):
        _manager(spark, embedded_s3, **{"fs.s3a.impl": "org.apache.hadoop.fs.s3a.NotThere", **FRESH_FS})


def test_a_missing_s3a_class_met_by_sparks_own_manager_names_hadoop_aws(spark: Any, embedded_s3: EmbeddedS3) -> None:
    """However S3A is first touched (here by Spark's own manager, as a file sink's path would be), a missing S3A
    class comes out as the documented start-up error naming hadoop-aws of the session's Hadoop, not Hadoop's raw
    ClassNotFoundException."""
    expected = rf"CheckpointStoreConfigException: .*add {re.escape(f'hadoop-aws-{hadoop_version()}.jar')}"
    with pytest.raises(InvalidPathError, match=expected):
        JvmCheckpointFileManager(spark, embedded_s3.uri("shim-tests/no-s3a", scheme="s3a"),
                                 manager_class=FILE_SYSTEM_MANAGER,
                                 hadoop_conf={"fs.s3a.impl": "org.apache.hadoop.fs.s3a.NotThere", **FRESH_FS})


def test_unsupported_scheme_is_refused(spark: Any) -> None:
    with pytest.raises(InvalidPathError, match="no Hadoop FileSystem for scheme 'nosuchfs'"):
        JvmCheckpointFileManager(spark, "nosuchfs://bucket/cp")


def test_missing_bucket_is_named(spark: Any, embedded_s3: EmbeddedS3) -> None:
    manager = JvmCheckpointFileManager(spark, "s3a://no-such-bucket-here/cp", hadoop_conf=FEW_RETRIES)
    with pytest.raises(BucketNotFoundError):
        _write(manager, "s3a://no-such-bucket-here/cp/metadata", b'{"id":"q"}')
    assert embedded_s3.keys() == []


def test_wrong_credentials_are_access_denied_without_the_secret(spark: Any, embedded_s3: EmbeddedS3) -> None:
    secret = "not-the-right-secret-0123456789"
    manager = _manager(spark, embedded_s3, **{"fs.s3a.access.key": "wrong-key", "fs.s3a.secret.key": secret,
                                              **FEW_RETRIES})
    with pytest.raises(AccessDeniedError) as raised:
        _write(manager, manager.root + "/metadata", b'{"id":"q"}')
    assert secret not in str(raised.value)
    assert embedded_s3.keys() == []


@getattr(pytest.mark, EVERY_LINE)
def test_a_large_files_parts_go_up_together_up_to_the_bound(spark: Any, embedded_s3: EmbeddedS3) -> None:
    """Every request takes 50 ms at the server, so parts sent together overlap there: at most
    ``checkpointfs.s3a.fast.upload.active.blocks`` (here 3) UploadParts are in flight, more than one, and the file is
    whole (the shim's own parts on Spark 3.5 and 4.0, S3A's block upload on 4.1+)."""
    manager = _manager(spark, embedded_s3, name="parallel", **FRESH_FS,
                       **{"checkpointfs.s3a.fast.upload.active.blocks": "3"})
    part = 5 * 1024 * 1024  # the session's fs.s3a.multipart.size
    data = os.urandom(part * 6 + 100)
    embedded_s3.faults = FaultPlan(latency=Latency(per_request_s=0.05))
    _write(manager, manager.root + "/state/0/0/1.snapshot", data)
    embedded_s3.faults = FaultPlan()
    peak = embedded_s3.requests.peak_in_flight("UploadPart")
    assert 1 < peak <= 3, peak
    requests = embedded_s3.requests.all()
    key = "shim-tests/parallel/state/0/0/1.snapshot"
    assert sum(1 for r in requests if r.operation == "UploadPart" and r.key == key) == 7
    # the JVM's first put-if-absent multipart completion to the bucket paid the multipart store check first
    canary = [(r.operation, r.status) for r in requests if "/_checkpointfs-store-check-" in r.key]
    assert canary == [("PutObject", 200), ("CreateMultipartUpload", 200), ("UploadPart", 200),
                      ("CompleteMultipartUpload", 412), ("AbortMultipartUpload", 204),
                      ("ListMultipartUploads", 200), ("DeleteObject", 204)], canary
    assert embedded_s3.client(admin=True).get_object(Bucket="checkpoints", Key=key)["Body"].read() == data
    assert embedded_s3.open_uploads() == []


@getattr(pytest.mark, EVERY_LINE)
def test_server_side_encryption_reaches_the_shims_writes(spark: Any, embedded_s3: EmbeddedS3, tmp_path: Path) -> None:
    """With ``fs.s3a.encryption.algorithm=AES256`` (SSE-S3) a checkpoint file sent as one PutObject, one sent in
    parts, and an SST file uploaded through ``CheckpointS3AFileSystem`` are all stored encrypted, as S3A's own writes
    are: the shim's requests are built by S3A's request factory."""
    manager = _manager(spark, embedded_s3, name="sse", **FRESH_FS, **{"fs.s3a.encryption.algorithm": "AES256"})
    _write(manager, manager.root + "/offsets/0", b"v1\n{}")
    _write(manager, manager.root + "/state/0/0/1.snapshot", os.urandom(11 * 1024 * 1024))
    sst = tmp_path / "000001-a.sst"
    sst.write_bytes(b"sst")
    jvm = spark.sparkContext._jvm
    fs = jvm.org.apache.hadoop.fs.Path(manager.root).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    fs.copyFromLocalFile(False, True, jvm.org.apache.hadoop.fs.Path(sst.as_uri()),
                         jvm.org.apache.hadoop.fs.Path(manager.root + "/state/0/0/SSTs/000001-a.sst"))
    client = embedded_s3.client(admin=True)
    stored = {k: client.head_object(Bucket="checkpoints", Key=k).get("ServerSideEncryption")
              for k in embedded_s3.keys("shim-tests/sse/")}
    assert stored == {f"shim-tests/sse/{name}": "AES256"
                      for name in ("offsets/0", "state/0/0/1.snapshot", "state/0/0/SSTs/000001-a.sst")}, stored
