"""A small Spark Structured Streaming job whose checkpoint lives on s3a://, run as its own driver process.

``python -m harness.job --input DIR --output s3a://b/out --checkpoint s3a://b/cp [--query dedup]``

It reads JSON lines files (``{"id": <int>, "key": <str>}``) from ``--input``, one file per micro-batch, and writes
them to a file sink (JSON, with ``_spark_metadata``) until every file present at start is processed
(``Trigger.AvailableNow``). ``--query dedup`` drops duplicate ids across batches (a stateful query: its state store
writes go through the checkpoint manager too). ``--manager default`` leaves Spark's own manager in place and
``--manager abortable`` uses Spark's AbortableStreamBasedCheckpointFileManager, for comparisons. With
``--kafka-bootstrap``, ``--source-topic`` reads the records (the same JSON as record values) from a Kafka topic instead
of ``--input`` (``--max-offsets-per-trigger`` records a micro-batch), and ``--sink-topic`` writes them to a Kafka
topic (values: the JSON) instead of the file sink; Spark's Kafka connector comes as local jars (``--extra-jars``).
``--query fmgws`` drops duplicate ids with Java's ``flatMapGroupsWithState`` instead (:mod:`harness.jvm_shapes`, whose
jar goes on ``spark.jars``). ``--real-time DURATION`` (Spark 4.1 on) runs a real-time mode query from ``--source-topic``
to ``--sink-topic`` instead, the records copied as they are; it has no end of its own: the job stops it once the
query's committed source offsets cover ``--until-source-records`` records (counted from the topic's start, so a
restarted job stops at the same point), or fails after ``--max-run-s``.
The s3a:// settings come as a JSON object of ``fs.s3a.*`` keys in ``$CHECKPOINTFS_JOB_S3`` (kept off the command
line, where other users could read credentials); ``$CHECKPOINTFS_JOB_GCS`` and ``$CHECKPOINTFS_JOB_AZURE``, when set,
are ``configure()``'s ``gcs=`` and ``azure=`` (short keys: the connector fetched and set up by ``configure()``).
``--jars`` says how the shim's jars reach the JVMs:
``configure()``'s ``spark.jars`` paths (the default), its Maven coordinates (``packages``: ``configure(...,
packages=True)``, with ``--repository``), or not at all (``submitted``: the ``spark-submit`` command line brought
the jars and the shim's settings, as docs/spark.md shows it; the job then runs as ``spark-submit ... harness/job.py
...`` and sets only the store's ``fs.s3a.*`` settings, less the shim's switch ``fs.s3a.create.conditional.enabled``),
or by the Spark home (``image``: its ``jars/`` and ``conf/spark-defaults.conf`` bring the jars, the shim's and the
store's settings, as in docs/kubernetes.md's image; the job sets none of them and ignores ``$CHECKPOINTFS_JOB_S3``).
``--record-probes`` turns on the shim's DEBUG record of every ``exists()`` answer (:func:`record_probes`; read back
by tests/spark_e2e/probes.py).

The end of a run is one JSON line on stdout: ``{"status": "ok", "batches": N}``, or ``{"status": "failed",
"error": ...}`` with exit code 3. The end-to-end tests and the demo kill this process with SIGKILL mid-run and start it
again on the same checkpoint.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import checkpointfs
from checkpointfs.spark._jars import conformance_jars
from checkpointfs.spark.config import ABORTABLE_STREAM_MANAGER, SHIM_CLASS, configure, s3a_settings

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
"""The checkout this harness belongs to: its build holds Spark's spark-hadoop-cloud jars (``make setup``), also when
checkpointfs itself comes from an installed wheel (``make matrix``, ``make lines``)."""
S3_ENV = "CHECKPOINTFS_JOB_S3"
GCS_ENV = "CHECKPOINTFS_JOB_GCS"
AZURE_ENV = "CHECKPOINTFS_JOB_AZURE"
CONDITIONAL_CREATE_KEY = "fs.s3a.create.conditional.enabled"
"""The shim's switch, which ``--jars submitted`` leaves to the command line (the shim refuses s3a:// without it)."""
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROBES_LOGGER = "io.checkpointfs.spark.Probes"
SHIM_LOGGER = "io.checkpointfs"
SHIM_INFO_FLAG = "--shim-info"
"""The shim's logger of ``exists()`` answers (``Probes.record``): one DEBUG line per call, nothing above DEBUG."""
RECORD_PROBES_FLAG = "--record-probes"
WINDOWED_DEDUP = "windowed-dedup"
WINDOW_S = 10
"""The event-time window and the watermark delay of ``--query windowed-dedup``, in seconds."""
EXIT_QUERY_FAILED = 3


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The job's command line."""
    parser = argparse.ArgumentParser(prog="python -m harness.job", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", help="folder of JSON lines input files (local or s3a://); not with --source-topic")
    parser.add_argument("--output", help="file sink folder, e.g. s3a://bucket/out; not with --sink-topic")
    parser.add_argument("--checkpoint", required=True, help="checkpoint location, e.g. s3a://bucket/cp")
    parser.add_argument("--query", choices=["append", "dedup", "fmgws", WINDOWED_DEDUP], default="append",
                        help="append: records as they are; dedup: dropDuplicates on id; fmgws: Java's "
                             "flatMapGroupsWithState keeping each id's first record (harness.jvm_shapes); "
                             f"{WINDOWED_DEDUP}: two stateful operators, dropDuplicates on (id, event time) then "
                             "counts per 10-second event-time window, with a 10-second watermark (records carry "
                             "their event time in seconds as 't')")
    parser.add_argument("--manager", choices=["shim", "default", "abortable"], default="shim",
                        help="shim: checkpointfs; default: Spark's rename-based manager; abortable: Spark's "
                             "AbortableStreamBasedCheckpointFileManager (spark-hadoop-cloud, from the build)")
    parser.add_argument("--files-per-batch", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=2, help="spark.sql.shuffle.partitions (state stores)")
    parser.add_argument("--state-store", choices=["hdfs", "rocksdb"], default="hdfs",
                        help="state store provider of --query dedup (default: Spark's HDFS-backed one)")
    parser.add_argument("--jars", choices=["paths", "packages", "submitted", "image"], default="paths",
                        help="paths: configure()'s spark.jars; packages: configure(packages=True), the shim's Maven "
                             "coordinates on spark.jars.packages; submitted: no jars and none of the shim's settings "
                             "(the spark-submit command line gave them), only the store's fs.s3a.* settings; image: "
                             "nothing at all (the Spark home's jars/ and spark-defaults.conf hold them)")
    parser.add_argument("--repository", action="append", default=[], metavar="URL",
                        help="spark.jars.repositories entry for --jars packages (e.g. file:///.../dist/maven)")
    parser.add_argument("--app-name", default="checkpointfs-job")
    parser.add_argument("--master", default="local[2]", help="Spark master, e.g. spark://127.0.0.1:7077")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="more Spark settings")
    parser.add_argument("--sink-name", metavar="NAME",
                        help="name the sink (DataStreamWriter.name, Spark 4.2 on, which sink evolution requires: "
                             "spark.sql.streaming.queryEvolution.enableSinkEvolution=true)")
    parser.add_argument("--kafka-bootstrap", metavar="HOST:PORT", help="Kafka's bootstrap.servers")
    parser.add_argument("--source-topic", help="read from this Kafka topic (from its earliest offsets)")
    parser.add_argument("--sink-topic", help="write to this Kafka topic")
    parser.add_argument("--max-offsets-per-trigger", type=int, default=10, help="Kafka source records per batch")
    parser.add_argument("--extra-jars", default="", help="comma-separated local jars for spark.jars (the connector)")
    parser.add_argument("--real-time", metavar="DURATION",
                        help="real-time mode (Spark 4.1 on) with this batch duration, e.g. '5 seconds': "
                             "--source-topic to --sink-topic, records copied as they are")
    parser.add_argument("--async-progress", action="store_true",
                        help="async progress tracking (offsets and commits written on a background thread; Kafka "
                             "sink only), triggered every second: --source-topic to --sink-topic")
    parser.add_argument("--until-source-records", type=int, metavar="N",
                        help="with --real-time or --async-progress: stop once the committed source offsets cover N "
                             "records")
    parser.add_argument("--max-run-s", type=float, default=150.0,
                        help="with --real-time or --async-progress: fail when --until-source-records is not reached "
                             "in this time")
    parser.add_argument("--serve-until", metavar="FILE",
                        help="run with a 1-second processing-time trigger until FILE exists (or --max-run-s): a "
                             "query that keeps running, for its metrics")
    parser.add_argument("--ui-url-file", metavar="FILE",
                        help="write the driver's UI address to FILE once the query has started (with --serve-until "
                             "and --conf spark.ui.enabled=true)")
    add_driver_log_flags(parser)
    args = parser.parse_args(argv)
    if (args.real_time or args.async_progress) and not (args.source_topic and args.sink_topic
                                                        and args.until_source_records):
        parser.error("--real-time and --async-progress need --source-topic, --sink-topic and --until-source-records")
    if args.real_time and args.query != "append":
        parser.error("--real-time runs its own stateless query: no --query")
    if args.ui_url_file and not args.serve_until:
        parser.error("--ui-url-file is for --serve-until")
    if (args.source_topic or args.sink_topic) and not args.kafka_bootstrap:
        parser.error("--source-topic and --sink-topic need --kafka-bootstrap")
    if not (args.input or args.source_topic) or not (args.output or args.sink_topic):
        parser.error("a source (--input or --source-topic) and a sink (--output or --sink-topic) are needed")
    return args


def add_driver_log_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of what the shim logs in the driver, which :func:`build_session` reads: every driver module that
    builds its session here (harness.shapes, harness.real_time_shapes) takes them."""
    parser.add_argument(SHIM_INFO_FLAG, action="store_true",
                        help="the shim's INFO lines (each checkpoint root's start line) in the driver's log")
    parser.add_argument(RECORD_PROBES_FLAG, action="store_true",
                        help=f"log every exists() of the shim at DEBUG ({PROBES_LOGGER}), to this job's output")


def build_session(args: argparse.Namespace) -> Any:
    """A SparkSession on ``--master`` (local[2] by default) with the shim (or not), the s3a:// settings of
    ``$CHECKPOINTFS_JOB_S3`` and the ``--conf`` settings."""
    from pyspark.sql import SparkSession

    s3: dict[str, str] = json.loads(os.environ.get(S3_ENV, "{}"))
    gcs, azure = _settings(GCS_ENV), _settings(AZURE_ENV)
    builder = (
        SparkSession.builder.master(args.master)
        .appName(args.app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.memory", "1g")
    )
    for setting in args.conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key, value)
    if args.state_store == "rocksdb":
        builder = builder.config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    manager = SHIM_CLASS if args.manager == "shim" else None
    extra = [jar for jar in args.extra_jars.split(",") if jar]
    if args.query == "fmgws" or args.real_time:
        from harness import jvm_shapes

        extra.append(str(jvm_shapes.jar()))
    if extra and args.jars != "paths":
        raise SystemExit("--extra-jars names jars on spark.jars: use --jars paths")
    if args.jars != "paths" and args.manager == "abortable":
        raise SystemExit("--manager abortable names spark-hadoop-cloud on spark.jars: use --jars paths")
    if args.jars == "image":  # SPARK_HOME's jars/ and conf/spark-defaults.conf bring everything
        pass
    elif args.jars == "submitted":  # the command line brought the jars and the shim's settings: the store's only
        for key, value in s3a_settings(s3).items():
            if key != CONDITIONAL_CREATE_KEY:
                builder = builder.config(f"spark.hadoop.{key}", value)
    elif args.jars == "packages":
        builder = configure(builder, s3, manager_class=manager, packages=True, repositories=args.repository)
    elif args.manager == "abortable":
        cloud = [*conformance_jars(shim_dir=REPO / "jvm-shim"), *extra]
        if not cloud:
            raise SystemExit(f"--manager abortable needs Spark's spark-hadoop-cloud jar of this line under "
                             f"{REPO / 'jvm-shim' / 'target' / 'test-deps'}: run `make setup`")
        builder = configure(builder, s3, manager_class=ABORTABLE_STREAM_MANAGER, extra_jars=cloud)
    else:
        builder = configure(builder, s3, manager_class=manager, extra_jars=extra, gcs=gcs, azure=azure)
    if args.jars != "paths" or args.manager == "abortable":
        if gcs is not None or azure is not None:
            raise SystemExit(f"${GCS_ENV} and ${AZURE_ENV} are for --jars paths with --manager shim or default")
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if args.shim_info:
        shim_at_info(session)
    if args.record_probes:
        record_probes(session)
    return session


def _settings(variable: str) -> dict[str, Any] | None:
    """The JSON object in ``$variable`` (a store's settings for ``configure()``), None when unset."""
    text = os.environ.get(variable)
    return None if text is None else dict(json.loads(text))


def shim_at_info(spark: Any) -> None:
    """Set the shim's loggers to INFO in this driver's JVM (after ``setLogLevel``): each checkpoint root's start
    line, which says how it is written, reaches the driver's log."""
    jvm = spark.sparkContext._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(SHIM_LOGGER, jvm.org.apache.logging.log4j.Level.INFO)


def record_probes(spark: Any) -> None:
    """Set the shim's probe logger to DEBUG in this driver's JVM (after ``setLogLevel``, which only sets the root
    logger): every ``exists()`` answer of the shim is then one line on the driver's stderr. In local mode executors
    share this JVM, so the state stores' calls are recorded too. Call it before the query starts."""
    jvm = spark.sparkContext._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        PROBES_LOGGER, jvm.org.apache.logging.log4j.Level.DEBUG)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the query until every input file present at start is processed."""
    from pyspark.sql.functions import col, from_json, struct, to_json
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    spark = build_session(args)
    if args.real_time:
        return run_real_time(spark, args)
    schema = StructType([StructField("id", LongType()), StructField("key", StringType()),
                         *([StructField("t", LongType())] if args.query == WINDOWED_DEDUP else [])])
    if args.source_topic:
        records = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", args.kafka_bootstrap)
                   .option("subscribe", args.source_topic).option("startingOffsets", "earliest")
                   .option("maxOffsetsPerTrigger", args.max_offsets_per_trigger).load())
        frame = records.select(from_json(col("value").cast("string"), schema).alias("r")).select("r.*")
    else:
        frame = spark.readStream.schema(schema).option("maxFilesPerTrigger", args.files_per_batch).json(args.input)
    if args.query == WINDOWED_DEDUP:
        frame = windowed_dedup(frame)
    elif args.query == "dedup":
        frame = frame.dropDuplicates(["id"])
    elif args.query == "fmgws":
        from harness import jvm_shapes

        frame = jvm_shapes.flat_map_groups_with_state_dedup(frame)
    try:
        if args.sink_topic:
            writer = (frame.select(to_json(struct("id", "key")).alias("value")).writeStream.format("kafka")
                      .option("kafka.bootstrap.servers", args.kafka_bootstrap).option("topic", args.sink_topic))
        else:
            writer = frame.writeStream.format("json").option("path", args.output)
        if args.sink_name:  # pyspark 4.3 has no Python method for it: the Java writer's
            writer._jwrite = writer._jwrite.name(args.sink_name)
        if args.async_progress:
            query = (writer.option("checkpointLocation", args.checkpoint)
                     .option("asyncProgressTrackingEnabled", "true").trigger(processingTime="1 second").start())
            return stop_when_covered(spark, query, args)
        if args.serve_until:
            query = writer.option("checkpointLocation", args.checkpoint).trigger(processingTime="1 second").start()
            return serve_until(spark, query, args)
        query = writer.option("checkpointLocation", args.checkpoint).trigger(availableNow=True).start()
        query.awaitTermination()
    except Exception as e:  # noqa: BLE001 - reported as the job's outcome, with the JVM error class
        return {"status": "failed", "error": f"{type(e).__name__}: {e}"[:4000]}
    progress = query.recentProgress
    # pyspark 3.5 gives each progress as a dict, 4.0 on as a StreamingQueryProgress
    in_order = [int((p["durationMs"] if isinstance(p, dict) else p.durationMs).get("triggerExecution", 0))
                for p in progress]
    durations = sorted(in_order)
    detail = _progress_detail(query)
    spark.stop()
    outcome: dict[str, Any] = {"status": "ok", "batches": len(progress), "batch_ms": in_order,
                               "progress_detail": detail}
    if durations:
        outcome["batch_ms_median"] = durations[len(durations) // 2]
    return outcome


def windowed_dedup(frame: Any) -> Any:
    """Two stateful operators in a row, as production queries chain them: duplicates dropped on (id, event time)
    under a watermark, then a count of records per event-time window, emitted once the watermark passes the
    window's end (append mode). Output rows: ``start`` (the window's start, epoch seconds) and ``count``."""
    from pyspark.sql.functions import col, count, timestamp_seconds, window

    events = frame.withColumn("ts", timestamp_seconds(col("t"))).withWatermark("ts", f"{WINDOW_S} seconds")
    windows = (events.dropDuplicates(["id", "ts"]).groupBy(window("ts", f"{WINDOW_S} seconds"))
               .agg(count("*").alias("count")))
    return windows.select(col("window.start").cast("long").alias("start"), col("count"))


def _progress_detail(query: Any) -> list[dict[str, Any]]:
    """Where each batch's time went, from the JVM's own progress JSON (alike on every line): the phases of
    ``durationMs``, and per stateful operator its commit time and its state store's numeric custom metrics (RocksDB's
    commit latencies among them). Empty when the progress cannot be read: a diagnostic never fails the job."""
    try:
        progresses = [json.loads(p.json()) for p in query._jsq.recentProgress()]
    except Exception:  # noqa: BLE001 - a diagnostic: never fails the job
        return []
    return [{"durationMs": p.get("durationMs", {}),
             "stateOperators": [{"operatorName": o.get("operatorName"), "commitTimeMs": o.get("commitTimeMs"),
                                 "allUpdatesTimeMs": o.get("allUpdatesTimeMs"),
                                 "customMetrics": o.get("customMetrics", {})}
                                for o in p.get("stateOperators", [])]}
            for p in progresses]


def last_progress(query: Any) -> dict[str, Any] | None:
    """A (classic) query's last progress, parsed from the JVM's own JSON: pyspark's Python objects differ by line
    (3.5 gives dicts; 4.1's StreamingQueryProgress keeps a source's ``endOffset`` as a Python repr, not JSON)."""
    progress = query._jsq.lastProgress()
    return dict(json.loads(progress.json())) if progress is not None else None


def source_records(progress: dict[str, Any]) -> int:
    """How many records the end offsets of a progress's (Kafka) sources cover: the sum of every partition's offset
    (the topics are read from their start)."""
    total = 0
    for source in progress.get("sources", []):
        end = source.get("endOffset")
        offsets = json.loads(end) if isinstance(end, str) else end
        for partitions in (offsets or {}).values():
            total += sum(int(offset) for offset in partitions.values())
    return total


def run_real_time(spark: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The real-time mode query of ``--real-time``, stopped once a batch's committed source offsets cover
    ``--until-source-records`` records (its progress is reported after the batch's offsets and commit are written).
    ``batches`` in the outcome: the last batch id + 1 (counting the batches of earlier runs on the checkpoint)."""
    from harness import jvm_shapes

    try:
        query = jvm_shapes.start_real_time_kafka(
            spark, bootstrap=args.kafka_bootstrap, source_topic=args.source_topic, sink_topic=args.sink_topic,
            checkpoint=args.checkpoint, batch_duration=args.real_time)
    except Exception as e:  # noqa: BLE001 - reported as the job's outcome, with the JVM error class
        return {"status": "failed", "error": f"{type(e).__name__}: {e}"[:4000]}
    return stop_when_covered(spark, query, args)


