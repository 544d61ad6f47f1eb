"""Scale benchmark: a query with two stateful operators (``dropDuplicates`` on (id, event time), then counts per
10-second event-time window with a 10-second watermark; :func:`harness.job.windowed_dedup`) on the RocksDB state store,
run on a Spark standalone cluster (master and 2 workers of one core each, on 127.0.0.1) at many shuffle partitions,
with its checkpoint on the embedded S3 through the checkpointfs shim, Spark's default manager (FileContext rename, the
anchor) and Spark's AbortableStreamBasedCheckpointFileManager, and on local disk (``local``: the shim delegating
``file://`` to Spark's own manager; its sink and sink log on the store like the others').

Every (partitions, changelog checkpointing, latency) runs ``--rounds`` times, the contenders' order rotating every
round, each a fresh driver on the same cluster. Per run: the micro-batch times Spark reports (batch 0 left out: it
pays the JVMs' warm-up and the store check), the requests per micro-batch at the server split by key prefix (between
the first and last commit-log write, as ``bench_spark`` counts them), and the checkpoint requests per checkpoint file
written. The output is checked exactly once against the input (each window's count, no window twice).

**The floor** of a micro-batch's checkpoint time on a store answering in ``L`` per request: the driver's dependent
writes (``offsets/N``, the file source's ``sources/0/N``, ``commits/N``: one after another) plus, for each of the two
stateful stages, one write round per wave of tasks (``ceil(partitions / slots)`` waves, 2 slots), times ``L``. A
contender's *checkpoint overhead* is its median batch time minus the ``local`` contender's in the same run; the report
gives it over the floor. The sink's data files and its ``_spark_metadata`` log are on the store in every run (the
shim writes the sink log in ``local`` too), so they are outside the overhead.

With ``--throttle W`` the embedded S3 answers 503 SlowDown beyond ``W`` writes (and ``2W`` reads) a second per
partitioned prefix (``bucket/<run>/``: the whole run shares one prefix, as an unpartitioned S3 prefix would), as S3
does; each contender must complete every batch with exactly-once output, and the time lost is its batch time over the
unthrottled one of the same run.

``python -m benchmarks.bench_scale`` writes ``benchmarks/results/scale.json`` and ``scale.png``; ``--partitions``,
``--latency-ms``, ``--changelog``, ``--managers`` and ``--rounds`` select a part of the matrix (``--merge`` keeps the
rows of an earlier run that this one did not measure)."""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.faults import Latency
from checkpointfs.testing.rate_limit import RateLimit
from harness.driver import start_job
from harness.job import WINDOW_S, WINDOWED_DEDUP
from harness.servers.spark_cluster import StandaloneCluster

from .bench_spark import CHECKPOINT_KEYS, STORE_CHECK_CANARY, steady_state
from .bill import EXPRESS_PRICE_PER_1000_USD, monthly_bill
from .cpu_time import CommitClock
from .latency import LATENCY
from .rotation import rotated

RESULTS = Path(__file__).parent / "results"
BUCKET = "checkpoints"
PARTITIONS = (8, 50, 200, 1000)
CONTENDERS = ("shim", "default", "abortable", "local", "local-spark")
"""``local``: the checkpoint on local disk, the floor run (the shim configured, delegating ``file://`` to Spark's
manager, as a user's cluster-wide setting would); ``local-spark``: the same without checkpointfs's manager (Spark's
own, chosen by Spark), which shows what the delegation costs; the others on the embedded S3 (harness.job's
managers)."""
LOCAL = ("local", "local-spark")
SLOTS = 2
"""Task slots of the cluster: 2 workers of one core."""
STATEFUL_STAGES = 2
DRIVER_WRITES = ("offsets", "sources/0", "commits")
"""The checkpoint writes of a micro-batch the driver makes one after another (the sink's log is on the store in every
contender's run, the local one's too)."""
CHANGELOG_KEY = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
EPOCH_S = 1_700_000_000
"""The first window's start: a positive event time (Spark drops a record whose event time is not past the watermark,
which starts at 0), aligned to the window."""
BATCH_INTERVAL_S = 10.0
"""The trigger interval the monthly bill assumes."""


