"""Compaction throughput and peak memory of the sink log at 1e5, 1e6 and 1e7 entries, checkpointfs's Python
FileStreamSinkLog against Spark's own (org.apache.spark...sinks.FileStreamSinkLog, at 1e5 and 1e6 entries).

Each size runs in a fresh Python process on the local file system (RenameBasedManager, a temp directory): the log
holds a previous ``.compact`` file and nine plain batches of 1000 entries; the benchmark times the next compaction
batch (which reads them all and writes every entry again) and reads the process's RSS before it and its peak RSS
during it (Linux /proc: VmRSS, then VmHWM after resetting it).

Spark's side runs each size in a fresh driver (a Python process with its own SparkSession, local[1],
spark.driver.memory 2g), on the same log layout written in Spark's format; its FileStreamSinkLog is driven through
py4j: one warm-up compaction of a small log in the same JVM (JIT, class loading), then the measured ``add`` of the
compaction batch. Its memory is measured two ways: the JVM's heap (java.lang.management: the sum of the heap pools'
peak usage after resetting the peaks, an upper bound since the pools peak at different moments and young pools hold
garbage, minus the heap used after a full GC before: live data and garbage alike, it moves with G1's sizing of its
young generation), and the JVM process's RSS (Linux /proc/<jvm pid>: VmRSS before,
VmHWM after resetting it). The 1000 entries of the compaction batch are built in the JVM before the clock starts.
After it, the live size of every entry at once (what Spark's compaction holds: it reads them all into memory
before writing): the heap used after a full GC with ``log.allFiles()`` held, minus the heap used after one before.
Results: stdout, benchmarks/results/compaction.json and compaction.png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "compaction.json"
DEFAULT_SIZES = (100_000, 1_000_000, 10_000_000)
DEFAULT_SPARK_SIZES = (100_000, 1_000_000)
DELTA = 1000
INTERVAL = 10

REPO_ROOT = Path(__file__).resolve().parent.parent


def run_child(side: str, root: str, total: int) -> dict[str, Any]:
    """One side (``python`` or ``spark``) at one size, in a fresh process (benchmarks/compaction_child.py)."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.compaction_child", side, root, str(total), str(DELTA),
                           str(INTERVAL)], capture_output=True, text=True, cwd=REPO_ROOT)
    if done.returncode:
        raise RuntimeError(f"{side} compaction at {total} entries failed: {done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def run_spark_size(total: int) -> dict[str, Any]:
    """Run one size through Spark's FileStreamSinkLog in a fresh driver; its figures."""
    with tempfile.TemporaryDirectory(prefix="bench-compaction-spark-") as root:
        figures = run_child("spark", root, total)
    figures["entries_per_s"] = total / figures["seconds"]
    figures["heap_growth_mb"] = figures["heap_peak_mb"] - figures["heap_before_mb"]
    figures["jvm_rss_growth_mb"] = figures["jvm_rss_peak_mb"] - figures["jvm_rss_before_mb"]
    return figures


def plot(doc: dict[str, Any], path: Path) -> None:
    """Compaction time and peak memory against entries, Python against Spark."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    py, sp = doc["results"], doc["spark_results"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    axes[0].loglog([r["entries"] for r in py], [r["seconds"] for r in py], marker="o", label="checkpointfs (Python)")
    axes[0].loglog([r["entries"] for r in sp], [r["seconds"] for r in sp], marker="s", label="Spark FileStreamSinkLog")
    axes[0].set_title("compaction time (s)")
    axes[1].loglog([r["entries"] for r in py], [r["rss_growth_mb"] for r in py], marker="o",
                   label="Python: process RSS growth (VmHWM - VmRSS)")
    axes[1].loglog([r["entries"] for r in sp], [r["jvm_rss_growth_mb"] for r in sp], marker="s",
                   label="Spark: JVM RSS growth (VmHWM - VmRSS)")
    axes[1].loglog([r["entries"] for r in sp], [r["heap_growth_mb"] for r in sp], marker="^", linestyle="--",
                   label="Spark: heap peak - heap before (MXBeans)")
    axes[1].loglog([r["entries"] for r in sp], [r["entries_live_mb"] for r in sp], marker="v", linestyle=":",
                   label="Spark: live heap of all entries at once (after GC)")
    axes[1].set_title("memory taken by the compaction (MB)")
    for ax in axes:
        ax.set_xlabel("entries in the compacted log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Sink log compaction: checkpointfs (streaming) against Spark (in memory)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def run_size(total: int) -> dict[str, Any]:
    """Run one size in a child process; its figures."""
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as root:
        figures = run_child("python", root, total)
    figures["entries_per_s"] = total / figures["seconds"]
    figures["rss_growth_mb"] = figures["rss_peak_mb"] - figures["rss_before_mb"]
    return figures


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of the run with the median time, with every run's seconds, their min and max, and the largest
    memory growth seen."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    figures = dict(ordered[(len(ordered) - 1) // 2])
    figures["runs"] = len(runs)
    figures["seconds_all"] = [r["seconds"] for r in runs]
    figures["seconds_min"], figures["seconds_max"] = ordered[0]["seconds"], ordered[-1]["seconds"]
    for key in ("rss_growth_mb", "jvm_rss_growth_mb", "heap_growth_mb"):
        if key in figures:
            figures[f"{key}_max"] = max(r[key] for r in runs)
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; ``--sizes`` overrides the entry counts (comma-separated)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES))
    parser.add_argument("--spark-sizes", default=",".join(str(s) for s in DEFAULT_SPARK_SIZES),
                        help="entry counts for Spark's FileStreamSinkLog (comma-separated; empty: none)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each contender at each size, interleaved, their order rotating (default 3)")
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    spark_sizes = [int(float(s)) for s in args.spark_sizes.split(",") if s]
    runners = {"python": run_size, "spark": run_spark_size}
    results, spark_results = [], []
    load_before = os.getloadavg()
    print(f"{'entries':>12} {'contender':>9} {'round':>5} {'seconds':>9} {'entries/s':>11}")
    for total in sorted(set(sizes) | set(spark_sizes)):
        contenders = [c for c, wanted in (("python", total in sizes), ("spark", total in spark_sizes)) if wanted]
        runs: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
        for round_ in range(args.rounds):
            for contender in contenders[round_ % len(contenders):] + contenders[:round_ % len(contenders)]:
                figures = runners[contender](total)
                runs[contender].append(figures)
                print(f"{total:>12,} {contender:>9} {round_ + 1:>5} {figures['seconds']:>9.2f} "
                      f"{figures['entries_per_s']:>11,.0f}", flush=True)
        if "python" in runs:
            results.append(_summary(runs["python"]))
        if "spark" in runs:
            spark = _summary(runs["spark"])
            if "python" in runs:
                python = results[-1]
                spark["python_speedup"] = spark["seconds"] / python["seconds"]
                rounds = [s["seconds"] / p["seconds"] for p, s in zip(runs["python"], runs["spark"], strict=True)]
                spark["python_speedup_rounds"] = rounds
                spark["python_speedup_min"], spark["python_speedup_max"] = min(rounds), max(rounds)
                spark["python_memory_ratio"] = python["rss_growth_mb_max"] / spark["jvm_rss_growth_mb"]
            spark_results.append(spark)
            print(f"{total:>12,}: Spark s / Python s (medians of {args.rounds}) "
                  f"{spark.get('python_speedup', float('nan')):.2f}", flush=True)
    doc = {
        "benchmark": "sink log compaction (local file system): checkpointfs's FileStreamSinkLog (RenameBasedManager) "
                     "and Spark's FileStreamSinkLog (its default manager on file://) through py4j",
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "python": platform.python_version(), "cpus": os.cpu_count(), "delta_batch_entries": DELTA,
        "compact_interval": INTERVAL, "rounds": args.rounds,
        "method": "at each size, the contenders run in turn, each in a fresh process, their order rotating every "
                  "round; seconds are the median run's, with every run's, the min and the max",
        "results": results,
        "spark": "pyspark 4.3.0 local[1], spark.driver.memory 2g, one warm-up compaction before the measured one",
        "spark_results": spark_results,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    if spark_results:
        plot(doc, RESULTS.with_suffix(".png"))
    print(f"written {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
