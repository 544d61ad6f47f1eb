"""Moving a running stateful query onto the shim and off it again, on MinIO (docs/adopting.md).

One dedup query (HDFS-backed or RocksDB state) and one checkpoint: two batches under Spark's default manager on
plain S3A, two more under the shim (``fs.s3a.impl`` = CheckpointS3AFileSystem too), two more under the default
manager again with ``fs.s3a.impl`` unset. Each switch happens across a crash: the driver still on the old settings is
SIGKILLed when the step's first batch has written part of its state, and the restart (availableNow) has the new
settings. After each kill the sink holds no id twice; after each restart, every input id once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.servers.minio import MinioServer

from .migration import MovedQuery, assert_inspected, assert_writers

pytestmark = [pytest.mark.minio, pytest.mark.spark]

@pytest.fixture(params=["hdfs", pytest.param("rocksdb", marks=pytest.mark.extended(covered_by="[rocksdb] -> [hdfs]"))])
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
    assert_handed_over(before, query, "other", {})  # Spark's own manager throughout: no write id anywhere

    # SIGKILLed mid-batch under Spark's default manager, restarted under the shim: it continues the checkpoint
    # (and the half-done batch) that Spark's manager wrote
    onto = query.step("shim", files=2, killed_under="default")
    assert onto.killed_uncommitted, onto
    assert not query.written_by_shim("commits/1")
    assert query.written_by_shim("commits/2") and query.written_by_shim("commits/3")  # the killed batch redone
    after = query.inspect()
    assert_inspected(after, query, before["query_id"])
    # inspect says from which batch the shim took over: commits at the redone batch 2, offsets at 3 (offsets/2 was
    # written under Spark's manager before the kill, and the restart reused it)
    assert_handed_over(after, query, "checkpointfs", {"commits": 2, "offsets": 3}, "the shim took over at batch 2")

    # and back: SIGKILLed mid-batch under the shim, restarted under Spark's default manager with fs.s3a.impl unset
    back = query.step("default", files=2, killed_under="shim")
    assert back.killed_uncommitted, back
    assert query.written_by_shim("commits/3")
    assert not query.written_by_shim("commits/4") and not query.written_by_shim("commits/5")
    back_found = query.inspect()
    assert_inspected(back_found, query, before["query_id"])
    # and from which it stopped: commits at the redone batch 4, offsets at 5
    assert_handed_over(back_found, query, "other", {"commits": 4, "offsets": 5}, "the shim took over at batch 2",
                       "the shim stopped at batch 4")
    assert query.server.open_uploads(query.prefix + "/") == []


def assert_handed_over(found: dict[str, Any], query: MovedQuery, latest_writer: str, since_batch: dict[str, int],
                       *commits_say: str) -> None:
    """inspect's ``writers`` agree with the files' metadata batch by batch (:func:`assert_writers`), every log's
    latest batch was written by ``latest_writer``, the checkpoint's logs warn ``mixed_writers`` from ``since_batch``
    (log -> the batch of its latest switch; the sink's manifest is checked against the metadata only), and the
    commits warning says each of ``commits_say``."""
    warnings = assert_writers(found, query)
    assert {log: w["since_batch"] for log, w in warnings.items() if log != "_spark_metadata"} == since_batch, warnings
    for words in commits_say:
        assert words in warnings["commits"]["problem"], warnings
    assert {log["latest_writer"] for log in found["writers"]["logs"]} == {latest_writer}, found["writers"]
