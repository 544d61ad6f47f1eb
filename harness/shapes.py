"""The query shapes production runs, several streaming queries in one driver process, each with its own checkpoint.

``python -m harness.shapes --input DIR --root s3a://bucket/prefix --shapes join_inner,window_append --results F``

Every shape reads the JSON lines files of ``--input`` (``main/``, and ``right/`` for the joins' right side: records
``{"id": <int>, "key": <str>, "ts": <epoch seconds>}``, one file per micro-batch) and checkpoints at
``<root>/<shape>/checkpoint``; file-sink shapes write ``<root>/<shape>/output``. The queries run at once with
``Trigger.AvailableNow`` until the files present at start are processed, so a SIGKILL of this process stops each at a
different point of its batch. Then the job reads what each shape produced (through the file sink's
``_spark_metadata``, the foreachBatch folders, or the state data source) into ``--results``, a JSON file: this is what
the end-to-end tests compare with the input, after kills and restarts.

Shapes (:data:`SHAPES`): stream-stream joins with watermarks (inner, left outer), a windowed aggregation with a
watermark in append mode (file sink) and in update mode (``foreachBatch`` into a folder per batch id, overwritten on a
replay: an idempotent sink), ``dropDuplicates`` (whose state the state data source reads back, Spark 4.0+),
``applyInPandasWithState``, Java's ``flatMapGroupsWithState`` (:mod:`harness.jvm_shapes`) and
``transformWithStateInPandas`` with event-time timers (Spark 4.0+). The session's
settings (state store provider, changelog checkpointing, ...) come from ``harness.job``'s options.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from harness import job

log = logging.getLogger(__name__)

WATERMARK = "10 seconds"
WINDOW = "10 seconds"
JOIN_RANGE_S = 5
TIMER_DELAY_MS = 5_000
FLUSH_ID = 1_000_000
"""Ids from here on belong to the flush files: far-future events that move the watermark past every earlier one, so
that windows close, outer joins emit unmatched rows and timers fire within the run. The tests leave them out."""


def _event_frame(spark: Any, folder: str) -> Any:
    from pyspark.sql.functions import col

    frame = spark.readStream.schema("id LONG, key STRING, ts LONG").option("maxFilesPerTrigger", 1).json(folder)
    return frame.withColumn("event_time", col("ts").cast("timestamp")).withWatermark("event_time", WATERMARK)


def _file_sink(frame: Any, ctx: ShapeContext, mode: str = "append") -> Any:
    return frame.writeStream.format("json").outputMode(mode).option("path", ctx.output)


def _join(ctx: ShapeContext, how: str) -> Any:
    from pyspark.sql.functions import expr

    left = _event_frame(ctx.spark, ctx.main).selectExpr("id AS lid", "key AS lkey", "event_time AS ltime")
    right = _event_frame(ctx.spark, ctx.right).selectExpr("id AS rid", "key AS rkey", "event_time AS rtime")
    condition = expr(f"lid = rid AND rtime BETWEEN ltime - INTERVAL {JOIN_RANGE_S} SECONDS "
                     f"AND ltime + INTERVAL {JOIN_RANGE_S} SECONDS")
    joined = left.join(right, condition, how).selectExpr("lid AS id", "CAST(ltime AS LONG) AS ts", "rkey")
    return _file_sink(joined, ctx)


def _window_counts(ctx: ShapeContext) -> Any:
    from pyspark.sql.functions import window

    frame = _event_frame(ctx.spark, ctx.main)
    return (frame.groupBy(window("event_time", WINDOW), "key").count()
            .selectExpr("CAST(window.start AS LONG) AS start", "key", "count"))


def join_inner(ctx: ShapeContext) -> Any:
    """Stream-stream inner join on id within +-5 s, both sides watermarked, into the file sink."""
    return _join(ctx, "inner")


def join_left_outer(ctx: ShapeContext) -> Any:
    """Stream-stream left outer join: unmatched left rows come out once the watermark passes them."""
    return _join(ctx, "leftOuter")


def window_append(ctx: ShapeContext) -> Any:
    """Counts per 10-second event-time window and key, append mode: each window once, when it closes."""
    return _file_sink(_window_counts(ctx), ctx)


def window_update_foreach_batch(ctx: ShapeContext) -> Any:
    """The same counts in update mode through ``foreachBatch``: each batch's updates go to ``batch=<id>/``,
    overwritten when Spark replays the batch after a failure (an idempotent sink)."""
    folder = ctx.batches_folder

    def write(batch: Any, batch_id: int) -> None:
        batch.coalesce(1).write.mode("overwrite").json(f"{folder}/batch={batch_id}")

    return _window_counts(ctx).writeStream.outputMode("update").foreachBatch(write)


def dedup(ctx: ShapeContext) -> Any:
    """``dropDuplicates`` on id (no watermark: the state keeps every id); the state data source reads it back."""
    return _file_sink(ctx.spark.readStream.schema("id LONG, key STRING, ts LONG").option("maxFilesPerTrigger", 1)
                      .json(ctx.main).dropDuplicates(["id"]), ctx)


def apply_in_pandas_with_state(ctx: ShapeContext) -> Any:
    """``applyInPandasWithState`` keeping a seen flag per id: each id is emitted once, the first time it comes."""
    import pandas as pd  # type: ignore[import-untyped]

    def first_seen(key: tuple[Any, ...], frames: Iterator[Any], state: Any) -> Iterator[Any]:
        rows = pd.concat(list(frames))
        if state.exists:
            return
        state.update((True,))
        yield pd.DataFrame({"id": [int(key[0])], "key": [str(rows["key"].iloc[0])]})

    frame = ctx.spark.readStream.schema("id LONG, key STRING, ts LONG").option("maxFilesPerTrigger", 1).json(ctx.main)
    out = frame.groupBy("id").applyInPandasWithState(first_seen, "id LONG, key STRING", "seen BOOLEAN", "append",
                                                     "NoTimeout")
    return _file_sink(out, ctx)


def flat_map_groups_with_state(ctx: ShapeContext) -> Any:
    """Java's ``flatMapGroupsWithState`` (:mod:`harness.jvm_shapes`) keeping a seen flag per id: each id once."""
    from harness import jvm_shapes

    frame = ctx.spark.readStream.schema("id LONG, key STRING, ts LONG").option("maxFilesPerTrigger", 1).json(ctx.main)
    return _file_sink(jvm_shapes.flat_map_groups_with_state_dedup(frame), ctx)


