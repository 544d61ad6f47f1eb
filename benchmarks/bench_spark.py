"""Spark benchmark: a Spark 4.3 streaming query checkpointing on s3a:// through the checkpointfs shim, through
Spark's default (rename-based, FileContext) manager -- the anchor -- and through Spark's
AbortableStreamBasedCheckpointFileManager, on the embedded S3: requests per micro-batch counted at the server, and
the median micro-batch duration Spark reports, without and with the latency model (a distant store: 20 ms a request,
200 MiB/s each way, copies at 100 MiB/s, as in bench_sizes and bench_jvm_commit).

Each (latency, query, manager) runs ``--runs`` times (default 3), each as its own driver process
(``python -m harness.job``), the managers' order rotating every round; the queries are ``append``
(stateless: file source -> JSON file sink), ``dedup`` (dropDuplicates, HDFS-backed state store) and
``dedup-rocksdb`` (the same with the RocksDB state store); asked for by name (``--queries``), ``changelog-v1`` and
``changelog-v2`` compare the state checkpoint formats: the dedup on RocksDB with changelog checkpointing, format v1
against format v2 with Spark 4.1's checkpoint file checksums (the ``.crc`` sidecars), written with ``--json
benchmarks/results/spark_format_v2.json``. Requests are split by key prefix (checkpoint, state, RocksDB
files, sink log, sink data, source), and the requests on the checkpoint's keys (checkpoint, state and RocksDB files)
are divided by the checkpoint files written there; the same is given for the files written through the checkpoint
manager alone (the RocksDB state store uploads its SST and archived log files with ``FileSystem.copyFromLocalFile``,
outside the manager)."""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from checkpointfs import protocol
from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.faults import Latency
from harness.spark_demo import Demo

from .latency import LATENCY
from .rotation import rotated

RESULTS = Path(__file__).parent / "results"


MANAGERS = ("default", "shim", "abortable")
"""``default`` (Spark's FileContext-based rename manager) is the anchor; every ratio is to it."""
_CHANGELOG = ("--conf", "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true")
QUERIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "append": ("append", "hdfs", ()), "dedup": ("dedup", "hdfs", ()), "dedup-rocksdb": ("dedup", "rocksdb", ()),
    "changelog-v1": ("dedup", "rocksdb", (*_CHANGELOG,
                                          "--conf", "spark.sql.streaming.stateStore.checkpointFormatVersion=1")),
    "changelog-v2": ("dedup", "rocksdb", (*_CHANGELOG,
                                          "--conf", "spark.sql.streaming.stateStore.checkpointFormatVersion=2",
                                          "--conf", "spark.sql.streaming.checkpoint.fileChecksum.enabled=true")),
}
"""Query name: (the job's --query, its --state-store, more job arguments)."""
DEFAULT_QUERIES = ("append", "dedup", "dedup-rocksdb")
"""The queries of ``spark.json``; the format comparison's are asked for by name."""
PREFIXES = ("checkpoint", "state", "rocksdb files", "sink log", "sink data", "source", "other")
"""Where a request's key lies: the checkpoint's logs and metadata, its state store's files written through the
checkpoint manager, the RocksDB state store's SST and archived log files (``state/<op>/<partition>/SSTs/`` and
``logs/``: RocksDBFileManager uploads them with ``FileSystem.copyFromLocalFile``, not through the checkpoint manager),
the sink's ``_spark_metadata``, the sink's data files, the source's input (local here, so none), anything else."""
CHECKPOINT_KEYS = ("checkpoint", "state", "rocksdb files")
"""The checkpoint's keys."""
MANAGER_KEYS = ("checkpoint", "state")
"""The checkpoint's keys of files written through the checkpoint manager."""
_ROCKSDB_FILE = re.compile(r"checkpoint/state/.+/(SSTs|logs)/.+")
WRITES = ("PutObject", "CopyObject", "CompleteMultipartUpload")


STORE_CHECK_CANARY = protocol.load()["store_check"]["canary_prefix"]
"""The store check's canary objects (checkpointfs.store.check): the shim's requests on them are counted per run."""


def key_prefix(name: str, key: str) -> str:
    """The part of run ``name``'s layout that ``key`` (bucket-relative) lies in; one of :data:`PREFIXES`."""
    rest = key[len(name) + 1:] if key.startswith(name + "/") else None
    if rest is None:
        return "other"
    if _ROCKSDB_FILE.fullmatch(rest):
        return "rocksdb files"
    if rest.startswith("checkpoint/state/") or rest == "checkpoint/state":
        return "state"
    if rest.startswith("checkpoint/") or rest == "checkpoint":
        return "checkpoint"
    if rest.startswith("output/_spark_metadata"):
        return "sink log"
    if rest.startswith("output"):
        return "sink data"
    if rest.startswith("input"):
        return "source"
    return "other"


def is_final_file(key: str) -> bool:
    """Whether a written key is a checkpoint file itself, not the temp file of a rename (``.name.uuid.tmp``)."""
    name = key.rsplit("/", 1)[-1]
    return not name.startswith(".") and not name.endswith(".tmp")


