"""The Spark demo: a Spark 4.3 streaming query checkpointing on s3a:// through the checkpointfs shim, killed with
SIGKILL mid-run and resumed, next to the same query on Spark's default (rename-based) manager, all against an
embedded S3 that counts every request.

It prints the micro-batches completed, the S3 requests per micro-batch with the shim and with Spark's default
manager (measured in this run, at the server), and an exactly-once verification of the output."""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from checkpointfs.spark.config import configure
from checkpointfs.testing import EmbeddedS3, Request
from harness.driver import Job, kill_when, start_job

BUCKET = "checkpoints"
RECORDS_PER_FILE = 5


class Demo:
    """Input files, the embedded S3 and the driver processes of the demo (started, killed and awaited with the
    helpers of :mod:`harness.driver`)."""

    def __init__(self, s3: EmbeddedS3, workdir: Path, files: int) -> None:
        self.s3 = s3
        self.workdir = workdir
        self.files = files
        self.input_dir = workdir / "input"
        self.expected: set[int] = set()

    def write_input(self) -> None:
        """``files`` JSON lines files, each one micro-batch, with ids repeated from the previous file."""
        self.input_dir.mkdir()
        for n in range(self.files):
            ids = [*range(n * RECORDS_PER_FILE, (n + 1) * RECORDS_PER_FILE), max(n * RECORDS_PER_FILE - 1, 0)]
            self.expected.update(ids)
            path = self.input_dir / f"part-{n:04d}.json"
            path.write_text("".join(json.dumps({"id": i, "key": f"k{i % 7}"}) + "\n" for i in ids))
            os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))

    def start(self, name: str, manager: str, query: str = "dedup", state_store: str = "hdfs",
              extra: Sequence[str] = ()) -> Job:
        """Start ``query`` (by default the deduplicating one, stateful, with ``state_store``: ``hdfs`` or
        ``rocksdb``) for ``name``'s checkpoint and output; ``extra``: more harness.job arguments."""
        return start_job(self.s3, self.workdir / f"{name}-{time.monotonic_ns()}.log", input_dir=self.input_dir,
                         output=self.s3.uri(f"{name}/output", scheme="s3a"),
                         checkpoint=self.s3.uri(f"{name}/checkpoint", scheme="s3a"), query=query, manager=manager,
                         extra=["--app-name", f"checkpointfs-demo-{name}", "--state-store", state_store, *extra])

    def kill_when(self, run: Job, seen: Callable[[Request], bool]) -> None:
        """SIGKILL the driver and its JVM as soon as the server answered a request matching ``seen``."""
        if kill_when(self.s3, run, seen) is None:
            raise RuntimeError(f"the driver ended before the kill point; log:\n{run.tail()}")

    @staticmethod
    def finish(run: Job) -> dict[str, Any]:
        """Wait for the driver's end; its closing JSON line."""
        return run.wait()

    def per_batch(self, name: str, since: int) -> tuple[float, dict[str, float], int]:
        """Requests per micro-batch in the steady state of ``name``'s run started at request ``since``: everything
        the server saw between the run's first and last commit, divided by the batches in between. Returns the
        total, the counts by operation and the number of batches measured."""
        requests = self.s3.requests.all()[since:]
        commit_key = re.compile(rf"{re.escape(name)}/checkpoint/commits/\d+")
        commits = [i for i, r in enumerate(requests) if r.status == 200 and r.operation in ("PutObject", "CopyObject")
                   and commit_key.fullmatch(r.key)]
        batches = len(commits) - 1
        if batches < 1:
            raise RuntimeError(f"{name}: fewer than two commits seen; nothing to measure")
        counts = Counter(r.operation for r in requests[commits[0] + 1 : commits[-1] + 1])
        per_op = {op: n / batches for op, n in sorted(counts.items())}
        return sum(per_op.values()), per_op, batches


def _verify(s3: EmbeddedS3, expected: set[int]) -> tuple[int, int, int, int]:
    """Read the shim query's output with Spark (through the sink's ``_spark_metadata``): rows, distinct ids,
    duplicates, missing ids."""
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[1]").appName("checkpointfs-demo-verify")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    spark = configure(builder, s3).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        rows = [int(r.id) for r in spark.read.schema("id LONG, key STRING").json(
            s3.uri("shim/output", scheme="s3a")).select("id").collect()]
    finally:
        spark.stop()
    counts = Counter(rows)
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    return len(rows), len(counts), duplicates, len(expected - set(counts))


