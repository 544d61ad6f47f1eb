"""The in-JVM commit benchmarks' bookkeeping (benchmarks/bench_jvm_inprocess.py, used by bench_jvm_cloud.py too):
requests split at the harness's markers, and a summary without a floor contender (gs://, abfs://)."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("py4j", reason="benchmarks.bench_jvm_inprocess imports the JVM manager (extra 'spark')")

from benchmarks.bench_jvm_inprocess import PREFIX, requests_by_phase, summarize
from checkpointfs.testing.requests import Request


def _mark(which: str, phase: str, operation: str = "HeadObject") -> Request:
    return Request(operation, "b", f"{PREFIX}/_marks/{which}/{phase}", 404)


def test_requests_are_split_at_the_markers_and_the_markers_are_not_counted() -> None:
    log = [
        Request("PutObject", "b", "warm-up/0", 200),  # before any phase: not counted
        _mark("begin", "small/latency/shim/r0"),
        Request("PutObject", "b", "x/0", 200),
        Request("PutObject", "b", "x/1", 200),
        _mark("end", "small/latency/shim/r0", operation="GetObject"),
        Request("DeleteObject", "b", "x/0", 204),  # between phases: not counted
        _mark("begin", "small/latency/default/r0"),
        Request("HeadObject", "b", "y/0", 404),
        Request("PutObject", "b", "y/.0.tmp", 200),
        Request("CopyObject", "b", "y/0", 200),
        _mark("end", "small/latency/default/r0"),
    ]
    assert requests_by_phase(log) == {
        "small/latency/shim/r0": Counter({"PutObject": 2}),
        "small/latency/default/r0": Counter({"HeadObject": 1, "PutObject": 1, "CopyObject": 1}),
    }


def test_a_run_without_a_floor_contender_is_summarized_without_ratios_to_it() -> None:
    phases = [{"id": f"small/latency/{c}/r{r}", "series": "latency", "kind": "small", "contender": c, "round": r,
               "size_bytes": 245, "cpu_ns": 1_000_000, "times_ns": [t * 1_000_000 for t in times]}
              for r in range(2) for c, times in (("jvm_shim", [20, 22, 21]), ("spark_filecontext", [480, 500, 520]))]
    requests = {str(p["id"]): Counter({"PutObject": 3} if p["contender"] == "jvm_shim" else
                                 {"PutObject": 3, "CopyObject": 3, "HeadObject": 30}) for p in phases}
    doc = summarize({"phases": phases}, requests)
    shim, default = doc["latency"]["small"]["jvm_shim"], doc["latency"]["small"]["spark_filecontext"]
    assert shim["commit_ms_median"] == 21 and shim["requests_per_commit"] == 1
    assert default["commit_ms_median"] == 500 and default["requests_per_commit"] == 12
    assert "latency_vs_floor" not in shim and doc["latency"]["sizes"] == []
    assert doc["local"] == {"small": {}, "sizes": []}