def stop_when_covered(spark: Any, query: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Stop ``query`` (one that does not end by itself: real-time mode, a processing-time trigger) once a batch's
    source offsets cover ``--until-source-records`` records (its progress is reported after the batch's offsets and
    commit are written, or handed to the background thread with async progress tracking); fail after
    ``--max-run-s``. ``batches`` in the outcome: the last batch id + 1 (counting the batches of earlier runs)."""
    deadline = time.monotonic() + args.max_run_s
    batches = covered = 0
    try:
        while True:
            if query.awaitTermination(0.5):
                return {"status": "failed", "error": "the query stopped by itself"}
            progress = last_progress(query)
            covered = source_records(progress) if progress else 0
            batches = int(progress["batchId"]) + 1 if progress else 0
            if covered >= args.until_source_records:
                query.stop()
                break
            if time.monotonic() > deadline:
                query.stop()
                return {"status": "failed", "error": f"{covered} of {args.until_source_records} source records "
                                                     f"after {args.max_run_s}s", "batches": batches}
    except Exception as e:  # noqa: BLE001 - reported as the job's outcome, with the JVM error class
        return {"status": "failed", "error": f"{type(e).__name__}: {e}"[:4000]}
    spark.stop()
    return {"status": "ok", "batches": batches, "source_records": covered}


def serve_until(spark: Any, query: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Keep ``query`` (a processing-time trigger) running until the file ``--serve-until`` exists, then stop it;
    fail after ``--max-run-s``. The driver's UI address goes to ``--ui-url-file`` once the query has started.
    ``batches`` in the outcome: the last batch id + 1."""
    if args.ui_url_file:
        url = spark.sparkContext.uiWebUrl
        if not url:
            return {"status": "failed", "error": "the driver has no UI: set spark.ui.enabled=true"}
        Path(args.ui_url_file).write_text(url)
    deadline = time.monotonic() + args.max_run_s
    try:
        while not Path(args.serve_until).exists():
            if query.awaitTermination(0.5):
                return {"status": "failed", "error": "the query stopped by itself"}
            if time.monotonic() > deadline:
                query.stop()
                return {"status": "failed", "error": f"{args.serve_until} did not appear within {args.max_run_s}s"}
        progress = last_progress(query)
        query.stop()
    except Exception as e:  # noqa: BLE001 - reported as the job's outcome, with the JVM error class
        return {"status": "failed", "error": f"{type(e).__name__}: {e}"[:4000]}
    spark.stop()
    return {"status": "ok", "batches": int(progress["batchId"]) + 1 if progress else 0}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    outcome = run(parse_args(argv))
    outcome["checkpointfs"] = str(Path(checkpointfs.__file__).resolve().parent)  # the package this driver ran
    print(json.dumps(outcome), flush=True)
    return 0 if outcome["status"] == "ok" else EXIT_QUERY_FAILED


if __name__ == "__main__":
    sys.exit(main())
