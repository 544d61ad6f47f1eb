"""The dropDuplicates query on YARN (a MiniYARNCluster: 1 ResourceManager, 2 NodeManagers), submitted with
``spark-submit --master yarn`` in client and in cluster deploy mode, its checkpoint and state stores on MinIO
through the shim, every request counted at MinIO's recording proxy (``minio_pipeline``). The shim reaches the
application master and the executors through the distributed cache (``spark.jars``). One run meets an executor
container SIGKILLed mid-batch and then the driver (client mode) or the application master with the driver in it
(cluster mode) SIGKILLed; the application is submitted again on the same checkpoint: exactly-once output, every
checkpoint and state file carrying the shim's write id, one PutObject per checkpoint file as on the standalone
cluster (tests/spark_cluster/test_cluster.py)."""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.protocol import WRITE_ID_KEY

from ..backends.yarn import MiniYarn
from ..spark_cluster.test_cluster import act_when
from ..spark_cluster.test_maven_packages import IVY_SETTINGS, maven_repo  # noqa: F401 - dist/maven, Central only
from ..spark_e2e.conftest import Pipeline, committed_ids
from .conftest import AM_CLASS, EXECUTOR_CLASS, kill_containers, submit

pytestmark = [pytest.mark.spark, pytest.mark.yarn]

RUN_TIMEOUT_S = 900
"""Per submission: container starts on a busy 2-core machine take their time (an AM about 20 s, executors 30 s)."""
FILES = 6


def _state_put(pipeline: Pipeline, version: int) -> Any:
    pattern = re.compile(rf"^{re.escape(pipeline.checkpoint_key)}/state/0/\d+/{version}\.delta$")
    return lambda r: r.operation == "PutObject" and r.status == 200 and pattern.search(r.key) is not None


# make test's budget: a YARN application costs minutes of container starts; the standalone cluster's kills are the
# same query's executor and driver kills, in the gate.
@pytest.mark.extended(
    covered_by="tests/spark_cluster/test_cluster.py::test_executor_worker_and_driver_kills_then_exactly_once")
@pytest.mark.parametrize("deploy_mode", ["client", "cluster"])
def test_executor_and_driver_kills_on_yarn_then_exactly_once(
    minio_pipeline: Pipeline, yarn_cluster: MiniYarn, deploy_mode: str, record_property: Any
) -> None:
    """Executors SIGKILLed once batch 1 has stored a state file (YARN starts new containers and the tasks run
    again), then the driver (client mode: spark-submit's process group; cluster mode: the AM's container) once
    batch 3 has; a new submission on the same checkpoint runs to the end exactly-once."""
    p = minio_pipeline
    expected: set[int] = set()
    for b in range(FILES):
        ids = [i for i in (*range(b * 5, b * 5 + 5), b * 5 - 1, 0) if i >= 0]  # duplicates of earlier batches
        p.add_input(b, ids)
        expected.update(ids)
    args = ("--query", "dedup", "--partitions", "4")
    started = time.monotonic()
    job = submit(p, yarn_cluster, deploy_mode, *args)
    killed: list[int] = []

    def kill_executors() -> None:
        app = job.application_id()
        assert app is not None, job.tail()
        killed.extend(kill_containers(app, EXECUTOR_CLASS))

    act_when(p, job, _state_put(p, 2), kill_executors, RUN_TIMEOUT_S)  # batch 1
    assert killed, f"no executor container found to kill; log:\n{job.tail()}"
    first_app = job.application_id()
    assert first_app is not None
    if deploy_mode == "client":
        p.kill_when(job, _state_put(p, 4), RUN_TIMEOUT_S)  # batch 3: the driver, spark-submit's process group
        assert job.killed, "the driver ended before its kill point"
    else:
        ams: list[int] = []
        act_when(p, job, _state_put(p, 4), lambda: ams.extend(kill_containers(first_app, AM_CLASS)), RUN_TIMEOUT_S)
        assert ams, "no application master container found to kill"
        outcome = job.wait(RUN_TIMEOUT_S)  # spark-submit reports the application failed (one attempt only)
        assert outcome["status"] != "ok", outcome
    killed_after = time.monotonic() - started

    job = submit(p, yarn_cluster, deploy_mode, *args)
    outcome = job.wait(RUN_TIMEOUT_S)
    assert outcome["status"] == "ok", (outcome, job.tail())
    total = time.monotonic() - started

    assert committed_ids(p) == sorted(expected)  # exactly-once although the input repeats ids across batches
    # The shim reached the containers through the distributed cache: localized into the NodeManagers' dirs.
    second_app = job.application_id()
    assert second_app is not None and second_app != first_app
    localized = [jar for jar in yarn_cluster.work_dir.rglob("checkpointfs-spark*.jar") if "filecache" in jar.parts]
    assert localized, sorted(str(x) for x in yarn_cluster.work_dir.glob("*/*"))

    cp = p.checkpoint_key
    keys = p.checkpoint_keys()
    written = [f"{cp}/{log}/{n}" for n in range(FILES) for log in ("offsets", "commits")]
    state = [k for k in keys if re.search(rf"^{re.escape(cp)}/state/0/\d+/\d+\.delta$", k)]
    assert set(written) <= set(keys), keys
    assert len(state) >= 4 * FILES, state
    admin = p.server.client(admin=True)
    for key in [*written, *state]:
        assert WRITE_ID_KEY in admin.head_object(Bucket=p.server.buckets[0], Key=key)["Metadata"], key
    requests = p.requests(cp)
    assert not [r for r in requests if r.operation == "CopyObject"]
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".") or ".tmp" in k], keys
    assert p.server.open_uploads(p.prefix + "/") == []
    # One stored PutObject per checkpoint file, as on the standalone cluster; a state file of a batch that a kill
    # interrupted may be written again by the retried task (createAtomic with overwrite), never more than twice.
    stored = Counter(r.key for r in requests if r.operation == "PutObject" and r.status == 200)
    assert all(stored[k] == 1 for k in written), {k: stored[k] for k in written if stored[k] != 1}
    assert all(1 <= stored[k] <= 2 for k in state), {k: stored[k] for k in state if not 1 <= stored[k] <= 2}
    per_file = len(requests) / len(written + state)
    print(f"yarn {deploy_mode}: executors killed {len(killed)}, driver killed at {killed_after:.1f} s, done at "
          f"{total:.1f} s, {per_file:.2f} requests per checkpoint file")
    record_property("executors_killed", len(killed))
    record_property("seconds_to_driver_kill", round(killed_after, 1))
    record_property("seconds_total", round(total, 1))
    record_property("requests_per_checkpoint_file", round(per_file, 2))
    record_property("state_files_written_twice", sum(1 for k in state if stored[k] == 2))


