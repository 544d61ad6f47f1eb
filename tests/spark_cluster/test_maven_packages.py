"""The shim by Maven coordinates on the standalone cluster, against a real MinIO: the dedup query's driver gets
``io.checkpointfs:checkpointfs-spark-<line>_<scala>:<version>`` from this checkout's ``dist/maven`` (written here by
``jvm-shim/maven_repo.py``) once through ``spark-submit --packages`` and once through ``configure(...,
packages=True)`` (``spark.jars.packages`` in a SparkSession builder). Spark resolves into an empty, test-private
Ivy dir with Maven Central and ``dist/maven`` as its only repositories (no ``~/.m2``), so the POM's dependencies are
what Spark really fetches. Executors write the state files through the shim: each carries its write id, and no
temp key or rename copy appears."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import DirectWriteManager
from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.sink import committed_files
from checkpointfs.spark import running_line, shim_coordinates
from checkpointfs.spark._jars import JARS_DIR
from harness.driver import Job
from harness.job import S3_ENV
from harness.servers.minio import MinioServer
from harness.servers.spark_cluster import StandaloneCluster, spark_home
from harness.snippets import blocks_tested_by, substituted

from ..backends.e2e import add_inputs
from ..backends.stores import minio_s3a_conf
from .conftest import EXECUTOR_CONF

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.minio]

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 900
"""Resolution from Maven Central plus the query, on a busy 2-core machine."""
CENTRAL = "https://repo1.maven.org/maven2/"
IVY_SETTINGS = f"""<ivysettings>
  <settings defaultResolver="central"/>
  <resolvers><ibiblio name="central" m2compatible="true" usepoms="true" root="{CENTRAL}"/></resolvers>
</ivysettings>
"""
"""Maven Central only: Spark's default chain would look in ~/.m2 first (the shim's build fills it)."""


@pytest.fixture(scope="module")
def maven_repo() -> Path:
    """``dist/maven`` of this checkout, (re)written from the built shim jars (a second: it follows the jars)."""
    missing = [line.group.jar_name for line in [running_line()] if not (JARS_DIR / line.group.jar_name).is_file()]
    if missing:
        pytest.skip(f"the shim jar {missing[0]} was not built: run `make setup`")
    out = REPO / "dist" / "maven"
    subprocess.run([sys.executable, str(REPO / "jvm-shim" / "maven_repo.py"), "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def run(command: list[str], log_path: Path, server: MinioServer, cluster: StandaloneCluster) -> dict[str, Any]:
    """Run a driver command (S3 settings with their secrets in the environment) to its end; its closing JSON."""
    env = {**cluster.env(), S3_ENV: json.dumps(minio_s3a_conf(server)), "PYSPARK_PYTHON": sys.executable,
           "PATH": os.pathsep.join([str(spark_home() / "bin"), os.environ.get("PATH", "")]),
           "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO,
                                   start_new_session=True)
    job = Job(process, log_path, 0)
    try:
        return job.wait(RUN_TIMEOUT_S)
    finally:
        job.kill()


def resolved_jars(ivy: Path) -> list[str]:
    """The jars Spark's Ivy retrieved for the driver and executors (``org_artifact-rev.jar``)."""
    return sorted(p.name for p in (ivy / "jars").glob("*.jar"))


def shipped_by_spark() -> set[str]:
    """Artifact names of the jars pyspark ships."""
    return {m.group(1) for p in (spark_home() / "jars").glob("*.jar") if (m := re.match(r"^(.+?)-\d", p.name))}


def check_resolution(ivy: Path, log: str) -> None:
    """The shim came from dist/maven, hadoop-aws of the line's Hadoop with it, nothing Spark ships."""
    line = running_line()
    jars = resolved_jars(ivy)
    coordinates = shim_coordinates()
    group, artifact, version = coordinates.split(":")
    assert f"{group}_{artifact}-{version}.jar" in jars, jars
    assert f"org.apache.hadoop_hadoop-aws-{line.hadoop}.jar" in jars, jars
    assert not [j for j in jars if "bundle" in j and not line.sdk_v1], jars  # no 500 MB SDK v2 bundle
    artifacts = {m.group(1) for j in jars if (m := re.match(r"^[^_]+_(.+?)-\d", j))}
    assert not artifacts & shipped_by_spark(), sorted(artifacts & shipped_by_spark())
    found = rf"found {re.escape(group)}#{re.escape(artifact)};{re.escape(version)} in repo-1"  # --repositories
    assert re.search(found, log), log[-3000:]
    assert "local-m2-cache" not in log