def write_input(folder: Path, files: int, records: int) -> dict[int, int]:
    """``files`` JSON lines files of ``records`` new records each, plus one record of the file before repeated (a
    duplicate the first operator drops); file ``n``'s event times all fall in the window starting at ``20 n`` s, so
    each file's window closes when the next file's batch moves the watermark. Returns the window start -> its count
    of distinct records."""
    folder.mkdir(parents=True)
    expected: dict[int, int] = {}
    previous: dict[str, object] | None = None
    for n in range(files):
        start = EPOCH_S + 2 * WINDOW_S * n
        rows: list[dict[str, object]] = [{"id": n * records + i, "key": f"k{i % 7}", "t": start + i % WINDOW_S}
                                         for i in range(records)]
        expected[start] = len(rows)
        path = folder / f"part-{n:05d}.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, *([previous] if previous else [])]))
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))  # distinct modification times: one file a batch
        previous = rows[-1]
    return expected


def floor_ms(partitions: int, latency_ms: float) -> float:
    """The least checkpoint time of a micro-batch at ``latency_ms`` per request (module docstring)."""
    return (len(DRIVER_WRITES) + STATEFUL_STAGES * math.ceil(partitions / SLOTS)) * latency_ms


TASK_KEYS = ("state", "rocksdb files", "sink data")
"""Key prefixes (:data:`benchmarks.bench_spark.PREFIXES`) the tasks write and read; the driver makes the requests on
the others (the checkpoint's logs and metadata, the sink's log)."""
DRIVER_KEYS = ("checkpoint", "sink log")


def dependent_requests(requests_by_prefix: dict[str, float], slots: int = SLOTS) -> float:
    """The requests of a micro-batch that wait one after another, from its requests by key prefix (the request log):
    every request of the driver (it writes the offsets, the source's log, then runs the stages, then writes the sink's
    log and the commit, each request after the answer to the one before), plus the tasks' requests spread evenly over
    the ``slots`` task slots (a task makes its requests one after another; the slots run at once). A store answering
    in ``L`` a request can finish the batch's requests no sooner than this many times ``L``."""
    if slots < 1:
        raise ValueError(f"slots must be at least 1, got {slots}")
    driver = sum(requests_by_prefix.get(p, 0.0) for p in DRIVER_KEYS)
    tasks = sum(requests_by_prefix.get(p, 0.0) for p in TASK_KEYS)
    return driver + tasks / slots


def batch_stats(batch_ms: Sequence[int]) -> dict[str, float | None]:
    """Median, p95, min and max of the micro-batch times after batch 0."""
    times = sorted(batch_ms[1:])
    if not times:
        return {"median": None, "p95": None, "min": None, "max": None}
    p95 = times[min(len(times) - 1, math.ceil(0.95 * len(times)) - 1)]
    return {"median": statistics.median(times), "p95": p95, "min": times[0], "max": times[-1]}


WHERE_METRICS = ("rocksdbChangeLogWriterCommitLatencyMs", "rocksdbCommitFileSyncLatencyMs", "rocksdbLoadLatencyMs",
                 "rocksdbCommitCheckpointLatency", "rocksdbCommitFlushLatency", "rocksdbCommitCompactLatency")
"""The state store's commit and load latencies (RocksDB's custom metrics, summed over a batch's tasks) kept per
run: where a checkpoint's time goes inside the tasks."""


