""":class:`GcsStore`: the object store interface on Google Cloud Storage (``gs://``), through its JSON API.

**Library.** Plain JSON API requests on google-auth's ``AuthorizedSession`` (requests), not google-cloud-storage:
the contract needs requests the SDK has no correct public call for (a single-request upload between 8 and 16 MiB,
where the SDK switches to a resumable upload and two requests; resumable chunks sent and cancelled by the caller;
the SDK's own ``BlobWriter.terminate`` deletes the initiation URL instead of the session), and the SDK retries on
its own unless ``retry=None`` is passed to every call, which would re-send a put-if-absent whose answer was lost
and report our own write as a conflict. So every request is built here, sent once, and retried by the store's
:class:`~checkpointfs.store.retry.RetryPolicy` while the protocol table says so, each attempt seen and counted.
gcsfs was not taken either: its retries cannot be turned off, it reports any 412 as ``FileExistsError``, and an
exception inside ``with fs.open(...)`` publishes the partial file.

**Requests** (counted in :attr:`GcsStore.requests` under the interface's names, :func:`.gcs_client.operation_of`):

- ``put``: one ``POST /upload/storage/v1/b/B/o?uploadType=multipart`` (JSON resource with the write id, then the
  bytes), ``ifGenerationMatch=0`` for a put-if-absent: 1 request for any file up to the part size (16 MiB);
- a larger file is a resumable upload, its chunks in order (the stream keeps one in flight):
  ``create_multipart`` = the initiating ``POST ...uploadType=resumable`` (resource, write id and precondition; the
  session URI comes back in ``Location``); ``upload_part`` = ``PUT <session>`` of a chunk, ``Content-Range:
  bytes a-b/*``, answered 308; ``complete_multipart`` = the final ``PUT`` with the total (``bytes a-b/N``), which
  finalizes the object, the precondition checked then. A file of n bytes: 1 + ceil(n / part size) requests;
- ``abort_multipart``: ``DELETE <session>`` (answered 499); an unfinalized session is never visible and expires on
  its own (about a week), so a cancel can never expose data, even when this DELETE fails;
- ``list_uploads``: always empty: GCS cannot list resumable sessions (nor does it need to: they are invisible);
- ``get``: ``GET .../o/K?alt=media`` (``generation=G`` pins a read to the version first read: 404 once replaced);
  ``head``: ``GET .../o/K`` (the resource: size, generation, metadata); ``head_bucket``: ``GET /storage/v1/b/B``;
  ``list_pages``: ``GET .../o?prefix=&delimiter=`` a page (prefixes de-duplicated across pages); ``delete``: one
  ``DELETE``; ``delete_many``: one ``DELETE`` per key (a JSON batch would save requests only for the rare recursive
  delete, at the cost of parsing multipart answers whose parts fail separately).

A session whose answer was lost cannot be resumed without knowing what the store persisted: after a failure that may
have been applied, the next attempt asks (``PUT`` with ``Content-Range: bytes */*``) and sends from the offset the
store reports. The write id is stored base64-encoded (``protocol.json`` ``gcs``), as Google's Hadoop connector does.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import requests
import urllib3.exceptions
from google.auth.exceptions import GoogleAuthError

from ... import protocol
from ...errors import CheckpointFsError, StoreError
from ...metrics import RequestMetrics
from ..attempts import Attempts, run_attempts
from ..base import (
    GetResult,
    ListResult,
    MultipartUpload,
    ObjectMeta,
    ObjectPath,
    ObjectStore,
    OpenUpload,
    Part,
    PutMode,
    StoreCapabilities,
)
from ..retry import RetryPolicy
from .client import (
    CHUNK_MULTIPLE,
    SESSION_CANCELLED_STATUS,
    CountingAdapter,
    RefusedAnswer,
    decode_write_id,
    encode_write_id,
    json_body,
    object_resource,
    operation_of,
    translate,
)

log = logging.getLogger(__name__)

__all__ = ["GcsStore"]
T = TypeVar("T")

_CONTENT_TYPE = "application/octet-stream"
_RESOURCE_FIELDS = "name,size,generation,updated,metadata"
_RANGE = re.compile(r"bytes=0-(\d+)")


@dataclass
class _Session:
    """A resumable upload this store started: its URI (never shown: it grants the upload) and the bytes the store
    has persisted."""

    uri: str
    path: ObjectPath
    write_id: str
    offset: int = 0



class GcsStore(ObjectStore):
    """The store on a requests ``session`` (an ``AuthorizedSession``; see :mod:`checkpointfs.store.gcs`) sending to
    ``endpoint_url``: requests retried per ``retry`` (deletes per ``delete_retry``), each attempt timed out after
    ``timeout`` (connect, read) seconds; writes stamped with the write id under
    :data:`checkpointfs.protocol.WRITE_ID_KEY`. ``secrets`` are redacted from every message."""

    capabilities = StoreCapabilities(family="gcs", parallel_parts=False, tail_in_completion=True)

    def __init__(self, session: requests.Session, *, endpoint_url: str, retry: RetryPolicy,
                 delete_retry: RetryPolicy | None = None, timeout: tuple[float, float] = (5.0, 30.0),
                 max_pool_connections: int = 32, secrets: tuple[str, ...] = ()) -> None:
        self.session = session
        """The HTTP session requests go out on (for tests and tools)."""
        self.endpoint_url = endpoint_url.rstrip("/")
        """Where requests go (``https://storage.googleapis.com``, or an emulator)."""
        self.retry = retry
        self.delete_retry = delete_retry or retry
        self.timeout = timeout
        self.requests = RequestMetrics()
        """Every request sent, by the interface's operation names (module docstring), retries included."""
        self.listeners: list[Callable[[str, str], None]] = []
        """Called with (operation, key) for every request sent (tests count requests at the client with it)."""
        self._secrets = tuple(s for s in secrets if s)
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
        adapter = CountingAdapter(self._sent, max_pool_connections)
        session.mount("https://", adapter)
        session.mount("http://", adapter)

    def _sent(self, request: requests.PreparedRequest) -> None:
        operation, key = operation_of(request.method or "", request.url or "",
                                      str(request.headers.get("Content-Range", "")))
        self.requests.record(operation)
        for listener in self.listeners:
            listener(operation, key)

    def close(self) -> None:
        self.session.close()

    # -- URLs --------------------------------------------------------------------------------------------------------
    def _object_url(self, where: ObjectPath, **query: str) -> str:
        url = f"{self.endpoint_url}/storage/v1/b/{quote(where.bucket, safe='')}/o/{quote(where.key, safe='')}"
        return url + ("?" + urlencode(query) if query else "")

    def _bucket_url(self, where: ObjectPath, suffix: str = "", **query: str) -> str:
        url = f"{self.endpoint_url}/storage/v1/b/{quote(where.bucket, safe='')}{suffix}"
        return url + ("?" + urlencode(query) if query else "")

    def _upload_url(self, where: ObjectPath, kind: str, mode: PutMode) -> str:
        query = {"uploadType": kind, "name": where.key}
        if mode is PutMode.CREATE:
            query["ifGenerationMatch"] = "0"
        return f"{self.endpoint_url}/upload/storage/v1/b/{quote(where.bucket, safe='')}/o?" + urlencode(query)

    def _resource(self, where: ObjectPath, write_id: str) -> dict[str, Any]:
        return {"name": where.key, "contentType": _CONTENT_TYPE,
                "metadata": {protocol.WRITE_ID_KEY: encode_write_id(write_id)}}

    # -- sending -----------------------------------------------------------------------------------------------------
    def _run(self, where: ObjectPath, operation: str, send: Callable[[], T], *, policy: RetryPolicy | None = None,
             abandon: threading.Event | None = None, attempts: Attempts | None = None) -> T:
        """``send`` with retries while the answer's class is retried (checkpointfs.store.attempts)."""
        return run_attempts(policy or self.retry, f"{operation} {where.uri}", send,
                            lambda e: self._failure(e, where, operation), abandon=abandon, attempts=attempts)

    def _failure(self, error: Exception, where: ObjectPath, operation: str) -> tuple[CheckpointFsError, bool] | None:
        """A requests, google-auth or refused-answer failure as the checkpointfs error it stands for, and whether GCS
        asked to slow down."""
        if not isinstance(error, (requests.RequestException, RefusedAnswer, GoogleAuthError)):
            return None
        throttled = isinstance(error, RefusedAnswer) and protocol.is_throttle(protocol.Answer(error.status,
                                                                                               error.code))
        return translate(error, where.uri, operation, self._secrets), throttled

    def _request(self, method: str, url: str, *, ok: tuple[int, ...], session: bool = False,
                 bucket_level: bool = False, **kwargs: Any) -> requests.Response:
        """One attempt: the answer when its status is in ``ok``, else :class:`RefusedAnswer` (its body read)."""
        response = self.session.request(method, url, timeout=self.timeout, **kwargs)
        if response.status_code not in ok:
            try:
                raise RefusedAnswer(response, session=session, bucket_level=bucket_level)
            finally:
                response.close()
        return response

    # -- writing -----------------------------------------------------------------------------------------------------
    def put(self, where: ObjectPath, data: bytes, *, mode: PutMode, write_id: str) -> None:
        boundary = "checkpointfs-" + uuid.uuid4().hex
        body = b"".join([
            f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n".encode(),
            json_body(self._resource(where, write_id)),
            f"\r\n--{boundary}\r\nContent-Type: {_CONTENT_TYPE}\r\n\r\n".encode(),
            data,
            f"\r\n--{boundary}--\r\n".encode(),
        ])
        url = self._upload_url(where, "multipart", mode)
        headers = {"Content-Type": f"multipart/related; boundary={boundary}"}
        self._run(where, "put_object", lambda: self._request("POST", url, ok=(200,), bucket_level=True,
                                                             data=body, headers=headers).close())

    def create_multipart(self, where: ObjectPath, *, mode: PutMode, write_id: str) -> MultipartUpload:
        url = self._upload_url(where, "resumable", mode)
        headers = {"Content-Type": "application/json; charset=UTF-8", "X-Upload-Content-Type": _CONTENT_TYPE}
        body = json_body(self._resource(where, write_id))

        def send() -> str:
            response = self._request("POST", url, ok=(200, 201), bucket_level=True, data=body, headers=headers)
            response.close()
            location = response.headers.get("Location", "")
            if not location:
                raise StoreError(where.uri, "the store started a resumable upload without a session URI (Location)")
            return location

        attempts = Attempts()
        try:
            uri = self._run(where, "create_resumable_upload", send, attempts=attempts)
        except CheckpointFsError as e:
            e.maybe_applied = attempts.maybe_applied
            raise
        handle = uuid.uuid4().hex  # the session URI grants the upload: it never leaves this store
        with self._lock:
            self._sessions[handle] = _Session(uri, where, write_id)
        return MultipartUpload(handle, lost_attempts=attempts.maybe_applied)

    def _session(self, where: ObjectPath, handle: str, operation: str, *, pop: bool = False) -> _Session:
        with self._lock:
            found = self._sessions.pop(handle, None) if pop else self._sessions.get(handle)
        if found is None:
            error = StoreError(where.uri, f"{operation}: no resumable upload {handle} in progress (finished or "
                                          "cancelled)", code="NoSuchUpload")
            error.answer_class = protocol.classify(protocol.Answer(code="NoSuchUpload"))
            raise error
        return found

    def _persisted(self, session: _Session) -> int | dict[str, Any]:
        """Ask the store how much of the session it has (``PUT`` with ``bytes */*``): the offset, or the object's
        resource when the session is already finalized."""
        response = self._request("PUT", session.uri, ok=(200, 201, 308), session=True,
                                 headers={"Content-Range": "bytes */*", "Content-Length": "0"})
        response.close()
        if response.status_code != 308:
            return object_resource(response, session.path.uri)
        return _range_end(response)

    def upload_part(self, where: ObjectPath, upload_id: str, number: int, data: bytes | bytearray, *,
                    abandon: threading.Event | None = None) -> Part:
        if len(data) % CHUNK_MULTIPLE:
            raise ValueError(f"GCS takes resumable chunks in multiples of {CHUNK_MULTIPLE} bytes but the last: got "
                             f"{len(data)} (the part size must be such a multiple)")
        session = self._session(where, upload_id, "upload_part")
        start, end = session.offset, session.offset + len(data)
        view = memoryview(data)
        state = Attempts()
        acknowledged = [start]  # what the store's answers said it has, across attempts

        def send() -> int:
            offset = acknowledged[0]
            if state.maybe_applied:  # an earlier attempt may have landed in part: ask what the store has
                persisted = self._persisted(session)
                if isinstance(persisted, dict):
                    raise StoreError(where.uri, "upload_part: the resumable upload was finalized by a status "
                                                "query before its last chunk")
                offset = persisted
            while offset < end:
                _check_offset(where, offset, start)
                response = self._request("PUT", session.uri, ok=(308,), session=True, data=view[offset - start:],
                                         headers={"Content-Range": f"bytes {offset}-{end - 1}/*"})
                response.close()
                offset = acknowledged[0] = _progressed(where, offset, _range_end(response))
            return offset

        self._run(where, "upload_part", send, abandon=abandon, attempts=state)  # state: seen by the next attempt
        session.offset = end
        return Part(number, str(end))

    def complete_multipart(self, where: ObjectPath, upload_id: str, parts: Sequence[Part], *, mode: PutMode,
                           tail: bytes = b"") -> None:
        session = self._session(where, upload_id, "complete_multipart")
        start, total = session.offset, session.offset + len(tail)
        state = Attempts()

        def send() -> None:
            offset = start
            if state.maybe_applied:
                persisted = self._persisted(session)
                if isinstance(persisted, dict):  # finalized by the attempt whose answer was lost
                    meta = _meta(persisted, where.key)
                    if meta.write_id == session.write_id and meta.size == total:
                        return
                    raise StoreError(where.uri, "complete_multipart: the session was finalized, but not as this "
                                                "upload's object")
                offset = persisted
                _check_offset(where, offset, start)
            content_range = f"bytes {offset}-{total - 1}/{total}" if offset < total else f"bytes */{total}"
            self._request("PUT", session.uri, ok=(200, 201), session=True, data=tail[offset - start:],
                          headers={"Content-Range": content_range}).close()

        # On a failure the session stays known: the stream cancels it (a DELETE; one that is gone answers so).
        self._run(where, "complete_resumable_upload", send, attempts=state)
        self._forget(upload_id)

    def _forget(self, handle: str) -> None:
        with self._lock:
            self._sessions.pop(handle, None)

    def abort_multipart(self, where: ObjectPath, upload_id: str) -> None:
        session = self._session(where, upload_id, "abort_multipart", pop=True)
        self._run(where, "cancel_resumable_upload", lambda: self._request(
            "DELETE", session.uri, ok=(SESSION_CANCELLED_STATUS, 200, 204), session=True,
            headers={"Content-Length": "0"}).close(), policy=self.delete_retry)

    def list_uploads(self, where: ObjectPath) -> list[OpenUpload]:
        """Always empty: GCS cannot list resumable sessions. An unfinalized one is invisible and expires."""
        return []

    # -- reading -----------------------------------------------------------------------------------------------------
    def get(self, where: ObjectPath, *, start: int = 0, expected_etag: str | None = None) -> GetResult:
        query = {"alt": "media"}
        if expected_etag:
            query["generation"] = expected_etag
        url = self._object_url(where, **query)
        headers = {"Range": f"bytes={start}-"} if start else {}

        def send() -> requests.Response:
            try:
                return self._request("GET", url, ok=(200, 206), headers=headers, stream=True)
            except RefusedAnswer as e:
                if expected_etag is None or e.status != 404:
                    raise
                error = StoreError(where.uri, "the object was replaced or deleted while it was being read",
                                   code=e.code, status=e.status)
                error.answer_class = protocol.classify(protocol.Answer(status=412))
                raise error from None

        response = self._run(where, "get_object", send)
        size = _total_size(response, start)
        generation = response.headers.get("x-goog-generation", "") or expected_etag or ""
        write_id = decode_write_id(response.headers.get(f"x-goog-meta-{protocol.WRITE_ID_KEY}", "")) \
            if response.headers.get(f"x-goog-meta-{protocol.WRITE_ID_KEY}") else ""
        return GetResult(_GcsBody(response, where.uri, self._secrets), generation, size, write_id)

    def head(self, where: ObjectPath) -> ObjectMeta:
        url = self._object_url(where, fields=_RESOURCE_FIELDS)
        response = self._run(where, "head_object", lambda: self._request("GET", url, ok=(200,)))
        return _meta(object_resource(response, where.uri), where.key)

    def head_bucket(self, where: ObjectPath) -> None:
        url = self._bucket_url(where, fields="name")
        self._run(where, "head_bucket", lambda: self._request("GET", url, ok=(200,)).close())

    def list_pages(self, where: ObjectPath, *, delimiter: str | None = None, page_size: int = 1000
                   ) -> Iterator[ListResult]:
        query = {"prefix": where.key, "maxResults": str(page_size),
                 "fields": f"items({_RESOURCE_FIELDS}),prefixes,nextPageToken"}
        if delimiter:
            query["delimiter"] = delimiter
        seen: set[str] = set()  # fake-gcs-server repeats every prefix after the page token on each page
        while True:
            url = self._bucket_url(where, "/o", **query)

            def send(url: str = url) -> requests.Response:
                return self._request("GET", url, ok=(200,), bucket_level=True)

            page = object_resource(self._run(where, "list_objects", send), where.uri)
            prefixes = [p for p in page.get("prefixes", []) if p not in seen]
            seen.update(prefixes)
            yield ListResult([_meta(item, str(item["name"])) for item in page.get("items", [])], prefixes)
            token = page.get("nextPageToken")
            if not token:
                return
            query["pageToken"] = str(token)

    # -- deleting ----------------------------------------------------------------------------------------------------
    def delete(self, where: ObjectPath) -> None:
        url = self._object_url(where)

        def send() -> None:
            try:
                self._request("DELETE", url, ok=(200, 204)).close()
            except RefusedAnswer as e:
                if e.status != 404:  # absent: what a delete wants
                    raise

        self._run(where, "delete_object", send, policy=self.delete_retry)

    def delete_many(self, where: ObjectPath, keys: Sequence[str]) -> None:
        """One DELETE per key (module docstring); the first key refused raises, naming its path."""
        for key in keys:
            self.delete(where.at(key))


def _check_offset(where: ObjectPath, persisted: int, start: int) -> None:
    """A StoreError when the store reports fewer bytes persisted than the chunks it already acknowledged."""
    if persisted < start:
        raise StoreError(where.uri, f"the resumable upload lost bytes: the store reports {persisted} persisted, "
                                    f"after acknowledging {start}")


def _progressed(where: ObjectPath, before: int, after: int) -> int:
    """``after``, the offset a chunk's answer reports; when it took nothing of the chunk, a StoreError of class
    ``retry`` (nothing applied: the chunk is sent again from the same offset)."""
    if after > before:
        return after
    error = StoreError(where.uri, f"upload_part: the store persisted nothing of the chunk from byte {before}")
    error.answer_class = protocol.CLASSES["retry"]
    raise error


def _range_end(response: requests.Response) -> int:
    """The bytes a 308 answer says the session has persisted (``Range: bytes=0-N``: N + 1; no header: 0)."""
    match = _RANGE.fullmatch(response.headers.get("Range", "").strip())
    return int(match.group(1)) + 1 if match else 0


def _total_size(response: requests.Response, start: int) -> int:
    """The object's full size from a download's ``Content-Range`` (a ranged read) or ``Content-Length``."""
    content_range = response.headers.get("Content-Range", "")
    if "/" in content_range and content_range.rsplit("/", 1)[1].isdigit():
        return int(content_range.rsplit("/", 1)[1])
    stored = response.headers.get("x-goog-stored-content-length", "")
    if stored.isdigit() and not start:
        return int(stored)
    return start + int(response.headers.get("Content-Length", "0") or 0)


def _meta(resource: dict[str, Any], key: str) -> ObjectMeta:
    """The object resource's metadata; the write id decoded, the generation as the etag."""
    metadata = resource.get("metadata") or {}
    stored = str(metadata.get(protocol.WRITE_ID_KEY, ""))
    return ObjectMeta(key, int(resource.get("size", 0) or 0), _timestamp(str(resource.get("updated", ""))),
                      str(resource.get("generation", "")), decode_write_id(stored) if stored else "")


def _timestamp(text: str) -> datetime:
    """An RFC 3339 time as GCS writes it (``2026-11-25T04:20:00.123Z``); the epoch when absent. (Python 3.10's
    ``fromisoformat`` takes neither ``Z`` nor fractions other than 3 or 6 digits.)"""
    if not text:
        return datetime.fromtimestamp(0, timezone.utc)
    match = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)?", text.strip())
    if match is None:
        return datetime.fromtimestamp(0, timezone.utc)
    fraction = (match.group(2) or "0")[:6].ljust(6, "0")
    zone = match.group(3) or "Z"
    return datetime.fromisoformat(f"{match.group(1)}.{fraction}{'+00:00' if zone == 'Z' else zone}")


class _GcsBody:
    """A download's body whose read failures come out as the contract's errors, carrying their class."""

    def __init__(self, response: requests.Response, path: str, secrets: tuple[str, ...]) -> None:
        self._response = response
        self._path = path
        self._secrets = secrets

    def read(self, size: int) -> bytes:
        try:
            data: bytes = self._response.raw.read(size, decode_content=True)
        except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as e:
            raise translate(e, self._path, "get_object", self._secrets) from e
        return data

    def close(self) -> None:
        try:
            self._response.close()
        except Exception:  # noqa: BLE001 - a broken body is dropped either way
            log.debug("%s: closing a broken body failed", self._path)
