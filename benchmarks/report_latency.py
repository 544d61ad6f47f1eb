"""What docs/benchmarks.md section 7 quotes: ``bench_latency``'s batch times across store latencies (latency.json)
against the dependent floor and the CPU time, and the monthly bill of the README's 200-partition query at S3 Standard's
and S3 Express One Zone's list prices (from ``bench_scale``'s request mix, scale.json: requests do not depend on the
latency)."""

from __future__ import annotations

from typing import Any

from benchmarks.bill import PRICE_LISTS, monthly_bill
from benchmarks.report import _load

NAMES = {"shim": "checkpointfs shim", "default": "Spark's default", "abortable": "Spark's Abortable"}
ORDER = ("shim", "abortable", "default")
BILL_PARTITIONS = 200
BILL_LATENCY_MS = 20.0
BATCH_INTERVAL_S = 10.0


def _rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(doc["results"], key=lambda r: (not r["changelog"], r["latency_ms_per_request"],
                                                 ORDER.index(r["contender"])))


def _same(doc: dict[str, Any], row: dict[str, Any], contender: str) -> dict[str, Any] | None:
    return next((r for r in doc["results"] if r["contender"] == contender and r["changelog"] == row["changelog"]
                 and r["latency_ms_per_request"] == row["latency_ms_per_request"]), None)


def latency() -> str:
    """The table: one row per (changelog, latency, manager)."""
    doc = _load("latency")
    when = (f"measured {doc['started_utc']} to {doc['measured_utc']}" if doc.get("started_utc")
            else f"last row measured {doc['measured_utc']}")
    stopped = ("" if doc.get("complete", True) else
               " The run was stopped before it measured every combination: a combination without a row was not run.")
    out = [f"{doc['results'][0]['partitions']} shuffle partitions, {doc['files']} input files, one run each; "
           f"{when} (pyspark {doc['pyspark']}). Batch time: Spark's, median after batch 0 (min-max); wall and CPU: "
           f"between the first and last commit-log write, per batch.{stopped}\n",
           "| changelog | latency | manager | batch time | x default | requests a batch | dependent requests | "
           "dependent floor | batch / floor | wall a batch | CPU a batch: driver / cluster | CPU / wall |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in _rows(doc):
        b = r["batch_ms"]
        default = _same(doc, r, "default")
        ratio = (f"{b['median'] / default['batch_ms']['median']:.2f}" if default and default["batch_ms"]["median"]
                 else "")
        floor = r.get("dependent_floor_ms")
        cpu = r.get("cpu") or {}
        per = cpu.get("cpu_s_per_batch") or {}
        wall = cpu.get("wall_s_per_batch")
        total = cpu.get("cpu_s_per_batch_total")
        head = (f"| {'on' if r['changelog'] else 'off'} | {r['latency_ms_per_request']:g} ms | "
                f"{NAMES[r['contender']]} | **{b['median'] / 1000:.2f} s** ({b['min'] / 1000:.2f}-"
                f"{b['max'] / 1000:.2f}) | {ratio} | {r.get('requests_per_batch', 0):,.1f} | "
                f"{r.get('dependent_requests_per_batch', 0):,.1f} |")
        tail = (f" {floor / 1000:.2f} s | {b['median'] / floor:.1f} |" if floor else " | |")
        tail += (f" {wall:.2f} s | {per.get('driver', 0):.2f} / {per.get('cluster', 0):.2f} s | {total / wall:.2f} |"
                 if wall and total is not None else " | | |")
        out.append(head + tail)
    return "\n".join(out) + "\n"


def latency_summary() -> str:
    """Per changelog setting and manager: how the batch time grows from the lowest latency to the highest, against
    how its floor grows."""
    doc = _load("latency")
    out = []
    latencies = sorted({r["latency_ms_per_request"] for r in doc["results"]})
    low, high = latencies[0], latencies[-1]
    for changelog in (True, False):
        for contender in ORDER:
            rows = {r["latency_ms_per_request"]: r for r in doc["results"]
                    if r["contender"] == contender and r["changelog"] == changelog}
            if low == high or low not in rows or high not in rows:
                continue
            a, b = rows[low], rows[high]
            grew = (b["batch_ms"]["median"] - a["batch_ms"]["median"]) / 1000
            floor = (b.get("dependent_floor_ms", 0) - a.get("dependent_floor_ms", 0)) / 1000
            cpu_a = (a.get("cpu") or {}).get("cpu_s_per_batch_total")
            cpu_b = (b.get("cpu") or {}).get("cpu_s_per_batch_total")
            text = (f"- {NAMES[contender]}, changelog {'on' if changelog else 'off'}: from {low:g} ms to {high:g} ms "
                    f"a request the median batch grows by {grew:.2f} s, its dependent floor by {floor:.2f} s")
            if cpu_a is not None and cpu_b is not None:
                text += f"; CPU a batch {cpu_a:.2f} s and {cpu_b:.2f} s"
            out.append(text + ".")
    return "\n".join(out) + "\n"


def express_bill() -> str:
    """The README's query (200 partitions, one batch every 10 s) a month at each price list, per manager."""
    doc = _load("scale")
    lists = list(PRICE_LISTS)
    out = [f"{BILL_PARTITIONS} partitions, changelog checkpointing on, one micro-batch every {BATCH_INTERVAL_S:g} s, "
           "every request of the query, request prices only (`benchmarks/bill.py`):\n",
           "| manager | requests a batch | " + " | ".join(lists) + " | Express / Standard |",
           "|---|---|" + "---|" * len(lists) + "---|"]
    for contender in ORDER:
        r = next((r for r in doc["results"] if r["contender"] == contender and r["partitions"] == BILL_PARTITIONS
                  and r["changelog"] and r["latency_ms_per_request"] == BILL_LATENCY_MS
                  and not r["throttle_writes_per_s"]), None)
        if r is None or "requests_per_batch_by_operation" not in r:
            continue
        every = [monthly_bill(r["requests_per_batch_by_operation"], BATCH_INTERVAL_S, PRICE_LISTS[n]).total_usd
                 for n in lists]
        cells = " | ".join(f"${e:,.0f}" for e in every)
        out.append(f"| {NAMES[contender]} | {r['requests_per_batch']:,.1f} | {cells} | {every[-1] / every[0]:.3f} |")
    return "\n".join(out) + "\n"

