"""JVM commit benchmark: requests per checkpoint-file commit and commit latency for every manager a Spark user could
choose, side by side in one run, on the embedded S3 without and with the latency model; then commit time against
file size for the same managers.

Contenders (all against the same EmbeddedS3; requests counted at the server):

- ``spark_filecontext``: Spark's default manager on s3a:// (FileContextBasedCheckpointFileManager: write a temp
  file, rename it) -- the anchor;
- ``spark_filesystem``: Spark's fallback rename manager (FileSystemBasedCheckpointFileManager);
- ``spark_abortable``: Spark's AbortableStreamBasedCheckpointFileManager (spark-hadoop-cloud: write in place,
  abort on cancel);
- ``jvm_shim``: checkpointfs's DirectWriteCheckpointFileManager (put-if-absent, no rename);
- ``python_direct``: checkpointfs's Python DirectWriteManager;
- ``raw_put_floor``: one boto3 put_object per commit (the floor: one request).

The JVM managers run in one SparkSession (local[1]) and are driven through
:class:`~checkpointfs.spark.jvm_manager.JvmCheckpointFileManager` (py4j): ``createAtomic``, ``write``, ``close``,
the calls Spark's HDFSMetadataLog makes. As in Spark, a log's directory is made (``mkdirs``) once before its first
commit, outside the timed and counted part. Contenders run interleaved in rounds (their order rotates every round),
so every ratio compares figures taken side by side on the same noisy machine.

Results: benchmarks/results/jvm_commit.json, jvm_commit.png (requests and latency per commit) and jvm_sizes.png
(commit time against size).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.baselines import raw_put
from benchmarks.latency import KIB, LATENCY, MIB
from benchmarks.rotation import rotated
from checkpointfs import DirectWriteManager
from checkpointfs.spark.jvm_manager import (
    ABORTABLE_STREAM_MANAGER,
    FILE_CONTEXT_MANAGER,
    FILE_SYSTEM_MANAGER,
    JvmCheckpointFileManager,
)
from checkpointfs.testing import EmbeddedS3, FaultPlan
from harness.demo import checkpoint_file

RESULTS = Path(__file__).parent / "results"
BUCKET = "checkpoints"
SIZES = [KIB, 64 * KIB, MIB, 8 * MIB, 64 * MIB]
ANCHOR = "spark_filecontext"
FLOOR = "raw_put_floor"
LABELS = {
    "spark_filecontext": "Spark default: FileContext rename (anchor)",
    "spark_filesystem": "Spark FileSystem rename",
    "spark_abortable": "Spark AbortableStream",
    "jvm_shim": "checkpointfs JVM shim",
    "python_direct": "checkpointfs Python DirectWriteManager",
    "raw_put_floor": "raw put_object (floor)",
}
JVM_CLASSES = {
    "spark_filecontext": FILE_CONTEXT_MANAGER,
    "spark_filesystem": FILE_SYSTEM_MANAGER,
    "spark_abortable": ABORTABLE_STREAM_MANAGER,
    "jvm_shim": "io.checkpointfs.spark.DirectWriteCheckpointFileManager",
}

Commit = Callable[[str, bytes], None]
"""Commit ``data`` as the file at key ``key`` (relative to the bucket)."""


def _session(s3: EmbeddedS3) -> Any:
    from pyspark.sql import SparkSession

    from checkpointfs.spark import configure
    from checkpointfs.spark._jars import conformance_jars

    builder = (SparkSession.builder.master("local[1]").appName("checkpointfs-bench-jvm-commit")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "1g"))
    spark = configure(builder, s3, extra_jars=conformance_jars()).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class Contenders:
    """Every contender's commit function, and the directory preparation each needs (untimed)."""

    def __init__(self, spark: Any, s3: EmbeddedS3) -> None:
        self.s3 = s3
        self.jvm = {name: JvmCheckpointFileManager(spark, s3.uri(f"jvm-commit/{name}", scheme="s3a"),
                                                   manager_class=cls) for name, cls in JVM_CLASSES.items()}
        self.direct = DirectWriteManager(**s3.manager_options())
        self.client = s3.client()

    def names(self) -> list[str]:
        return [ANCHOR, "spark_filesystem", "spark_abortable", "jvm_shim", "python_direct", FLOOR]

    def prepare(self, name: str, directory: str) -> None:
        """What Spark does once per log before its first commit: make the directory (not measured)."""
        if name in self.jvm:
            self.jvm[name].mkdirs(self.s3.uri(directory, scheme="s3a"))

    def commit(self, name: str) -> Commit:
        if name in self.jvm:
            manager = self.jvm[name]

            def jvm_commit(key: str, data: bytes) -> None:
                with manager.create_atomic(self.s3.uri(key, scheme="s3a")) as out:
                    for start in range(0, len(data), 4 * MIB):
                        out.write(data[start:start + 4 * MIB])

            return jvm_commit
        if name == "python_direct":
            def direct_commit(key: str, data: bytes) -> None:
                with self.direct.create_atomic(self.s3.uri(key)) as out:
                    for start in range(0, len(data), 4 * MIB):
                        out.write(data[start:start + 4 * MIB])

            return direct_commit
        return lambda key, data: raw_put(self.client, BUCKET, key, data)

    def close(self) -> None:
        for manager in self.jvm.values():
            manager.close()


