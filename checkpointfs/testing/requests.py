"""What the embedded S3 saw: every request, classified by S3 operation, as counted at the server."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

ADMIN_HEADER = "x-checkpointfs-admin"
"""Requests with this header are the test harness's own: not counted, never faulted, never lagged."""


@dataclass(frozen=True)
class Request:
    """One request as the server saw it: S3 operation name, bucket, key (the prefix, for a listing), HTTP status
    sent back, the fault injected into it, if any, and the part number of an ``UploadPart`` (else 0)."""

    operation: str
    bucket: str
    key: str
    status: int
    fault: str = ""
    part: int = 0


def classify(method: str, path: str, query: str, headers: dict[str, str]) -> tuple[str, str, str]:
    """``(operation, bucket, key)`` of a path-style S3 request."""
    bucket, _, key = unquote(path).lstrip("/").partition("/")
    params = parse_qs(query, keep_blank_values=True)
    has = params.__contains__
    if not bucket:
        return ("ListBuckets" if method == "GET" else f"{method}Service", "", "")
    if not key:
        bucket_ops = {
            "GET": "ListMultipartUploads" if has("uploads") else
                   "CreateSession" if has("session") else
                   "ListObjectsV2" if params.get("list-type") == ["2"] else
                   "GetBucketLocation" if has("location") else "ListObjects",
            "HEAD": "HeadBucket",
            "PUT": "CreateBucket",
            "DELETE": "DeleteBucket",
            "POST": "DeleteObjects" if has("delete") else "PostBucket",
        }
        # a listing is attributed to its prefix, so that tests can tell which directory was listed
        return (bucket_ops.get(method, method), bucket, (params.get("prefix") or [""])[0])
    if method == "PUT":
        copy = "x-amz-copy-source" in headers
        if has("partNumber"):
            return ("UploadPartCopy" if copy else "UploadPart", bucket, key)
        return ("CopyObject" if copy else "PutObject", bucket, key)
    if method == "POST":
        if has("uploads"):
            return ("CreateMultipartUpload", bucket, key)
        return ("CompleteMultipartUpload" if has("uploadId") else "PostObject", bucket, key)
    if method == "DELETE":
        return ("AbortMultipartUpload" if has("uploadId") else "DeleteObject", bucket, key)
    if method == "GET":
        return ("ListParts" if has("uploadId") else "GetObject", bucket, key)
    if method == "HEAD":
        return ("HeadObject", bucket, key)
    return (method, bucket, key)


class RequestLog:
    """A thread-safe record of the requests the embedded S3 served."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._added = threading.Condition(self._lock)
        self._requests: list[Request] = []
        self._in_flight: Counter[str] = Counter()
        self._peak: Counter[str] = Counter()

    def started(self, operation: str) -> None:
        """A request of ``operation`` arrived (it is in flight until :meth:`finished`)."""
        with self._lock:
            self._in_flight[operation] += 1
            self._peak[operation] = max(self._peak[operation], self._in_flight[operation])

    def finished(self, operation: str) -> None:
        """A request of ``operation`` has its answer."""
        with self._lock:
            self._in_flight[operation] -= 1

    def peak_in_flight(self, operation: str) -> int:
        """The most requests of ``operation`` the server was serving at once since the last :meth:`clear`."""
        with self._lock:
            return self._peak[operation]

    def add(self, request: Request) -> None:
        """Record one request, and wake those waiting in :meth:`wait_for`."""
        with self._added:
            self._requests.append(request)
            self._added.notify_all()

    def wait_for(self, match: Callable[[Request], bool], since: int = 0,
                 timeout: float | None = None) -> tuple[Request | None, int]:
        """The first request from index ``since`` on that ``match`` accepts, waiting up to ``timeout`` seconds
        (None: without limit) for it to be recorded (None if none came in time), and the index to go on from:
        just past that request, or past every request looked at. Each request is passed to ``match`` once, so
        ``match`` may count what it sees."""
        checked = since
        found: list[Request] = []

        def seen() -> bool:
            nonlocal checked
            while checked < len(self._requests):
                request = self._requests[checked]
                checked += 1
                if match(request):
                    found.append(request)
                    return True
            return False

        with self._added:
            self._added.wait_for(seen, timeout)
        return (found[0] if found else None), checked

    def all(self) -> list[Request]:
        """Every request so far, in order."""
        with self._lock:
            return list(self._requests)

    def counts(self) -> dict[str, int]:
        """Requests by operation."""
        with self._lock:
            return dict(Counter(r.operation for r in self._requests))

    def __len__(self) -> int:
        with self._lock:
            return len(self._requests)

    def clear(self) -> None:
        """Forget everything recorded (peaks restart from the requests in flight now)."""
        with self._lock:
            self._requests.clear()
            self._peak = +self._in_flight