def steady_state(requests: Sequence[Any], name: str) -> dict[str, Any]:
    """Requests per micro-batch between run ``name``'s first and last commit-log write, by operation and by key
    prefix, with the checkpoint files written and the requests per such file: on every checkpoint key
    (:data:`CHECKPOINT_KEYS`), and on the keys of files written through the checkpoint manager
    (:data:`MANAGER_KEYS`)."""
    commit_key = re.compile(rf"{re.escape(name)}/checkpoint/commits/\d+")
    commits = [i for i, r in enumerate(requests) if r.status == 200 and r.operation in WRITES
               and commit_key.fullmatch(r.key)]
    batches = len(commits) - 1
    if batches < 1:
        raise RuntimeError(f"{name}: fewer than two commits seen; nothing to measure")
    window = requests[commits[0] + 1: commits[-1] + 1]
    by_op = Counter(r.operation for r in window)
    by_prefix = Counter(key_prefix(name, r.key) for r in window)
    by_prefix_op = Counter((key_prefix(name, r.key), r.operation) for r in window)
    written = Counter(key_prefix(name, r.key) for r in window
                      if r.status == 200 and r.operation in WRITES and is_final_file(r.key))
    files = sum(written[p] for p in CHECKPOINT_KEYS)
    on_checkpoint = sum(by_prefix[p] for p in CHECKPOINT_KEYS)
    manager_files = sum(written[p] for p in MANAGER_KEYS)
    on_manager_keys = sum(by_prefix[p] for p in MANAGER_KEYS)
    return {
        "batches_measured": batches,
        "requests_per_batch": len(window) / batches,
        "requests_per_batch_by_operation": {k: v / batches for k, v in sorted(by_op.items())},
        "requests_per_batch_by_prefix": {p: by_prefix[p] / batches for p in PREFIXES},
        "requests_per_batch_by_prefix_and_operation": {
            p: {op: n / batches for (q, op), n in sorted(by_prefix_op.items()) if q == p} for p in PREFIXES},
        "checkpoint_files_per_batch": files / batches,
        "checkpoint_requests_per_file": on_checkpoint / files if files else None,
        "manager_files_per_batch": manager_files / batches,
        "manager_requests_per_file": on_manager_keys / manager_files if manager_files else None,
        "rocksdb_files_per_batch": written["rocksdb files"] / batches,
        "rocksdb_requests_per_file": (by_prefix["rocksdb files"] / written["rocksdb files"]
                                      if written["rocksdb files"] else None),
    }


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def run(files: int, latencies_ms: Sequence[float], managers: Sequence[str] = MANAGERS,
        queries: Sequence[str] = DEFAULT_QUERIES, runs: int = 3) -> dict[str, Any]:
    """Measure every combination ``runs`` times, the managers' order rotating every round; returns the results
    document (medians, with min and max, per combination)."""
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp, EmbeddedS3(["checkpoints"]) as s3:
        demo = Demo(s3, Path(tmp), files)
        demo.write_input()
        for latency_ms in latencies_ms:
            s3.faults.latency = (Latency(per_request_s=latency_ms / 1000,
                                         bandwidth_bytes_per_s=LATENCY.bandwidth_bytes_per_s,
                                         copy_bytes_per_s=LATENCY.copy_bytes_per_s) if latency_ms else None)
            for query in queries:
                job_query, state_store, extra = QUERIES[query]
                measured: dict[str, list[dict[str, Any]]] = {m: [] for m in managers}
                for round_ in range(runs):
                    order = rotated(list(managers), round_)  # no manager always runs first
                    for manager in order:
                        name = f"{manager}-{query}-{latency_ms:g}ms-{round_}"
                        run_ = demo.start(name, manager, query=job_query, state_store=state_store, extra=extra)
                        outcome = demo.finish(run_)
                        if outcome["status"] != "ok":
                            raise RuntimeError(f"{name}: {outcome.get('error')}")
                        seen = s3.requests.all()[run_.first_request:]
                        figures = steady_state(seen, name)
                        # once per driver, before the first put-if-absent: outside the steady-state window
                        figures["store_check_requests"] = sum(1 for r in seen if r.key.startswith(name + "/")
                                                              and STORE_CHECK_CANARY in r.key)
                        figures["batches"] = outcome["batches"]
                        figures["batch_ms_median"] = outcome.get("batch_ms_median")
                        measured[manager].append(figures)
                        print(f"{name:<34} {figures['requests_per_batch']:7.1f} requests/batch, "
                              f"{figures['checkpoint_requests_per_file'] or 0:5.2f} per checkpoint file "
                              f"({figures['manager_requests_per_file'] or 0:.2f} per file through the manager), "
                              f"median batch {figures['batch_ms_median']} ms, store check "
                              f"{figures['store_check_requests']} requests at start", flush=True)
                for manager in managers:
                    results.append(_summary(manager, query, state_store, latency_ms, measured[manager]))
        s3.faults.latency = None
    for row in results:
        anchor = next((r for r in results if r["manager"] == "default" and r["query"] == row["query"]
                       and r["latency_ms_per_request"] == row["latency_ms_per_request"]), None)
        if anchor is None:  # the anchor was not among --managers: no ratios
            continue
        row["requests_vs_default"] = round(row["requests_per_batch"] / anchor["requests_per_batch"], 3)
        if row["batch_ms_median"] and anchor["batch_ms_median"]:
            row["batch_time_vs_default"] = round(row["batch_ms_median"] / anchor["batch_ms_median"], 3)
    return {"files": files, "runs": runs,
            "store": "embedded S3 (moto) on 127.0.0.1; latency model: per request as listed, "
            f"{(LATENCY.bandwidth_bytes_per_s or 0) / 2**20:g} MiB/s each way, copies at "
            f"{(LATENCY.copy_bytes_per_s or 0) / 2**20:g} MiB/s",
            "spark": "pyspark 4.3.0 local[2], 2 shuffle partitions; dedup: HDFS-backed state store, dedup-rocksdb: "
                     "RocksDB state store; changelog-v1 / changelog-v2: RocksDB with changelog checkpointing, state "
                     "checkpoint format v1 / format v2 with checkpoint file checksums", "anchor": "default",
            "method": f"each (latency, query, manager) runs {runs} times, each a fresh driver, the managers' order "
                      "rotating every round; requests are the median run's, batch time the median of the runs' "
                      "median micro-batch times, with their min and max",
            "results": results}


