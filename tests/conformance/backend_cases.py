"""Conformance cases on real stores: MinIO (marker ``minio``) and HDFS through WebHDFS (marker ``hdfs``).

- ``direct-abort@minio`` / ``direct-close-then-delete@minio``: DirectWriteManager against MinIO, with MinIO's 5 MiB
  minimum part size (MinIO refuses smaller parts; moto can be told to accept them);
- ``jvm-shim@minio``: the shim in the session's Spark JVM on s3a:// against MinIO;
- ``rename-webhdfs@hdfs``: RenameBasedManager over ``webhdfs://`` (fsspec) on a MiniDFSCluster.

Neither store keeps a request log here, so the exact-cost case is checked on the embedded S3 only.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import DirectWriteManager, RenameBasedManager
from checkpointfs.spark.jvm_manager import JvmCheckpointFileManager
from checkpointfs.testing.minio import MIN_PART_SIZE, MinioServer

from .cases import FAST_RETRY, Case, CaseFactory

NO_REQUEST_LOG = ("a real store keeps no request log here: the cost of a commit is counted on the embedded S3, whose "
                  "gateway records every request")


class UploadsOf:
    """``open_uploads()`` of a MinIO case: the uploads left open under the case's own prefix."""

    def __init__(self, server: MinioServer, prefix: str) -> None:
        self._server = server
        self._prefix = prefix

    def open_uploads(self) -> list[str]:
        return self._server.open_uploads(self._prefix)


def _direct_minio(strategy: str) -> CaseFactory:
    def make(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
        server: MinioServer = request.getfixturevalue("minio_server")
        manager = DirectWriteManager(**server.manager_options(), part_size=MIN_PART_SIZE, abort_strategy=strategy,
                                     retry=FAST_RETRY)
        request.addfinalizer(manager.close)
        key = f"conformance/{uuid.uuid4().hex}"
        case = Case(f"direct-{strategy}@minio", manager, server.uri(key), part_size=MIN_PART_SIZE,
                    no_cost_promise=NO_REQUEST_LOG)
        case.server = UploadsOf(server, key + "/")  # type: ignore[assignment]
        return case

    return make


def _shim_minio(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    spark: Any = request.getfixturevalue("spark")
    server: MinioServer = request.getfixturevalue("minio_server")
    key = f"conformance/{uuid.uuid4().hex}"
    root = server.uri(key, scheme="s3a")
    # MinIO's bucket is not the session's: S3A caches one file system per bucket, configured by these settings.
    manager = JvmCheckpointFileManager(spark, root, hadoop_conf=minio_s3a_conf(server))
    request.addfinalizer(manager.close)
    case = Case("jvm-shim@minio", manager, root, part_size=MIN_PART_SIZE, no_cost_promise=NO_REQUEST_LOG)
    case.server = UploadsOf(server, key + "/")  # type: ignore[assignment]
    return case


def minio_s3a_conf(server: MinioServer) -> dict[str, str]:
    """S3A settings that reach ``server`` (with the shim's defaults and quick retries of a local endpoint)."""
    from checkpointfs.spark.config import s3a_settings

    return s3a_settings(server)


def _rename_webhdfs(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    from tests.backends.hdfs import MiniHdfs

    cluster: MiniHdfs = request.getfixturevalue("hdfs_server")
    manager = RenameBasedManager("webhdfs", **cluster.storage_options())
    return Case("rename-webhdfs@hdfs", manager, cluster.webhdfs_uri(f"conformance/{uuid.uuid4().hex}"))


BACKEND_FACTORIES: dict[str, CaseFactory] = {
    "direct-abort@minio": _direct_minio("abort"),
    "direct-close-then-delete@minio": _direct_minio("close-then-delete"),
    "jvm-shim@minio": _shim_minio,
    "rename-webhdfs@hdfs": _rename_webhdfs,
}
"""Conformance cases on real stores, by case id; the part after ``@`` is the pytest marker."""

BACKEND_EXPECTED_FAILURES: dict[tuple[str, str], str] = {
    ("direct-close-then-delete@minio", "test_cancel_of_large_overwrite_leaves_existing_file_unchanged"):
        "close-then-delete cannot abort: once parts were sent, cancel completes the upload (replacing the old "
        "file) and then deletes it, so an overwrite that is cancelled loses the file it would have replaced",
}

