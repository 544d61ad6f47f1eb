"""Compaction throughput and peak memory of the sink log at 1e5, 1e6 and 1e7 entries.

Each size runs in a fresh Python process on the local file system (RenameBasedManager, a temp directory): the log
holds a previous ``.compact`` file and nine plain batches of 1000 entries; the benchmark times the next compaction
batch (which reads them all and writes every entry again) and reads the process's RSS before it and its peak RSS
during it (Linux /proc: VmRSS, then VmHWM after resetting it).
Results: stdout and benchmarks/results/compaction.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "compaction.json"
DEFAULT_SIZES = (100_000, 1_000_000, 10_000_000)
DELTA = 1000
INTERVAL = 10

CHILD = textwrap.dedent("""
    import json, sys, time
    from checkpointfs import RenameBasedManager
    from checkpointfs.log import FileStreamSinkLog, SinkFileStatus

    root, total, delta, interval = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    log = FileStreamSinkLog(RenameBasedManager(), root, compact_interval=interval, deletion=False)
    def entry(i):
        return SinkFileStatus(f"file:///data/out/day={i % 31}/part-00000-{i:012d}-c000.json", 1000 + i % 977, False,
                              1700000000000 + i)
    previous = total - interval * delta
    with open(f"{root}/{interval - 1}.compact", "w", encoding="utf-8") as f:   # the previous compaction, as is
        f.write("v1")
        for i in range(previous):
            f.write("\\n" + entry(i).to_json())
    n = previous
    for batch in range(interval, 2 * interval - 1):
        assert log.add(batch, [entry(n + i) for i in range(delta)])
        n += delta
    last = [entry(n + i) for i in range(delta)]
    def status(field):   # this process's own figures (ru_maxrss would carry the forking parent's peak)
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    rss_before = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:   # the peak (VmHWM) restarts from the current RSS
        f.write("5")
    started = time.perf_counter()
    assert log.add(2 * interval - 1, last)
    seconds = time.perf_counter() - started
    rss_peak = status("VmHWM")
    size = sum(1 for _ in open(f"{root}/{2 * interval - 1}.compact", encoding="utf-8")) - 1
    assert size == total, (size, total)
    print(json.dumps({"entries": total, "seconds": seconds, "rss_before_mb": rss_before / 1024,
                      "rss_peak_mb": rss_peak / 1024}))
""")


def run_size(total: int) -> dict[str, Any]:
    """Run one size in a child process; its figures."""
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as root:
        done = subprocess.run([sys.executable, "-c", CHILD, root, str(total), str(DELTA), str(INTERVAL)],
                              capture_output=True, text=True, check=True)
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["entries_per_s"] = total / figures["seconds"]
    figures["rss_growth_mb"] = figures["rss_peak_mb"] - figures["rss_before_mb"]
    return figures


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; ``--sizes`` overrides the entry counts (comma-separated)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES))
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    results = []
    print(f"{'entries':>12} {'seconds':>9} {'entries/s':>11} {'peak RSS MB':>12} {'RSS growth MB':>14}")
    for total in sizes:
        figures = run_size(total)
        results.append(figures)
        print(f"{total:>12,} {figures['seconds']:>9.2f} {figures['entries_per_s']:>11,.0f} "
              f"{figures['rss_peak_mb']:>12.1f} {figures['rss_growth_mb']:>14.1f}", flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "benchmark": "sink log compaction (local file system, RenameBasedManager)",
        "python": platform.python_version(), "cpus": os.cpu_count(), "delta_batch_entries": DELTA,
        "compact_interval": INTERVAL, "results": results,
    }, indent=2) + "\n")
    print(f"written {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
