"""Real-time mode's stateful shapes (Spark 4.3), several queries in one driver process, each with its own checkpoint.

``python -m harness.real_time_shapes --kafka-bootstrap H:P --source-topic T --output DIR --root s3a://bucket/prefix
--until-source-records 60 --extra-jars <Kafka connector jars>``

Every shape reads the records of Kafka topic ``--source-topic`` (JSON values ``{"id": <int>, "key": <str>}``, from
the earliest offsets), checkpoints at ``<root>/<shape>/checkpoint`` and writes with ``Trigger.RealTime(--real-time)``
in update mode through ``foreach`` (:class:`EpochFiles`: one file per batch and partition under ``DIR/<shape>``,
replaced when Spark runs the batch again, so the files hold each batch's output once). ``foreach`` is in real-time
mode's sink allowlist (with Kafka, console and memory, which are at-least-once across a restart). Shapes
(:data:`SHAPES`), the stateful operators real-time mode allows (its allowlist in Spark 4.3.0's
``RealTimeModeAllowlist``): ``dropDuplicates`` on id (``StreamingDeduplicateExec``; each id's record once), a count
per key (``groupBy().count()``; each update the key's count so far) and the JVM's ``transformWithState`` keeping a
running count per key in a ``ValueState`` (:mod:`harness.jvm_shapes`; pyspark's ``transformWithState`` is not in
the allowlist). No state store setting is made: real-time mode picks its defaults (Spark 4.3.0's
``StreamExecution.setSparkSessionConfigsForRealTimeMode``: state checkpoint format v2, RocksDB, changelog
checkpointing, each unless set), and 4.3's default ``spark.sql.streaming.checkpoint.fileChecksum.enabled=true`` turns
the checkpoint file checksums on with format v2.

The queries run until each one's committed source offsets cover ``--until-source-records`` records (counted from
the topic's start, so a restarted driver stops at the same point), or fail after ``--max-run-s``. The end of a run
is one JSON line: ``{"status": "ok", "batches": {shape: last batch id + 1}}`` or ``{"status": "failed", "errors":
{shape: error}}``. The end-to-end test (tests/spark_e2e/test_real_time_stateful.py) SIGKILLs this process at
checkpoint writes and starts it again on the same checkpoints.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness import job

log = logging.getLogger(__name__)


def _records(spark: Any, args: argparse.Namespace) -> Any:
    from pyspark.sql.functions import col, from_json

    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", args.kafka_bootstrap)
           .option("subscribe", args.source_topic).option("startingOffsets", "earliest").load())
    return raw.select(from_json(col("value").cast("string"), "id LONG, key STRING").alias("r")).select("r.*")


class EpochFiles:
    """A ``foreach`` writer: the rows of one batch (``epoch_id``) and partition, as JSON lines, in
    ``<folder>/<batch>-<partition>.jsonl``, written at the partition's end (a temporary file renamed into place, on
    local disk). A batch Spark runs again replaces its files, so the folder holds the output of each batch once."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.name = ""
        self.rows: list[str] = []

    def open(self, partition_id: int, epoch_id: int) -> bool:
        """Start the partition's rows of batch ``epoch_id``."""
        self.name = f"{epoch_id:06d}-{partition_id:03d}.jsonl"
        self.rows = []
        return True

    def process(self, row: Any) -> None:
        """Keep one row."""
        self.rows.append(json.dumps(row.asDict()))

    def close(self, error: BaseException | None) -> None:
        """Write the partition's rows unless the task failed."""
        if error is not None:
            return
        folder = Path(self.folder)
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f".{self.name}.{os.getpid()}.tmp"
        temporary.write_text("".join(f"{line}\n" for line in self.rows))
        os.replace(temporary, folder / self.name)


def read_output(folder: Path) -> list[dict[str, Any]]:
    """The rows :class:`EpochFiles` wrote under ``folder``, in batch and partition order."""
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl")) for line in path.read_text().splitlines()]


def dedup(frame: Any) -> Any:
    """``dropDuplicates`` on id: each id's first record, ``{"id", "key"}``."""
    return frame.dropDuplicates(["id"])


def aggregation(frame: Any) -> Any:
    """A count per key (``groupBy("key").count()``): each update ``{"key", "count"}``."""
    return frame.groupBy("key").count()