def _summary(manager: str, query: str, state_store: str, latency_ms: float,
             runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One combination's row: the run with the median request count, and the batch times of every run."""
    ordered = sorted(runs, key=lambda r: r["requests_per_batch"])
    row = {"manager": manager, "query": query, "state_store": state_store, "latency_ms_per_request": latency_ms,
           "runs": len(runs), **ordered[(len(ordered) - 1) // 2]}
    times = [r["batch_ms_median"] for r in runs if r["batch_ms_median"] is not None]
    row["batch_ms_all"] = times
    row["batch_ms_median"] = _median(times) if times else None
    row["batch_ms_min"], row["batch_ms_max"] = (min(times), max(times)) if times else (None, None)
    row["requests_per_batch_all"] = [round(r["requests_per_batch"], 2) for r in runs]
    for field in ("checkpoint_requests_per_file", "manager_requests_per_file"):
        values = [r[field] for r in runs if r.get(field) is not None]
        row[f"{field}_all"] = [round(v, 3) for v in values]
        row[f"{field}_median"] = round(_median(values), 3) if values else None
        row[f"{field}_min"] = round(min(values), 3) if values else None
        row[f"{field}_max"] = round(max(values), 3) if values else None
    row["store_check_requests_all"] = [r.get("store_check_requests") for r in runs]
    for key in ("requests_per_batch", "checkpoint_files_per_batch", "checkpoint_requests_per_file",
                "manager_files_per_batch", "manager_requests_per_file", "rocksdb_files_per_batch",
                "rocksdb_requests_per_file"):
        if row.get(key) is not None:
            row[key] = round(row[key], 3)
    row["requests_per_batch_by_operation"] = {k: round(v, 2) for k, v in row["requests_per_batch_by_operation"].items()}
    row["requests_per_batch_by_prefix"] = {k: round(v, 2) for k, v in row["requests_per_batch_by_prefix"].items()}
    return row


def merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` with the rows of ``old`` whose (latency, query, manager) it does not have, in (latency, query,
    manager) order; each row keeps its own ``runs``. ``old`` must have measured as many input files."""
    if old.get("files") != new["files"]:
        raise ValueError(f"cannot merge results of {old.get('files')} input files with results of {new['files']}")

    def key(r: dict[str, Any]) -> tuple[float, str, str]:
        return r["latency_ms_per_request"], r["query"], r["manager"]

    have = {key(r) for r in new["results"]}
    rows = [r for r in old["results"] if key(r) not in have] + new["results"]
    queries, managers = list(QUERIES), list(MANAGERS)
    rows.sort(key=lambda r: (r["latency_ms_per_request"], queries.index(r["query"]) if r["query"] in queries else 99,
                             managers.index(r["manager"]) if r["manager"] in managers else 99))
    return {**new, "results": rows, "method": new["method"] + "; rows merged from runs of different invocations"}


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
                 "stateful (dedup: HDFS-backed, dedup-rocksdb: RocksDB state store)")
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
    parser.add_argument("--queries", nargs="+", choices=list(QUERIES), default=list(DEFAULT_QUERIES))
    parser.add_argument("--runs", type=int, default=3, help="runs of each combination (default 3)")
    parser.add_argument("--json", type=Path, default=None,
                        help="write the results here, without a plot (default: results/spark.json and spark.png)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the rows of the existing results file that this run did not measure (another "
                             "latency, query or manager), so that combinations can be run one invocation at a time")
    args = parser.parse_args(argv)
    document = run(args.files, args.latency_ms, args.managers, args.queries, args.runs)
    import pyspark

    document["pyspark"] = pyspark.__version__
    target = args.json or RESULTS / "spark.json"
    if args.merge and target.exists():
        document = merged(json.loads(target.read_text()), document)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2) + "\n")
    if args.json is None:
        plot(document, RESULTS / "spark.png")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