def where_the_time_goes(detail: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Medians over the batches after batch 0 of each ``durationMs`` phase (driver wall time) and, summed over the
    stateful operators and their tasks (task time: divide by the slots for wall time), the commit time
    (``commitTimeMs``), the time to apply updates (``allUpdatesTimeMs``) and the RocksDB latencies of
    :data:`WHERE_METRICS`."""
    rows: list[dict[str, float]] = []
    for batch in detail[1:]:
        if not batch:
            continue
        row = {f"driver.{k}": float(v) for k, v in batch.get("durationMs", {}).items()}
        operators = batch.get("stateOperators", [])
        row["tasks.commitTimeMs"] = float(sum(o.get("commitTimeMs") or 0 for o in operators))
        row["tasks.allUpdatesTimeMs"] = float(sum(o.get("allUpdatesTimeMs") or 0 for o in operators))
        for metric in WHERE_METRICS:
            row[f"tasks.{metric}"] = float(sum((o.get("customMetrics") or {}).get(metric, 0) for o in operators))
        rows.append(row)
    keys = sorted({k for row in rows for k in row})
    return {k: statistics.median(row.get(k, 0.0) for row in rows) for k in keys}


def windows_committed(s3: EmbeddedS3, output_key: str) -> list[tuple[int, int]]:
    """(window start, count) of every row the file sink committed, read through its ``_spark_metadata`` by
    checkpointfs's reader."""
    from checkpointfs import DirectWriteManager
    from checkpointfs.sink import committed_files

    rows: list[tuple[int, int]] = []
    with DirectWriteManager(**s3.manager_options()) as manager:
        for path in committed_files(s3.uri(output_key), manager=manager):
            with manager.open(path) as f:
                rows += [(int(r["start"]), int(r["count"])) for r in map(json.loads, f.read().decode().splitlines())
                         if r]
    return sorted(rows)


def check_exactly_once(rows: list[tuple[int, int]], expected: dict[int, int]) -> str | None:
    """None when every committed window is one of the input's, once, with its count, and every window but the last
    two (still open, or closed only by a batch the run need not make) came out; else what is wrong."""
    starts = [start for start, _ in rows]
    repeated = sorted({s for s in starts if starts.count(s) > 1})
    wrong = [(s, n, expected.get(s)) for s, n in rows if expected.get(s) != n]
    missing = sorted(set(sorted(expected)[:-2]) - set(starts))
    if repeated or wrong or missing:
        return f"windows repeated {repeated[:5]}, wrong counts {wrong[:5]}, missing {missing[:5]}"
    return None


def run_one(s3: EmbeddedS3, cluster: StandaloneCluster, workdir: Path, input_dir: Path, expected: dict[int, int],
            name: str, contender: str, partitions: int, changelog: bool, timeout_s: float) -> dict[str, Any]:
    """One driver of the windowed-dedup query for ``contender``; its figures."""
    checkpoint = (f"file://{workdir / name / 'checkpoint'}" if contender in LOCAL
                  else s3.uri(f"{name}/checkpoint", scheme="s3a"))
    job = start_job(s3, workdir / f"{name}.log", input_dir=input_dir, output=s3.uri(f"{name}/output", scheme="s3a"),
                    checkpoint=checkpoint, query=WINDOWED_DEDUP,
                    manager={"local": "shim", "local-spark": "default"}.get(contender, contender),
                    extra=["--master", cluster.master_url, "--partitions", str(partitions), "--state-store",
                           "rocksdb", "--app-name", f"bench-scale-{name}", "--conf", f"{CHANGELOG_KEY}={changelog}",
                           "--conf", "spark.executor.memory=1g"])
    started = time.monotonic()
    daemons = [d.pid for d in [cluster.master, *cluster.workers] if d is not None]
    clock = CommitClock(s3.requests, name, {"driver": [job.process.pid], "cluster": daemons},
                        since=job.first_request)
    try:
        with clock:
            outcome = job.wait(timeout=timeout_s)
    except BaseException:  # interrupted (SIGTERM, Ctrl-C): the driver goes with the benchmark
        job.kill()
        raise
    if outcome["status"] != "ok":
        raise RuntimeError(f"{name}: {outcome.get('error')}\n{job.tail()}")
    problem = check_exactly_once(windows_committed(s3, f"{name}/output"), expected)
    if problem:
        raise RuntimeError(f"{name}: output not exactly once: {problem}")
    seen = s3.requests.all()[job.first_request:]
    figures: dict[str, Any] = {"wall_s": round(time.monotonic() - started, 1), "batches": outcome["batches"],
                               "batch_ms": outcome["batch_ms"], **batch_stats(outcome["batch_ms"])}
    figures["throttled"] = sum(1 for r in seen if r.status == 503 and r.key.startswith(name + "/"))
    figures["where_ms"] = where_the_time_goes(outcome.get("progress_detail", []))
    figures["cpu"] = clock.figures()
    if contender not in LOCAL:
        figures.update(steady_state(seen, name))
        figures["store_check_requests"] = sum(1 for r in seen if r.key.startswith(name + "/")
                                              and STORE_CHECK_CANARY in r.key)
    return figures


def run(partitions: Sequence[int], latencies_ms: Sequence[float], changelogs: Sequence[bool],
        contenders: Sequence[str], rounds: int, files: int, records: int, throttle: float | None,
        timeout_s: float, progress: Path | None = None) -> dict[str, Any]:
    """Measure every combination ``rounds`` times on one cluster and one embedded S3; the results document. After
    every run the document of the runs so far is written to ``progress`` (when given): an hours-long run that is
    stopped keeps what it measured."""
    results: list[dict[str, Any]] = []

    def document(rows: list[dict[str, Any]]) -> dict[str, Any]:
        add_ratios(rows)
        return {"files": files, "records_per_file": records, "rounds": rounds, "slots": SLOTS,
                "query": "windowed-dedup (harness.job): dropDuplicates(id, ts) -> count per 10 s window, 10 s "
                         "watermark, append mode, JSON file sink; RocksDB state store",
                "cluster": f"standalone, master and {SLOTS} workers of 1 core and 1500 MB on 127.0.0.1",
                "store": "embedded S3 (moto) on 127.0.0.1; latency model: per request as listed, "
                         f"{(LATENCY.bandwidth_bytes_per_s or 0) / 2**20:g} MiB/s each way",
                "method": f"each combination runs {rounds} time(s), each a fresh driver on the same cluster, the "
                          "contenders' order rotating every round; batch times after batch 0; requests between the "
                          "first and last commit-log write (the median run's); overhead: median batch time minus "
                          "the local contender's; floor: (3 dependent driver writes + 2 stages x ceil(partitions / "
                          "2 slots) write rounds) x latency",
                "results": rows}

    with (tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp, EmbeddedS3([BUCKET]) as s3,
          StandaloneCluster(workers=SLOTS, cores=1, memory="1500m", base_dir=Path(tmp) / "cluster") as cluster):
        workdir = Path(tmp)
        expected = write_input(workdir / "input", files, records)
        for latency_ms in latencies_ms:
            s3.faults.latency = (Latency(per_request_s=latency_ms / 1000,
                                         bandwidth_bytes_per_s=LATENCY.bandwidth_bytes_per_s,
                                         copy_bytes_per_s=LATENCY.copy_bytes_per_s) if latency_ms else None)
            for count in partitions:
                for changelog in changelogs:
                    for limit in ([None] if throttle is None else [None, throttle]):
                        s3.faults.limit_rate(RateLimit(writes_per_s=limit, reads_per_s=2 * limit, prefix_depth=1)
                                             if limit else None)
                        measured: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
                        for round_ in range(rounds):
                            for contender in rotated(list(contenders), round_):
                                name = (f"{contender}-p{count}-{'cl' if changelog else 'nocl'}-{latency_ms:g}ms"
                                        f"{f'-t{limit:g}' if limit else ''}-{round_}")
                                figures = run_one(s3, cluster, workdir, workdir / "input", expected, name,
                                                  contender, count, changelog, timeout_s)
                                measured[contender].append(figures)
                                if progress is not None:
                                    so_far = [summary(c, count, changelog, latency_ms, limit, measured[c])
                                              for c in contenders if measured[c]]
                                    progress.write_text(json.dumps(document([*results, *so_far]), indent=2) + "\n")
                                print(f"{name:<40} median batch {figures['median']} ms (p95 {figures['p95']}), "
                                      f"{figures.get('requests_per_batch', 0):8.1f} requests/batch, "
                                      f"{figures.get('checkpoint_requests_per_file') or 0:5.2f} per checkpoint file, "
                                      f"{figures['throttled']} throttled, {figures['wall_s']} s", flush=True)
                        for contender in contenders:
                            results.append(summary(contender, count, changelog, latency_ms, limit,
                                                   measured[contender]))
        s3.faults.limit_rate(None)
        s3.faults.latency = None
    return document(results)


def summary(contender: str, partitions: int, changelog: bool, latency_ms: float, throttle: float | None,
            runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One combination's row: batch-time statistics over every run's batches, the median run's requests."""
    ordered = sorted(runs, key=lambda r: r.get("requests_per_batch", 0))
    middle = ordered[(len(ordered) - 1) // 2]
    every_batch = [ms for r in runs for ms in r["batch_ms"][1:]]
    row: dict[str, Any] = {"contender": contender, "partitions": partitions, "changelog": changelog,
                           "latency_ms_per_request": latency_ms, "throttle_writes_per_s": throttle,
                           "runs": len(runs), "batches_per_run": [r["batches"] for r in runs],
                           "batch_ms": {**batch_stats([0, *every_batch]),
                                        "run_medians": [r["median"] for r in runs]},
                           "throttled_per_run": [r["throttled"] for r in runs],
                           "wall_s_per_run": [r["wall_s"] for r in runs]}
    cpus = [r["cpu"] for r in runs if r.get("cpu")]
    if cpus:
        row["cpu"] = {"wall_s_per_batch": round(statistics.median(c["wall_s_per_batch"] for c in cpus), 3),
                      "cpu_s_per_batch": {g: round(statistics.median(c["cpu_s_per_batch"][g] for c in cpus), 3)
                                          for g in cpus[0]["cpu_s_per_batch"]},
                      "cpu_s_per_batch_total": round(statistics.median(c["cpu_s_per_batch_total"] for c in cpus), 3),
                      "per_run": cpus}
    wheres = [r["where_ms"] for r in runs if r.get("where_ms")]
    if wheres:
        row["where_ms"] = {k: round(statistics.median(w.get(k, 0.0) for w in wheres), 1)
                           for k in sorted({k for w in wheres for k in w})}
    for key in ("requests_per_batch", "requests_per_batch_by_prefix", "requests_per_batch_by_operation",
                "checkpoint_files_per_batch", "checkpoint_requests_per_file", "manager_requests_per_file",
                "store_check_requests", "batches_measured"):
        if key in middle:
            value = middle[key]
            row[key] = ({k: round(v, 2) for k, v in value.items()} if isinstance(value, dict)
                        else round(value, 3) if isinstance(value, float) else value)
    if "requests_per_batch_by_operation" in middle:
        row["checkpoint_requests_per_batch"] = round(sum(middle["requests_per_batch_by_prefix"][p]
                                                         for p in CHECKPOINT_KEYS), 2)
        bill = monthly_bill(middle["requests_per_batch_by_operation"], BATCH_INTERVAL_S)
        row["monthly_usd"] = round(bill.total_usd, 2)
        row["monthly_usd_checkpoint"] = round(monthly_bill(_summed(middle, CHECKPOINT_KEYS),
                                                           BATCH_INTERVAL_S).total_usd, 2)
        row["monthly_usd_express"] = round(monthly_bill(middle["requests_per_batch_by_operation"], BATCH_INTERVAL_S,
                                                        EXPRESS_PRICE_PER_1000_USD).total_usd, 2)
        dependent = dependent_requests(middle["requests_per_batch_by_prefix"])
        row["dependent_requests_per_batch"] = round(dependent, 2)
        row["dependent_floor_ms"] = round(dependent * latency_ms, 1)
    return row


def _summed(figures: dict[str, Any], prefixes: Sequence[str]) -> dict[str, float]:
    """Requests per batch by operation over the key prefixes ``prefixes``."""
    total: dict[str, float] = {}
    for p in prefixes:
        for op, n in figures["requests_per_batch_by_prefix_and_operation"][p].items():
            total[op] = total.get(op, 0.0) + n
    return total


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """Per row: requests and batch time against Spark's default manager, checkpoint overhead (batch time minus the
    local contender's) and that over the floor, all within the same (partitions, changelog, latency, throttle); and
    the latency overhead (batch time minus the same contender's with no latency model, the same store) over the
    floor."""
    def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return all(a[k] == b[k] for k in ("partitions", "changelog", "latency_ms_per_request",
                                          "throttle_writes_per_s"))

    for row in rows:
        anchor = next((r for r in rows if r["contender"] == "default" and same(r, row)), None)
        local = next((r for r in rows if r["contender"] == "local" and same(r, row)), None)
        median = row["batch_ms"]["median"]
        if anchor and median and anchor["batch_ms"]["median"]:
            row["batch_time_vs_default"] = round(median / anchor["batch_ms"]["median"], 3)
            if row.get("requests_per_batch") and anchor.get("requests_per_batch"):
                row["requests_vs_default"] = round(row["requests_per_batch"] / anchor["requests_per_batch"], 3)
        if local and median and local["batch_ms"]["median"] and row["contender"] not in LOCAL:
            overhead = median - local["batch_ms"]["median"]
            row["checkpoint_overhead_ms"] = round(overhead, 1)
            floor = floor_ms(row["partitions"], row["latency_ms_per_request"])
            row["floor_ms"] = floor
            row["overhead_vs_floor"] = round(overhead / floor, 3) if floor else None
    for row in rows:
        # the latency's own cost: the same contender's batch time on the same store with no latency model
        still = next((r for r in rows if r["contender"] == row["contender"] and not r["latency_ms_per_request"]
                      and all(r[k] == row[k] for k in ("partitions", "changelog", "throttle_writes_per_s"))), None)
        median = row["batch_ms"]["median"]
        if (row["latency_ms_per_request"] and still and median and still["batch_ms"]["median"]
                and row["contender"] not in LOCAL):
            overhead = median - still["batch_ms"]["median"]
            floor = floor_ms(row["partitions"], row["latency_ms_per_request"])
            row["latency_overhead_ms"] = round(overhead, 1)
            row["floor_ms"] = floor
            row["latency_overhead_vs_floor"] = round(overhead / floor, 3)
    for row in rows:
        # the limit's cost: against the same contender unthrottled in the same run (the rows of one invocation;
        # kept with the row, so that merging in another run's unthrottled row does not change it)
        if row["throttle_writes_per_s"]:
            free = next((r for r in rows if r["contender"] == row["contender"] and r["throttle_writes_per_s"] is None
                         and all(r[k] == row[k] for k in ("partitions", "changelog", "latency_ms_per_request"))),
                        None)
            unthrottled = row.get("unthrottled_same_run_batch_ms") or (free["batch_ms"] if free else None)
            if unthrottled and unthrottled["median"] and row["batch_ms"]["median"]:
                row["unthrottled_same_run_batch_ms"] = unthrottled
                row["throttled_vs_unthrottled"] = round(row["batch_ms"]["median"] / unthrottled["median"], 3)


def merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new`` with the rows of ``old`` whose combination it does not have."""
    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["contender"], r["partitions"], r["changelog"], r["latency_ms_per_request"],
                r["throttle_writes_per_s"])

    have = {key(r) for r in new["results"]}
    rows = [r for r in old.get("results", []) if key(r) not in have] + new["results"]
    rows.sort(key=lambda r: (r["latency_ms_per_request"], r["partitions"], r["changelog"],
                             r["throttle_writes_per_s"] or 0, CONTENDERS.index(r["contender"])))
    return {**new, "results": rows, "method": new["method"] + "; rows merged from runs of different invocations"}


def plot(doc: dict[str, Any], path: Path) -> None:
    """Requests per micro-batch and median batch time against shuffle partitions, one line per contender and
    (changelog, latency)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc["results"] if not r["throttle_writes_per_s"]]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    series = sorted({(r["contender"], r["changelog"], r["latency_ms_per_request"]) for r in rows},
                    key=lambda s: (s[2], s[1], CONTENDERS.index(s[0])))
    for contender, changelog, latency in series:
        points = sorted((r["partitions"], r) for r in rows if (r["contender"], r["changelog"],
                                                                r["latency_ms_per_request"]) == (contender, changelog,
                                                                                                 latency))
        label = f"{contender}, {'changelog' if changelog else 'no changelog'}, {latency:g} ms/request"
        style = "-" if latency else "--"
        if contender not in LOCAL:
            axes[0].plot([p for p, _ in points], [r.get("requests_per_batch", 0) for _, r in points], style,
                         marker="o", label=label)
        axes[1].plot([p for p, _ in points], [(r["batch_ms"]["median"] or 0) / 1000 for _, r in points], style,
                     marker="o", label=label)
    for ax, title in ((axes[0], "S3 requests per micro-batch"), (axes[1], "micro-batch time, median (s)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("shuffle partitions")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=6, loc="upper left")
    fig.suptitle("Two stateful operators on RocksDB, standalone cluster (2 slots), embedded S3")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Run and write benchmarks/results/scale.json (and scale.png)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, nargs="+", default=list(PARTITIONS))
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, LATENCY.per_request_s * 1000])
    parser.add_argument("--changelog", choices=["off", "on"], nargs="+", default=["off", "on"],
                        help="RocksDB changelog checkpointing (default: both)")
    parser.add_argument("--managers", nargs="+", choices=CONTENDERS, default=list(CONTENDERS),
                        help="contenders (default: all; 'local' is the floor run on local disk)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each combination (default 3)")
    parser.add_argument("--files", type=int, default=6, help="input files, one micro-batch each (default 6)")
    parser.add_argument("--records", type=int, default=2000, help="records per input file (default 2000)")
    parser.add_argument("--throttle", type=float, metavar="WRITES_PER_S",
                        help="also run each combination with S3's per-prefix rate limit at this many writes (and "
                             "twice as many reads) a second")
    parser.add_argument("--timeout-s", type=float, default=3600.0, help="the longest one driver may run")
    parser.add_argument("--json", type=Path, default=None, help="results file (default: results/scale.json)")
    parser.add_argument("--merge", action="store_true", help="keep the rows of the results file this run lacks")
    args = parser.parse_args(argv)
    # SIGTERM (a timeout, a kill) unwinds like Ctrl-C, so the cluster and the store are stopped by their pids
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    if any(p < 1 for p in args.partitions) or args.rounds < 1 or args.files < 3:
        parser.error("partitions and rounds must be positive, and --files at least 3")
    target = args.json or RESULTS / "scale.json"
    document = run(args.partitions, args.latency_ms, [c == "on" for c in args.changelog], args.managers,
                   args.rounds, args.files, args.records, args.throttle, args.timeout_s,
                   progress=target.with_suffix(".partial.json"))
    import pyspark

    document["pyspark"] = pyspark.__version__
    document["measured_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if args.merge and target.exists():
        document = merged(json.loads(target.read_text()), document)
        add_ratios(document["results"])  # across the merged rows: e.g. this run's 20 ms rows against earlier 0 ms ones
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=2) + "\n")
    plot(document, target.with_suffix(".png"))
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
