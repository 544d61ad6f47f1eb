"""Spark Connect: a streaming query submitted from a Spark Connect client (``pyspark.sql.connect``) checkpoints
through the shim. The Connect server is pyspark's own (``sbin/start-connect-server.sh``), started on 127.0.0.1 with
the shim configured server-side by a properties file (what the README shows), its executors on the cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from checkpointfs.spark import spark_conf
from checkpointfs.spark.submit import spark_defaults_text
from checkpointfs.testing import EmbeddedS3
from harness.servers.spark_cluster import StandaloneCluster, free_port, spark_home

from ..spark_e2e.conftest import Pipeline
from ..spark_e2e.connect import connect_server, dedup_query_checkpoints_through_the_shim
from .conftest import EXECUTOR_CONF

pytestmark = [pytest.mark.spark, pytest.mark.cluster]


@pytest.fixture(scope="module")
def connect_url(standalone_cluster: StandaloneCluster, embedded_s3_server: EmbeddedS3, resolved_deps: Path,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``sc://127.0.0.1:PORT`` of a Connect server on the cluster with the shim configured server-side; stopped by
    the pid (process group) started here."""
    pytest.importorskip("grpc", reason="the Spark Connect client needs the 'connect' extra (grpcio, pandas, ...)")
    standalone_cluster.ensure_workers()
    folder = tmp_path_factory.mktemp("connect")
    port = free_port()
    conf = {
        **spark_conf(embedded_s3_server, deps_dir=resolved_deps),
        "spark.master": standalone_cluster.master_url,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.adaptive.enabled": "false",
    }
    for setting in EXECUTOR_CONF[1::2]:
        key, _, value = setting.partition("=")
        conf[key] = value
    properties = folder / "connect-server.conf"
    properties.touch(mode=0o600)
    properties.write_text(spark_defaults_text(conf))
    conf["spark.driver.memory"] = "1g"
    env = {**standalone_cluster.env(), "SPARK_PID_DIR": str(folder), "SPARK_LOG_DIR": str(folder)}
    env.pop("SPARK_DAEMON_MEMORY")  # the cluster's small daemon heap would be the server's (its driver's) heap
    command = [str(spark_home() / "sbin" / "start-connect-server.sh"), "--properties-file", str(properties)]
    with connect_server(command, port, folder / "server.log", env=env) as url:
        yield url


def test_streaming_query_from_a_connect_client_checkpoints_through_the_shim(
    connect_url: str, embedded_s3: EmbeddedS3, tmp_path: Path
) -> None:
    dedup_query_checkpoints_through_the_shim(connect_url, Pipeline(embedded_s3, tmp_path), partitions=4)
