"""Several stateful streaming queries in ONE SparkSession, each with its checkpoint and output on a store of its own
(``s3a://``, ``gs://``, ...), run as a driver process of its own.

``python -m harness.multi_store_job --query NAME INPUT CHECKPOINT OUTPUT [--query ...] [--shim] [--jar J]
[--conf K=V] [--stop-after N | --read-outputs]``

Each query reads JSON lines files (``{"id": <int>, "key": <str>}``) from its INPUT folder, one file per micro-batch,
drops duplicate ids across batches (``dropDuplicates``: its state store writes go through the checkpoint manager)
and writes a file sink (JSON, with ``_spark_metadata``) to OUTPUT. Every query starts before any is waited for, so
they run side by side in the session.

- ``--stop-after N``: a processing-time trigger; once every query has completed N micro-batches in this run (its
  progress reported, i.e. its commit written), every query is stopped with ``query.stop()``, whatever it is doing.
- otherwise ``Trigger.AvailableNow``: each query processes what its input holds and ends; ``--read-outputs`` then
  reads each OUTPUT back as a downstream reader would (through ``_spark_metadata``) and reports the ids.

``--shim``: the session is built by :func:`checkpointfs.spark.configure` (the shim cluster-wide, the s3a:// settings of
``$CHECKPOINTFS_JOB_S3``); without it, a plain session with Spark's own checkpoint manager and no checkpointfs jar.
``--jar`` puts more jars on ``spark.jars`` (a file system's connector), ``--conf`` sets more settings (its
``spark.hadoop.fs.<scheme>.*``). The shim's own log lines (logger ``io.checkpointfs``) are at INFO on the driver's
stderr; the rest of Spark at ERROR.

The end of a run is one JSON line on stdout: ``{"status": "ok", "queries": {NAME: {"batches": [...]}},
"outputs": {NAME: [ids]}}``, or ``{"status": "failed", "error": ...}`` with exit code 3.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from checkpointfs.polling import poll
from checkpointfs.spark.config import configure
from harness.job import EXIT_QUERY_FAILED, S3_ENV

log = logging.getLogger(__name__)

SHIM_LOGGER = "io.checkpointfs"
"""The shim's loggers (each class under this package): at INFO on the driver's stderr."""
SCHEMA = "id LONG, key STRING"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m harness.multi_store_job", description=__doc__.split("\n\n")[0])
    parser.add_argument("--query", nargs=4, action="append", required=True,
                        metavar=("NAME", "INPUT", "CHECKPOINT", "OUTPUT"), help="one stateful query (repeatable)")
    parser.add_argument("--shim", action="store_true", help="build the session with checkpointfs.spark.configure()")
    parser.add_argument("--jar", action="append", default=[], help="another jar for spark.jars (repeatable)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="another Spark setting")
    parser.add_argument("--stop-after", type=int, metavar="N",
                        help="stop every query once each has completed N micro-batches in this run")
    parser.add_argument("--read-outputs", action="store_true", help="report the ids of each committed output")
    parser.add_argument("--timeout-s", type=float, default=420.0, help="how long the queries may take")
    args = parser.parse_args(argv)
    if args.stop_after is not None and args.read_outputs:
        parser.error("--read-outputs reads what the queries committed once they ended: not with --stop-after")
    return args


def build_session(args: argparse.Namespace) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("checkpointfs-multi-store-job")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.memory", "1g")
    )
    for setting in args.conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    if args.shim:
        s3: dict[str, str] = json.loads(os.environ.get(S3_ENV, "{}"))
        builder = configure(builder, s3, extra_jars=args.jar)
    elif args.jar:
        builder = builder.config("spark.jars", ",".join(args.jar))
    session: Any = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    jvm = session.sparkContext._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(SHIM_LOGGER, jvm.org.apache.logging.log4j.Level.INFO)
    return session


def progress_batches(query: Any) -> list[int]:
    """The ids of the micro-batches ``query`` completed in this run that read input (from the JVM's own progress
    JSON: pyspark's Python objects differ by line)."""
    batches = []
    for progress in query._jsq.recentProgress():
        parsed = json.loads(progress.json())
        if int(parsed.get("numInputRows", 0)) > 0:
            batches.append(int(parsed["batchId"]))
    return sorted(set(batches))


def run(args: argparse.Namespace) -> dict[str, Any]:
    spark = build_session(args)
    queries: dict[str, Any] = {}
    try:
        for name, input_dir, checkpoint, output in args.query:
            frame = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(input_dir)
            writer = (frame.dropDuplicates(["id"]).writeStream.format("json").queryName(name)
                      .option("path", output).option("checkpointLocation", checkpoint))
            if args.stop_after is None:
                writer = writer.trigger(availableNow=True)
            queries[name] = writer.start()
        if args.stop_after is not None:
            stop_after(queries, args.stop_after, args.timeout_s)
        else:
            deadline = time.monotonic() + args.timeout_s
            for name, query in queries.items():
                if not query.awaitTermination(max(1.0, deadline - time.monotonic())):
                    raise TimeoutError(f"query {name} did not process its input within {args.timeout_s}s")
    except Exception as e:  # reported as the job's outcome, with the JVM error class
        log.exception("the queries failed")  # the whole trace (the JVM's too) on the driver's stderr
        return {"status": "failed", "error": f"{type(e).__name__}: {e}"[:4000]}
    finally:
        for query in queries.values():
            query.stop()
    outcome: dict[str, Any] = {"status": "ok",
                               "queries": {name: {"batches": progress_batches(q)} for name, q in queries.items()}}
    if args.read_outputs:
        outcome["outputs"] = {
            name: sorted(int(r.id) for r in spark.read.schema(SCHEMA).json(output).select("id").collect())
            for name, _input, _checkpoint, output in args.query}
    spark.stop()
    return outcome


def stop_after(queries: dict[str, Any], batches: int, timeout_s: float) -> None:
    """Wait until every query has completed ``batches`` micro-batches with input in this run, then stop them all."""

    def done() -> bool | None:
        for name, query in queries.items():
            if not query.isActive:
                raise RuntimeError(f"query {name} ended by itself: {query.exception()}")
        return True if all(len(progress_batches(q)) >= batches for q in queries.values()) else None

    if poll(done, timeout_s, max_delay_s=0.2) is None:
        raise TimeoutError(f"the queries did not complete {batches} micro-batches each within {timeout_s}s")
    for query in queries.values():
        query.stop()


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    outcome = run(parse_args(argv))
    print(json.dumps(outcome), flush=True)
    return 0 if outcome["status"] == "ok" else EXIT_QUERY_FAILED


if __name__ == "__main__":
    sys.exit(main())
