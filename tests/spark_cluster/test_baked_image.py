"""docs/kubernetes.md's image, emulated without a container engine: a standalone cluster whose master, workers and
driver start from a Spark home (:mod:`harness.spark_image`) holding the shim and its s3a:// jars in ``jars/`` and the
page's ``spark-defaults.conf`` in ``conf/``; the driver names no jars and sets none of the shim's settings, and the
credentials come from the environment, as a pod's do. The dedup query on MinIO survives a driver SIGKILL
mid-batch and a restart exactly-once, every checkpoint file written directly with the shim's write id."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.spark import spark_conf
from checkpointfs.spark.config import PACKAGES_KEY
from harness.servers.spark_cluster import StandaloneCluster
from harness.snippets import blocks_tested_by
from harness.spark_image import bake_spark_home

from ..spark_e2e.conftest import Pipeline, committed_ids
from .conftest import EXECUTOR_CONF

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.minio]

NODE = "tests/spark_cluster/test_baked_image.py::test_baked_image_query_survives_a_driver_kill"
RUN_TIMEOUT_S = 600
"""Per driver run on a busy 2-core machine."""


def documented_defaults() -> dict[str, str]:
    """The settings of docs/kubernetes.md's ``spark-defaults.conf`` block (``key value`` lines)."""
    [block] = blocks_tested_by(NODE)
    pairs = [line.split(None, 1) for line in block.text.splitlines() if line.strip() and not line.startswith("#")]
    return {key: value.strip() for key, value in pairs}


def test_documented_defaults_are_what_spark_conf_makes() -> None:
    """The page's file holds every setting ``spark_conf()`` makes for the shim (less the jars: the image has them),
    with the same values; beyond them only the credentials provider."""
    made = {k: v for k, v in spark_conf(None, packages=True).items() if k != PACKAGES_KEY}
    documented = documented_defaults()
    assert {k: documented.get(k) for k in made} == made
    assert set(documented) - set(made) == {"spark.hadoop.fs.s3a.aws.credentials.provider"}
    assert not [k for k in documented if k.startswith("spark.jars")]


@pytest.fixture
def image_cluster(logged_minio: Any, tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[StandaloneCluster]:
    """A master and 2 workers started from the baked home, whose spark-defaults.conf is the page's plus where the
    store is (MinIO's endpoint through the recording proxy: not a secret); MinIO's keys in the environment of the
    daemons (and so of their executors) and of the drivers this test starts from that home."""
    base = tmp_path_factory.mktemp("image")
    minio = logged_minio.minio
    [block] = blocks_tested_by(NODE)
    where = {key: value for key, value in logged_minio.hadoop_conf().items()
             if key in ("fs.s3a.endpoint", "fs.s3a.endpoint.region", "fs.s3a.path.style.access",
                        "fs.s3a.connection.ssl.enabled")}
    defaults = block.text + "".join(f"spark.hadoop.{key} {value}\n" for key, value in where.items())
    home = bake_spark_home(base / "spark", defaults)
    credentials = {"AWS_ACCESS_KEY_ID": minio.access_key, "AWS_SECRET_ACCESS_KEY": minio.secret_key,
                   "AWS_REGION": minio.region}
    for key, value in {**credentials, "SPARK_HOME": str(home), "SPARK_LOCAL_HOSTNAME": "127.0.0.1"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    with StandaloneCluster(workers=2, cores=1, memory="1g", base_dir=base / "cluster", home=home,
                           env=credentials) as cluster:
        yield cluster


def test_baked_image_query_survives_a_driver_kill(
    minio_pipeline: Pipeline, image_cluster: StandaloneCluster, record_property: Any
) -> None:
    """The dedup query (4 state partitions) from the baked home, with ``--jars image`` (no jars, no settings of
    the job's own): SIGKILLed once batch 2's state files are stored, then run again to the end. Every id once
    although the input repeats ids across batches; every checkpoint file (offsets, commits, state, metadata,
    source log) carries the shim's write id; no temp key, no copy; no jar was shipped to an executor's work dir."""
    p = minio_pipeline
    files = 5
    expected: set[int] = set()
    for b in range(files):
        ids = [i for i in (*range(b * 5, b * 5 + 5), b * 5 - 1, 0) if i >= 0]
        p.add_input(b, ids)
        expected.update(ids)
    assert os.environ["SPARK_HOME"] == str(image_cluster.home)
    args = ("--master", image_cluster.master_url, *EXECUTOR_CONF, "--jars", "image", "--partitions", "4")
    cp = p.checkpoint_key
    state_v3 = re.compile(rf"^{re.escape(cp)}/state/0/\d+/3\.delta$")  # batch 2
    job = p.start(*args, query="dedup")
    p.kill_when(job, lambda r: r.operation == "PutObject" and r.status == 200 and bool(state_v3.search(r.key)),
                RUN_TIMEOUT_S)
    assert job.killed, "the driver ended before its kill point"
    job = p.start(*args, query="dedup")
    outcome = job.wait(RUN_TIMEOUT_S)
    assert outcome["status"] == "ok", job.tail()

    assert committed_ids(p) == sorted(expected)
    keys = p.checkpoint_keys()
    admin = p.server.client(admin=True)
    files_written = [k for k in keys if not k.endswith("/")]
    assert len([k for k in files_written if k.startswith(f"{cp}/state/")]) >= 4 * files, keys
    for log in ("offsets", "commits"):
        assert {f"{cp}/{log}/{n}" for n in range(files)} <= set(files_written), keys
    missing = [k for k in files_written
               if WRITE_ID_KEY not in admin.head_object(Bucket=p.server.buckets[0], Key=k)["Metadata"]]
    assert missing == [], missing
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".") or ".tmp" in k], keys
    assert not [r for r in p.requests(cp) if r.operation == "CopyObject"]
    shipped = sorted(str(j.relative_to(image_cluster.base_dir))
                     for j in image_cluster.base_dir.glob("work-*/app-*/**/*.jar"))
    assert shipped == [], shipped  # executors loaded the shim from the home's jars/, nothing came on spark.jars
    apps = list(image_cluster.base_dir.glob("work-*/app-*"))
    assert apps, "no executor ran on the image's workers"
    record_property("checkpoint_files", len(files_written))
