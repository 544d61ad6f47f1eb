"""A session set up for the shim whose spark.jars lack hadoop-aws (a spark-submit or spark-defaults set-up without it,
as docs/spark.md's start-up error table has it): the driver refuses to start, naming hadoop-aws of the line's Hadoop,
before any query can touch S3A (a file sink on s3a:// used to meet Hadoop's raw ClassNotFoundException first)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checkpointfs.spark import running_line, shim_jar, spark_conf

from ..conftest import EVERY_LINE

pytestmark = [pytest.mark.spark, getattr(pytest.mark, EVERY_LINE)]

DRIVER = """
import json, sys
from pyspark.sql import SparkSession
builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
for key, value in json.loads(sys.argv[1]).items():
    builder = builder.config(key, value)
try:
    spark = builder.getOrCreate()
except Exception as e:  # py4j's error, carrying the JVM's message
    print(json.dumps({"started": False, "error": str(e)}))
else:
    spark.range(1).write.mode("overwrite").json(sys.argv[2])  # the query that would have met S3A first
    print(json.dumps({"started": True}))
"""


def test_a_session_without_hadoop_aws_refuses_to_start_naming_it(tmp_path: Path) -> None:
    line = running_line()
    conf = {**spark_conf(None), "spark.jars": str(shim_jar())}  # every setting configure() makes, hadoop-aws left out
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(conf), "s3a://bucket/out"], env=env,
                          capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    assert done.stdout.strip(), done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert not outcome["started"], "the session started without hadoop-aws"
    first = next(said for said in outcome["error"].splitlines() if "CheckpointStoreConfigException" in said)
    assert f"add hadoop-aws-{line.hadoop}.jar (the same version as the Hadoop that Spark ships)" in first, first
    assert "spark.hadoop.fs.s3a.impl=io.checkpointfs.spark.CheckpointS3AFileSystem" in first, first
