"""The measured side of bench_compaction, run in a fresh process per size so that its memory figures are its own:
``python -m benchmarks.compaction_child python|spark ROOT TOTAL DELTA INTERVAL`` compacts a sink log of TOTAL
entries (the previous compaction plus INTERVAL - 1 batches of DELTA entries, then the compacting batch) and prints
one JSON line of figures. Memory is read from Linux /proc: VmRSS before, and the peak VmHWM after resetting it."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from checkpointfs import RenameBasedManager
from checkpointfs.log import FileStreamSinkLog, SinkFileStatus

MB = 1024 * 1024


def entry(i: int) -> SinkFileStatus:
    """The ``i``-th entry of the benchmark's log."""
    return SinkFileStatus(f"file:///data/out/day={i % 31}/part-00000-{i:012d}-c000.json", 1000 + i % 977, False,
                          1700000000000 + i)


def proc_status_kib(pid: int | str, field: str) -> int:
    """A ``/proc/<pid>/status`` figure (``VmRSS``, ``VmHWM``) in KiB; ``pid`` may be ``"self"``."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def reset_peak_rss(pid: int | str) -> None:
    """Restart the peak (VmHWM) from the current RSS (ru_maxrss would carry the forking parent's peak)."""
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def write_log(folder: str, total: int, delta: int, interval: int, *, last_batch_files: bool) -> int:
    """The previous compaction (``interval - 1``.compact) and, with ``last_batch_files``, the batches after it as
    files; returns the index of the next entry."""
    os.makedirs(folder, exist_ok=True)
    previous = total - interval * delta
    with open(f"{folder}/{interval - 1}.compact", "w", encoding="utf-8") as f:
        f.write("v1")
        for i in range(previous):
            f.write("\n" + entry(i).to_json())
    n = previous
    if last_batch_files:
        for batch in range(interval, 2 * interval - 1):
            with open(f"{folder}/{batch}", "w", encoding="utf-8") as f:
                f.write("v1")
                for i in range(delta):
                    f.write("\n" + entry(n + i).to_json())
            n += delta
    return n


def compacted_entries(path: str) -> int:
    """Entries in a compacted file (its lines minus the version line)."""
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f) - 1


def run_python(root: str, total: int, delta: int, interval: int) -> dict[str, Any]:
    """checkpointfs's FileStreamSinkLog compacting ``total`` entries."""
    log = FileStreamSinkLog(RenameBasedManager(), root, compact_interval=interval, deletion=False)
    n = write_log(root, total, delta, interval, last_batch_files=False)
    for batch in range(interval, 2 * interval - 1):
        assert log.add(batch, [entry(n + i) for i in range(delta)])
        n += delta
    last = [entry(n + i) for i in range(delta)]
    rss_before = proc_status_kib("self", "VmRSS")
    reset_peak_rss("self")
    started = time.perf_counter()
    assert log.add(2 * interval - 1, last)
    seconds = time.perf_counter() - started
    rss_peak = proc_status_kib("self", "VmHWM")
    size = compacted_entries(f"{root}/{2 * interval - 1}.compact")
    assert size == total, (size, total)
    return {"entries": total, "seconds": seconds, "rss_before_mb": rss_before / 1024, "rss_peak_mb": rss_peak / 1024}


def run_spark(root: str, total: int, delta: int, interval: int) -> dict[str, Any]:
    """Spark's own FileStreamSinkLog (pyspark local[1], 2 GiB driver) compacting the same layout, after one
    warm-up compaction in the same JVM."""
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").appName("checkpointfs-bench-compaction")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g")
             .config("spark.sql.streaming.fileSink.log.compactInterval", str(interval))
             .config("spark.sql.streaming.fileSink.log.deletion", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm
    sinks = jvm.org.apache.spark.sql.execution.streaming.sinks

    def batch_of(first: int) -> Any:
        array = spark.sparkContext._gateway.new_array(sinks.SinkFileStatus, delta)
        for i in range(delta):
            e = entry(first + i)
            array[i] = sinks.SinkFileStatus(e.path, e.size, e.is_dir, e.modification_time, e.block_replication,
                                            e.block_size, "add")
        return array

    def compact(folder: str, size: int) -> tuple[Any, Any]:
        n = write_log(folder, size, delta, interval, last_batch_files=True)
        log = sinks.FileStreamSinkLog(1, spark._jsparkSession, "file://" + folder, jvm.scala.Option.empty())
        return log, batch_of(n)

    warm_log, warm_batch = compact(f"{root}/warm-up", 20 * delta)
    assert warm_log.add(2 * interval - 1, warm_batch)
    log, last = compact(f"{root}/log", total)
    management = jvm.java.lang.management.ManagementFactory
    pools = [p for p in management.getMemoryPoolMXBeans() if str(p.getType().toString()) == "Heap memory"]
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    jvm.java.lang.System.gc()
    heap_before = management.getMemoryMXBean().getHeapMemoryUsage().getUsed()
    for pool in pools:
        pool.resetPeakUsage()
    rss_before = proc_status_kib(pid, "VmRSS")
    reset_peak_rss(pid)
    started = time.perf_counter()
    assert log.add(2 * interval - 1, last)
    seconds = time.perf_counter() - started
    rss_peak = proc_status_kib(pid, "VmHWM")
    heap_peak = sum(p.getPeakUsage().getUsed() for p in pools)
    heap_max = management.getMemoryMXBean().getHeapMemoryUsage().getMax()
    size = compacted_entries(f"{root}/log/{2 * interval - 1}.compact")
    assert size == total, (size, total)
    jvm.java.lang.System.gc()  # what the compaction must hold at once: every entry (allFiles reads them the same way)
    base = management.getMemoryMXBean().getHeapMemoryUsage().getUsed()
    held = log.allFiles()
    jvm.java.lang.System.gc()
    entries_live = management.getMemoryMXBean().getHeapMemoryUsage().getUsed() - base
    assert len(held) == total
    spark.stop()
    return {"entries": total, "seconds": seconds, "heap_before_mb": heap_before / MB,
            "heap_peak_mb": heap_peak / MB, "heap_max_mb": heap_max / MB, "entries_live_mb": entries_live / MB,
            "jvm_rss_before_mb": rss_before / 1024, "jvm_rss_peak_mb": rss_peak / 1024}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one side at one size and print its figures as one JSON line."""
    side, root, total, delta, interval = list(argv if argv is not None else sys.argv[1:])
    run = {"python": run_python, "spark": run_spark}[side]
    print(json.dumps(run(root, int(total), int(delta), int(interval))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
