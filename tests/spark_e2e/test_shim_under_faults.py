"""The conformance suite against the JVM shim under each kind of request fault (the fault matrix of tests/faults,
for the Python manager, run here through S3A): S3A and the AWS SDK retry; what must hold is what the suite asserts:
no partial object visible, no upload left open, no false "already exists" from a retry that met its own earlier
write, no false success.

Eventual-consistency lags are left out: the shim relies on the store's read-after-write consistency (S3's since
2020) and has no consistency window of its own, unlike the Python DirectWriteManager."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("py4j", reason="drives the JVM shim through py4j, which pyspark brings (extra 'spark')")

from checkpointfs.spark.jvm_manager import JvmCheckpointFileManager
from checkpointfs.testing import EmbeddedS3
from checkpointfs.testing.faults import PROFILES
from tests.conformance.cases import Case
from tests.conformance.jvm_cases import S3A_PART_SIZE
from tests.conformance.suite import ContractSuite

pytestmark = pytest.mark.spark

FAULT_PROFILES = ["throttling", "server-errors", "resets", "lost-responses", "errors-after-apply",
                  "truncated-bodies", "latency"]
RETRIES = {
    "fs.s3a.impl.disable.cache": "true",  # a file system of its own with these retry settings
    "fs.s3a.retry.limit": "12",
    "fs.s3a.retry.interval": "5ms",
    "fs.s3a.retry.throttle.limit": "12",
    "fs.s3a.retry.throttle.interval": "5ms",
}


@pytest.fixture(params=[f"jvm-shim|{p}" for p in FAULT_PROFILES])
def case(request: pytest.FixtureRequest, spark: Any, embedded_s3: EmbeddedS3, tmp_path: Path) -> Case:
    profile = request.param.split("|")[1]
    root = embedded_s3.uri(f"matrix/{uuid.uuid4().hex}", scheme="s3a")
    manager = JvmCheckpointFileManager(spark, root, hadoop_conf=RETRIES)
    plan = PROFILES[profile](len(profile))
    embedded_s3.faults = plan

    def report() -> None:
        print(f"{request.param}: injected {plan.kinds_injected()}")

    request.addfinalizer(report)
    return Case(request.param, manager, root, server=embedded_s3, part_size=S3A_PART_SIZE,
                no_cost_promise="request counts are checked without faults", conditional_writes=True)


class TestShimContractUnderFaults(ContractSuite):
    """The conformance suite against the JVM shim, under each request-fault profile of ``case`` below."""
