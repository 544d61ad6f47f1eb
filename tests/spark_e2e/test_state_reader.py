"""Spark's state data source (``statestore`` and ``state-metadata``, Spark 4.0+) reads a checkpoint through the shim
and leaves it as it was: no object written, replaced or deleted, and ``checkpointfs verify`` still finds nothing.
The checkpoints are the running line's own fixtures (tests/fixtures/spark-<line>/, written by that line's Spark),
uploaded to the session's embedded S3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checkpointfs.testing import EmbeddedS3

from ..conftest import EVERY_LINE
from .written import assert_verifies_clean

pytestmark = [pytest.mark.spark, getattr(pytest.mark, EVERY_LINE)]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
KEYS = {"stateful": 12, "rocksdb": 6, "format-v2": 9}
"""Distinct ids each fixture's dropDuplicates keeps in its state (3 new ids a batch: tests/fixtures/generate.py)."""
FORMAT_VERSION = "spark.sql.streaming.stateStore.checkpointFormatVersion"
V2_UNREADABLE = {"4.0"}
"""Lines whose state data source cannot read a format v2 checkpoint at all (4.0.5: it looks for format v1's
``<version>.changelog`` whatever the session says; measured on local disk without checkpointfs too); reading
still writes nothing."""
WRITES = {"PutObject", "CopyObject", "DeleteObject", "DeleteObjects", "CreateMultipartUpload", "UploadPart",
          "CompleteMultipartUpload"}


def _line(spark: Any) -> str:
    return ".".join(spark.version.split(".")[:2])


def _upload(server: EmbeddedS3, folder: Path, prefix: str) -> None:
    client = server.client(admin=True)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        client.put_object(Bucket="checkpoints", Key=f"{prefix}/{path.relative_to(folder)}", Body=path.read_bytes())


def _objects(server: EmbeddedS3, prefix: str) -> dict[str, str]:
    client = server.client(admin=True)
    found: dict[str, str] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket="checkpoints", Prefix=prefix + "/"):
        found.update({o["Key"]: o["ETag"] for o in page.get("Contents", [])})
    return found


@pytest.mark.parametrize("query", list(KEYS))
def test_the_state_data_source_reads_through_the_shim_and_writes_nothing(
        query: str, spark: Any, embedded_s3: EmbeddedS3, monkeypatch: pytest.MonkeyPatch) -> None:
    line = _line(spark)
    if line == "3.5":
        pytest.skip("Spark 3.5 has no state data source (it came in 4.0)")
    folder = FIXTURES / f"spark-{line}" / query / "checkpoint"
    if not folder.is_dir():
        pytest.skip(f"Spark {line} writes no {query} fixture (tests/fixtures/generate.py: format v2 from 4.0)")
    prefix = f"state-reader/{line}/{query}"
    _upload(embedded_s3, folder, prefix)
    before = _objects(embedded_s3, prefix)
    embedded_s3.requests.clear()

    uri = embedded_s3.uri(prefix, scheme="s3a")
    # The state store coordinator is made with the session's StreamingQueryManager: on 4.1 and 4.2 a session that has
    # run no streaming query has none, and the state data source fails looking for it (Spark's, not the shim's).
    assert spark.streams.active is not None
    # Spark's readers take the state checkpoint format from the session, not from the checkpoint: without this it
    # looks for format v1's `<version>.changelog` in a format v2 checkpoint and fails (Spark 4.3.0, also on local
    # disk without checkpointfs; 4.0.5 fails even with it: V2_UNREADABLE)
    version = "2" if query == "format-v2" else "1"
    previous = spark.conf.get(FORMAT_VERSION, None)
    spark.conf.set(FORMAT_VERSION, version)
    try:
        if query == "format-v2" and line in V2_UNREADABLE:
            with pytest.raises(Exception, match="CANNOT_READ_STREAMING_STATE_FILE"):
                spark.read.format("statestore").load(uri).collect()
            rows = None
        else:
            rows = spark.read.format("statestore").load(uri).collect()
        [operator] = spark.read.format("state-metadata").load(uri).collect()
    finally:
        if previous is None:
            spark.conf.unset(FORMAT_VERSION)
        else:
            spark.conf.set(FORMAT_VERSION, previous)
    assert rows is None or len(rows) == KEYS[query]
    assert operator["operatorId"] == 0 and operator["operatorName"] == "dedupe"

    written = [r for r in embedded_s3.requests.all() if r.operation in WRITES and r.key.startswith(prefix + "/")]
    assert written == [], written
    assert _objects(embedded_s3, prefix) == before
    assert_verifies_clean(embedded_s3, prefix, monkeypatch)
