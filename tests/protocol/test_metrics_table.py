"""The metrics table of protocol.json, as checkpointfs.protocol.metrics reads it: the names issue 24 asks for, in
both languages (the shim's plugin exposes the same ones)."""

from __future__ import annotations

from checkpointfs.protocol import load
from checkpointfs.protocol.metrics import COUNTERS, METRICS, OPERATIONS, PER_OPERATION, metric_name

EXPECTED_OPERATIONS = ("createIfAbsent", "createOverwrite", "open", "list", "exists", "delete")
EXPECTED_PER_OPERATION = {"calls": "counter", "requests": "counter", "bytesWritten": "counter",
                          "bytesRead": "counter", "failures": "counter", "latency": "timer"}
EXPECTED_COUNTERS = ("conflicts", "ambiguousSettled", "unknownOutcomes", "cancels", "abortedUploads",
                     "orphanUploadsCleaned", "retries", "throttled", "storeChecks", "storeCheckSafe",
                     "storeCheckUnsafe", "storeCheckUnavailable", "unexpectedDelegations")


def test_the_names_are_exactly_the_tables() -> None:
    assert OPERATIONS == EXPECTED_OPERATIONS
    assert {name: m.kind for name, m in PER_OPERATION.items()} == EXPECTED_PER_OPERATION
    assert tuple(COUNTERS) == EXPECTED_COUNTERS
    expected = [f"{op}.{short}" for op in EXPECTED_OPERATIONS for short in EXPECTED_PER_OPERATION]
    assert list(METRICS) == expected + list(EXPECTED_COUNTERS)
    assert {name for name, m in METRICS.items() if m.kind == "timer"} == {f"{op}.latency" for op in OPERATIONS}


def test_every_metric_says_what_it_counts_as_the_table_does() -> None:
    table = load()["metrics"]
    for name, metric in METRICS.items():
        assert metric.about and metric.name == name
        if metric.operation is None:
            assert metric.about == table["counters"][name]
        else:
            assert metric.about.endswith(table["per_operation"][name.split(".", 1)[1]]["about"])
    assert metric_name("open", "bytesRead") == "open.bytesRead"
