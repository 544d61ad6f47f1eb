"""Spark's checkpoint format v2 restart failure, reproduced with Spark alone: no checkpointfs, no S3, no shim.

``python -m harness.v2_restart_repro [--runs 3] [--format-version 2] [--restarts 1]``

A stateful query (``dropDuplicates`` on the RocksDB state store, changelog checkpointing on, 2 shuffle partitions)
reads JSON lines files from a local folder into a JSON file sink, its checkpoint on local disk, with
``Trigger.AvailableNow``. Each run:

1. runs the query over 3 input files (3 micro-batches) to the end;
2. leaves the checkpoint as a crash of the driver leaves it between the file sink's commit of the last batch
   (``_spark_metadata/2`` written) and the commit log's entry for it (``commits/2`` not yet written): it deletes
   ``commits/2``. Everything else (offsets, state files, sink files) is what the first run wrote;
3. restarts the query on the same checkpoint with ``availableNow``, in a new driver process.

On restart Spark re-runs batch 2. The file sink finds batch 2 in its own log and skips it ("Skipping already
committed batch"), so no task of the stateful operator runs; at the end of the batch, with checkpoint format v2
(``spark.sql.streaming.stateStore.checkpointFormatVersion=2``), ``MicroBatchExecution.markMicroBatchEnd`` asks each
stateful operator for its state store checkpoint ids, and ``StateStoreWriter.getStateStoreCheckpointInfo`` asserts
one per partition: ``java.lang.AssertionError: assertion failed: CheckpointInfo length: 0, numPartitions: 2``.
With format v1 the same restart succeeds.

Each run prints one JSON line; the last line sums them up. Only pyspark is imported (each phase runs in a driver
process of its own: ``--phase run``), so the file runs on its own too, outside this repository
(``python v2_restart_repro.py``): docs/upstream/spark-v2-restart-after-sink-commit.md attaches it to the report for
Spark.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
FILES = 3
RUN_TIMEOUT_S = 300


def run_query(workdir: Path, format_version: int) -> dict[str, Any]:
    """One driver: the query over ``workdir/input`` until every file is processed, then the ids in the output."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("v2-restart-repro")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.sql.streaming.stateStore.checkpointFormatVersion", str(format_version))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    frame = (spark.readStream.schema("id LONG, key STRING").option("maxFilesPerTrigger", 1)
             .json(str(workdir / "input")).dropDuplicates(["id"]))
    outcome: dict[str, Any]
    try:
        query = (frame.writeStream.format("json").option("path", str(workdir / "output"))
                 .option("checkpointLocation", str(workdir / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination()
        outcome = {"status": "ok", "batches": len(query.recentProgress)}
    except Exception as e:  # noqa: BLE001 - the outcome of the run, with the JVM error
        outcome = {"status": "failed", "error": f"{type(e).__name__}: {e}".splitlines()[0][:300]}
    ids = spark.read.schema("id LONG, key STRING").json(str(workdir / "output")).select("id").collect()
    outcome["ids"] = sorted(int(r.id) for r in ids)
    spark.stop()
    return outcome


def driver(workdir: Path, format_version: int) -> dict[str, Any]:
    """Run the query in a driver process of its own; its closing JSON line."""
    env = {**os.environ, "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--phase", "run", "--workdir", str(workdir),
         "--format-version", str(format_version)],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env, check=False)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    raise RuntimeError(f"driver exited {done.returncode} without a result:\n{done.stderr[-3000:]}")


def one_run(format_version: int, restarts: int = 1, drop_sink_entry: bool = False) -> dict[str, Any]:
    """Steps 1-3 of the module's description in a fresh folder; the first restart's outcome, and the status of
    each later one (``restarts`` in all: whether a failed restart stays failed); with ``drop_sink_entry``, a failed
    restart is followed by one more after removing the sink log's entry for the batch (``_spark_metadata/2``)."""
    with tempfile.TemporaryDirectory(prefix="v2-repro-") as tmp:
        workdir = Path(tmp)
        (workdir / "input").mkdir()
        expected: set[int] = set()
        for n in range(FILES):
            ids = [n * 5 + i for i in range(5)] + ([n * 5 - 1] if n else [])  # each file repeats an earlier id
            expected.update(ids)
            path = workdir / "input" / f"part-{n:04d}.json"
            path.write_text("".join(json.dumps({"id": i, "key": f"k{i % 7}"}) + "\n" for i in ids))
            os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))  # the file source orders by modification time
        first = driver(workdir, format_version)
        if first["status"] != "ok":
            return {"first": first}
        last = FILES - 1
        commits = workdir / "checkpoint" / "commits"
        for name in (str(last), f".{last}.crc"):  # the crash: the sink committed batch 2, the commit log not
            (commits / name).unlink(missing_ok=True)
        sink_log = sorted(p.name for p in (workdir / "output" / "_spark_metadata").iterdir()
                          if not p.name.startswith("."))
        restart = driver(workdir, format_version)
        restart["exactly_once"] = restart.pop("ids") == sorted(expected)
        restart["sink_log"] = sink_log
        restart["commits"] = sorted(p.name for p in commits.iterdir() if not p.name.startswith("."))
        later = [driver(workdir, format_version) for _ in range(restarts - 1)]
        if later:
            restart["later_restarts"] = [r["status"] for r in later]
        if drop_sink_entry and restart["status"] != "ok":
            # A way out: forget the sink's commit of batch 2, so that the re-run batch runs its plan. The files
            # the first attempt wrote stay in the folder but out of the sink log, which readers go through.
            for name in (str(last), f".{last}.crc"):
                (workdir / "output" / "_spark_metadata" / name).unlink(missing_ok=True)
            recovered = driver(workdir, format_version)
            restart["after_dropping_sink_entry"] = {"status": recovered["status"],
                                                    "exactly_once": recovered["ids"] == sorted(expected)}
        return restart


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--format-version", type=int, choices=[1, 2], default=2)
    parser.add_argument("--restarts", type=int, default=1, help="restarts after the crash, each a new driver")
    parser.add_argument("--drop-sink-entry", action="store_true",
                        help="after a failed restart, remove _spark_metadata/2 and restart once more")
    parser.add_argument("--phase", choices=["all", "run"], default="all", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase == "run":
        print(json.dumps(run_query(args.workdir, args.format_version)), flush=True)
        return 0
    import pyspark

    tally: Counter[str] = Counter()
    for n in range(args.runs):
        outcome = one_run(args.format_version, args.restarts, args.drop_sink_entry)
        tally[outcome.get("status", "first run failed")] += 1
        print(json.dumps({"run": n + 1, "pyspark": pyspark.__version__, "format_version": args.format_version,
                          **outcome}), flush=True)
    print(json.dumps({"pyspark": pyspark.__version__, "format_version": args.format_version, "runs": args.runs,
                      "restarts": dict(tally)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
