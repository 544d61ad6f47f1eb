"""Spark benchmark: a Spark 4.3 streaming query checkpointing on s3a:// through the checkpointfs shim, through
Spark's default (rename-based, FileContext) manager -- the anchor -- and through Spark's
AbortableStreamBasedCheckpointFileManager, on the embedded S3: requests per micro-batch counted at the server, and
the median micro-batch duration Spark reports, without and with the latency model (a distant store: 20 ms a request,
200 MiB/s each way, copies at 100 MiB/s, as in bench_sizes and bench_jvm_commit).

Each (manager, query, latency) runs once as its own driver process (``python -m harness.job``); the
queries are ``append`` (stateless: file source -> JSON file sink) and ``dedup`` (dropDuplicates: a state store)."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.faults import Latency
from harness.spark_demo import Demo

from .latency import LATENCY
from .rotation import rotated

RESULTS = Path(__file__).parent / "results"


MANAGERS = ("default", "shim", "abortable")
"""``default`` (Spark's FileContext-based rename manager) is the anchor; every ratio is to it."""


def run(files: int, latencies_ms: Sequence[float], managers: Sequence[str] = MANAGERS) -> dict[str, Any]:
    """Measure every combination; returns the results document."""
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp, EmbeddedS3(["checkpoints"]) as s3:
        demo = Demo(s3, Path(tmp), files)
        demo.write_input()
        for combination, latency_ms in enumerate(latencies_ms):
            s3.faults.latency = (Latency(per_request_s=latency_ms / 1000,
                                         bandwidth_bytes_per_s=LATENCY.bandwidth_bytes_per_s,
                                         copy_bytes_per_s=LATENCY.copy_bytes_per_s) if latency_ms else None)
            for q, query in enumerate(("append", "dedup")):
                for manager in rotated(list(managers), 2 * combination + q):  # no manager always runs first
                    name = f"{manager}-{query}-{latency_ms:g}ms"
                    run_ = demo.start(name, manager, query=query)
                    outcome = demo.finish(run_)
                    if outcome["status"] != "ok":
                        raise RuntimeError(f"{name}: {outcome.get('error')}")
                    total, per_op, measured = demo.per_batch(name, run_.first_request)
                    row = {"manager": manager, "query": query, "latency_ms_per_request": latency_ms,
                           "batches": outcome["batches"], "batches_measured": measured,
                           "requests_per_batch": round(total, 2),
                           "requests_per_batch_by_operation": {k: round(v, 2) for k, v in per_op.items()},
                           "batch_ms_median": outcome.get("batch_ms_median")}
                    results.append(row)
                    print(f"{name:<26} {total:7.1f} requests/batch  median batch {row['batch_ms_median']} ms",
                          flush=True)
        s3.faults.latency = None
    for row in results:
        anchor = next(r for r in results if r["manager"] == "default" and r["query"] == row["query"]
                      and r["latency_ms_per_request"] == row["latency_ms_per_request"])
        row["requests_vs_default"] = round(row["requests_per_batch"] / anchor["requests_per_batch"], 3)
        if row["batch_ms_median"] and anchor["batch_ms_median"]:
            row["batch_time_vs_default"] = round(row["batch_ms_median"] / anchor["batch_ms_median"], 3)
    return {"files": files, "store": "embedded S3 (moto) on 127.0.0.1; latency model: per request as listed, "
            f"{(LATENCY.bandwidth_bytes_per_s or 0) / 2**20:g} MiB/s each way, copies at "
            f"{(LATENCY.copy_bytes_per_s or 0) / 2**20:g} MiB/s",
            "spark": "pyspark 4.3.0 local[2], 2 shuffle partitions, HDFS-backed state store", "anchor": "default",
            "results": results}


def plot(doc: dict[str, Any], path: Path) -> None:
    """Requests and median duration per micro-batch: query x latency groups, one bar per manager."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = doc["results"]
    groups = sorted({(r["query"], r["latency_ms_per_request"]) for r in rows}, key=lambda g: (g[1], g[0]))
    managers = [m for m in MANAGERS if any(r["manager"] == m for r in rows)]
    labels = {"default": "Spark default (rename, anchor)", "shim": "checkpointfs shim",
              "abortable": "Spark AbortableStream"}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    width = 0.8 / len(managers)
    for ax, field, title in ((axes[0], "requests_per_batch", "S3 requests per micro-batch"),
                             (axes[1], "batch_ms_median", "micro-batch duration (ms, median)")):
        for i, manager in enumerate(managers):
            values = []
            for query, latency in groups:
                row = next((r for r in rows if r["manager"] == manager and r["query"] == query
                            and r["latency_ms_per_request"] == latency), None)
                values.append(row[field] or 0 if row else 0)
            ax.bar([g + (i - (len(managers) - 1) / 2) * width for g in range(len(groups))], values, width,
                   label=labels.get(manager, manager))
        ax.set_xticks(list(range(len(groups))))
        ax.set_xticklabels([f"{q}\n{lat:g} ms/request" for q, lat in groups])
        ax.set_title(title)
        ax.grid(True, axis="y", alpha=0.3)
    axes[1].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"Spark micro-batches ({doc['files']} input files, one per batch), stateless (append) and "
                 "stateful (dedup)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Run and write benchmarks/results/spark.json."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_spark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=8, help="input files, one micro-batch each (default 8)")
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, LATENCY.per_request_s * 1000],
                        help="per-request latencies of the store model to run with (default 0 and 20 ms)")
    parser.add_argument("--managers", nargs="+", choices=MANAGERS, default=list(MANAGERS))
    args = parser.parse_args(argv)
    document = run(args.files, args.latency_ms, args.managers)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "spark.json").write_text(json.dumps(document, indent=2) + "\n")
    plot(document, RESULTS / "spark.png")
    print(f"wrote {RESULTS / 'spark.json'} and spark.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
