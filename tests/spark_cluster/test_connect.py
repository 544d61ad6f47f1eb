"""Spark Connect: a streaming query submitted from a Spark Connect client (``pyspark.sql.connect``) checkpoints
through the shim. The Connect server is pyspark's own (``sbin/start-connect-server.sh``), started on 127.0.0.1 with
the shim configured server-side by a properties file (what the README shows), its executors on the cluster."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.spark import spark_conf
from checkpointfs.spark.submit import spark_defaults_text
from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.readiness import STARTUP_TIMEOUT_S, NotReady, wait_ready
from harness.servers.spark_cluster import StandaloneCluster, free_port, spark_home

from ..spark_e2e.conftest import Pipeline
from .conftest import EXECUTOR_CONF

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

START_TIMEOUT_S = STARTUP_TIMEOUT_S


def _answers(port: int) -> None:
    """A Connect client's first request (the server's Spark version, over gRPC) answered; :class:`NotReady` while
    the port refuses connections (the server binds it once its SparkContext is up)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError as e:
        raise NotReady(f"127.0.0.1:{port}: {e}") from None
    session: Any = ConnectSession.builder.remote(f"sc://127.0.0.1:{port}").create()
    try:
        assert session.version
    finally:
        session.stop()


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
    log_path = folder / "server.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen([str(spark_home() / "sbin" / "start-connect-server.sh"), "--properties-file",
                                   str(properties)], stdout=log, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
    try:
        wait_ready(f"Spark Connect server (pid {server.pid}, port {port})", lambda: _answers(port), START_TIMEOUT_S,
                   exit_code=server.poll, log_path=log_path)
        yield f"sc://127.0.0.1:{port}"
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if server.poll() is None:
                os.killpg(server.pid, sig)
                try:
                    server.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    pass


def test_streaming_query_from_a_connect_client_checkpoints_through_the_shim(
    connect_url: str, embedded_s3: EmbeddedS3, tmp_path: Path
) -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    p = Pipeline(embedded_s3, tmp_path)
    batches = 3
    for b in range(batches):
        p.add_input(b, [*range(b * 4, b * 4 + 4), 0])  # id 0 again in every batch
    spark: Any = ConnectSession.builder.remote(connect_url).getOrCreate()
    try:
        frame = (spark.readStream.schema("id LONG, key STRING").option("maxFilesPerTrigger", 1)
                 .json(str(p.input_dir)).dropDuplicates(["id"]))
        query = (frame.writeStream.format("json").option("path", p.output)
                 .option("checkpointLocation", p.checkpoint).trigger(availableNow=True).start())
        query.awaitTermination()
        assert query.exception() is None
        ids = sorted(int(r.id) for r in spark.read.schema("id LONG, key STRING").json(p.output).collect())
    finally:
        spark.stop()
    assert ids == list(range(batches * 4))

    cp = p.checkpoint_key
    keys = p.checkpoint_keys()
    admin = embedded_s3.client(admin=True)
    written = [f"{cp}/{log}/{n}" for n in range(batches) for log in ("offsets", "commits")]
    written += [k for k in keys if k.startswith(f"{cp}/state/") and k.endswith(".delta")]
    assert len(written) >= 2 * batches + 4 * batches, keys
    for key in written:  # each written directly by the shim (driver side and executor side)
        assert "checkpointfs-write-id" in admin.head_object(Bucket="checkpoints", Key=key)["Metadata"], key
    assert not [r for r in p.requests(cp) if r.operation == "CopyObject"]
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".")], keys
