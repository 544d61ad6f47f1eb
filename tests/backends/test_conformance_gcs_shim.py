"""The conformance suite for the JVM shim on ``gs://`` (``jvm-shim|gcs``): DirectWriteCheckpointFileManager through
Google's Cloud Storage connector (the running line's pinned shaded jar, on the session's class path) on
fake-gcs-server, behind the recording proxy (harness.servers.recording_proxy with its GCS classifier), which
counts every request the connector sends by the store interface's names (``PutObject``: a single-request upload;
``CreateMultipartUpload``/``UploadPart``/``CompleteMultipartUpload``: a resumable upload's initiation, chunks and
final chunk) and can drop conditions (``ignore_conditional_writes``) to play a store that ignores them.

The case's part size is GCS's chunk granularity (256 KiB, ``fs.gs.outputstream.upload.chunk.size``, which the shim
takes as its part size), so the suite's large files are resumable uploads of three chunks and a final one. A bucket
of its own keeps Hadoop's FileSystem cache (one instance per scheme and bucket) from handing this case an instance
made for another endpoint."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

pytest.importorskip("py4j", reason="drives the JVM shim through py4j, which pyspark brings (extra 'spark')")

from checkpointfs.spark.jvm_manager import JvmCheckpointFileManager
from checkpointfs.testing.faults import FaultPlan
from harness.servers.fake_gcs import FakeGcsServer, GcsConnector, connector_jar_path
from harness.servers.recording_proxy import RecordingProxy, classify_gcs
from tests.conformance.cases import Case
from tests.conformance.suite import ContractSuite
from tests.conftest import gcs_connector_jars
from tests.gcs.test_conformance_gcs import AnotherWriter

pytestmark = [pytest.mark.spark, pytest.mark.gcs]

BUCKET = "checkpointfs-shim-conformance"
CHUNK = 256 * 1024
"""GCS's chunk granularity: the case's part size."""


class ProxySide:
    """What the conformance ``Case`` reads from its ``server``: the proxy's request log and fault plan, the
    emulator's keys in the case's bucket, no open uploads (GCS cannot list resumable sessions: an unfinalized one is
    invisible), and a writer behind the manager's back."""

    def __init__(self, proxy: RecordingProxy, server: FakeGcsServer) -> None:
        self._proxy = proxy
        self._server = server
        self.requests = proxy.requests
        self.endpoint_url = proxy.endpoint_url

    @property
    def faults(self) -> FaultPlan:
        """The plan in force (a fresh, empty one per case)."""
        assert self._proxy.faults is not None
        return self._proxy.faults

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """The emulator's keys under ``prefix`` in the case's bucket."""
        return self._server.keys(prefix, bucket=BUCKET)

    def open_uploads(self, bucket: str | None = None) -> list[str]:
        """Always empty (see the class)."""
        return []

    def client(self, admin: bool = True) -> AnotherWriter:
        """A writer behind the manager's back, uncounted (straight to the emulator)."""
        return AnotherWriter(self._server)


@pytest.fixture(scope="module")
def shim_gcs_proxy(fake_gcs_server: FakeGcsServer) -> Iterator[RecordingProxy]:
    fake_gcs_server.create_bucket(BUCKET)
    with RecordingProxy(fake_gcs_server.endpoint_url, classifier=classify_gcs, dialect="gcs") as proxy:
        yield proxy


@pytest.fixture(params=["jvm-shim|gcs"])
def case(request: pytest.FixtureRequest, fake_gcs_server: FakeGcsServer, gcs_connector: GcsConnector,
         shim_gcs_proxy: RecordingProxy) -> Iterator[Case]:
    if not gcs_connector_jars():
        pytest.skip("Google's GCS connector was not cached when the session's Spark started "
                    f"({connector_jar_path(gcs_connector)}): `make backends` fetches it")
    root = f"gs://{BUCKET}/conformance/{uuid.uuid4().hex}"
    conf = fake_gcs_server.hadoop_conf(gcs_connector)
    conf["fs.gs.storage.root.url"] = shim_gcs_proxy.endpoint_url + "/"
    conf["fs.gs.outputstream.upload.chunk.size"] = str(CHUNK)
    manager = JvmCheckpointFileManager(request.getfixturevalue("spark"), root, hadoop_conf=conf)
    shim_gcs_proxy.faults = FaultPlan([])
    case = Case(request.param, manager, root, part_size=CHUNK, last_part_with_completion=True,
                small_commit_requests={"PutObject": 1}, conditional_writes=True, store_check=True, probe_rule=True,
                open_unseen_heads=1, open_own_large_heads=1)
    case.server = ProxySide(shim_gcs_proxy, fake_gcs_server)  # type: ignore[assignment]
    yield case
    shim_gcs_proxy.faults = None
    manager.close()


class TestContractOnGcsThroughTheShim(ContractSuite):
    """docs/contract.md for the shim on gs://, against the ``case`` above."""
