"""The dropDuplicates query on a standalone cluster (master and 2 workers, executors in JVMs of their own), its
checkpoint and state stores on the embedded S3 through the shim, 4 shuffle partitions: exactly-once through SIGKILLs
of executors mid-write, of a worker, and of the driver; and two drivers on one checkpoint, of which one proceeds."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from checkpointfs.testing import Fault, Request
from harness.servers.spark_cluster import StandaloneCluster

from ..spark_e2e.conftest import Job, Pipeline, read_ids
from ..spark_e2e.test_streaming import CONCURRENT_ERROR, ROCKSDB_SST
from .conftest import on_cluster

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

CLUSTER_TIMEOUT_S = 600
"""Per driver run: executors relaunched after a kill take their time on a busy 2-core machine."""
STATE_FILE = {"hdfs": ".delta", "rocksdb": ".zip"}
"""The state store file each provider writes through the checkpoint manager (createAtomic, overwrite allowed)."""


def act_when(pipeline: Pipeline, job: Job, seen: Callable[[Request], bool], action: Callable[[], Any],
             timeout: float = CLUSTER_TIMEOUT_S) -> Request:
    """Run ``action`` as soon as the server has answered a request of ``job``'s run matching ``seen``."""
    deadline = time.monotonic() + timeout
    checked = job.first_request
    while time.monotonic() < deadline:
        requests = pipeline.server.requests.all()
        for request in requests[checked:]:
            if seen(request):
                action()
                return request
        checked = len(requests)
        if job.process.poll() is not None:
            raise AssertionError(f"job ended before the kill point; log:\n{job.tail()}")
        time.sleep(0.005)
    job.kill()
    raise AssertionError(f"kill point not reached within {timeout}s; log:\n{job.tail()}")


def _state_key(pipeline: Pipeline, version: int, state_store: str) -> str:
    return rf"^{re.escape(pipeline.checkpoint_key)}/state/0/\d+/{version}{re.escape(STATE_FILE[state_store])}$"


def _stored(pattern: str) -> Callable[[Request], bool]:
    return lambda r: r.operation == "PutObject" and r.status == 200 and re.search(pattern, r.key) is not None


# HDFS-backed state `extended` (make test's budget): its kills run locally in tests/spark_e2e/test_streaming.py and on
# HDFS in tests/backends/test_hdfs_spark.py; the cluster's executor and worker kills are the RocksDB query's here.
@pytest.mark.parametrize("state_store", [
    pytest.param("hdfs", marks=pytest.mark.extended(covered_by="[hdfs] -> [rocksdb]")), "rocksdb"])
