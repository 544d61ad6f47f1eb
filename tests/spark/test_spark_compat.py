"""Compatibility with the real engine, both ways (pyspark 4.3.0, local file system).

(a) Spark runs a file-source -> file-sink query with a small compact interval; the Python logs read exactly what
Spark reads, derive the same names, and write back every log file of the checkpoint byte for byte.
(b) Python writes through the FileSink and commit protocol; ``spark.read`` returns exactly the committed rows and
ignores orphan part files lying in the directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import RenameBasedManager
from checkpointfs.log import (
    Checkpoint,
    CommitLog,
    CommitMetadata,
    FileStreamSinkLog,
    FileStreamSourceLog,
    MetadataLog,
    OffsetMap,
    OffsetSeq,
    OffsetSeqLog,
    SinkFileStatus,
)
from checkpointfs.sink import FileSink, ManifestCommitProtocol, committed_files

from ..rewrite import rewritten

pytestmark = pytest.mark.spark

def run_file_query(spark: Any, inputs: Path, checkpoint: Path, output: Path) -> Any:
    stream = spark.readStream.schema("n INT, text STRING").option("maxFilesPerTrigger", 1).json(str(inputs))
    query = (stream.writeStream.format("json").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start(str(output)))
    query.awaitTermination(300)
    return query


def test_python_reads_what_spark_wrote(small_logs: Any, tmp_path: Path) -> None:
    spark = small_logs
    inputs, checkpoint, output = tmp_path / "in", tmp_path / "ck", tmp_path / "out dir"
    inputs.mkdir()
    for n in range(8):
        (inputs / f"f{n}.json").write_text(json.dumps({"n": n, "text": f"é {n}"}) + "\n")
        os.utime(inputs / f"f{n}.json", (1_700_000_000 + n, 1_700_000_000 + n))
    query = run_file_query(spark, inputs, checkpoint, output)
    manager = RenameBasedManager()

    sink_log = FileStreamSinkLog(manager, str(output / "_spark_metadata"), compact_interval=3, read_only=True)
    assert sink_log.batch_ids() == list(range(5, 8))
    assert sorted(os.listdir(output / "_spark_metadata")) == sorted(
        [".5.compact.crc", ".6.crc", ".7.crc", "5.compact", "6", "7"])
    spark_files = set(spark.read.json(str(output)).inputFiles())
    assert {status.path for status in sink_log.all_files()} == spark_files
    assert len(spark_files) == 8
    python_rows = sorted(json.loads(line)["n"] for path in committed_files(str(output))
                         for line in Path(path).read_text().splitlines())
    assert python_rows == sorted(row.n for row in spark.read.json(str(output)).collect()) == list(range(8))
    assert sink_log.compact_interval == 6  # a lone 5.compact: Spark re-derives 6 as well (tested in tests/log)

    ck = Checkpoint(manager, str(checkpoint), read_only=True)
    metadata = ck.metadata()
    assert metadata is not None and metadata.id == str(query.id)
    latest_offsets = ck.offsets.get_latest()
    assert latest_offsets is not None and latest_offsets[0] == 7
    assert isinstance(latest_offsets[1], OffsetSeq) and latest_offsets[1].offsets == ['{"logOffset":7}']
    assert latest_offsets[1].metadata is not None
    assert latest_offsets[1].metadata.conf["spark.sql.shuffle.partitions"] == "2"
    assert ck.commits.get_latest() == (7, CommitMetadata(0))
    source = ck.source_log(0, compact_interval=3)
    assert sorted(e.path for e in source.all_files()) == sorted(
        (inputs / f"f{n}.json").as_uri() for n in range(8))
    assert [e.batch_id for e in dict(source.get_range(6, 7))[7]] == [7]

    logs: list[MetadataLog[Any]] = [sink_log, ck.offsets, ck.commits, source]
    for log in logs:
        for batch_id in log.batch_ids():
            with open(log.batch_path(batch_id), "rb") as f:
                assert rewritten(log, batch_id) == f.read(), log.batch_path(batch_id)
    assert (checkpoint / "metadata").read_text() == metadata.to_json()


def test_spark_reads_exactly_what_python_committed(small_logs: Any, tmp_path: Path) -> None:
    spark = small_logs
    output = tmp_path / "py out"
    expected = []
    with FileSink(str(output), partition_by=lambda row: f"day={row['n'] % 2}", compression="gzip",
                  compact_interval=3, max_bytes=150) as sink:
        for batch in range(5):
            rows = [{"n": batch * 10 + i, "text": f"batch {batch} ü"} for i in range(6)]
            sink.write_batch(batch, rows)
            expected += rows
    for orphan in (output / "part-00000-orphan-c000.json", output / "day=0" / "part-00000-orphan-c000.json"):
        orphan.write_text('{"n": -1, "text": "orphan"}\n')
    assert sorted(os.listdir(output / "_spark_metadata")) == ["0", "1", "2.compact", "3", "4"]

    frame = spark.read.json(str(output))
    rows = sorted((row.n, row.text, row.day) for row in frame.collect())
    assert rows == sorted((r["n"], r["text"], r["n"] % 2) for r in expected)
    manifest = FileStreamSinkLog(RenameBasedManager(), str(output / "_spark_metadata"), compact_interval=3,
                                 read_only=True)
    assert sorted(frame.inputFiles()) == sorted(status.path for status in manifest.all_files())
    assert len(committed_files(str(output))) == len(frame.inputFiles()) > 5


def test_python_continues_a_spark_sink(small_logs: Any, tmp_path: Path) -> None:
    spark = small_logs
    inputs, checkpoint, output = tmp_path / "in", tmp_path / "ck", tmp_path / "out"
    inputs.mkdir()
    for n in range(3):
        (inputs / f"f{n}.json").write_text(json.dumps({"n": n, "text": "spark"}) + "\n")
    run_file_query(spark, inputs, checkpoint, output)
    manager = RenameBasedManager()
    sink_log = FileStreamSinkLog(manager, str(output / "_spark_metadata"), compact_interval=3)
    assert sink_log.latest_batch_id() == 2
    protocol = ManifestCommitProtocol(manager, str(output), sink_log, 3)
    protocol.setup_job()
    task = protocol.setup_task(0)
    with protocol.create_task_file(task, None, ".json") as stream:
        stream.write(b'{"n":3,"text":"python"}\n')
    protocol.on_task_commit(statuses := protocol.commit_task(task))
    protocol.commit_job([statuses])
    assert sorted((r.n, r.text) for r in spark.read.json(str(output)).collect()) == [
        (0, "spark"), (1, "spark"), (2, "spark"), (3, "python")]


def test_offsets_v2_written_by_spark(spark: Any, tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "f.json").write_text('{"n": 1, "text": "a"}\n')
    spark.conf.set("spark.sql.streaming.offsetLog.formatVersion", "2")
    try:
        run_file_query(spark, inputs, tmp_path / "ck", tmp_path / "out")
    finally:
        spark.conf.unset("spark.sql.streaming.offsetLog.formatVersion")
    offsets = OffsetSeqLog(RenameBasedManager(), str(tmp_path / "ck" / "offsets"), read_only=True)
    latest = offsets.get_latest()
    assert latest is not None and isinstance(latest[1], OffsetMap)
    assert latest[1].offsets == {"0": '{"logOffset":0}'}
    assert rewritten(offsets, 0) == (tmp_path / "ck" / "offsets" / "0").read_bytes()
    commits = CommitLog(RenameBasedManager(), str(tmp_path / "ck" / "commits"), read_only=True)
    assert commits.get(0) == CommitMetadata(0)
    source = FileStreamSourceLog(RenameBasedManager(), str(tmp_path / "ck" / "sources" / "0"), read_only=True)
    assert [(e.path, e.batch_id) for e in source.all_files()] == [((inputs / "f.json").as_uri(), 0)]


def test_compaction_writes_the_bytes_spark_writes(small_logs: Any, tmp_path: Path) -> None:
    """Both compact the same log (the previous .compact file with lines Spark would not have written: spaces, keys
    out of order, needless escapes, \\r\\n line ends; paths with quotes, control characters and non-ASCII): the new
    .compact files are identical."""
    spark = small_logs
    odd = [SinkFileStatus(f"file:///out/{name}", n, n % 2 == 0, 1_700_000_000_000 + n, 1, 33554432)
           for n, name in enumerate(['q"b\\s', "c\x01\x1f\x0b\t", "é\u2028😀 x", "plain", "%20sp"])]
    awkward = ['{"path": "file:///out/spaced", "size": 1, "isDir": false, "modificationTime": 2, '
               '"blockReplication": 1, "blockSize": 3, "action": "add"}',
               '{"size":4,"path":"file:///out/reordered","isDir":false,"modificationTime":5,"blockReplication":1,'
               '"blockSize":6,"action":"add"}',
               '{"path":"file:///out/\\u00e9\\/x\\u001f","size":-0,"isDir":true,"modificationTime":7,'
               '"blockReplication":1,"blockSize":8,"action":"add"}']
    previous = "v1\r\n" + "\r\n".join([e.to_json() for e in odd] + awkward)
    sinks = spark._jvm.org.apache.spark.sql.execution.streaming.sinks
    compacted = []
    for side in ("spark", "python"):
        folder = tmp_path / side / "_spark_metadata"
        folder.mkdir(parents=True)
        (folder / "2.compact").write_text(previous, encoding="utf-8", newline="")
        batches = {3: odd[:2], 4: odd[2:], 5: odd[::-1]}
        if side == "spark":
            log = sinks.FileStreamSinkLog(1, spark._jsparkSession, folder.as_uri(), spark._jvm.scala.Option.empty())
            for batch, entries in batches.items():
                array = spark.sparkContext._gateway.new_array(sinks.SinkFileStatus, len(entries))
                for i, e in enumerate(entries):
                    array[i] = sinks.SinkFileStatus(e.path, e.size, e.is_dir, e.modification_time,
                                                    e.block_replication, e.block_size, e.action)
                assert log.add(batch, array)
        else:
            py_log = FileStreamSinkLog(RenameBasedManager(), str(folder), compact_interval=3, deletion=False)
            for batch, entries in batches.items():
                assert py_log.add(batch, entries)
        compacted.append((folder / "5.compact").read_bytes())
    assert compacted[0] == compacted[1]
    assert compacted[1].count(b"\n") == 3 * len(odd) + len(awkward)
