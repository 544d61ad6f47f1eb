"""Spark benchmark: a Spark 4.3 streaming query checkpointing on s3a:// through the checkpointfs shim and through
Spark's default (rename-based) manager, on the embedded S3: requests per micro-batch counted at the server, and the
median micro-batch duration Spark reports, without and with a per-request latency model (a distant store).

Each (manager, query, latency) runs once as its own driver process (``python -m checkpointfs.spark.job``); the
queries are ``append`` (stateless: file source -> JSON file sink) and ``dedup`` (dropDuplicates: a state store)."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from checkpointfs.spark.demo import Demo
from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.faults import Latency

RESULTS = Path(__file__).parent / "results"


MANAGERS = ("default", "shim", "abortable")
"""``default`` (Spark's FileContext-based rename manager) is the anchor; every ratio is to it."""


def run(files: int, latencies_ms: Sequence[float], managers: Sequence[str] = MANAGERS) -> dict[str, Any]:
    """Measure every combination; returns the results document."""
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp, EmbeddedS3(["checkpoints"]) as s3:
        demo = Demo(s3, Path(tmp), files)
        demo.write_input()
        for latency_ms in latencies_ms:
            s3.faults.latency = Latency(per_request_s=latency_ms / 1000) if latency_ms else None
            for query in ("append", "dedup"):
                for manager in managers:
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
                    print(f"{name:<22} {total:7.1f} requests/batch  median batch {row['batch_ms_median']} ms",
                          flush=True)
        s3.faults.latency = None
    return {"files": files, "store": "embedded S3 (moto) on 127.0.0.1; latency model per request as listed",
            "spark": "pyspark 4.3.0 local[2], 2 shuffle partitions, HDFS-backed state store", "results": results}


def main(argv: Sequence[str] | None = None) -> int:
    """Run and write benchmarks/results/spark.json."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_spark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=12, help="input files, one micro-batch each (default 12)")
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 15.0],
                        help="per-request latencies of the store model to run with (default 0 and 15 ms)")
    args = parser.parse_args(argv)
    document = run(args.files, args.latency_ms)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "spark.json").write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {RESULTS / 'spark.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
