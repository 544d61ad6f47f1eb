"""The shim's metrics on executors of a standalone cluster, read through a sink as an operator would (Spark's
``CsvSink`` for the executor instance): the state store writes of a running dropDuplicates query, counted by each
executor's JVM, against the requests the server saw for the state store's keys."""

from __future__ import annotations

import csv
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from checkpointfs.protocol.metrics import OPERATIONS
from checkpointfs.testing.readiness import NotReady, wait_ready
from harness.servers.spark_cluster import StandaloneCluster

from ..spark_e2e.conftest import Pipeline
from .conftest import on_cluster

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

SOURCE = "plugin.io.checkpointfs.spark.CheckpointfsPlugin"
BATCHES = 3


def _executor_metrics(folder: Path) -> dict[str, dict[str, int]]:
    """The last value CsvSink wrote for each checkpointfs metric, by executor id (``<app>.<executor>.<source>.<name>
    .csv``: one row per report, ``t,count,...``)."""
    pattern = re.compile(r"^[^.]+\.(\d+)\." + re.escape(SOURCE) + r"\.(.+)\.csv$")
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for path in folder.glob("*.csv"):
        match = pattern.match(path.name)
        if match is None:
            continue
        rows = list(csv.DictReader(path.read_text().splitlines()))
        if rows:
            out[match.group(1)][match.group(2)] = int(rows[-1]["count"])
    return dict(out)


def test_executors_report_their_state_store_writes_through_a_sink(cluster_pipeline: Pipeline,
                                                                    cluster: StandaloneCluster,
                                                                    tmp_path: Path) -> None:
    """Each executor's CsvSink files hold the shim's metrics; summed over the executors, the creates equal the state
    files written, and the requests of every operation equal the server's count for the state store partitions' keys
    (which only executors touch; the driver writes the state schema in partition 0's ``_metadata``)."""
    pipeline = cluster_pipeline
    for b in range(BATCHES):
        pipeline.add_input(b, list(range(b * 10, b * 10 + 10)))
    csv_dir, stop = tmp_path / "csv", tmp_path / "stop"
    csv_dir.mkdir()
    sink = "spark.metrics.conf.executor.sink.csv"
    job = pipeline.start(*on_cluster(cluster, "--conf", f"{sink}.class=org.apache.spark.metrics.sink.CsvSink",
                                     "--conf", f"{sink}.directory={csv_dir}", "--conf", f"{sink}.period=1",
                                     "--conf", f"{sink}.unit=seconds", "--serve-until", str(stop),
                                     "--max-run-s", "600"), query="dedup")
    # A state store partition's directory, its files and listings; not partition 0's _metadata/schema, which the
    # driver writes (Spark's state schema check), nor what lies above.
    partitions = re.compile(re.escape(f"{pipeline.checkpoint_key}/state/0/") + r"\d+(/(?!_metadata)|$)")
    commit = f"{pipeline.checkpoint_key}/commits/{BATCHES - 1}"

    def reported() -> tuple[dict[str, dict[str, int]], Counter[str]]:
        if not any(r.key == commit and r.status == 200 for r in pipeline.requests(pipeline.checkpoint_key)):
            raise NotReady(f"{commit} not written yet")
        metrics = _executor_metrics(csv_dir)
        seen = Counter(r.operation for r in pipeline.requests() if partitions.match(r.key))
        counted = sum(m.get(f"{op}.requests", 0) for m in metrics.values() for op in OPERATIONS)
        if counted != sum(seen.values()):
            keys = Counter((r.operation, r.key.rsplit("/state/0/", 1)[1]) for r in pipeline.requests()
                           if partitions.match(r.key))
            raise NotReady(f"executors counted {counted} requests, the server saw {dict(keys)}: "
                           f"{ {e: {k: v for k, v in m.items() if v} for e, m in metrics.items()} }")
        return metrics, seen

    try:
        metrics, seen = wait_ready("the executors' CSV metrics", reported, 300, exit_code=job.process.poll,
                                   log_path=job.log_path)
    finally:
        stop.touch()
    outcome = job.wait(timeout=600)
    assert outcome["status"] == "ok", job.tail()

    assert metrics, "no executor wrote checkpointfs metrics"
    total = Counter[str]()
    for executor in metrics.values():
        total.update(executor)
    state_files = {r.key for r in pipeline.requests() if partitions.match(r.key) and r.operation == "PutObject"
                   and r.status == 200}
    assert state_files, seen
    assert total["createIfAbsent.calls"] + total["createOverwrite.calls"] == len(state_files), (total, state_files)
    writes = seen["PutObject"] + seen["DeleteObject"]
    assert total["createIfAbsent.requests"] + total["createOverwrite.requests"] + total["delete.requests"] == writes
    assert all(total[f"{op}.failures"] == 0 for op in OPERATIONS), total
