"""CPU time against wall time between a run's commit-log writes: what a benchmark's processes (the Spark driver and
the cluster's JVMs, executors included) spent computing, apart from the time they spent waiting on the store, so
that a busy machine (which stretches wall time) does not blur what a checkpoint manager costs.

:class:`CommitClock` watches the embedded S3's request log from a thread; on each commit-log write of the run it
reads the processes' CPU time from /proc (user plus system, every thread, of each process and its descendants)."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from checkpointfs.testing.requests import Request, RequestLog

TICKS_PER_S = os.sysconf("SC_CLK_TCK")
WRITES = ("PutObject", "CopyObject", "CompleteMultipartUpload")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (None when the process is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def process_tree(roots: Iterable[int]) -> list[int]:
    """``roots`` and every live descendant of them (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(int(entry.name))
            if fields is not None:
                parents[int(entry.name)] = int(fields[1])
    tree, frontier = set(roots), list(roots)
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    return sorted(tree)


def cpu_s(pids: Iterable[int]) -> float:
    """User plus system CPU seconds so far of the live processes ``pids`` (a gone one counts 0)."""
    total = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat
    return total / TICKS_PER_S


def per_batch(marks: list[tuple[float, dict[str, float]]]) -> dict[str, Any] | None:
    """From ``(wall s, {group: CPU s})`` at each commit-log write: wall and CPU seconds per batch between the first
    and the last (the batches after batch 0, the window ``bench_spark.steady_state`` counts requests over), and CPU
    over wall per group; None with fewer than two marks."""
    if len(marks) < 2:
        return None
    batches = len(marks) - 1
    wall = (marks[-1][0] - marks[0][0]) / batches
    cpu = {g: (marks[-1][1][g] - marks[0][1][g]) / batches for g in marks[0][1]}
    return {"batches": batches, "wall_s_per_batch": round(wall, 3),
            "cpu_s_per_batch": {g: round(v, 3) for g, v in cpu.items()},
            "cpu_s_per_batch_total": round(sum(cpu.values()), 3),
            "cpu_over_wall": round(sum(cpu.values()) / wall, 3) if wall > 0 else None}


class CommitClock:
    """A thread that marks wall time and the CPU time of each process group at every commit-log write of the run
    whose keys start with ``name/``; ``groups`` maps a name to the root pids whose trees it sums."""

    def __init__(self, log: RequestLog, name: str, groups: dict[str, list[int]], since: int = 0) -> None:
        self._log, self._groups, self._since = log, groups, since
        self._commit = re.compile(rf"{re.escape(name)}/checkpoint/commits/\d+")
        self._stop = threading.Event()
        self.marks: list[tuple[float, dict[str, float]]] = []
        self._thread = threading.Thread(target=self._watch, name=f"commit-clock-{name}", daemon=True)

    def _is_commit(self, r: Request) -> bool:
        return r.status == 200 and r.operation in WRITES and self._commit.fullmatch(r.key) is not None

    def _watch(self) -> None:
        since = self._since
        trees: dict[str, list[int]] = {}
        while not self._stop.is_set():
            found, since = self._log.wait_for(self._is_commit, since, timeout=0.5)
            if found is None:
                continue
            now = time.monotonic()
            if not trees:  # at batch 0's commit: its executors are up; the same processes are read at every mark
                trees = {g: process_tree(roots) for g, roots in self._groups.items()}
            self.marks.append((now, {g: cpu_s(pids) for g, pids in trees.items()}))

    def __enter__(self) -> CommitClock:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def figures(self) -> dict[str, Any] | None:
        """:func:`per_batch` of the marks so far."""
        return per_batch(self.marks)
