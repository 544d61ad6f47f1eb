"""The conformance suite on a real MinIO server: DirectWriteManager (both cancel strategies) and the JVM shim on
s3a://. MinIO refuses multipart parts under 5 MiB (moto can be told to accept them), so the part size is MinIO's
minimum and the suite's large files span three parts. MinIO keeps no request log here: the cost of a commit is
counted at the Python manager's own client (every request it sent, retries included); the shim's requests go
through S3A's client and are counted on the embedded S3 only."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

pytest.importorskip("py4j", reason="drives the JVM shim through py4j, which pyspark brings (extra 'spark')")

from checkpointfs import DirectWriteManager
from checkpointfs.spark.jvm_manager import JvmCheckpointFileManager
from harness.servers.minio import MIN_PART_SIZE, MinioServer
from tests.conformance.cases import FAST_RETRY, Case
from tests.conformance.suite import ContractSuite

from .stores import ClientSide, UploadsOf, minio_s3a_conf

pytestmark = pytest.mark.minio

NO_REQUEST_LOG = ("MinIO keeps no request log here and the shim's requests go through S3A's own client: its cost "
                  "is counted on the embedded S3, whose gateway records every request")


@pytest.fixture(params=["direct-abort|minio", "direct-close-then-delete|minio", "jvm-shim|minio"])
def case(request: pytest.FixtureRequest, minio_server: MinioServer, tmp_path: Path) -> Case:
    implementation = request.param.split("|")[0]
    key = f"conformance/{uuid.uuid4().hex}"
    if implementation == "jvm-shim":
        root = minio_server.uri(key, scheme="s3a")
        shim = JvmCheckpointFileManager(request.getfixturevalue("spark"), root,
                                        hadoop_conf=minio_s3a_conf(minio_server))
        request.addfinalizer(shim.close)
        case = Case(request.param, shim, root, part_size=MIN_PART_SIZE, no_cost_promise=NO_REQUEST_LOG)
        case.server = UploadsOf(minio_server, key + "/")  # type: ignore[assignment]  # open_uploads() only
        return case
    root = minio_server.uri(key)
    manager = DirectWriteManager(**minio_server.manager_options(), part_size=MIN_PART_SIZE,
                                 abort_strategy=implementation.removeprefix("direct-"), retry=FAST_RETRY)
    request.addfinalizer(manager.close)
    case = Case(request.param, manager, root, part_size=MIN_PART_SIZE, small_commit_requests={"PutObject": 1},
                store_check=True)
    # requests counted at the manager's client; uploads looked up under the case's prefix
    case.server = ClientSide(minio_server, key + "/", manager.connected.boto)  # type: ignore[assignment]
    return case


class TestContractOnMinio(ContractSuite):
    """docs/contract.md on MinIO, against each case of ``case`` above."""
