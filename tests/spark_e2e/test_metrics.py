"""The shim's metrics in Spark's metrics system, read as an operator reads them: the driver's JSON metrics servlet
(``/metrics/json/``) and ``PrometheusServlet`` (``/metrics/prometheus/``) of a running query on the embedded S3, with
nothing set beyond what ``configure()`` adds (the plugin, the request counter) and the servlet's own settings; the
counts against the requests the server saw for the checkpoint's keys."""

from __future__ import annotations

import json
import re
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from checkpointfs.protocol.metrics import COUNTERS, METRICS, OPERATIONS
from checkpointfs.testing import Request
from checkpointfs.testing.readiness import NotReady, wait_ready

from .conftest import Pipeline

pytestmark = [pytest.mark.spark]

SOURCE = "plugin.io.checkpointfs.spark.CheckpointfsPlugin"
"""The source Spark's plugin API registers the shim's metrics under (``plugin.<class name>``)."""
PROMETHEUS_SERVLET = (
    "--conf", "spark.metrics.conf.*.sink.prometheusServlet.class=org.apache.spark.metrics.sink.PrometheusServlet",
    "--conf", "spark.metrics.conf.*.sink.prometheusServlet.path=/metrics/prometheus")
"""What Spark's monitoring guide says to set for ``/metrics/prometheus/``; ``/metrics/json/`` is on by default."""
BATCHES = 3


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as answer:
        return str(answer.read().decode())


def _from_json(ui: str) -> dict[str, int]:
    """The checkpointfs metrics of the driver's JSON servlet by their table name: a counter's count, a timer's."""
    data = json.loads(_get(f"{ui}/metrics/json/"))
    marker = f".driver.{SOURCE}."
    return {name.split(marker, 1)[1]: int(value["count"])
            for kind in ("counters", "timers") for name, value in data.get(kind, {}).items() if marker in name}


def _from_prometheus(ui: str) -> dict[str, int]:
    """The checkpointfs counters of ``PrometheusServlet``'s text, by their table name."""
    text = _get(f"{ui}/metrics/prometheus/")
    flat = {name.replace(".", "_"): name for name in METRICS}
    pattern = re.compile(r'_driver_' + SOURCE.replace(".", "_") + r'_(\w+)_Count\{type="(counters|timers)"\} (\d+)')
    return {flat[m.group(1)]: int(m.group(3)) for m in pattern.finditer(text) if m.group(1) in flat}


def _checkpoint_requests(pipeline: Pipeline) -> list[Request]:
    """What the server saw for the checkpoint's keys: the checkpoint and the file sink's ``_spark_metadata`` log (not
    the sink's data files, which Spark writes without a checkpoint manager)."""
    return [r for r in pipeline.requests() if r.key.startswith(pipeline.checkpoint_key + "/")
            or r.key.startswith(f"{pipeline.output_key}/_spark_metadata")]


def test_driver_metrics_count_every_request_of_a_running_query(pipeline: Pipeline, tmp_path: Path) -> None:
    """While the query runs, both servlets show every metric of protocol.json's table; each create is one call,
    the bytes are the files' sizes, and the requests of all operations add up to the server's count for the
    checkpoint's keys, per kind of request: writes (PutObject, DeleteObject) to the creates, the rest to the
    probes, listings and reads."""
    for b in range(BATCHES):
        pipeline.add_input(b, list(range(b * 10, b * 10 + 10)))
    stop, ui_file = tmp_path / "stop", tmp_path / "ui"
    job = pipeline.start("--serve-until", str(stop), "--ui-url-file", str(ui_file),
                         "--conf", "spark.ui.enabled=true", "--conf", "spark.ui.port=0", *PROMETHEUS_SERVLET,
                         query="dedup")
    root = pipeline.checkpoint_key
    try:
        def committed() -> None:
            if not (ui_file.exists() and any(r.operation == "PutObject" and r.status == 200
                                             and r.key == f"{root}/commits/{BATCHES - 1}" for r in
                                             pipeline.requests(root))):
                raise NotReady(f"commits/{BATCHES - 1} not written yet")

        wait_ready("the query's last commit", committed, 300, exit_code=job.process.poll, log_path=job.log_path)
        ui = ui_file.read_text()
        # The last commit's PutObject was answered: its call ends as close() returns. The query is idle since.
        metrics = wait_ready("the last commit's call to end", lambda: _ended(_from_json(ui)), 60,
                             exit_code=job.process.poll, log_path=job.log_path)
        prometheus = _from_prometheus(ui)
        seen = _checkpoint_requests(pipeline)
    finally:
        stop.touch()
    outcome = job.wait()
    assert outcome["status"] == "ok", job.tail()

    assert set(metrics) == set(METRICS), set(METRICS) ^ set(metrics)
    assert {name: prometheus.get(name) for name in METRICS} == {name: metrics[name] for name in METRICS}

    by_kind = Counter(r.operation for r in seen)
    # the store check heads its canary's key while missing, then reads the canary back (what the store keeps),
    # counted with the create call it runs in
    canary_reads = sum(1 for r in seen if r.operation == "HeadObject" and "_checkpointfs-store-check-" in r.key)
    assert canary_reads == 2, [r for r in seen if "_checkpointfs-store-check-" in r.key]
    writes = by_kind["PutObject"] + by_kind["DeleteObject"] + canary_reads
    requests = {op: metrics[f"{op}.requests"] for op in OPERATIONS}
    assert sum(requests.values()) == len(seen), (requests, by_kind)
    assert requests["createIfAbsent"] + requests["createOverwrite"] + requests["delete"] == writes, (requests, by_kind)
    assert requests["exists"] + requests["list"] + requests["open"] == len(seen) - writes, (requests, by_kind)

    files = sorted({r.key for r in seen if r.operation == "PutObject" and "_checkpointfs-store-check-" not in r.key})
    assert metrics["createIfAbsent.calls"] + metrics["createOverwrite.calls"] == len(files), files
    client = pipeline.server.client(admin=True)
    sizes = sum(client.head_object(Bucket=pipeline.server.buckets[0], Key=k)["ContentLength"] for k in files)
    assert metrics["createIfAbsent.bytesWritten"] + metrics["createOverwrite.bytesWritten"] == sizes
    # The store check ran once in this JVM, on a store that refuses a second put-if-absent: 4 of the requests.
    assert (metrics["storeChecks"], metrics["storeCheckSafe"], metrics["storeCheckUnsafe"]) == (1, 1, 0)
    assert [metrics[name] for name in ("conflicts", "unknownOutcomes", "retries", "throttled")] == [0, 0, 0, 0]
    assert all(metrics[f"{op}.failures"] == 0 for op in OPERATIONS), metrics
    assert set(COUNTERS) <= set(prometheus)


def _ended(metrics: dict[str, int]) -> dict[str, int]:
    """``metrics`` once every create call counted has ended (a call's latency is recorded when it ends)."""
    for op in ("createIfAbsent", "createOverwrite"):
        if metrics.get(f"{op}.latency") != metrics.get(f"{op}.calls"):
            raise NotReady(f"{op}: {metrics.get(f'{op}.calls')} calls, {metrics.get(f'{op}.latency')} ended")
    return metrics