def transform_with_state_in_pandas(ctx: ShapeContext) -> Any:
    """``transformWithStateInPandas`` (Spark 4.0+) with an event-time timer per id: ``first`` when an id comes,
    ``expired`` when the watermark passes 5 s after its latest event (the state is then cleared)."""
    import pandas as pd  # type: ignore[import-untyped]
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class FirstThenExpired(StatefulProcessor):  # type: ignore[misc]
        def init(self, handle: Any) -> None:
            self.handle = handle
            self.seen = handle.getValueState("seen", "ts LONG")

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            latest = max(int(r["ts"].max()) for r in rows)
            if self.seen.exists():
                return
            self.seen.update((latest,))
            self.handle.registerTimer(latest * 1000 + TIMER_DELAY_MS)
            yield pd.DataFrame({"id": [int(key[0])], "kind": ["first"]})

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[Any]:
            self.seen.clear()
            yield pd.DataFrame({"id": [int(key[0])], "kind": ["expired"]})

        def close(self) -> None:
            pass

    frame = _event_frame(ctx.spark, ctx.main)
    out = frame.groupBy("id").transformWithStateInPandas(FirstThenExpired(), "id LONG, kind STRING", "Append",
                                                         "EventTime")
    return _file_sink(out, ctx)


class ShapeContext:
    """Where one shape reads and writes."""

    def __init__(self, spark: Any, name: str, args: argparse.Namespace) -> None:
        self.spark = spark
        self.name = name
        self.main = f"{args.input}/main"
        self.right = f"{args.input}/right"
        self.checkpoint = f"{args.root}/{name}/checkpoint"
        self.output = f"{args.root}/{name}/output"
        self.batches_folder = str(Path(args.local_out) / name)