def _wait_quiet(s3: EmbeddedS3) -> None:
    """Let requests still in flight (S3A's asynchronous cleanups, if any) land before counting stops."""
    seen = -1
    while seen != len(s3.requests):
        seen = len(s3.requests)
        time.sleep(0.05)


def commit_series(s3: EmbeddedS3, contenders: Contenders, series: str, commits: int, rounds: int) -> dict[str, Any]:
    """Rounds of ``commits`` small checkpoint-file commits per contender; per-commit requests and latency."""
    names = contenders.names()
    times: dict[str, list[float]] = {n: [] for n in names}
    requests: dict[str, dict[str, int]] = {n: {} for n in names}
    for r in range(rounds):
        for name in rotated(names, r):
            directory = f"jvm-commit/{name}/{series}/{r}/offsets"
            contenders.prepare(name, directory)
            commit = contenders.commit(name)
            _wait_quiet(s3)
            s3.requests.clear()
            for batch in range(commits):
                data = checkpoint_file(batch)
                start = time.perf_counter()
                commit(f"{directory}/{batch}", data)
                times[name].append(time.perf_counter() - start)
            _wait_quiet(s3)
            for op, n in s3.requests.counts().items():
                requests[name][op] = requests[name].get(op, 0) + n
    total = commits * rounds
    results: dict[str, Any] = {}
    for name in names:
        per_op = {op: n / total for op, n in sorted(requests[name].items())}
        ordered = sorted(times[name])
        results[name] = {
            "label": LABELS[name],
            "requests_per_commit": sum(per_op.values()),
            "requests_per_commit_by_operation": per_op,
            "commit_ms_median": statistics.median(ordered) * 1000,
            "commit_ms_p90": ordered[int(0.9 * (len(ordered) - 1))] * 1000,
            "commit_ms_mean": statistics.fmean(ordered) * 1000,
        }
    for name in names:
        row, anchor, floor = results[name], results[ANCHOR], results[FLOOR]
        row["requests_vs_anchor"] = row["requests_per_commit"] / anchor["requests_per_commit"]
        row["requests_vs_floor"] = row["requests_per_commit"] / floor["requests_per_commit"]
        row["latency_vs_anchor"] = row["commit_ms_median"] / anchor["commit_ms_median"]
        row["latency_vs_floor"] = row["commit_ms_median"] / floor["commit_ms_median"]
    return {"commits_per_round": commits, "rounds": rounds, "file_bytes": len(checkpoint_file(0)),
            "results": results}


