"""A user's streaming job, as the README shows it: nothing but pyspark and checkpointfs, ``configure()`` given the
store's short settings and nothing else (no local jars, no repository build). Run by ``test_user_path.py`` and
``test_cloud_user_path.py`` with a line's venv, from a folder outside the checkout.

``python user_query.py INPUT_DIR OUTPUT CHECKPOINT [OUTPUT CHECKPOINT ...]`` (``s3a://``, ``gs://``, ``abfs://``
paths); the stores' settings come as JSON, never on the command line: ``$USER_QUERY_S3`` (the S3 short keys) and
``$USER_QUERY_STORES`` (``configure()``'s ``gcs`` and ``azure`` settings by keyword). Each query drops duplicate ids
across micro-batches (Spark's HDFS-backed state store, 2 shuffle partitions) and writes JSON lines until every input
file is processed, one query after the other. The last line on stdout is a JSON object: the Spark version, the jars
on ``spark.jars`` and the batches run (all queries together).
"""

from __future__ import annotations

import json
import os
import sys

from pyspark.sql import SparkSession

from checkpointfs.spark import configure


def main(input_dir: str, *paths: str) -> int:
    s3 = json.loads(os.environ.get("USER_QUERY_S3", "null"))
    stores = json.loads(os.environ.get("USER_QUERY_STORES", "{}"))
    builder = (SparkSession.builder.master("local[2]").appName("checkpointfs-user-path")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2"))
    spark = configure(builder, s3, **stores).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    batches = 0
    for output, checkpoint in zip(paths[::2], paths[1::2], strict=True):
        records = spark.readStream.schema("id LONG, key STRING").option("maxFilesPerTrigger", 1).json(input_dir)
        query = (records.dropDuplicates(["id"]).writeStream.format("json").option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start(output))
        query.awaitTermination()
        batches += len(query.recentProgress)
    print(json.dumps({"spark": spark.version, "jars": spark.conf.get("spark.jars"), "batches": batches}))
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