def _table(rows: list[tuple[str, float, dict[str, float], int]]) -> str:
    ops = ["PutObject", "CopyObject", "DeleteObject", "HeadObject", "GetObject", "ListObjectsV2"]
    header = f"  {'manager':<34}{'total':>7}" + "".join(f"{op.replace('Object', ''):>9}" for op in ops)
    lines = [header]
    for name, total, per_op, batches in rows:
        others = sum(v for k, v in per_op.items() if k not in ops)
        lines.append(f"  {name:<34}{total:7.1f}" + "".join(f"{per_op.get(op, 0):9.1f}" for op in ops)
                     + (f"   (+{others:.1f} other)" if others else "") + f"   [{batches} batches]")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns 0 when the output is exactly-once and the shim sent no COPY."""
    parser = argparse.ArgumentParser(prog="python -m harness.spark_demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=12, help="input files, one micro-batch each (default 12)")
    parser.add_argument("--kill-after-commit", type=int, default=3,
                        help="SIGKILL the shim's driver right after the commit of this batch (default 3)")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="also write the measured rows, the run's time and load to FILE (JSON), e.g. "
                             "benchmarks/results/demo.json, the run docs/spark.md quotes")
    args = parser.parse_args(argv)
    if not 0 <= args.kill_after_commit < args.files - 2:
        parser.error("--kill-after-commit must leave at least two batches for the resumed run")

    with tempfile.TemporaryDirectory(prefix="checkpointfs-demo-") as tmp, EmbeddedS3([BUCKET]) as s3:
        demo = Demo(s3, Path(tmp), args.files)
        demo.write_input()
        print(f"embedded S3 at {s3.endpoint_url}; {args.files} input files of {RECORDS_PER_FILE + 1} records, one "
              "micro-batch each; query: dropDuplicates(id) -> JSON file sink, checkpoint on s3a://\n", flush=True)

        first = demo.start("shim", "shim")
        demo.kill_when(first, lambda r: r.status == 200 and r.operation == "PutObject"
                       and r.key == f"shim/checkpoint/commits/{args.kill_after_commit}")
        print(f"shim, run 1: SIGKILL of the driver (and its JVM) right after the commit of batch "
              f"{args.kill_after_commit}", flush=True)
        second = demo.start("shim", "shim")
        resumed = demo.finish(second)
        if resumed["status"] != "ok":
            print(f"shim, run 2 FAILED: {resumed.get('error')}")
            return 1
        print(f"shim, run 2: resumed from the checkpoint and finished {resumed['batches']} more batches "
              f"({args.kill_after_commit + 1 + resumed['batches']} in all)", flush=True)
        shim_row = ("checkpointfs shim (direct write)", *demo.per_batch("shim", second.first_request))

        baseline = demo.start("default", "default")
        outcome = demo.finish(baseline)
        if outcome["status"] != "ok":
            print(f"Spark default manager run FAILED: {outcome.get('error')}")
            return 1
        print(f"Spark's default manager: {outcome['batches']} batches completed\n", flush=True)
        default_row = ("Spark default (temp file + rename)", *demo.per_batch("default", baseline.first_request))

        print("S3 requests per micro-batch, counted at the server (checkpoint, state, sink and its log):")
        print(_table([shim_row, default_row]))
        shim_copies = sum(1 for r in s3.requests.all() if r.key.startswith("shim/") and r.operation == "CopyObject")
        temp_keys = sorted(k for k in s3.keys("shim/checkpoint/") if k.rsplit("/", 1)[-1].startswith("."))
        print(f"\nshim: {shim_copies} COPY requests and {len(temp_keys)} temp keys in all; Spark default: "
              f"{default_row[2].get('CopyObject', 0):.1f} COPY per batch; the shim sends "
              f"{default_row[1] / shim_row[1]:.1f}x fewer requests per micro-batch")

        rows, distinct, duplicates, missing = _verify(s3, demo.expected)
        ok = duplicates == 0 and missing == 0 and distinct == len(demo.expected) and not shim_copies and not temp_keys
        print(f"exactly-once: {len(demo.expected)} distinct input ids, {rows} output rows, {duplicates} duplicates, "
              f"{missing} missing after the SIGKILL and restart: {'OK' if ok else 'FAILED'}")
        if args.json is not None:
            _write_json(args.json, [shim_row, default_row], exactly_once=ok, shim_copies=shim_copies,
                        files=args.files, kill_after_commit=args.kill_after_commit)
        return 0 if ok else 1


def _write_json(path: Path, rows: list[tuple[str, float, dict[str, float], int]], **facts: Any) -> None:
    """The demo's measured rows (requests per micro-batch by operation, batches measured) with when and under what
    load they were measured."""
    result = {"measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "load_average": os.getloadavg(), **facts,
              "managers": [{"manager": name, "requests_per_batch": round(total, 2),
                            "by_operation": {op: round(v, 2) for op, v in per_op.items()}, "batches_measured": n}
                           for name, total, per_op, n in rows]}
    path.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
