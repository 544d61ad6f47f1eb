"""The WSGI layer in front of moto's S3 app: request log, access-key check, atomic writes, faults, eventual
consistency, latency and the directory-bucket profile (:mod:`checkpointfs.testing.directory_bucket`). It sees every
request the embedded S3 serves."""

from __future__ import annotations

import io
import logging
import re
import socket
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, unquote

from moto.core import DEFAULT_ACCOUNT_ID  # type: ignore[attr-defined]
from moto.s3.models import s3_backends

from .clock import AdjustableClock
from .consistency import S3_NS, ConsistencyLag, ConsistencyState, Snapshot
from .directory_bucket import DirectoryBucket
from .faults import APPLIES_REQUEST, REFUSALS, Fault, FaultPlan
from .policy import refusal as policy_refusal
from .requests import ADMIN_HEADER as ADMIN_HEADER  # re-exported: its home was here
from .requests import Request, RequestLog, classify

log = logging.getLogger(__name__)

_CREDENTIAL_RE = re.compile(r"Credential=([^/,\s]+)/")
_MUTATING = frozenset({"PUT", "POST", "DELETE"})
_CREATING = frozenset({"PutObject", "CompleteMultipartUpload", "CopyObject"})
_READING = frozenset({"GetObject", "HeadObject"})
_LISTING = frozenset({"ListObjectsV2", "ListObjects"})
_UPLOAD_TIMED = frozenset({"CreateMultipartUpload", "ListMultipartUploads"})
_CONCURRENT = frozenset({"UploadPart"})
"""Mutating requests that change no object (a part of an open upload): served concurrently, as S3 serves them."""
StartResponse = Any


