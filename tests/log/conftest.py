"""Stores for the log tests: the local file system (RenameBasedManager), the embedded S3 (DirectWriteManager), and
the real stores: MinIO (DirectWriteManager, marker ``minio``) and HDFS over WebHDFS (RenameBasedManager, ``hdfs``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import CheckpointFileManager, DirectWriteManager, RenameBasedManager
from checkpointfs.testing import EmbeddedS3
from tests.backends.stores import ClientSide


@dataclass
class Store:
    """A manager and a fresh directory on its store."""

    kind: str
    manager: CheckpointFileManager
    root: str
    s3: Any = None
    """Where requests are counted: the EmbeddedS3, or on MinIO the manager's own client (``requests.counts()``)."""

    def dir(self, name: str) -> str:
        """A directory under the root."""
        return f"{self.root}/{name}"

    def write_raw(self, path: str, data: bytes) -> None:
        """Put a file as-is (to plant bad input)."""
        with self.manager.create_atomic(path, overwrite_if_possible=True) as stream:
            stream.write(data)

    def read_raw(self, path: str) -> bytes:
        """A file's bytes."""
        with self.manager.open(path) as stream:
            return stream.read()

    def names(self, directory: str) -> list[str]:
        """The names in a directory."""
        return [status.name for status in self.manager.list(directory)]


@pytest.fixture(params=["local", "s3", pytest.param("minio", marks=pytest.mark.minio),
                        pytest.param("hdfs", marks=pytest.mark.hdfs)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Each log test runs on every store."""
    if request.param == "local":
        yield Store("local", RenameBasedManager(), str(tmp_path))
        return
    if request.param == "minio":
        minio: Any = request.getfixturevalue("minio_server")
        manager = DirectWriteManager(**minio.manager_options())
        key = f"ck/{uuid.uuid4().hex}"
        # the requests the manager sent, counted at its own client (MinIO keeps no request log here)
        yield Store("minio", manager, minio.uri(key), ClientSide(minio, key + "/", manager.connected.boto))
        manager.close()
        return
    if request.param == "hdfs":
        hdfs: Any = request.getfixturevalue("hdfs_server")
        yield Store("hdfs", RenameBasedManager("webhdfs", **hdfs.storage_options()),
                    hdfs.webhdfs_uri(f"ck/{uuid.uuid4().hex}"))
        return
    s3: EmbeddedS3 = request.getfixturevalue("embedded_s3")
    manager = DirectWriteManager(**s3.manager_options())
    yield Store("s3", manager, s3.uri("ck"), s3)
    manager.close()