def check_query(server: MinioServer, prefix: str, expected: set[int]) -> None:
    """Exactly-once output, and state files written directly by the shim on the executors."""
    cp, out = f"{prefix}/checkpoint", f"{prefix}/output"
    with DirectWriteManager(**server.manager_options()) as manager:
        ids = []
        for path in committed_files(server.uri(out), manager=manager):
            with manager.open(path) as f:
                ids += [int(json.loads(line)["id"]) for line in f.read().splitlines() if line]
    assert sorted(ids) == sorted(expected)  # every id once although the input repeats ids across batches
    keys = server.keys(cp + "/")
    state = [k for k in keys if re.match(rf"{re.escape(cp)}/state/0/\d+/\d+\.delta$", k)]
    assert len(state) >= 4, keys  # 4 partitions' state stores, written by the executors' tasks
    client = server.client()
    for key in [*state, f"{cp}/commits/0"]:
        assert client.head_object(Bucket=server.buckets[0], Key=key)["Metadata"].get(WRITE_ID_KEY), key
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".") or ".tmp" in k], keys  # no temp keys
    assert server.open_uploads(prefix + "/") == []


@dataclass
class Case:
    """What both runs share: an empty Ivy dir and its settings, the inputs, the job's arguments."""

    prefix: str
    expected: set[int]
    ivy: Path
    ivy_conf: list[str]
    job_args: list[str]


@pytest.fixture
def case(standalone_cluster: StandaloneCluster, minio_server: MinioServer, tmp_path: Path) -> Case:
    """A case on the cluster (its workers up) with a fresh prefix on MinIO and a fresh Ivy dir."""
    standalone_cluster.ensure_workers()
    prefix = f"maven/{uuid.uuid4().hex[:12]}"
    expected = add_inputs(tmp_path / "input", 4)
    settings = tmp_path / "ivysettings.xml"
    settings.write_text(IVY_SETTINGS)
    ivy = tmp_path / "ivy"
    job_args = ["--master", standalone_cluster.master_url, "--input", str(tmp_path / "input"),
                "--output", minio_server.uri(f"{prefix}/output", scheme="s3a"),
                "--checkpoint", minio_server.uri(f"{prefix}/checkpoint", scheme="s3a"),
                "--query", "dedup", "--state-store", "hdfs", "--partitions", "4"]
    return Case(prefix, expected, ivy, [f"spark.jars.ivy={ivy}", f"spark.jars.ivySettings={settings}"], job_args)


def test_spark_submit_packages_runs_the_stateful_query(
    case: Case, standalone_cluster: StandaloneCluster, minio_server: MinioServer, maven_repo: Path, tmp_path: Path,
    record_property: Any,
) -> None:
    """docs/spark.md's ``spark-submit --packages <coordinates> --repositories file:///path/to/dist/maven --conf ...``
    run as written by bash, the repository swapped for this checkout's ``dist/maven`` and ``my_query.py`` for the
    cluster's master, the private Ivy settings and the job, which sets no jars and none of the shim's settings."""
    [block] = blocks_tested_by("tests/spark_cluster/test_maven_packages.py::"
                               "test_spark_submit_packages_runs_the_stateful_query")
    assert f"--packages {shim_coordinates()}" in block.text, "the docs name another line's artifact"
    query = ["--master", standalone_cluster.master_url, *[a for c in case.ivy_conf for a in ("--conf", c)],
             *EXECUTOR_CONF, str(REPO / "harness" / "job.py"), "--jars", "submitted", *case.job_args]
    script = substituted(block, {"file:///path/to/dist/maven": maven_repo.as_uri(), "my_query.py": shlex.join(query)})
    command = ["bash", "-euo", "pipefail", "-c", script]
    log = tmp_path / "submit.log"
    outcome = run(command, log, minio_server, standalone_cluster)
    assert outcome["status"] == "ok", log.read_text()[-4000:]
    check_resolution(case.ivy, log.read_text())
    check_query(minio_server, case.prefix, case.expected)
    record_property("resolved_jars", " ".join(resolved_jars(case.ivy)))


# make test's budget: spark-submit --packages above resolves the same POM through Ivy
@pytest.mark.extended(
    covered_by="tests/spark_cluster/test_maven_packages.py::test_spark_submit_packages_runs_the_stateful_query")
def test_configure_packages_in_a_session_builder_runs_the_stateful_query(
    case: Case, minio_server: MinioServer, maven_repo: Path, standalone_cluster: StandaloneCluster, tmp_path: Path,
) -> None:
    """``configure(builder, s3, packages=True, repositories=file://<dist/maven>)`` in a plain Python driver."""
    command = [sys.executable, "-m", "harness.job", "--jars", "packages", "--repository", maven_repo.as_uri(),
               *[a for c in [*case.ivy_conf, *EXECUTOR_CONF[1::2]] for a in ("--conf", c)], *case.job_args]
    log = tmp_path / "builder.log"
    outcome = run(command, log, minio_server, standalone_cluster)
    assert outcome["status"] == "ok", log.read_text()[-4000:]
    check_resolution(case.ivy, log.read_text())
    check_query(minio_server, case.prefix, case.expected)