def transform_with_state(frame: Any) -> Any:
    """The JVM ``transformWithState`` with a running count per key: each update ``{"key", "count"}``."""
    from harness import jvm_shapes

    return jvm_shapes.transform_with_state_running_count(frame)


SHAPES: dict[str, Callable[[Any], Any]] = {
    "dedup": dedup,
    "aggregation": aggregation,
    "transform_with_state": transform_with_state,
}


def checkpoint(root: str, shape: str) -> str:
    """Where ``shape`` checkpoints under ``root``."""
    return f"{root}/{shape}/checkpoint"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: the topics, the shapes and their checkpoints, and harness.job's session options."""
    parser = argparse.ArgumentParser(prog="python -m harness.real_time_shapes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kafka-bootstrap", required=True, metavar="HOST:PORT")
    parser.add_argument("--source-topic", required=True)
    parser.add_argument("--output", required=True, help="a local folder: shape S writes under <output>/S")
    parser.add_argument("--root", required=True, help="checkpoints go under <root>/<shape>/checkpoint")
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of: {', '.join(SHAPES)}")
    parser.add_argument("--until-source-records", type=int, required=True, metavar="N",
                        help="stop each query once its committed source offsets cover N records")
    parser.add_argument("--real-time", default="5 seconds", metavar="DURATION", help="the batch duration")
    parser.add_argument("--max-run-s", type=float, default=240.0)
    parser.add_argument("--manager", choices=["shim", "default"], default="shim")
    parser.add_argument("--partitions", type=int, default=2, help="spark.sql.shuffle.partitions (state stores)")
    parser.add_argument("--master", default="local[12]",
                        help="real-time mode runs every stage of a batch at once: each query needs a task slot per "
                             "source partition and per shuffle partition")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--extra-jars", default="", help="comma-separated local jars (the Kafka connector)")
    job.add_driver_log_flags(parser)
    args = parser.parse_args(argv)
    unknown = [s for s in args.shapes.split(",") if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shapes {unknown}; known: {', '.join(SHAPES)}")
    # harness.job's session: the Java shapes' jar on spark.jars (for real_time), no state store provider set
    args.app_name, args.jars, args.repository, args.query = "checkpointfs-real-time-shapes", "paths", [], "append"
    args.state_store = "spark-default"
    return args


def _start(spark: Any, shape: str, args: argparse.Namespace) -> Any:
    writer = (SHAPES[shape](_records(spark, args)).writeStream.foreach(EpochFiles(str(Path(args.output) / shape)))
              .option("checkpointLocation", checkpoint(args.root, shape)).queryName(shape)
              .outputMode("update").trigger(realTime=args.real_time))
    return writer.start()


def run(spark: Any, names: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Start every shape's query, then stop each once its committed source offsets cover
    ``--until-source-records``; the outcome."""
    queries: dict[str, Any] = {}
    errors: dict[str, str] = {}
    batches: dict[str, int] = {}
    for name in names:
        try:
            queries[name] = _start(spark, name, args)
        except Exception as e:  # noqa: BLE001 - reported per shape
            errors[name] = f"{type(e).__name__}: {e}"[:4000]
    deadline = time.monotonic() + args.max_run_s
    while queries and not errors:
        for name, query in list(queries.items()):
            try:
                if query.awaitTermination(0.2):
                    errors[name] = "the query stopped by itself"
                    continue
                progress = job.last_progress(query)
                if progress is not None:
                    batches[name] = int(progress["batchId"]) + 1
                    if job.source_records(progress) >= args.until_source_records:
                        query.stop()
                        del queries[name]
            except Exception as e:  # noqa: BLE001 - reported per shape, with the JVM error class
                errors[name] = f"{type(e).__name__}: {e}"[:4000]
                queries.pop(name, None)
        if time.monotonic() > deadline:
            errors.update({name: f"{args.until_source_records} source records not covered in {args.max_run_s}s"
                           for name in queries})
    for query in queries.values():
        query.stop()
    return {"status": "failed" if errors else "ok", "errors": errors, "batches": batches}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; prints one JSON line and returns the exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    spark = job.build_session(args)  # with --record-probes, the shim's probe record on
    outcome = run(spark, args.shapes.split(","), args)
    spark.stop()
    print(json.dumps(outcome), flush=True)
    return 0 if outcome["status"] == "ok" else job.EXIT_QUERY_FAILED


if __name__ == "__main__":
    sys.exit(main())
