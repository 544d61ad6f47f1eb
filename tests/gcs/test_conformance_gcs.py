"""The conformance suite on fake-gcs-server: DirectWriteManager on ``gs://`` (GcsStore), store check on. The
emulator keeps no request log: a commit's cost is counted at the manager's own client (every request it sent,
retries included, by the store interface's names: checkpointfs.store.gcs). Chunks are GCS's minimum (256 KiB), so
the suite's large files are resumable uploads of three chunks and a final one."""

from __future__ import annotations

import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("google.auth", reason="the Python GCS store needs the gcs extra (google-auth, requests)")

from checkpointfs import DirectWriteManager
from checkpointfs.store.check import CheckedStore
from checkpointfs.store.gcs.client import CHUNK_MULTIPLE
from checkpointfs.store.gcs.store import GcsStore
from harness.servers.fake_gcs import FakeGcsServer
from tests.conformance.cases import FAST_RETRY, Case
from tests.conformance.suite import ContractSuite


@dataclass(frozen=True)
class SentRequest:
    """One request the store's client sent: its operation (the interface's name) and the key it named."""

    operation: str
    key: str


class ClientSide:
    """What the conformance ``Case`` reads from its ``server`` on fake-gcs-server: the requests the manager's own
    client sent (the emulator logs none), and no open uploads: GCS cannot list resumable sessions (an unfinalized one
    is invisible and expires), so the suite's "no upload left open" checks hold vacuously here."""

    def __init__(self, store: GcsStore, server: FakeGcsServer) -> None:
        self._server = server
        self._sent: list[SentRequest] = []
        store.listeners.append(lambda operation, key: self._sent.append(SentRequest(operation, key)))
        self.requests = self

    def all(self) -> list[SentRequest]:
        """Requests sent since the last :meth:`clear`, in order."""
        return list(self._sent)

    def counts(self) -> dict[str, int]:
        """Requests sent since the last :meth:`clear`, by operation."""
        return dict(Counter(r.operation for r in self._sent))

    def clear(self) -> None:
        """Forget the requests counted so far."""
        self._sent.clear()

    def open_uploads(self, bucket: str | None = None) -> list[str]:
        """Always empty (see the class)."""
        return []

    def client(self, admin: bool = True) -> AnotherWriter:
        """A writer behind the manager's back, uncounted (the suite's probe tests take the embedded S3's admin
        client for it)."""
        return AnotherWriter(self._server)


class AnotherWriter:
    """The two calls of boto3's S3 client the suite's probe tests make, on fake-gcs-server's own helpers."""

    def __init__(self, server: FakeGcsServer) -> None:
        self._server = server

    def put_object(self, *, Bucket: str, Key: str, Body: bytes) -> None:  # boto3's argument names
        self._server.write(Key, Body, bucket=Bucket)

    def delete_object(self, *, Bucket: str, Key: str) -> None:
        url = f"{self._server.endpoint_url}/storage/v1/b/{quote(Bucket, safe='')}/o/{quote(Key, safe='')}"
        with urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=10):
            pass


@pytest.fixture(params=["direct-abort|gcs"])
def case(request: pytest.FixtureRequest, gcs_emulator: FakeGcsServer, tmp_path: Path) -> Case:
    root = gcs_emulator.uri(f"conformance/{uuid.uuid4().hex}")
    manager = DirectWriteManager(endpoint_url=gcs_emulator.endpoint_url, part_size=CHUNK_MULTIPLE, retry=FAST_RETRY,
                                 root=root)
    request.addfinalizer(manager.close)
    assert isinstance(manager.store, CheckedStore) and isinstance(manager.store.inner, GcsStore)
    case = Case(request.param, manager, root, part_size=CHUNK_MULTIPLE, last_part_with_completion=True,
                small_commit_requests={"PutObject": 1}, store_check=True, probe_rule=True)
    case.server = ClientSide(manager.store.inner, gcs_emulator)  # type: ignore[assignment]  # requests and open_uploads() only
    return case


class TestContractOnGcs(ContractSuite):
    """docs/contract.md on fake-gcs-server, against each case of ``case`` above."""