def test_executor_worker_and_driver_kills_then_exactly_once(
    cluster_pipeline: Pipeline, cluster: StandaloneCluster, spark: Any, state_store: str, record_property: Any
) -> None:
    """One run of the query meets, in this order: (1) every executor SIGKILLed while one of them has a state file's
    PUT in flight (applied at the store, never answered): the task is retried elsewhere and writes that state
    version again; (2) a worker SIGKILLed mid-batch (its executor goes with it); (3) the driver SIGKILLed
    mid-batch. The worker is brought back and a new driver runs to the end: the output is exactly-once although
    the input repeats ids across batches (the state restored is right), and every state file is whole and carries
    the shim's write id."""
    p = cluster_pipeline
    files = 6
    expected: set[int] = set()
    for b in range(files):
        ids = [i for i in (*range(b * 5, b * 5 + 5), b * 5 - 1, 0) if i >= 0]  # duplicates of earlier batches
        p.add_input(b, ids)
        expected.update(ids)
    args = on_cluster(cluster, "--state-store", state_store, "--partitions", "4")
    in_flight = _state_key(p, 2, state_store)  # batch 1
    killed: list[int] = []
    p.server.faults.add(Fault("lost-response", operations=frozenset({"PutObject"}), key_pattern=in_flight[1:],
                              times=1, then=lambda: killed.extend(cluster.kill_executors())))

    job = p.start(*args, query="dedup")
    act_when(p, job, _stored(_state_key(p, 4, state_store)), lambda: cluster.kill_worker(0))  # batch 3
    assert killed, "the executors were not killed at the in-flight state write"
    p.kill_when(job, _stored(_state_key(p, 5, state_store)), CLUSTER_TIMEOUT_S)  # batch 4
    assert job.killed, "the driver ended before its kill point"
    cluster.ensure_workers()
    job = p.start(*args, query="dedup")
    outcome = job.wait(CLUSTER_TIMEOUT_S)
    assert outcome["status"] == "ok", job.tail()

    ids = read_ids(spark, p.output)
    assert ids == sorted(expected), Counter(ids).most_common(3)
    cp = p.checkpoint_key
    requests = p.requests(cp)
    # The state file whose writer died was written again by the retried task, and that write stands.
    rewritten = [r for r in requests if r.operation == "PutObject" and re.search(in_flight, r.key)]
    [lost] = [r for r in rewritten if r.status == 0]
    assert any(r.key == lost.key and r.status == 200 for r in rewritten[rewritten.index(lost):]), rewritten
    # Whole versions only: each state file is one object carrying the shim's write id, no upload left open,
    # no temp keys, no copies.
    admin = p.server.client(admin=True)
    state_files = [k for k in p.checkpoint_keys()
                   if k.startswith(f"{cp}/state/") and k.endswith(STATE_FILE[state_store])]
    assert len(state_files) >= 4 * files, state_files
    for key in state_files:
        assert "checkpointfs-write-id" in admin.head_object(Bucket="checkpoints", Key=key)["Metadata"], key
    assert p.server.open_uploads() == []
    assert not [k for k in p.checkpoint_keys() if k.rsplit("/", 1)[-1].startswith(".")]
    assert not [r for r in requests if r.operation == "CopyObject"]
    puts = Counter(r.key for r in requests if r.operation == "PutObject" and r.key in state_files)
    if state_store == "rocksdb":
        # The executors load CheckpointS3AFileSystem from spark.jars: each SST upload is PutObject only, without
        # S3A's directory probe of the destination (a LIST of "<key>/"); restores read SST files with HEAD + GET.
        sst_keys = {k for k in p.checkpoint_keys() if ROCKSDB_SST.search(k)}
        assert sst_keys, p.checkpoint_keys()
        probes = [r for r in requests if r.operation == "ListObjectsV2" and ROCKSDB_SST.search(r.key.rstrip("/"))]
        assert probes == [], probes[:5]
        # (Every stored SST file was uploaded; state store maintenance may delete older ones.)
        assert sst_keys <= {r.key for r in requests if r.operation == "PutObject" and ROCKSDB_SST.search(r.key)}
    record_property("executors_killed", len(killed))
    record_property("state_files_written_more_than_once", sum(1 for n in puts.values() if n > 1))


def test_two_queries_on_one_checkpoint_exactly_one_proceeds(
    cluster_pipeline: Pipeline, cluster: StandaloneCluster, spark: Any
) -> None:
    """Two drivers (one executor each) start the dedup query on one checkpoint: the conditional creates let one
    win each checkpoint file, so exactly one query proceeds and the other fails with Spark's concurrent-update
    error; the output is exactly-once."""
    p = cluster_pipeline
    files = 6
    for b in range(files):
        p.add_input(b, list(range(b * 3, b * 3 + 3)))
    args = on_cluster(cluster, "--partitions", "4", "--conf", "spark.cores.max=1")
    first = p.start(*args, query="dedup")
    second = p.start(*args, query="dedup")
    outcomes = [first.wait(CLUSTER_TIMEOUT_S), second.wait(CLUSTER_TIMEOUT_S)]
    statuses = sorted(o["status"] for o in outcomes)
    assert statuses == ["failed", "ok"], (outcomes, first.tail(), second.tail())
    [failed] = [o for o in outcomes if o["status"] == "failed"]
    assert CONCURRENT_ERROR.search(failed["error"]), failed
    assert read_ids(spark, p.output) == list(range(files * 3))
