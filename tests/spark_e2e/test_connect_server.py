"""The README's Spark Connect server start, run as written on each line (``make lines`` on the other lines, the JVM
group of ``make unit`` on the main one): the README block that names this test is read and run by bash with this
venv's ``python`` and ``spark-submit`` first on PATH, the store's settings and the master swapped for the embedded
S3's and ``local[2]`` (the only changes), the server bound to 127.0.0.1. A streaming query from a Connect client then
checkpoints through the shim; the server is stopped by the pid of its process group."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from checkpointfs.spark.lines import line_of
from checkpointfs.testing import EmbeddedS3
from harness.servers.spark_cluster import free_port
from harness.snippets import blocks_tested_by, substituted

from ..conftest import EVERY_LINE
from .conftest import Pipeline
from .connect import connect_server, dedup_query_checkpoints_through_the_shim

pytestmark = [pytest.mark.spark, getattr(pytest.mark, EVERY_LINE)]

TEST = "tests/spark_e2e/test_connect_server.py::test_readme_connect_server_start_checkpoints_through_the_shim"
PARTITIONS = 2
USER_SETTINGS = '{"region": "eu-west-1"}'
USER_MASTER = "--master spark://master:7077"


def test_readme_connect_server_start_checkpoints_through_the_shim(embedded_s3: EmbeddedS3, tmp_path: Path) -> None:
    pyspark = pytest.importorskip("pyspark")
    pytest.importorskip("grpc", reason="the Spark Connect client needs the 'connect' extra (grpcio, pandas, ...)")
    if line_of(pyspark.__version__).line == "3.5":
        pytest.skip("pyspark 3.5's package has no Spark Connect server (no spark-connect jar): the README's start "
                    "is for 4.0 and later")
    [block] = blocks_tested_by(TEST)
    port = free_port()
    settings = {"endpoint": embedded_s3.endpoint_url, "region": embedded_s3.region,
                "access_key": embedded_s3.access_key, "secret_key": embedded_s3.secret_key}
    master = " ".join(["--master 'local[2]'", *(f"--conf {k}={v}" for k, v in {
        "spark.connect.grpc.binding.address": "127.0.0.1", "spark.connect.grpc.binding.port": port,
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": PARTITIONS, "spark.driver.memory": "1g"}.items())])
    script = substituted(block, {USER_SETTINGS: json.dumps(settings), USER_MASTER: master})
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_SUBMIT_ARGS", "PYTHONPATH")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    with connect_server(["bash", "-euo", "pipefail", "-c", script], port, tmp_path / "server.log", env=env,
                        cwd=tmp_path) as url:
        assert "spark.sql.streaming.checkpointFileManagerClass" in (tmp_path / "checkpointfs.conf").read_text()
        dedup_query_checkpoints_through_the_shim(url, Pipeline(embedded_s3, tmp_path), partitions=PARTITIONS)
