"""Fixtures of the tool tests: real Spark 4.3 checkpoints of a stateful query (file source -> dropDuplicates -> JSON
file sink), written once per session and restored before each test that damages them."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.cli import main
from checkpointfs.testing import EmbeddedS3

STREAMING_CONFS = {
    "spark.sql.streaming.fileSink.log.compactInterval": "3",
    "spark.sql.streaming.fileSource.log.compactInterval": "3",
    "spark.sql.shuffle.partitions": "3",
}
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
BATCHES = 5


@dataclass(frozen=True)
class SparkRun:
    """One query's directories: its input, checkpoint and output, and the files Spark's reader sees."""

    input: Path
    checkpoint: Path
    output: Path
    committed: frozenset[str]


def write_inputs(directory: Path, batches: int = BATCHES) -> None:
    """One input file per batch, with repeated ids (so dropDuplicates keeps state and drops rows)."""
    directory.mkdir(parents=True)
    for n in range(batches):
        rows = [json.dumps({"id": i % 7, "n": n}) for i in range(n * 3, n * 3 + 5)]
        (directory / f"f{n}.json").write_text("\n".join(rows) + "\n")
        os.utime(directory / f"f{n}.json", (1_700_000_000 + n, 1_700_000_000 + n))


def run_query(spark: Any, inputs: str, checkpoint: str, output: str, provider: str | None = None) -> frozenset[str]:
    """Run the stateful query to the end of its input (one file per batch); the files Spark's reader sees."""
    previous = {key: spark.conf.get(key, None) for key in [*STREAMING_CONFS, "spark.sql.streaming.stateStore."
                                                                              "providerClass"]}
    for key, value in STREAMING_CONFS.items():
        spark.conf.set(key, value)
    if provider:
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
    try:
        stream = (spark.readStream.schema("id INT, n INT").option("maxFilesPerTrigger", 1).json(inputs)
                  .dropDuplicates(["id"]))
        query = (stream.writeStream.format("json").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start(output))
        query.awaitTermination(300)
        assert query.exception() is None
        return frozenset(spark.read.json(output).inputFiles())
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _make(spark: Any, base: Path, provider: str | None = None) -> SparkRun:
    write_inputs(base / "in")
    committed = run_query(spark, str(base / "in"), str(base / "ck"), str(base / "out"), provider)
    pristine = base / "pristine"
    shutil.copytree(base / "ck", pristine / "ck")
    shutil.copytree(base / "out", pristine / "out")
    return SparkRun(base / "in", base / "ck", base / "out", committed)


@pytest.fixture(scope="session")
def hdfs_state_run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> SparkRun:
    """A checkpoint with HDFSBackedStateStoreProvider state and its file sink's output (local file system)."""
    return _make(spark, tmp_path_factory.mktemp("spark-hdfs-state"))


@pytest.fixture(scope="session")
def rocksdb_run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> SparkRun:
    """The same query with RocksDB state."""
    return _make(spark, tmp_path_factory.mktemp("spark-rocksdb-state"), ROCKSDB)


def _restore(run: SparkRun) -> None:
    for name in ("ck", "out"):
        target = run.checkpoint.parent / name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(run.checkpoint.parent / "pristine" / name, target)


@pytest.fixture
def checkpoint(hdfs_state_run: SparkRun) -> Iterator[SparkRun]:
    """The HDFS-state run, as Spark left it; damage it freely (it is restored after the test)."""
    _restore(hdfs_state_run)
    yield hdfs_state_run
    _restore(hdfs_state_run)


@pytest.fixture
def rocksdb_checkpoint(rocksdb_run: SparkRun) -> Iterator[SparkRun]:
    """The RocksDB run, as Spark left it; restored after the test."""
    _restore(rocksdb_run)
    yield rocksdb_run
    _restore(rocksdb_run)


@dataclass
class Result:
    """What a command printed and returned."""

    code: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        """stdout parsed as one JSON document (fails if anything else is on stdout)."""
        return json.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Any:
    """Run ``checkpointfs ARGS`` in this process; returns a :class:`Result`."""

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = main([*args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def s3_env(embedded_s3: EmbeddedS3, monkeypatch: pytest.MonkeyPatch) -> EmbeddedS3:
    """The embedded S3, its credentials in the standard AWS variables, as a user's shell would have them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", embedded_s3.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", embedded_s3.secret_key)
    monkeypatch.setenv("AWS_DEFAULT_REGION", embedded_s3.region)
    return embedded_s3
