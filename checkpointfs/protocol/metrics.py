"""The metrics table of ``protocol.json`` (section ``metrics``), typed: every name a manager counts, with its kind
and what it counts, the same in Python (:class:`checkpointfs.metrics.CheckpointMetrics`) and in the shim (Spark's
metrics system, through the plugin ``io.checkpointfs.spark.CheckpointfsPlugin``).

Each operation of the contract (:data:`OPERATIONS`) has the per-operation metrics (:data:`PER_OPERATION`), named
``<operation>.<metric>`` (``createIfAbsent.requests``); :data:`COUNTERS` are counted across operations.
:data:`METRICS` lists every name, in the table's order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from . import load

__all__ = ["COUNTERS", "METRICS", "OPERATIONS", "PER_OPERATION", "Metric", "MetricKind", "metric_name"]

MetricKind = Literal["counter", "timer"]


@dataclass(frozen=True)
class Metric:
    """One metric of the table: its full ``name``, its ``kind`` (a ``counter`` only grows; a ``timer`` counts
    calls and their durations), what it counts (``about``), and the ``operation`` it belongs to (None: counted
    across operations)."""

    name: str
    kind: MetricKind
    about: str
    operation: str | None = None


_DATA = load()["metrics"]

OPERATIONS: tuple[str, ...] = tuple(name for name in _DATA["operations"] if name != "about")
"""The contract's operations, in the table's order (``create_atomic`` is two: ``createIfAbsent`` and
``createOverwrite``)."""
PER_OPERATION: Mapping[str, Metric] = {
    name: Metric(name, spec["kind"], spec["about"]) for name, spec in _DATA["per_operation"].items()
    if name != "about"}
"""The metrics every operation has, by their short name (``requests``)."""


def metric_name(operation: str, metric: str) -> str:
    """The full name of ``operation``'s ``metric``: ``<operation>.<metric>``; KeyError for a name not in the table."""
    if operation not in OPERATIONS or metric not in PER_OPERATION:
        raise KeyError(f"no metric {operation}.{metric} in protocol.json: operations {', '.join(OPERATIONS)}; "
                       f"metrics {', '.join(PER_OPERATION)}")
    return f"{operation}.{metric}"


COUNTERS: Mapping[str, Metric] = {
    name: Metric(name, "counter", about) for name, about in _DATA["counters"].items() if name != "about"}
"""The counters counted across operations, by name."""

METRICS: Mapping[str, Metric] = {
    **{metric_name(op, short): Metric(metric_name(op, short), m.kind, f"{op}: {m.about}", op)
       for op in OPERATIONS for short, m in PER_OPERATION.items()},
    **COUNTERS,
}
"""Every metric of the table by its full name: the per-operation ones, operation by operation, then the
counters."""