# make test's budget: the standalone cluster runs spark-submit --packages from dist/maven in the gate.
@pytest.mark.extended(
    covered_by="tests/spark_cluster/test_maven_packages.py::test_spark_submit_packages_runs_the_stateful_query")
def test_shim_by_packages_from_dist_maven_on_yarn_runs_the_stateful_query(
    minio_pipeline: Pipeline, yarn_cluster: MiniYarn, maven_repo: Path, tmp_path: Path, record_property: Any  # noqa: F811
) -> None:
    """Client mode, the shim by its coordinates (``spark.jars.packages``) from this checkout's ``dist/maven``,
    resolved by spark-submit into an empty Ivy dir with Maven Central as the only other repository: the resolved
    jars reach the executors through the distributed cache and the query is exactly-once, every state file carrying
    the write id."""
    p = minio_pipeline
    expected: set[int] = set()
    for b in range(3):
        ids = [i for i in (*range(b * 5, b * 5 + 5), b * 5 - 1, 0) if i >= 0]
        p.add_input(b, ids)
        expected.update(ids)
    settings = tmp_path / "ivysettings.xml"
    settings.write_text(IVY_SETTINGS)
    ivy = tmp_path / "ivy"
    started = time.monotonic()
    job = submit(p, yarn_cluster, "client", "--query", "dedup", "--partitions", "4", repository=maven_repo,
                 extra_conf={"spark.jars.ivy": str(ivy), "spark.jars.ivySettings": str(settings)})
    outcome = job.wait(RUN_TIMEOUT_S)
    assert outcome["status"] == "ok", (outcome, job.tail())
    assert committed_ids(p) == sorted(expected)
    app = job.application_id()
    assert app is not None
    shim = [jar.name for jar in (ivy / "jars").glob("io.checkpointfs_*.jar")]
    assert shim, sorted(x.name for x in (ivy / "jars").glob("*.jar"))
    localized = [jar for jar in yarn_cluster.work_dir.rglob(shim[0]) if "filecache" in jar.parts]
    assert localized, f"{shim[0]} not localized by any NodeManager"
    cp = p.checkpoint_key
    state = [k for k in p.checkpoint_keys() if re.search(rf"^{re.escape(cp)}/state/0/\d+/\d+\.delta$", k)]
    assert len(state) >= 4 * 3, state
    admin = p.server.client(admin=True)
    for key in [*state, f"{cp}/commits/0"]:
        assert WRITE_ID_KEY in admin.head_object(Bucket=p.server.buckets[0], Key=key)["Metadata"], key
    print(f"yarn --packages: {time.monotonic() - started:.1f} s")
    record_property("seconds_total", round(time.monotonic() - started, 1))
