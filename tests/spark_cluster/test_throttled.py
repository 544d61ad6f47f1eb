"""S3's per-prefix request rates on a standalone cluster: the query with two stateful operators (harness.job's
``windowed-dedup``, RocksDB, changelog checkpointing) through the shim, against an embedded S3 that answers 503
SlowDown beyond a prefix's rate, as S3 does while it repartitions. The shim's writes (S3A's retries below it, the
write id settling what a retried conditional write left) must carry the query through every batch: no failed batch,
each window counted once, each checkpoint file written once and whole."""

from __future__ import annotations

import re

import pytest

from benchmarks.bench_scale import CHANGELOG_KEY, check_exactly_once, windows_committed, write_input
from checkpointfs.testing.rate_limit import RateLimit
from harness.job import WINDOWED_DEDUP
from harness.servers.spark_cluster import StandaloneCluster

from ..spark_e2e.conftest import Pipeline
from .conftest import on_cluster
from .test_cluster import CLUSTER_TIMEOUT_S

pytestmark = [pytest.mark.spark, pytest.mark.cluster]

PARTITIONS = 20
"""Two stateful stages of 20 tasks: 40 state files a batch, more than 10 seconds of the limit's writes."""


# `extended` (make test's budget): the throttling fault profile of the conformance suite runs every manager's
# put-if-absent through 503 SlowDown in make test; `python -m benchmarks.bench_scale --throttle` runs this at scale.
@pytest.mark.extended(covered_by="tests/spark_e2e/test_shim_under_faults.py::TestShimContractUnderFaults")
def test_two_stateful_operators_complete_every_batch_under_a_prefix_rate_limit(
    cluster_pipeline: Pipeline, cluster: StandaloneCluster
) -> None:
    p = cluster_pipeline
    expected = write_input(p.input_dir, files=4, records=200)
    # the whole run shares one prefix (bucket/e2e/): 3 writes and 30 reads a second, a second's burst
    p.server.faults.limit_rate(RateLimit(writes_per_s=3, reads_per_s=30, prefix_depth=1))
    try:
        job = p.start(*on_cluster(cluster, "--partitions", str(PARTITIONS), "--state-store", "rocksdb",
                                  "--conf", f"{CHANGELOG_KEY}=true"), query=WINDOWED_DEDUP)
        outcome = job.wait(CLUSTER_TIMEOUT_S)
    finally:
        p.server.faults.limit_rate(None)
    assert outcome["status"] == "ok", job.tail()
    requests = p.requests()
    throttled = [r for r in requests if r.status == 503]
    assert throttled, "the limit was never reached: the test would prove nothing"
    problem = check_exactly_once(windows_committed(p.server, p.output_key), expected)
    assert problem is None, problem

    # every checkpoint and state file once, whole, with the shim's write id; nothing through a temp key or a COPY
    assert not [r for r in requests if r.operation == "CopyObject"]
    keys = p.checkpoint_keys()
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".")]
    changelogs = [k for k in keys if re.search(r"/state/[01]/\d+/\d+\.changelog$", k)]
    assert len(changelogs) >= 2 * PARTITIONS * 3  # both operators, every partition, every batch
    client = p.server.client(admin=True)
    bucket = p.server.buckets[0]
    for key in [*changelogs, *(k for k in keys if re.search(r"/(offsets|commits)/\d+$", k))]:
        head = client.head_object(Bucket=bucket, Key=key)
        assert head["Metadata"].get("checkpointfs-write-id"), key
