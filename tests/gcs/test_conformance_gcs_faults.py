"""The conformance suite on fake-gcs-server under faults: DirectWriteManager on ``gs://`` behind the recording proxy
(harness.servers.recording_proxy, GCS requests and answers), which injects each fault profile that applies to a
strongly consistent store the way the embedded S3's gateway does (tests/faults): 429 throttling, 500s, resets, lost
answers, 500s after the request applied, truncated reads and listings. What must hold is what the suite asserts.

A resumable upload's chunks and its final chunk get only the faults that apply nothing and say so (429): after one
that may have been applied, the store asks the session what it persisted (``Content-Range: bytes */*``), which
fake-gcs-server answers by finalizing the upload with the bytes it has, and a chunk sent again is appended twice
there (docs/testing.md; tests/gcs/test_emulator_gaps.py shows both as strict xfails). Every other request
(single-request uploads, session starts and cancels, reads, listings, deletes) gets every fault of the profile."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("google.auth", reason="the Python GCS store needs the gcs extra (google-auth, requests)")

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.store.gcs.client import CHUNK_MULTIPLE
from checkpointfs.store.gcs.store import GcsStore
from checkpointfs.testing.faults import Fault, FaultPlan
from harness.servers.fake_gcs import FakeGcsServer
from harness.servers.recording_proxy import RecordingProxy, classify_gcs
from tests.conformance.cases import Case
from tests.conformance.suite import ContractSuite

from .test_conformance_gcs import AnotherWriter

RETRY = RetryPolicy(max_attempts=12, initial_backoff_s=0.005, max_backoff_s=0.05, max_elapsed_s=30)
OUTSIDE_SESSIONS = frozenset({"PutObject", "CreateMultipartUpload", "AbortMultipartUpload", "GetObject",
                              "HeadObject", "ListObjectsV2", "DeleteObject", "HeadBucket"})
"""Every request but a session's chunks and final chunk (see the module)."""
GCS_PROFILES: dict[str, list[Fault]] = {
    "throttling": [Fault("slowdown", probability=0.25)],
    "server-errors": [Fault("server-error", OUTSIDE_SESSIONS, probability=0.2)],
    "resets": [Fault("reset", OUTSIDE_SESSIONS, probability=0.2)],
    "lost-responses": [Fault("lost-response", OUTSIDE_SESSIONS, probability=0.2)],
    "errors-after-apply": [Fault("error-after-apply", OUTSIDE_SESSIONS, probability=0.2)],
    "truncated-bodies": [Fault("truncate", frozenset({"GetObject", "ListObjectsV2"}), probability=0.3)],
}
"""The fault profiles of tests/faults that apply (checkpointfs.testing.faults, same kinds and rates): GCS is
strongly consistent (no lag profiles), and the proxy emulates no latency."""

@pytest.fixture(scope="module")
def gcs_proxy(gcs_emulator: FakeGcsServer) -> Iterator[RecordingProxy]:
    with RecordingProxy(gcs_emulator.endpoint_url, classifier=classify_gcs, dialect="gcs") as proxy:
        yield proxy


@pytest.fixture(params=[f"direct-abort|gcs-{p}" for p in GCS_PROFILES])
def case(request: pytest.FixtureRequest, gcs_emulator: FakeGcsServer, gcs_proxy: RecordingProxy,
         tmp_path: Path) -> Iterator[Case]:
    profile = request.param.split("|gcs-", 1)[1]
    root = gcs_emulator.uri(f"matrix/{uuid.uuid4().hex}")
    manager = DirectWriteManager(endpoint_url=gcs_proxy.endpoint_url, part_size=CHUNK_MULTIPLE, retry=RETRY,
                                 root=root)
    plan = FaultPlan([dataclasses.replace(fault) for fault in GCS_PROFILES[profile]], seed=len(profile))
    gcs_proxy.faults = plan
    assert isinstance(manager.store.inner, GcsStore)  # type: ignore[attr-defined]
    case = Case(request.param, manager, root, part_size=CHUNK_MULTIPLE, last_part_with_completion=True,
                no_cost_promise="request counts are checked without faults", store_check=True, probe_rule=False,
                conditional_writes=True)
    case.server = ProxySide(gcs_proxy, gcs_emulator)  # type: ignore[assignment]
    yield case
    gcs_proxy.faults = None
    manager.close()
    print(f"{request.param}: injected {plan.kinds_injected()}")


class ProxySide:
    """What the conformance ``Case`` reads from its ``server`` here: the proxy's request log (each request as the
    proxy relayed it, with the fault injected into it) and fault plan, the emulator's keys, no open uploads (GCS
    cannot list resumable sessions: an unfinalized one is invisible), and a writer behind the manager's back."""

    def __init__(self, proxy: RecordingProxy, server: FakeGcsServer) -> None:
        self._proxy = proxy
        self._server = server
        self.requests = proxy.requests
        self.endpoint_url = proxy.endpoint_url

    @property
    def faults(self) -> FaultPlan:
        """The plan in force."""
        assert self._proxy.faults is not None
        return self._proxy.faults

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """The emulator's keys under ``prefix``."""
        return self._server.keys(prefix)

    def open_uploads(self, bucket: str | None = None) -> list[str]:
        """Always empty (see the class)."""
        return []

    def client(self, admin: bool = True) -> AnotherWriter:
        """A writer behind the manager's back."""
        return AnotherWriter(self._server)


class TestContractOnGcsUnderFaults(ContractSuite):
    """docs/contract.md on fake-gcs-server behind the fault-injecting proxy, per profile of ``case`` above."""
