"""The recording proxy's fault layer (harness.servers.recording_proxy) in front of fake-gcs-server: what a client
sees of each fault kind, whether the store applied the request, and what the proxy's request log says."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
import requests

from checkpointfs.testing.faults import Fault, FaultPlan
from harness.servers.fake_gcs import FakeGcsServer
from harness.servers.recording_proxy import RecordingProxy, classify_gcs


@pytest.fixture
def proxy(gcs_emulator: FakeGcsServer) -> Iterator[RecordingProxy]:
    with RecordingProxy(gcs_emulator.endpoint_url, classifier=classify_gcs, dialect="gcs") as running:
        yield running


def upload(proxy: RecordingProxy, bucket: str, key: str, body: bytes, *, create: bool = True) -> requests.Response:
    """A single-request (multipart) upload through the proxy."""
    boundary = "b0undary"
    payload = (f"--{boundary}\r\nContent-Type: application/json\r\n\r\n{json.dumps({'name': key})}\r\n--{boundary}\r\n"
               f"Content-Type: application/octet-stream\r\n\r\n").encode() + body + f"\r\n--{boundary}--\r\n".encode()
    params = {"uploadType": "multipart", "name": key, **({"ifGenerationMatch": "0"} if create else {})}
    return requests.post(f"{proxy.endpoint_url}/upload/storage/v1/b/{bucket}/o", params=params, data=payload,
                         headers={"Content-Type": f"multipart/related; boundary={boundary}"}, timeout=10)


@pytest.mark.parametrize(("kind", "status", "reason", "applied"), [
    ("slowdown", 429, "rateLimitExceeded", False),
    ("server-error", 500, "backendError", False),
    ("precondition-failed", 412, "conditionNotMet", False),
    ("error-after-apply", 500, "backendError", True),
])
def test_answered_faults(proxy: RecordingProxy, gcs_emulator: FakeGcsServer, kind: str, status: int, reason: str,
                         applied: bool) -> None:
    key = f"faults/{uuid.uuid4().hex}"
    proxy.faults = FaultPlan([Fault(kind, frozenset({"PutObject"}), times=1)])  # type: ignore[arg-type]
    answer = upload(proxy, gcs_emulator.buckets[0], key, b"data")
    assert (answer.status_code, answer.json()["error"]["errors"][0]["reason"]) == (status, reason)
    assert gcs_emulator.keys(key) == ([key] if applied else [])
    logged = [r for r in proxy.requests.all() if r.key == key]
    assert [(r.operation, r.bucket, r.fault) for r in logged] == [("PutObject", gcs_emulator.buckets[0], kind)]
    assert upload(proxy, gcs_emulator.buckets[0], key, b"data", create=False).status_code == 200  # once only


@pytest.mark.parametrize(("kind", "applied"), [("reset", False), ("lost-response", True)])
def test_unanswered_faults(proxy: RecordingProxy, gcs_emulator: FakeGcsServer, kind: str, applied: bool) -> None:
    key = f"faults/{uuid.uuid4().hex}"
    proxy.faults = FaultPlan([Fault(kind, frozenset({"PutObject"}), times=1)])  # type: ignore[arg-type]
    with pytest.raises(requests.ConnectionError):
        upload(proxy, gcs_emulator.buckets[0], key, b"data")
    assert gcs_emulator.keys(key) == ([key] if applied else [])


def test_truncated_reads(proxy: RecordingProxy, gcs_emulator: FakeGcsServer) -> None:
    key = f"faults/{uuid.uuid4().hex}"
    gcs_emulator.write(key, b"0123456789" * 100)
    proxy.faults = FaultPlan([Fault("truncate", frozenset({"GetObject"}), times=1)])
    url = f"{proxy.endpoint_url}/storage/v1/b/{gcs_emulator.buckets[0]}/o/{requests.utils.quote(key, safe='')}"
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        requests.get(url, params={"alt": "media"}, timeout=10).content  # noqa: B018 - reading is the test
    assert requests.get(url, params={"alt": "media"}, timeout=10).content == b"0123456789" * 100


def test_ignoring_conditional_writes_drops_if_generation_match(proxy: RecordingProxy,
                                                               gcs_emulator: FakeGcsServer) -> None:
    key = f"faults/{uuid.uuid4().hex}"
    assert upload(proxy, gcs_emulator.buckets[0], key, b"first").status_code == 200
    assert upload(proxy, gcs_emulator.buckets[0], key, b"second").status_code == 412
    proxy.faults = FaultPlan(ignore_conditional_writes=True)
    assert upload(proxy, gcs_emulator.buckets[0], key, b"third").status_code == 200
    assert gcs_emulator.read(key) == b"third"
