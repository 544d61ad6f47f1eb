"""The standalone cluster of the ``cluster`` tests: a master and 2 workers (1 core, 1 GiB each), each its own JVM,
started with pyspark's ``bin/spark-class`` on 127.0.0.1 once per session and stopped by pid at its end; drivers
of :mod:`harness.job` join it, each in a process of its own, against the session's embedded S3."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from checkpointfs.spark._jars import DEPS_ENV, hadoop_version
from checkpointfs.spark.maven import resolved_s3a_jars
from checkpointfs.testing import EmbeddedS3
from harness.servers.spark_cluster import StandaloneCluster

from ..spark_e2e.conftest import (
    Pipeline,
    minio_pipeline,  # noqa: F401 - MinIO behind a recording proxy (test_baked_image.py)
)

EXECUTOR_CONF = ("--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1")
"""Executors small enough for 1 GiB workers, one task at a time."""


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """The session's cluster (work and log dirs in a temp dir); stopped by the pids it started."""
    pytest.importorskip("pyspark", reason="pyspark is not installed (extra 'spark')")
    with StandaloneCluster(workers=2, cores=1, memory="1g", base_dir=tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def resolved_deps() -> Path:
    """A folder holding exactly the s3a:// jars that configure() fetches with Spark's Maven resolution when no
    repository build is at hand (what a wheel-installed checkpointfs uses): the cluster's drivers load these."""
    folder = resolved_s3a_jars(hadoop_version())[0].parent
    assert (folder / f"hadoop-aws-{hadoop_version()}.jar").is_file()
    return folder


@pytest.fixture
def cluster(standalone_cluster: StandaloneCluster, resolved_deps: Path,
            monkeypatch: pytest.MonkeyPatch) -> StandaloneCluster:
    """The session's cluster with both workers alive (a test may have killed one); drivers started meanwhile bind
    to loopback and name the Maven-resolved s3a:// jars on spark.jars."""
    standalone_cluster.ensure_workers()
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.setenv("SPARK_LOCAL_HOSTNAME", "127.0.0.1")
    monkeypatch.setenv(DEPS_ENV, str(resolved_deps))
    return standalone_cluster


@pytest.fixture
def cluster_pipeline(embedded_s3: EmbeddedS3, tmp_path: Path, cluster: StandaloneCluster) -> Iterator[Pipeline]:
    """A pipeline (input, output and checkpoint on the emptied embedded S3) whose drivers run on the cluster."""
    p = Pipeline(embedded_s3, tmp_path)
    yield p
    p.stop_all()


def on_cluster(cluster: StandaloneCluster, *extra: str) -> tuple[str, ...]:
    """Job arguments that put a driver on ``cluster``, with small executors."""
    return ("--master", cluster.master_url, *EXECUTOR_CONF, *extra)