class Gateway:
    """WSGI app wrapping moto's; see the module doc."""

    def __init__(self, app: Any, access_key: str | None, requests: RequestLog, faults: FaultPlan,
                 clock: AdjustableClock | None = None, profile: DirectoryBucket | None = None) -> None:
        self._app = app
        self.profile = profile
        """The directory-bucket profile in force (None: S3 Standard's rules)."""
        self.denied: frozenset[str] = frozenset()
        """The IAM actions the caller is denied (:mod:`checkpointfs.testing.policy`)."""
        self.sessions_created = 0
        """CreateSession requests answered (counted apart from the request log: a session serves many requests)."""
        self.clock = clock or AdjustableClock()
        """The store's time: consistency lags and the times of multipart uploads follow it."""
        self._access_key = access_key
        self._requests = requests
        self.faults = faults
        self._write_lock = threading.Lock()
        self._consistency: ConsistencyState | None = None
        self._upload_started: dict[str, str] = {}  # upload id -> ISO time: moto reports a fixed date for all

    # -- the request path ----------------------------------------------------------------------------------------
    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if environ["REQUEST_METHOD"] == "GET" and "session" in parse_qs(environ.get("QUERY_STRING", ""),
                                                                        keep_blank_values=True):
            return self._create_session(environ, start_response)
        if path.startswith("/moto-api") or environ.get("HTTP_X_CHECKPOINTFS_ADMIN"):
            return self._app(environ, start_response)  # type: ignore[no-any-return]
        method = environ["REQUEST_METHOD"]
        if self.faults.ignore_conditional_writes and method in _MUTATING:  # a store without conditional writes
            environ.pop("HTTP_IF_NONE_MATCH", None)
            environ.pop("HTTP_IF_MATCH", None)
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        query = environ.get("QUERY_STRING", "")
        operation, bucket, key = classify(method, path, query, headers)

        if self._access_key is not None and _presented_key(environ) != self._access_key:
            self._requests.add(Request(operation, bucket, key, 403))
            return _error(start_response, 403, "InvalidAccessKeyId",
                          "The AWS Access Key Id you provided does not exist in our records.")
        denied = policy_refusal(self.denied, operation, key, lambda: _object(bucket, key) is not None)
        if denied is not None:
            self._requests.add(Request(operation, bucket, key, denied[0], "policy"))
            return _error(start_response, *denied, with_body=method != "HEAD")
        refused = (self.profile.refusal(operation, query, headers)
                   if self.profile is not None and _backend().buckets.get(bucket) is not None else None)
        if refused is not None:
            self._requests.add(Request(operation, bucket, key, refused[0], "profile"))
            return _error(start_response, *refused)
        if self.profile is not None:
            self.profile.rewrite_request(operation, environ)
        _name_the_checksum_algorithm(environ)
        self._requests.started(operation)
        try:
            return self._serve(environ, start_response, method, query, headers, operation, bucket, key)
        finally:
            self._requests.finished(operation)

    def _serve(self, environ: dict[str, Any], start_response: StartResponse, method: str, query: str,
               headers: dict[str, str], operation: str, bucket: str, key: str) -> Iterable[bytes]:
        """Serve one counted request: latency, faults, lags, then moto. Each request is served in its own thread,
        and only requests that change objects are serialized (:data:`_CONCURRENT` are not)."""
        latency = self.faults.latency
        if latency is not None:
            time.sleep(latency.per_request_s + latency.transfer_s(int(environ.get("CONTENT_LENGTH") or 0)))

        if latency is not None and latency.copy_bytes_per_s and operation in ("CopyObject", "UploadPartCopy"):
            time.sleep(_copy_source_size(headers.get("x-amz-copy-source", "")) / latency.copy_bytes_per_s)

        picked = self.faults.pick(operation, bucket, key)
        kind = picked.kind if picked else None
        if kind in REFUSALS:
            assert picked is not None
            return self._refuse(picked, operation, bucket, key, environ, start_response)

        consistency = self._consistency_state()
        if consistency is not None and kind is None and operation in _READING:
            lagged = self._lagged_read(consistency, operation, bucket, key, start_response)
            if lagged is not None:
                self._requests.add(Request(operation, bucket, key, 200 if lagged[0] else 404, "consistency"))
                return lagged[1]

        status = [0]
        response_headers: list[tuple[str, str]] = []
        profile = self.profile
        reanswered = operation in _UPLOAD_TIMED or (operation in _LISTING and consistency is not None) or (
            profile is not None and (profile.creates(operation) or operation == "ListObjectsV2"))

        def recording_start_response(status_line: str, headers_out: Any, exc_info: Any = None) -> Any:
            status[0] = int(status_line.split(" ", 1)[0])
            response_headers[:] = list(headers_out)
            if kind in APPLIES_REQUEST or reanswered:
                return lambda data: None  # the real answer is sent below
            return start_response(status_line, headers_out, exc_info)

        if (method in _MUTATING or kind in APPLIES_REQUEST) and operation not in _CONCURRENT:
            with self._write_lock:
                before = self._before(consistency, operation, bucket, key, environ)
                deleting = self._deleted_keys(operation, key, environ) if profile is not None else []
                body: Iterable[bytes] = list(self._app(environ, recording_start_response))
                if 200 <= status[0] < 300:
                    self._after(consistency, operation, bucket, key, before)
                    if operation == "CreateMultipartUpload":
                        body = [self._timed_uploads(operation, b"".join(body))]
                    if profile is not None:
                        body = self._as_directory_bucket(profile, operation, bucket, key, deleting, body,
                                                         response_headers)
        elif operation in _CONCURRENT:
            body = list(self._app(environ, recording_start_response))
        elif profile is not None and operation == "ListObjectsV2" and _backend().buckets.get(bucket) is not None:
            body = [profile.list_objects(bucket, query, _objects(bucket), _upload_keys(bucket))]  # moto not asked
            recording_start_response("200 OK", [("Content-Type", "application/xml")])
        else:
            body = self._app(environ, recording_start_response)
        self._requests.add(Request(operation, bucket, key, status[0] if kind is None else 0, kind or "",
                                   _part_number(operation, query)))
        if picked is not None and picked.then is not None:
            picked.then()
        if latency is not None and latency.bandwidth_bytes_per_s:
            time.sleep(latency.transfer_s(_content_length(response_headers)))
        if kind == "lost-response":
            return _drop_connection(environ)
        if kind == "error-after-apply":
            return _error(start_response, 500, "InternalError", "We encountered an internal error. Please try again.")
        if kind == "truncate":
            return _truncated(environ, start_response, status[0], response_headers, b"".join(body))
        if operation in _UPLOAD_TIMED:
            data = self._timed_uploads(operation, b"".join(body))
            fixed = [(n, v) for n, v in response_headers if n.lower() != "content-length"]
            start_response(_status_line(status[0]), [*fixed, ("Content-Length", str(len(data)))])
            return [data]
        if operation in _LISTING and consistency is not None:
            data = consistency.rewrite_listing(bucket, parse_qs(query), b"".join(body), self._keys_under(bucket))
            fixed = [(n, v) for n, v in response_headers if n.lower() != "content-length"]
            start_response(_status_line(status[0]), [*fixed, ("Content-Length", str(len(data)))])
            return [data]
        if reanswered:  # the profile's answers (its listing, its ETags)
            data = b"".join(body)
            fixed = [(n, v) for n, v in response_headers if n.lower() != "content-length"]
            start_response(_status_line(status[0]), [*fixed, ("Content-Length", str(len(data)))])
            return [data]
        return body

    def _create_session(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        """Answer CreateSession, which SDKs send first for a bucket named as a directory bucket (``--x-s3``): a
        session whose key is the one presented (the gateway checks keys, not signatures), valid for 5 minutes."""
        presented = _presented_key(environ) or ""
        bucket = unquote(environ.get("PATH_INFO", "")).strip("/")
        log.debug("CreateSession for bucket %s", bucket)
        if not environ.get("HTTP_X_CHECKPOINTFS_ADMIN"):
            self.sessions_created += 1
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 300))
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<CreateSessionResult xmlns="{S3_NS}"><Credentials>'
                f"<SessionToken>checkpointfs-embedded-session</SessionToken><SecretAccessKey>embedded"
                f"</SecretAccessKey><AccessKeyId>{presented}</AccessKeyId><Expiration>{expires}</Expiration>"
                "</Credentials></CreateSessionResult>").encode()
        start_response("200 OK", [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
        return [body]

    # -- the directory-bucket profile ----------------------------------------------------------------------------
    @staticmethod
    def _deleted_keys(operation: str, key: str, environ: dict[str, Any]) -> list[str]:
        """The keys a delete names (the request's body is read and put back)."""
        if operation == "DeleteObject":
            return [key]
        if operation != "DeleteObjects":
            return []
        raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(raw)
        return [e.text or "" for e in ET.fromstring(raw).iter() if e.tag.endswith("Key")]

    def _as_directory_bucket(self, profile: DirectoryBucket, operation: str, bucket: str, key: str,
                             deleted: list[str], body: Iterable[bytes],
                             headers: list[tuple[str, str]]) -> list[bytes]:
        """After a write moto applied: a random ETag for a created object (in the answer's headers and body too),
        and the empty parent directories of deleted keys deleted."""
        data = b"".join(body)
        if profile.creates(operation):
            fake_key = _backend().get_object(bucket, key)
            if fake_key is not None:
                old, new = profile.new_etag(fake_key)
                headers[:] = [(n, new if n.lower() == "etag" else v) for n, v in headers]
                data = data.replace(old.encode(), new.encode()).replace(
                    old.replace('"', "&quot;").encode(), new.replace('"', "&quot;").encode())
        for name in deleted:
            for directory in profile.empty_parents(name, self._keys_under(bucket)):
                _backend().delete_object(bucket, directory)
        return [data]

    def _timed_uploads(self, operation: str, body: bytes) -> bytes:
        """Record when an upload was created; put the real times into a listing of uploads."""
        if not body.strip():
            return body
        root = ET.fromstring(body)
        if operation == "CreateMultipartUpload":
            upload_id = root.findtext(f"{{{S3_NS}}}UploadId")
            if upload_id:
                self._upload_started[upload_id] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z",
                                                                time.gmtime(self.clock.wall()))
            return body
        for upload in root.findall(f"{{{S3_NS}}}Upload"):
            started = self._upload_started.get(upload.findtext(f"{{{S3_NS}}}UploadId") or "")
            initiated = upload.find(f"{{{S3_NS}}}Initiated")
            if started and initiated is not None:
                initiated.text = started
        data: bytes = ET.tostring(root, xml_declaration=True, encoding="UTF-8")
        return data

    def _refuse(self, fault: Fault, operation: str, bucket: str, key: str, environ: dict[str, Any],
                start_response: StartResponse) -> list[bytes]:
        status = {"slowdown": 503, "server-error": 500, "precondition-failed": 412}.get(fault.kind, 0)
        self._requests.add(Request(operation, bucket, key, status, fault.kind,
                                   _part_number(operation, environ.get("QUERY_STRING", ""))))
        if fault.then is not None:
            fault.then()
        if fault.kind == "slowdown":
            return _error(start_response, 503, "SlowDown", "Please reduce your request rate.")
        if fault.kind == "server-error":
            return _error(start_response, 500, "InternalError", "We encountered an internal error. Please try again.")
        if fault.kind == "precondition-failed":
            return _error(start_response, 412, "PreconditionFailed",
                          "At least one of the pre-conditions you specified did not hold")
        return _drop_connection(environ)

    # -- eventual consistency ------------------------------------------------------------------------------------
    def _consistency_state(self) -> ConsistencyState | None:
        lag: ConsistencyLag | None = self.faults.consistency
        if lag is None:
            self._consistency = None
            return None
        if self._consistency is None or self._consistency.lag is not lag:
            self._consistency = ConsistencyState(
                lag, lambda kind, bucket, key: self.faults.record(kind, "", bucket, key), clock=self.clock.monotonic)
        return self._consistency

    def _before(self, consistency: ConsistencyState | None, operation: str, bucket: str, key: str,
                environ: dict[str, Any]) -> dict[str, Any]:
        """The objects a write is about to change, as they are now (only when lag is modelled)."""
        if consistency is None:
            return {}
        if operation in _CREATING or operation == "DeleteObject":
            return {key: _object(bucket, key)}
        if operation == "DeleteObjects":
            raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(raw)
            keys = [e.text or "" for e in ET.fromstring(raw).iter() if e.tag.endswith("Key")]
            return {k: _object(bucket, k) for k in keys}
        return {}

    @staticmethod
    def _after(consistency: ConsistencyState | None, operation: str, bucket: str, key: str,
               before: dict[str, Any]) -> None:
        if consistency is None:
            return
        if operation in _CREATING:
            consistency.written(bucket, key, before.get(key))
        elif operation in ("DeleteObject", "DeleteObjects"):
            for name, obj in before.items():
                consistency.deleted(bucket, name, obj)

    @staticmethod
    def _lagged_read(consistency: ConsistencyState, operation: str, bucket: str, key: str,
                     start_response: StartResponse) -> tuple[bool, list[bytes]] | None:
        if consistency.read_as_missing(bucket, key):
            return False, _error(start_response, 404, "NoSuchKey", "The specified key does not exist.",
                                 with_body=operation == "GetObject")
        stale = consistency.stale_version(bucket, key)
        if stale is None:
            return None
        headers = [*stale.headers, ("ETag", stale.etag), ("Content-Length", str(len(stale.body))),
                   ("Last-Modified", stale.last_modified.strftime("%a, %d %b %Y %H:%M:%S GMT"))]
        start_response("200 OK", headers)
        return True, [stale.body if operation == "GetObject" else b""]

    @staticmethod
    def _keys_under(bucket: str) -> Any:
        def keys(prefix: str) -> list[str]:
            fake_bucket = _backend().get_bucket(bucket)
            return [k for k in fake_bucket.keys.keys() if k.startswith(prefix)]

        return keys


def _backend() -> Any:
    return s3_backends[DEFAULT_ACCOUNT_ID]["aws"]


def _objects(bucket: str) -> list[Any]:
    """Every object of ``bucket`` (moto's FakeKeys, delete markers left out)."""
    return [k for k in _backend().get_bucket(bucket).keys.values() if hasattr(k, "etag") and hasattr(k, "size")]


def _upload_keys(bucket: str) -> list[str]:
    """The keys of ``bucket``'s open multipart uploads."""
    return [str(u.key_name) for u in _backend().get_bucket(bucket).multiparts.values()]


def _object(bucket: str, key: str) -> Snapshot | None:
    try:
        fake_key = _backend().get_object(bucket, key)
    except Exception:  # noqa: BLE001 - a missing bucket is moto's to report, in the request itself
        return None
    return Snapshot.of(fake_key) if fake_key is not None else None


def _copy_source_size(source: str) -> int:
    bucket, _, key = unquote(source).lstrip("/").partition("/")
    try:
        fake_key = _backend().get_object(bucket, key.split("?", 1)[0])
    except Exception:  # noqa: BLE001 - a bad source is moto's to report
        return 0
    return int(fake_key.size) if fake_key is not None else 0


def _part_number(operation: str, query: str) -> int:
    """The part number of an UploadPart (0 for other operations)."""
    if operation != "UploadPart":
        return 0
    return int((parse_qs(query).get("partNumber") or ["0"])[0])


def _presented_key(environ: dict[str, Any]) -> str | None:
    auth = environ.get("HTTP_AUTHORIZATION", "")
    match = _CREDENTIAL_RE.search(auth) or _CREDENTIAL_RE.search(
        "Credential=" + environ.get("QUERY_STRING", "").partition("X-Amz-Credential=")[2].replace("%2F", "/"))
    return match.group(1) if match else None


def _content_length(headers: list[tuple[str, str]]) -> int:
    for name, value in headers:
        if name.lower() == "content-length":
            return int(value)
    return 0


def _error(start_response: StartResponse, status: int, code: str, message: str, with_body: bool = True) -> list[bytes]:
    body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>checkpointfs-embedded</RequestId></Error>").encode() if with_body else b""
    start_response(_status_line(status), [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
    return [body]


def _status_line(status: int) -> str:
    """``"503 Service Unavailable"``: the status and its standard reason phrase."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Unknown"


def _drop_connection(environ: dict[str, Any]) -> list[bytes]:
    """Close the client's connection without an answer (the server treats the raised error as a dropped client)."""
    sock = environ.get("werkzeug.socket")
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    raise ConnectionAbortedError("embedded S3: connection dropped by an injected fault")


def _truncated(environ: dict[str, Any], start_response: StartResponse, status: int,
               headers: list[tuple[str, str]], body: bytes) -> Iterator[bytes]:
    """Send the headers and half the body, then drop the connection."""
    start_response(_status_line(status), headers)

    def chunks() -> Iterator[bytes]:
        yield body[: len(body) // 2]
        _drop_connection(environ)

    return chunks()


_CHECKSUM_HEADERS = {"HTTP_X_AMZ_CHECKSUM_SHA256": "SHA256", "HTTP_X_AMZ_CHECKSUM_CRC32C": "CRC32C",
                     "HTTP_X_AMZ_CHECKSUM_CRC32": "CRC32", "HTTP_X_AMZ_CHECKSUM_SHA1": "SHA1"}


def _name_the_checksum_algorithm(environ: dict[str, Any]) -> None:
    """S3 keeps a checksum a write sends as ``x-amz-checksum-<algorithm>`` alone (what the shim sends: SDK v2 with
    the algorithm named too adds a checksum of its own, which MinIO refuses); moto keeps it only when
    ``x-amz-sdk-checksum-algorithm`` names it. Name it, as S3 would read the request."""
    if "HTTP_X_AMZ_SDK_CHECKSUM_ALGORITHM" in environ:
        return
    for header, algorithm in _CHECKSUM_HEADERS.items():
        if header in environ:
            environ["HTTP_X_AMZ_SDK_CHECKSUM_ALGORITHM"] = algorithm
            return
