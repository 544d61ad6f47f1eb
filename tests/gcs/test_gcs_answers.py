"""What GCS's answers and the Python client's failures mean through the one answer table (protocol.json), with no
server: the exceptions requests, urllib3 and google-auth raise, as GcsStore sees them. The status-and-code cases
are golden cases too (tests/protocol/golden_settle.json, run by the shim's Scala suite); these are Python-only:
they name Python exception classes."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

pytest.importorskip("google.auth", reason="the Python GCS store needs the gcs extra (google-auth, requests)")
import requests
import urllib3.exceptions
from google.auth.exceptions import DefaultCredentialsError, RefreshError, TransportError

from checkpointfs import protocol
from checkpointfs.errors import (
    AccessDeniedError,
    BucketNotFoundError,
    FileAlreadyExistsError,
    StoreError,
    StoreUnavailableError,
)
from checkpointfs.redact import redact
from checkpointfs.store.gcs.client import (
    RefusedAnswer,
    answer_of,
    decode_write_id,
    encode_write_id,
    operation_of,
    translate,
)
from checkpointfs.store.gcs.store import _timestamp

PATH = "gs://bucket-name/ck/offsets/0"


def refused(status: int, reason: str, *, session: bool = False, bucket_level: bool = False) -> RefusedAnswer:
    response = requests.Response()
    response.status_code = status
    response._content = (b'{"error": {"code": %d, "message": "said %s", "errors": [{"reason": "%s"}]}}'
                         % (status, reason.encode(), reason.encode()))
    return RefusedAnswer(response, session=session, bucket_level=bucket_level)


@pytest.mark.parametrize(("answer", "kind", "error", "throttle"), [
    (refused(412, "conditionNotMet"), "conflict", FileAlreadyExistsError, False),
    (refused(429, "rateLimitExceeded"), "retry", StoreUnavailableError, True),
    (refused(503, "backendError"), "retry", StoreUnavailableError, True),
    (refused(500, "backendError"), "settle", StoreUnavailableError, False),
    (refused(502, ""), "settle", StoreUnavailableError, False),
    (refused(401, "required"), "refuse", AccessDeniedError, False),
    (refused(403, "forbidden"), "refuse", AccessDeniedError, False),
    (refused(404, "notFound", bucket_level=True), "refuse", BucketNotFoundError, False),
    (refused(404, "notFound", session=True), "upload-gone", StoreError, False),
    (refused(410, "gone", session=True), "upload-gone", StoreError, False),
    (refused(400, "invalid"), "refuse", StoreError, False),
], ids=lambda value: value.code if isinstance(value, RefusedAnswer) else None)
def test_gcs_answers(answer: RefusedAnswer, kind: str, error: type[Exception], throttle: bool) -> None:
    translated = translate(answer, PATH, "put_object")
    assert translated.answer_class is not None and translated.answer_class.name == kind
    assert type(translated) is error and translated.path == PATH
    assert protocol.is_throttle(answer_of(answer)) is throttle


def test_a_404_of_an_object_is_not_found() -> None:
    assert protocol.classify(answer_of(refused(404, "notFound"))).name == "not-found"


def _connect_refused() -> requests.ConnectionError:
    reason = urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection: refused")  # type: ignore[arg-type]
    return requests.ConnectionError(urllib3.exceptions.MaxRetryError(None, "/o", reason))  # type: ignore[arg-type]


@pytest.mark.parametrize(("failure", "kind"), [
    (_connect_refused(), "unavailable"),
    (requests.ConnectTimeout(urllib3.exceptions.MaxRetryError(
        None, "/o", urllib3.exceptions.ConnectTimeoutError("timed out"))), "unavailable"),  # type: ignore[arg-type]
    (requests.ConnectionError(urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError())),
     "settle"),
    (requests.ReadTimeout(urllib3.exceptions.ReadTimeoutError(None, "/o", "read timed out")),  # type: ignore[arg-type]
     "settle"),
    (requests.exceptions.ChunkedEncodingError(urllib3.exceptions.ProtocolError("broken")), "settle"),
    (RefreshError("invalid_grant"), "refuse"),
    (DefaultCredentialsError("none"), "refuse"),
    (TransportError("token endpoint unreachable"), "unavailable"),
], ids=["connect-refused", "connect-timeout", "reset", "read-timeout", "truncated", "refresh", "adc", "auth-transport"])
def test_client_failures(failure: Exception, kind: str) -> None:
    translated = translate(failure, PATH, "put_object", ("ya29.token",))
    assert translated.answer_class is not None and translated.answer_class.name == kind
    assert translated.path == PATH


def test_session_uris_and_tokens_never_reach_a_message() -> None:
    failure = requests.ConnectionError(
        "HTTPConnectionPool(host='127.0.0.1', port=1): Max retries exceeded with url: "
        "/upload/storage/v1/b/b/o?uploadType=resumable&name=k&upload_id=SECRET-SESSION")
    message = str(translate(failure, PATH, "upload_part", ("ya29.token",)))
    assert "SECRET-SESSION" not in message and "upload_id=<redacted>" in message
    assert redact("x?access_token=ya29.abc&y=1") == "x?access_token=<redacted>&y=1"
    assert "ya29.token" not in str(translate(RefreshError("bad ya29.token"), PATH, "put_object", ("ya29.token",)))


def test_write_ids_are_stored_base64_encoded() -> None:
    assert encode_write_id("0f" * 16) == "MGYwZjBmMGYwZjBmMGYwZjBmMGYwZjBmMGYwZjBmMGY="
    assert decode_write_id(encode_write_id("0f" * 16)) == "0f" * 16
    assert decode_write_id("not base64!") == "not base64!"
    assert protocol.load()["gcs"]["write_id_encoding"] == "base64"


@pytest.mark.parametrize(("method", "url", "content_range", "operation"), [
    ("POST", "/upload/storage/v1/b/b/o?uploadType=multipart&name=k", "", ("PutObject", "k")),
    ("POST", "/upload/storage/v1/b/b/o?uploadType=resumable&name=k", "", ("CreateMultipartUpload", "k")),
    ("PUT", "/upload/storage/v1/b/b/o?uploadType=resumable&upload_id=s", "bytes 0-9/*", ("UploadPart", "")),
    ("PUT", "/upload/storage/v1/b/b/o?uploadType=resumable&upload_id=s", "bytes 10-19/20",
     ("CompleteMultipartUpload", "")),
    ("DELETE", "/upload/storage/v1/b/b/o?uploadType=resumable&upload_id=s", "", ("AbortMultipartUpload", "")),
    ("GET", "/storage/v1/b/b/o/a%2Fb?alt=media", "", ("GetObject", "a/b")),
    ("GET", "/storage/v1/b/b/o/a%2Fb?fields=name", "", ("HeadObject", "a/b")),
    ("GET", "/storage/v1/b/b/o?prefix=a/", "", ("ListObjectsV2", "")),
    ("DELETE", "/storage/v1/b/b/o/a%2Fb", "", ("DeleteObject", "a/b")),
    ("GET", "/storage/v1/b/b?fields=name", "", ("HeadBucket", "")),
])
def test_requests_are_counted_by_the_interface_names(method: str, url: str, content_range: str,
                                                     operation: tuple[str, str]) -> None:
    assert operation_of(method, "http://127.0.0.1:1" + url, content_range) == operation


def test_timestamps_parse_on_every_python() -> None:
    assert _timestamp("2026-11-25T04:19:28.658771Z") == datetime(2026, 11, 25, 4, 19, 28, 658771, timezone.utc)
    assert _timestamp("2026-11-25T04:19:28.6Z") == datetime(2026, 11, 25, 4, 19, 28, 600000, timezone.utc)
    assert _timestamp("2026-11-25T04:19:28Z") == datetime(2026, 11, 25, 4, 19, 28, tzinfo=timezone.utc)
    assert _timestamp("") == datetime.fromtimestamp(0, timezone.utc)