def size_series(s3: EmbeddedS3, contenders: Contenders, series: str, sizes: Sequence[int],
                repeat: int) -> list[dict[str, Any]]:
    """Commit time (median of ``repeat``) and requests against file size, every contender at each size in turn."""
    rows = []
    for size in sizes:
        data = os.urandom(min(size, 8 * MIB)) * max(1, size // (8 * MIB))
        row: dict[str, Any] = {"size_bytes": len(data)}
        for name in contenders.names():
            directory = f"jvm-sizes/{name}/{series}/{size}"
            contenders.prepare(name, directory)
            commit = contenders.commit(name)
            spent = []
            _wait_quiet(s3)
            s3.requests.clear()
            for i in range(repeat):
                start = time.perf_counter()
                commit(f"{directory}/{i}", data)
                spent.append(time.perf_counter() - start)
            _wait_quiet(s3)
            row[f"{name}_s"] = statistics.median(spent)
            row[f"{name}_requests"] = len(s3.requests) / repeat
            row[f"{name}_copy_requests"] = sum(
                n for op, n in s3.requests.counts().items() if op in ("CopyObject", "UploadPartCopy")) / repeat
        for name in contenders.names():
            row[f"{name}_vs_anchor"] = row[f"{name}_s"] / row[f"{ANCHOR}_s"]
            row[f"{name}_vs_floor"] = row[f"{name}_s"] / row[f"{FLOOR}_s"]
        rows.append(row)
        print(f"  [{series}] {len(data):>10} B: " + "  ".join(
            f"{n}={row[f'{n}_s'] * 1000:.0f}ms" for n in contenders.names()), flush=True)
        plan = s3.faults
        s3.reset()  # frees the store's memory between sizes (the JVM managers' directories are made again)
        s3.faults = plan
    return rows


def run(commits: int, rounds: int, latency_commits: int, sizes: Sequence[int], repeat: int) -> dict[str, Any]:
    """Both series of commits, then both series of sizes; returns the results document."""
    doc: dict[str, Any] = {
        "store": "embedded S3 (moto over HTTP on 127.0.0.1), requests counted at the server",
        "latency_model": {"per_request_s": LATENCY.per_request_s,
                          "bandwidth_bytes_per_s": LATENCY.bandwidth_bytes_per_s,
                          "copy_bytes_per_s": LATENCY.copy_bytes_per_s},
        "spark": "pyspark 4.3.0 local[1], one SparkSession; JVM managers driven through py4j "
                 "(JvmCheckpointFileManager)",
        "anchor": ANCHOR, "floor": FLOOR, "cpus": os.cpu_count(),
    }
    with EmbeddedS3([BUCKET]) as s3:
        spark = _session(s3)
        contenders = Contenders(spark, s3)
        try:
            for series, plan, n in (("local", FaultPlan(), commits), ("latency", FaultPlan(latency=LATENCY),
                                                                    latency_commits)):
                s3.faults = plan
                doc[f"commit_{series}"] = commit_series(s3, contenders, series, n, rounds)
                _print_commits(series, doc[f"commit_{series}"])
            for series, plan in (("local", FaultPlan()), ("latency", FaultPlan(latency=LATENCY))):
                s3.faults = plan
                doc[f"sizes_{series}"] = size_series(s3, contenders, series, sizes, repeat)
            doc["sizes_repeat"] = repeat
        finally:
            s3.faults = FaultPlan()
            contenders.close()
            spark.stop()
    return doc


def _print_commits(series: str, part: dict[str, Any]) -> None:
    print(f"-- {series}: {part['rounds']} rounds x {part['commits_per_round']} commits of {part['file_bytes']} B")
    print(f"{'contender':<20} {'req/commit':>10} {'x anchor':>9} {'x floor':>8} {'ms p50':>8} {'x anchor':>9} "
          f"{'x floor':>8}")
    for name, r in part["results"].items():
        print(f"{name:<20} {r['requests_per_commit']:>10.2f} {r['requests_vs_anchor']:>9.2f} "
              f"{r['requests_vs_floor']:>8.2f} {r['commit_ms_median']:>8.2f} {r['latency_vs_anchor']:>9.2f} "
              f"{r['latency_vs_floor']:>8.2f}", flush=True)


def plot(doc: dict[str, Any]) -> None:
    """jvm_commit.png: requests and median latency per commit, both series; jvm_sizes.png: time against size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(doc["commit_local"]["results"])
    short = ["FileContext\n(anchor)", "FileSystem", "Abortable", "JVM shim", "Python\ndirect", "put_object\n(floor)"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    x = range(len(names))
    width = 0.38
    local, lat = doc["commit_local"]["results"], doc["commit_latency"]["results"]
    axes[0].bar(x, [local[n]["requests_per_commit"] for n in names], color="tab:blue")
    axes[0].set_title("S3 requests per commit")
    for ax, series, title in ((axes[1], local, "commit latency, no latency model (ms, median)"),
                              (axes[2], lat, "commit latency, latency model (ms, median)")):
        ax.bar([i - width / 2 for i in x], [series[n]["commit_ms_median"] for n in names], width, label="median")
        ax.bar([i + width / 2 for i in x], [series[n]["commit_ms_p90"] for n in names], width, label="p90",
               alpha=0.6)
        ax.set_title(title)
        ax.legend()
    for ax in axes:
        ax.set_xticks(list(x))
        ax.set_xticklabels(short, fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    for i, n in enumerate(names):
        axes[0].text(i, local[n]["requests_per_commit"], f"{local[n]['requests_per_commit']:.1f}", ha="center",
                     va="bottom", fontsize=8)
    model = doc["latency_model"]
    fig.suptitle(f"Checkpoint-file commit ({doc['commit_local']['file_bytes']} B) per manager; latency model: "
                 f"{model['per_request_s'] * 1000:g} ms/request, {model['bandwidth_bytes_per_s'] / MIB:g} MiB/s, "
                 f"copy {model['copy_bytes_per_s'] / MIB:g} MiB/s")
    fig.tight_layout()
    fig.savefig(RESULTS / "jvm_commit.png", dpi=80)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    for ax, (title, rows) in zip(axes, (("embedded S3, no latency model", doc["sizes_local"]),
                                        ("with latency model", doc["sizes_latency"])), strict=True):
        sizes = [r["size_bytes"] for r in rows]
        for n in names:
            ax.loglog(sizes, [r[f"{n}_s"] for r in rows], marker="o", label=LABELS[n])
        ax.set_title(title)
        ax.set_xlabel("file size (bytes)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("commit time (s, median)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Commit time against file size, every manager (JVM ones through py4j)")
    fig.tight_layout()
    fig.savefig(RESULTS / "jvm_sizes.png", dpi=80)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Run; write benchmarks/results/jvm_commit.json, jvm_commit.png and jvm_sizes.png."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_jvm_commit",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=40, help="commits per contender per round, no latency")
    parser.add_argument("--latency-commits", type=int, default=15, help="the same, with the latency model")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-size", type=int, default=max(SIZES), help="largest file of the size series (bytes)")
    parser.add_argument("--repeat", type=int, default=2, help="commits per contender and size")
    args = parser.parse_args(argv)
    sizes = [s for s in SIZES if s <= args.max_size]
    doc = run(args.commits, args.rounds, args.latency_commits, sizes, args.repeat)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "jvm_commit.json").write_text(json.dumps(doc, indent=2) + "\n")
    plot(doc)
    print(f"wrote {RESULTS / 'jvm_commit.json'}, jvm_commit.png, jvm_sizes.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
