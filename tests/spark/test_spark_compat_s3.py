"""Compatibility with the real engine on S3 itself: Spark over s3a:// and checkpointfs over s3:// on the same
embedded S3. (a) Spark's file sink and checkpoint on s3a:// (through the shim), read by checkpointfs; (b) a FileSink
on s3:// read by ``spark.read`` on s3a://, which sees exactly the committed rows and none of the orphan files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import DirectWriteManager
from checkpointfs.log import Checkpoint, FileStreamSinkLog
from checkpointfs.sink import FileSink, committed_files
from checkpointfs.testing import EmbeddedS3

pytestmark = pytest.mark.spark
def test_python_reads_what_spark_committed_on_s3(small_logs: Any, embedded_s3: EmbeddedS3, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    for i in range(5):
        (inputs / f"{i}.json").write_text("".join(json.dumps({"n": i * 10 + j}) + "\n" for j in range(3)))
    out, checkpoint = "s3a://checkpoints/spark-out", "s3a://checkpoints/spark-cp"
    query = (small_logs.readStream.schema("n INT").option("maxFilesPerTrigger", 1).json(str(inputs))
             .writeStream.format("json").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start(out))
    query.awaitTermination(300)
    assert query.exception() is None

    opts = embedded_s3.manager_options()
    spark_files = {f.replace("s3a://", "s3://") for f in small_logs.read.json(out).inputFiles()}
    assert set(committed_files("s3://checkpoints/spark-out", **opts)) == spark_files
    manager = DirectWriteManager(**opts)
    log = FileStreamSinkLog(manager, "s3://checkpoints/spark-out/_spark_metadata", compact_interval=3)
    assert all(f.path.startswith("s3a://checkpoints/spark-out/") for f in log.all_files())
    checkpoint_logs = Checkpoint(manager, "s3://checkpoints/spark-cp")
    latest = checkpoint_logs.offsets.get_latest()
    assert latest is not None and latest[0] == 4
    assert checkpoint_logs.commits.get_latest() is not None
    assert not [k for k in embedded_s3.keys("spark-cp/") if k.endswith(".tmp")]  # the shim wrote no temp keys
    assert "CopyObject" not in embedded_s3.requests.counts()


def test_spark_reads_exactly_what_a_python_sink_committed_on_s3(spark: Any, embedded_s3: EmbeddedS3) -> None:
    manager = DirectWriteManager(**embedded_s3.manager_options())
    sink = FileSink("s3://checkpoints/py-out", manager=manager, compact_interval=3,
                    partition_by=lambda row: f"day={row['n'] % 2}")
    rows = [{"n": n, "text": f"row {n}"} for n in range(20)]
    for batch in range(4):
        sink.write_batch(batch, rows[batch * 5:(batch + 1) * 5])
    sink.close()
    admin = embedded_s3.client(admin=True)
    for orphan in ("py-out/part-00000-orphan.json", "py-out/day=0/part-00000-orphan.json"):
        admin.put_object(Bucket="checkpoints", Key=orphan, Body=b'{"n": -1, "text": "orphan"}\n')

    log = FileStreamSinkLog(manager, "s3://checkpoints/py-out/_spark_metadata", compact_interval=3)
    assert all(f.path.startswith("s3a://checkpoints/py-out/") for f in log.all_files())  # the scheme Spark reads
    read = spark.read.json("s3a://checkpoints/py-out").select("n", "text").collect()
    assert sorted((r["n"], r["text"]) for r in read) == [(r["n"], r["text"]) for r in rows]