Shape = Callable[[ShapeContext], Any]
SHAPES: dict[str, Shape] = {
    "join_inner": join_inner,
    "join_left_outer": join_left_outer,
    "window_append": window_append,
    "window_update_foreach_batch": window_update_foreach_batch,
    "dedup": dedup,
    "apply_in_pandas_with_state": apply_in_pandas_with_state,
    "flat_map_groups_with_state": flat_map_groups_with_state,
    "transform_with_state_in_pandas": transform_with_state_in_pandas,
}
STARTED_ALONE = ("transform_with_state_in_pandas",)
"""Shapes whose first batch must not start beside other queries' Python workers: transformWithStateInPandas's
driver-side Python runner (schema set-up, at planning) timed out connecting back to its JVM in 3 runs of 3 when six
other queries started with it (pyspark 4.3.0, load about 12); started alone it connected in 3 runs of 3."""
SINK_SCHEMAS = {
    "join_inner": "id LONG, ts LONG, rkey STRING",
    "join_left_outer": "id LONG, ts LONG, rkey STRING",
    "window_append": "start LONG, key STRING, count LONG",
    "dedup": "id LONG, key STRING, ts LONG",
    "apply_in_pandas_with_state": "id LONG, key STRING",
    "flat_map_groups_with_state": "id LONG, key STRING",
    "transform_with_state_in_pandas": "id LONG, kind STRING",
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line: the shapes and their places, and harness.job's session options."""
    parser = argparse.ArgumentParser(prog="python -m harness.shapes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="folder holding main/ and right/ (JSON lines files)")
    parser.add_argument("--root", required=True, help="checkpoints and outputs go under <root>/<shape>/")
    parser.add_argument("--local-out", required=True, help="local folder of the foreachBatch shape's output")
    parser.add_argument("--shapes", required=True, help=f"comma-separated, of: {', '.join(SHAPES)}")
    parser.add_argument("--results", help="write what each shape produced here (JSON), after the queries end")
    parser.add_argument("--manager", choices=["shim", "default"], default="shim")
    parser.add_argument("--state-store", choices=["hdfs", "rocksdb"], default="rocksdb")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--extra-jars", default="")
    job.add_driver_log_flags(parser)
    args = parser.parse_args(argv)
    unknown = [s for s in args.shapes.split(",") if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shapes {unknown}; known: {', '.join(SHAPES)}")
    args.app_name, args.jars, args.repository, args.real_time = "checkpointfs-shapes", "paths", [], None
    # harness.job's session puts the Java shapes' jar on spark.jars for its query "fmgws"
    args.query = "fmgws" if "flat_map_groups_with_state" in args.shapes.split(",") else "shapes"
    return args


def _run_all(spark: Any, names: list[str], args: argparse.Namespace) -> dict[str, str]:
    """Start every shape's query (the :data:`STARTED_ALONE` ones first, each until its first batch ended), wait for
    all; the error of each query that failed."""
    queries = {}
    errors: dict[str, str] = {}
    for name in sorted(names, key=lambda n: n not in STARTED_ALONE):
        ctx = ShapeContext(spark, name, args)
        try:
            writer = SHAPES[name](ctx)
            queries[name] = (writer.option("checkpointLocation", ctx.checkpoint).queryName(name)
                             .trigger(availableNow=True).start())
            if name in STARTED_ALONE:
                while queries[name].isActive and queries[name].lastProgress is None:
                    time.sleep(0.1)
        except Exception as e:  # noqa: BLE001 - reported per shape
            errors[name] = f"{type(e).__name__}: {e}"[:4000]

    def wait(name: str, query: Any) -> None:
        try:
            query.awaitTermination()
        except Exception as e:  # noqa: BLE001 - reported per shape
            errors[name] = f"{type(e).__name__}: {e}"[:4000]

    waiters = [threading.Thread(target=wait, args=item, daemon=True) for item in queries.items()]
    for w in waiters:
        w.start()
    for w in waiters:
        w.join()
    return errors


def _produced(spark: Any, names: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """What each shape produced, as lists of rows (lists of values)."""
    out: dict[str, Any] = {}
    for name in names:
        ctx = ShapeContext(spark, name, args)
        if name in SINK_SCHEMAS:
            frame = spark.read.schema(SINK_SCHEMAS[name]).json(ctx.output)
            out[name] = {"rows": [list(r) for r in frame.collect()]}
        elif name == "window_update_foreach_batch":
            folder = Path(ctx.batches_folder)
            batches = sorted(int(p.name.split("=")[1]) for p in folder.glob("batch=*"))
            rows = [[b, *r] for b in batches for r in
                    spark.read.schema("start LONG, key STRING, count LONG").json(str(folder / f"batch={b}")).collect()]
            out[name] = {"rows": rows, "batches": batches}
        if name == "dedup" and _major(spark) >= 4:
            state = spark.read.format("statestore").load(ctx.checkpoint)
            out[name]["state_keys"] = sorted(int(r.key.id) for r in state.select("key").collect())
    return out


def _major(spark: Any) -> int:
    return int(spark.version.split(".")[0])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; prints one JSON line (``{"status": "ok"}`` or the failed shapes) and returns the exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    names = args.shapes.split(",")
    spark = job.build_session(args)
    errors = _run_all(spark, names, args)
    outcome: dict[str, Any] = {"status": "failed" if errors else "ok", "errors": errors}
    if not errors and args.results:
        Path(args.results).write_text(json.dumps(_produced(spark, names, args)))
    spark.stop()
    print(json.dumps(outcome), flush=True)
    return 0 if not errors else job.EXIT_QUERY_FAILED


if __name__ == "__main__":
    sys.exit(main())
