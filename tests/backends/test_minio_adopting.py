"""Moving a running stateful query onto the shim and off it again, on MinIO (docs/adopting.md).

One dedup query (HDFS-backed or RocksDB state) and one checkpoint: two batches under Spark's default manager on
plain S3A, two more under the shim (``fs.s3a.impl`` = CheckpointS3AFileSystem too), two more under the default
manager again with ``fs.s3a.impl`` unset. Every step SIGKILLs the driver when the step's first batch has written part
of its state, restarts it with availableNow, and checks the sink against the input: every id once, none lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from checkpointfs.testing.minio import MinioServer

from .migration import MovedQuery, assert_inspected

pytestmark = [pytest.mark.minio, pytest.mark.spark]

@pytest.fixture(params=["hdfs", "rocksdb"])
def query(request: pytest.FixtureRequest, minio_server: MinioServer, tmp_path: Path) -> Iterator[MovedQuery]:
    """A fresh dedup query on the session's MinIO with the parametrized state store; its drivers are killed at
    the end."""
    moved = MovedQuery(minio_server, tmp_path, request.param)
    yield moved
    moved.stop_all()


def test_default_manager_to_shim_and_back_is_exactly_once(query: MovedQuery) -> None:
    first = query.step("default", files=2)
    assert first.killed_uncommitted, first
    assert not query.written_by_shim("commits/1")
    before = query.inspect()
    assert_inspected(before, query)

    onto = query.step("shim", files=2)  # the checkpoint Spark's default manager wrote, continued under the shim
    assert onto.killed_uncommitted, onto
    assert not query.written_by_shim("commits/1") and query.written_by_shim("commits/3")
    after = query.inspect()
    assert_inspected(after, query, before["query_id"])

    back = query.step("default", files=2)  # and back: Spark's default manager, fs.s3a.impl unset
    assert back.killed_uncommitted, back
    assert query.written_by_shim("commits/3") and not query.written_by_shim("commits/5")
    assert_inspected(query.inspect(), query, before["query_id"])
    assert query.server.open_uploads(query.prefix + "/") == []
