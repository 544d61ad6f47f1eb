"""A request log for a real S3 store: :class:`RecordingProxy`, an HTTP/1.1 reverse proxy on 127.0.0.1 that forwards
every request unchanged to the store and records each one, classified by S3 operation, in a
:class:`~checkpointfs.testing.RequestLog` (what the embedded S3's gateway records); and :class:`LoggedMinio`, a
:class:`~harness.servers.minio.MinioServer` seen through one, with the embedded S3's helpers.

Requests and answers are relayed as received: the request line, the header lines (the ``Host`` header included, so
that SigV4 signatures still verify at the store), bodies framed by ``Content-Length`` or chunked (``aws-chunked``
content included), ``Expect: 100-continue`` (the store's ``100 Continue`` is relayed, the body follows it) and
keep-alive connections. Each client connection has its own connection to the store. A request is recorded as soon
as the store's answer (its status line and headers) has arrived, before the client gets it: once a client has its
answer, the log holds the request. A request that got no answer from the store is recorded with status 0. Requests
carrying :data:`~checkpointfs.testing.requests.ADMIN_HEADER` are relayed and not recorded.

Requests are classified as S3's by default; ``classifier=classify_gcs`` names Google Cloud Storage JSON API requests
by the store interface's operations (checkpointfs.store.gcs), for fake-gcs-server;
:func:`checkpointfs.store.azure.client.classify` names Blob service requests by Azure's own (``PutBlob``...), for
Azurite, with ``plan_name`` giving the S3 name a plan's faults use for each. With a
:class:`~checkpointfs.testing.faults.FaultPlan` in :attr:`RecordingProxy.faults`, the proxy injects its faults as
the embedded S3's gateway does, in front of a store that has no fault layer of its own: refusals (``slowdown``,
``server-error``, ``precondition-failed``: an error answer in the store's dialect (S3's, GCS's or Azure's), the
request never forwarded;
``reset``: the connection dropped) and spoiled answers (the request forwarded and applied, then ``lost-response``:
the connection dropped; ``error-after-apply``: a 500 instead of the answer; ``truncate``: half the answer's body).
A plan's ``ignore_conditional_writes`` strips the write conditions (S3's ``If-None-Match``/``If-Match``, GCS's
``ifGenerationMatch``) before forwarding. A plan's ``latency`` is applied as the embedded S3's gateway applies it:
each counted request waits ``per_request_s`` plus its body's transfer time before it is forwarded, and its answer's
body (when its length is announced) its transfer time before it is relayed; a server-side copy is not timed by the
size of its source (the proxy does not know it). Consistency lags of a plan are not emulated here.
"""

from __future__ import annotations

import logging
import re
import select
import socket
import socketserver
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

import boto3
from botocore.config import Config

from checkpointfs.testing import endpoint
from checkpointfs.testing.faults import APPLIES_REQUEST, REFUSALS, Fault, FaultPlan
from checkpointfs.testing.requests import ADMIN_HEADER, Request, RequestLog, classify
from checkpointfs.testing.server import TestServer

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+

    from .minio import MinioServer

log = logging.getLogger(__name__)

CONTINUE_WAIT_S = 10.0
"""How long to wait for the store's ``100 Continue`` before sending a body the client announced with ``Expect``."""
UPSTREAM_TIMEOUT_S = 300.0
"""Socket timeout towards the store."""
CLIENT_IDLE_TIMEOUT_S = 300.0
"""Socket timeout towards a client (an idle keep-alive connection is closed after it)."""
_LINE_MAX = 64 * 1024
_HEADERS_MAX = 256
_BLOCK = 64 * 1024
_Framing = int | Literal["chunked", "close"]
"""How a message's body ends: after that many bytes, with the last chunk, or when the connection closes."""


class _Reader(Protocol):
    """The buffered reader of a socket."""

    def readline(self, size: int = -1, /) -> bytes: ...

    def read(self, size: int = -1, /) -> bytes: ...

    def read1(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


Classifier = Callable[[str, str, str, dict[str, str]], tuple[str, str, str]]
"""``(method, path, query, headers) -> (operation, bucket, key)`` of a request."""
Dialect = Literal["s3", "gcs", "azure"]
"""Whose error answers the fault layer sends: S3's XML (503 SlowDown), GCS's JSON (429 rateLimitExceeded) or Azure's
XML with its ``x-ms-error-code`` header (503 ServerBusy)."""

_ERRORS: dict[Dialect, dict[str, tuple[int, str]]] = {
    "s3": {"slowdown": (503, "SlowDown"), "server-error": (500, "InternalError"),
           "precondition-failed": (412, "PreconditionFailed"), "error-after-apply": (500, "InternalError")},
    "gcs": {"slowdown": (429, "rateLimitExceeded"), "server-error": (500, "backendError"),
            "precondition-failed": (412, "conditionNotMet"), "error-after-apply": (500, "backendError")},
    # a put-if-absent conflict is 409 BlobAlreadyExists on Azure
    "azure": {"slowdown": (503, "ServerBusy"), "server-error": (500, "InternalError"),
              "precondition-failed": (409, "BlobAlreadyExists"), "error-after-apply": (500, "InternalError")},
}


def classify_gcs(method: str, path: str, query: str, headers: dict[str, str]) -> tuple[str, str, str]:
    """``(operation, bucket, key)`` of a Google Cloud Storage JSON API request, the operation by the store
    interface's names (:func:`checkpointfs.store.gcs.client.operation_of`)."""
    from checkpointfs.store.gcs.client import operation_of

    operation, key = operation_of(method, f"http://proxy{path}?{query}", headers.get("content-range", ""))
    bucket = path.split("/b/", 1)[1].split("/", 1)[0] if "/b/" in path else ""
    return operation, unquote(bucket), key


def classify_gcs_renames(method: str, path: str, query: str, headers: dict[str, str]) -> tuple[str, str, str]:
    """:func:`classify_gcs`, with a rename's copy (``copyTo``/``rewriteTo``), move and compose named as such
    (``CopyObject``, ``MoveObject``, ``ComposeObject``, keyed by the source), and a listing keyed by its ``prefix``
    (so that it is counted under the directory it lists): for counting what a rename-based manager sends."""
    operation, bucket, key = classify_gcs(method, path, query, headers)
    for marker, name in (("/copyTo/", "CopyObject"), ("/rewriteTo/", "CopyObject"), ("/moveTo/", "MoveObject"),
                         ("/compose", "ComposeObject")):
        if marker in path:  # a rename's copy, move or compose, which classify_gcs counts as the source's HeadObject
            return name, bucket, unquote(path.split("/o/", 1)[1].split(marker, 1)[0]) if "/o/" in path else key
    if operation == "ListObjectsV2" and not key:
        key = parse_qs(query).get("prefix", [""])[0]
    return operation, bucket, key


def _error_answer(dialect: Dialect, kind: str, codes: dict[str, tuple[int, str]] | None = None, *,
                  with_body: bool = True) -> bytes:
    """A complete error answer of ``kind`` in ``dialect`` (status line, headers, body: none for a ``HEAD``);
    ``codes`` overrides the dialect's status and code of some kinds."""
    status, code = {**_ERRORS[dialect], **(codes or {})}[kind]
    message = f"injected by the recording proxy: {kind}"
    if dialect == "gcs":
        body = (b'{"error":{"code":%d,"message":"%s","errors":[{"reason":"%s","message":"%s"}]}}'
                % (status, message.encode(), code.encode(), message.encode()))
        kind_of = b"application/json; charset=UTF-8"
    else:
        body = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code><Message>%s</Message></Error>"
                % (code.encode(), message.encode()))
        kind_of = b"application/xml"
    extra = b"x-ms-error-code: %s\r\n" % code.encode() if dialect == "azure" else b""
    body = body if with_body else b""
    return (b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\n%sContent-Length: %d\r\n\r\n%s"
            % (status, code.encode(), kind_of, extra, len(body), body))


_CONDITION_HEADERS = (b"if-none-match:", b"if-match:")
_CONDITION_QUERY = re.compile(rb"[?&]ifGenerationMatch=[^&\s]*")


def _unconditional(head: _Head) -> _Head:
    """The request without its write conditions, as a store that ignores them sees it: S3's ``If-None-Match`` and
    ``If-Match`` headers, GCS's ``ifGenerationMatch`` query parameter."""
    start = _CONDITION_QUERY.sub(lambda m: m.group(0)[:1] if m.group(0)[:1] == b"?" else b"", head.start)
    start = start.replace(b"?&", b"?")
    lines = tuple(line for line in head.lines if not line.lower().startswith(_CONDITION_HEADERS))
    headers = {k: v for k, v in head.headers.items() if k not in ("if-none-match", "if-match")}
    return _Head(start, lines, head.end, headers)


def _error_answer_s3(kind: str, with_body: bool) -> bytes:
    return _error_answer("s3", kind, with_body=with_body)


def _discard(_: bytes) -> None:
    """A body's bytes, read and dropped."""


class ProxyProtocolError(Exception):
    """A client or the store sent something that is not HTTP/1.1 the proxy can relay."""


@dataclass(frozen=True)
class _Head:
    """The start line and header lines of one HTTP message, as received, and its headers (names lowercased,
    repeated headers joined with ``", "``)."""

    start: bytes
    lines: tuple[bytes, ...]
    end: bytes
    headers: dict[str, str]

    @property
    def raw(self) -> bytes:
        return self.start + b"".join(self.lines) + self.end

    def status(self) -> int:
        """The status code of a response."""
        parts = self.start.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise ProxyProtocolError(f"bad status line {self.start[:80]!r}")
        return int(parts[1])

    def tokens(self, name: str) -> set[str]:
        """The comma-separated values of header ``name``, lowercased."""
        return {t.strip().lower() for t in self.headers.get(name, "").split(",") if t.strip()}


def _line(rfile: _Reader) -> bytes:
    line = rfile.readline(_LINE_MAX + 1)
    if not line.endswith(b"\n"):
        raise ProxyProtocolError("line too long" if len(line) > _LINE_MAX else "connection closed mid-message")
    return line


def _read_head(rfile: _Reader) -> _Head | None:
    """The next message head on ``rfile``; None when the connection closed cleanly before one."""
    start = rfile.readline(_LINE_MAX + 1)
    while start in (b"\r\n", b"\n"):  # empty lines before a request line are to be ignored (RFC 9112, 2.2)
        start = rfile.readline(_LINE_MAX + 1)
    if not start:
        return None
    if not start.endswith(b"\n"):
        raise ProxyProtocolError("start line too long or cut")
    lines: list[bytes] = []
    headers: dict[str, str] = {}
    while True:
        line = _line(rfile)
        if line in (b"\r\n", b"\n"):
            return _Head(start, tuple(lines), line, headers)
        if len(lines) >= _HEADERS_MAX:
            raise ProxyProtocolError("too many header lines")
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep or not name or name != name.strip():
            raise ProxyProtocolError("malformed header line")
        lines.append(line)
        key, value = name.lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value


def _framing(head: _Head, *, request_method: str | None = None) -> _Framing:
    """How the body of ``head`` ends (RFC 9112, 6.3); ``request_method``: that of the request, for a response."""
    response = request_method is not None
    if response:
        status = head.status()
        if request_method == "HEAD" or 100 <= status < 200 or status in (204, 304):
            return 0
    codings = [c.strip().lower() for c in head.headers.get("transfer-encoding", "").split(",") if c.strip()]
    if codings:
        if codings[-1] == "chunked":
            return "chunked"
        if response:
            return "close"
        raise ProxyProtocolError("a request body with a transfer coding other than chunked")
    if "content-length" in head.headers:
        values = {v.strip() for v in head.headers["content-length"].split(",")}
        if len(values) != 1 or not next(iter(values)).isdigit():
            raise ProxyProtocolError("bad Content-Length")
        return int(values.pop())
    return "close" if response else 0


def _copy_exact(rfile: _Reader, send: Callable[[bytes], object], size: int) -> None:
    while size > 0:
        block = rfile.read(min(size, _BLOCK))
        if not block:
            raise ProxyProtocolError("connection closed mid-body")
        send(block)
        size -= len(block)


def _copy_chunked(rfile: _Reader, send: Callable[[bytes], object]) -> None:
    """Relay a chunked body, framing and trailers included, as received."""
    while True:
        line = _line(rfile)
        send(line)
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise ProxyProtocolError("bad chunk size line") from None
        if size == 0:
            break
        _copy_exact(rfile, send, size + 2)  # the chunk and its CRLF
    while True:  # trailer lines, then the empty line
        line = _line(rfile)
        send(line)
        if line in (b"\r\n", b"\n"):
            return


def _copy_body(framing: _Framing, rfile: _Reader, send: Callable[[bytes], object]) -> None:
    if framing == "chunked":
        _copy_chunked(rfile, send)
    elif framing == "close":
        while block := rfile.read1(_BLOCK):
            send(block)
    else:
        _copy_exact(rfile, send, framing)


def _part_number(operation: str, query: str) -> int:
    """The part number of an ``UploadPart`` (0 for other operations)."""
    if operation != "UploadPart":
        return 0
    value = (parse_qs(query).get("partNumber") or ["0"])[0]
    return int(value) if value.isdigit() else 0


def _readable(sock: socket.socket, timeout: float) -> bool:
    return bool(select.select([sock], [], [], timeout)[0])


class _Upstream:
    """One connection to the store, opened on first use and again after the store closed it."""

    def __init__(self, address: Callable[[], tuple[str, int]]) -> None:
        self._address = address
        self.sock: socket.socket | None = None
        self.rfile: _Reader | None = None

    def connect(self) -> tuple[socket.socket, _Reader]:
        if self.sock is not None and _readable(self.sock, 0):  # an idle connection that the store closed
            self.close()
        if self.sock is None or self.rfile is None:
            self.sock = socket.create_connection(self._address(), timeout=UPSTREAM_TIMEOUT_S)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.rfile = self.sock.makefile("rb")
        return self.sock, self.rfile

    def shutdown(self) -> None:
        """Interrupt a thread blocked on this connection (from another thread)."""
        sock = self.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        if self.rfile is not None:
            self.rfile.close()
        if self.sock is not None:
            self.sock.close()
        self.sock, self.rfile = None, None


class _Server(socketserver.ThreadingTCPServer):
    """The listening socket; one thread per client connection, each tracked so that :meth:`close_connections` can
    end them."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, upstream: Callable[[], tuple[str, int]], requests: RequestLog, *,
                 classifier: Classifier = classify, plan: Callable[[], FaultPlan | None] = lambda: None,
                 plan_name: Callable[[str], str] = str, answer: Callable[[str, bool], bytes] = _error_answer_s3
                 ) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = upstream
        self.requests = requests
        self.classifier = classifier
        self.plan = plan
        self.plan_name = plan_name
        self.answer = answer
        self._lock = threading.Lock()
        self._connections: dict[Any, threading.Thread] = {}
        self._upstreams: dict[Any, _Upstream] = {}

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                                  name=f"recording-proxy-{self.server_address[1]}-{client_address[1]}", daemon=True)
        with self._lock:
            self._connections[request] = thread
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._connections.pop(request, None)
            self._upstreams.pop(request, None)
        super().shutdown_request(request)

    def upstream_for(self, request: Any) -> _Upstream:
        upstream = _Upstream(self.upstream)
        with self._lock:
            self._upstreams[request] = upstream
        return upstream

    def close_connections(self, timeout: float) -> None:
        """Shut every client connection and its store connection down, and wait for their threads."""
        with self._lock:
            threads = dict(self._connections)
            upstreams = list(self._upstreams.values())
        for request in threads:
            try:
                request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for upstream in upstreams:
            upstream.shutdown()
        for thread in threads.values():
            thread.join(timeout)


class _Handler(socketserver.StreamRequestHandler):
    """Relays the requests of one client connection, one after the other."""

    server: _Server
    timeout = CLIENT_IDLE_TIMEOUT_S
    disable_nagle_algorithm = True

    def handle(self) -> None:
        upstream = self.server.upstream_for(self.request)
        try:
            while self._exchange(upstream):
                pass
        except (OSError, ProxyProtocolError) as e:
            log.debug("recording proxy: connection from %s ended: %s", self.client_address, e)
        finally:
            upstream.close()

    def _exchange(self, upstream: _Upstream) -> bool:
        """Relay one request and its answer; whether the client's connection stays open."""
        head = _read_head(self.rfile)
        if head is None:
            return False
        parts = head.start.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise ProxyProtocolError(f"bad request line {head.start[:80]!r}")
        method, target, version = parts
        if "://" in target:  # absolute form
            split = urlsplit(target)
            path, query = split.path or "/", split.query
        else:
            path, _, query = target.partition("?")
        operation, bucket, key = self.server.classifier(method, path, query, head.headers)
        part = _part_number(operation, query)
        counted = ADMIN_HEADER not in head.headers
        body = _framing(head)
        keep_client = ("close" not in head.tokens("connection") if version == "HTTP/1.1"
                       else "keep-alive" in head.tokens("connection"))
        if counted:
            self.server.requests.started(operation)
        try:
            plan = self.server.plan() if counted else None
            fault = plan.pick(self.server.plan_name(operation), bucket, key) if plan is not None else None

            def record(status: int) -> None:
                assert fault is not None
                self.server.requests.add(Request(operation, bucket, key, status, fault=fault.kind, part=part))

            latency = plan.latency if plan is not None else None
            if latency is not None:
                time.sleep(latency.per_request_s + latency.transfer_s(body if isinstance(body, int) else 0))
            if fault is not None and fault.kind in REFUSALS:
                return self._refuse(fault, head, method, body, keep_client, record)
            if plan is not None and plan.ignore_conditional_writes:
                head = _unconditional(head)
            try:
                sock, rfile = upstream.connect()
                sock.sendall(head.raw)
                response = None
                if body != 0 and "100-continue" in head.tokens("expect") and _readable(sock, CONTINUE_WAIT_S):
                    response = self._await_continue(rfile)
                body_sent = response is None
                if response is None:
                    _copy_body(body, self.rfile, sock.sendall)
                    response = self._final_head(rfile)
                status = response.status()
                framing = _framing(response, request_method=method)
            except (OSError, ProxyProtocolError):
                upstream.close()
                if counted:
                    self.server.requests.add(Request(operation, bucket, key, 0, part=part))
                self._bad_gateway()
                raise
            if fault is not None and fault.kind in APPLIES_REQUEST:
                return self._spoil(fault, method, response, framing, rfile, upstream, keep_client and body_sent,
                                   record)
            if counted:
                self.server.requests.add(Request(operation, bucket, key, status, part=part))
            log.debug("recording proxy: %s %s/%s -> %s", operation, bucket, key, status)
            if latency is not None and isinstance(framing, int):
                time.sleep(latency.transfer_s(framing))
            try:
                self.wfile.write(response.raw)
                _copy_body(framing, rfile, self.wfile.write)
            except BaseException:
                upstream.close()
                raise
            closing = framing == "close" or "close" in response.tokens("connection")
            if closing or not body_sent:  # the store answered before the body: it is not coming on either side
                upstream.close()
            return keep_client and body_sent and not closing
        finally:
            if counted:
                self.server.requests.finished(operation)

    def _refuse(self, fault: Fault, head: _Head, method: str, body: _Framing, keep_client: bool,
                record: Callable[[int], None]) -> bool:
        """Inject a refusal: the request is read and never forwarded; an error answer, or (``reset``) the connection
        dropped. Whether the client's connection stays open."""
        expecting = "100-continue" in head.tokens("expect")  # the body waits for an answer: it is not coming
        if not expecting:
            _copy_body(body, self.rfile, _discard)
        if fault.then is not None:
            fault.then()
        if fault.kind == "reset":
            record(0)
            return False
        answer = self.server.answer(fault.kind, method != "HEAD")
        record(int(answer.split(b" ", 2)[1]))
        self.wfile.write(answer)
        return keep_client and not expecting

    def _spoil(self, fault: Fault, method: str, response: _Head, framing: _Framing, rfile: _Reader,
               upstream: _Upstream, keep_client: bool, record: Callable[[int], None]) -> bool:
        """Inject a spoiled answer to a request the store applied: its answer is read, then dropped
        (``lost-response``), replaced by a 500 (``error-after-apply``) or cut in half (``truncate``). Whether the
        client's connection stays open."""
        chunks: list[bytes] = []
        _copy_body(framing, rfile, chunks.append)
        if framing == "close" or "close" in response.tokens("connection"):
            upstream.close()
        if fault.then is not None:
            fault.then()
        record(response.status())
        if fault.kind == "lost-response":
            return False
        if fault.kind == "error-after-apply":
            self.wfile.write(self.server.answer(fault.kind, method != "HEAD"))
            return keep_client
        data = b"".join(chunks)
        self.wfile.write(response.raw + data[:len(data) // 2])
        return False

    def _await_continue(self, rfile: _Reader) -> _Head | None:
        """After a request with ``Expect: 100-continue``: None once the store's ``100 Continue`` is relayed (the body
        is to follow), or the store's final answer, sent before the body."""
        while True:
            response = _read_head(rfile)
            if response is None:
                raise ProxyProtocolError("the store closed the connection without an answer")
            status = response.status()
            if not 100 <= status < 200:
                return response
            self.wfile.write(response.raw)
            if status == 100:
                return None

    def _final_head(self, rfile: _Reader) -> _Head:
        """The store's final answer; interim (1xx) answers before it are relayed."""
        while True:
            response = _read_head(rfile)
            if response is None:
                raise ProxyProtocolError("the store closed the connection without an answer")
            if not 100 <= response.status() < 200:
                return response
            self.wfile.write(response.raw)

    def _bad_gateway(self) -> None:
        """Answer 502 (best effort: the client may be gone); the connection is closed after it."""
        body = b"recording proxy: no answer from the store\n"
        try:
            self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        except OSError:
            pass


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"the recording proxy forwards to http:// endpoints only, not {url!r}")
    return parts.hostname, parts.port or 80


class RecordingProxy(TestServer):
    """A reverse proxy on 127.0.0.1 (a free port) in front of the store endpoint ``upstream`` (an ``http://`` URL, or
    a callable giving the current one: a restarted store may move), recording every request in :attr:`requests`
    (classified by ``classifier``: S3's, :func:`classify_gcs`, or Azure's
    :func:`~checkpointfs.store.azure.client.classify`), injecting the faults of :attr:`faults` (picked by
    ``plan_name(operation)``: the S3 name a plan uses for a request the classifier names otherwise) with error answers
    in ``dialect`` (:attr:`error_codes` overriding some). Use as a context manager or call
    :meth:`start`/:meth:`stop`."""

    def __init__(self, upstream: str | Callable[[], str], requests: RequestLog | None = None, *,
                 classifier: Classifier = classify, faults: FaultPlan | None = None, dialect: Dialect = "s3",
                 plan_name: Callable[[str], str] = str) -> None:
        self._upstream = upstream
        self.requests = requests if requests is not None else RequestLog()
        self.classifier = classifier
        self.faults = faults
        """The faults to inject (None: none), replaceable while the proxy runs."""
        self.dialect: Dialect = dialect
        self.plan_name = plan_name
        self.error_codes: dict[str, tuple[int, str]] = {}
        """Overrides of the dialect's ``(status, code)`` of some fault kinds (an account that refuses Blob Batch
        with 400 InvalidInput...), replaceable while the proxy runs."""
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def _upstream_address(self) -> tuple[str, int]:
        return _address(self._upstream() if callable(self._upstream) else self._upstream)

    def start(self) -> Self:
        """Start listening."""
        if self._server is not None:
            return self
        self._server = _Server(self._upstream_address, self.requests, classifier=self.classifier,
                               plan=lambda: self.faults, plan_name=self.plan_name,
                               answer=lambda kind, with_body: _error_answer(self.dialect, kind, self.error_codes,
                                                                            with_body=with_body))
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"recording-proxy-{self.port}", daemon=True)
        self._thread.start()
        log.info("recording proxy at %s", self.endpoint_url)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Close the listening socket and every open connection, and wait for their threads."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server.close_connections(timeout)
        if self._thread is not None:
            self._thread.join(timeout)
        self._server, self._thread = None, None

    @property
    def port(self) -> int:
        """The port listened on."""
        if self._server is None:
            raise RuntimeError("RecordingProxy is not started")
        return int(self._server.server_address[1])

    @property
    def endpoint_url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"


class LoggedMinio(TestServer):
    """A running :class:`~harness.servers.minio.MinioServer` behind a :class:`RecordingProxy`: the embedded S3's
    surface (:attr:`requests`, :meth:`client`, :meth:`hadoop_conf`, ``uri``, ``keys``...) on a real store. Clients
    and S3A settings reach MinIO through the proxy; admin clients, :meth:`keys` and :meth:`open_uploads` go to MinIO
    directly (not recorded). :meth:`stop` stops the proxy only: the MinIO process stays its MinioServer's."""

    def __init__(self, minio: MinioServer) -> None:
        self.minio = minio
        self.requests = RequestLog()
        self._proxy = RecordingProxy(lambda: minio.endpoint_url, self.requests)

    def start(self) -> Self:
        """Start the proxy (MinIO must be running)."""
        self._proxy.start()
        return self

    def stop(self) -> None:
        """Stop the proxy."""
        self._proxy.stop()

    @property
    def buckets(self) -> list[str]:
        return self.minio.buckets

    @property
    def region(self) -> str:
        return self.minio.region

    @property
    def endpoint_url(self) -> str:
        """The proxy's ``http://127.0.0.1:<port>``."""
        return self._proxy.endpoint_url

    def client(self, admin: bool = False) -> Any:
        """A boto3 S3 client through the proxy (botocore's retries off, so every request is visible); an ``admin``
        client talks to MinIO directly, unrecorded."""
        if admin:
            return self.minio.client()
        return boto3.client(
            "s3", endpoint_url=self.endpoint_url, region_name=self.minio.region,
            aws_access_key_id=self.minio.access_key, aws_secret_access_key=self.minio.secret_key,
            config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}),
        )

    def manager_options(self) -> dict[str, Any]:
        """Keyword options for :class:`~checkpointfs.DirectWriteManager` to reach MinIO through the proxy."""
        return endpoint.manager_options(self.endpoint_url, self.minio.region, self.minio.access_key,
                                        self.minio.secret_key)

    def hadoop_conf(self) -> dict[str, str]:
        """The ``fs.s3a.*`` settings that reach MinIO through the proxy."""
        return endpoint.hadoop_conf(self.endpoint_url, self.minio.region, self.minio.access_key,
                                    self.minio.secret_key)

    def uri(self, key: str = "", bucket: str | None = None, scheme: str = "s3") -> str:
        """``s3://<bucket>/<key>`` (the first bucket by default)."""
        return self.minio.uri(key, bucket, scheme)

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """Every key under ``prefix`` (asked of MinIO directly: not recorded)."""
        return self.minio.keys(prefix, bucket)

    def open_uploads(self, prefix: str = "", bucket: str | None = None) -> list[str]:
        """Keys under ``prefix`` of multipart uploads neither completed nor aborted (not recorded)."""
        return self.minio.open_uploads(prefix, bucket)

    def reset(self, name: str = "test") -> str:
        """Clear the request log; a fresh key prefix for the caller (MinIO is shared, not emptied)."""
        self.requests.clear()
        return f"{name}/{uuid.uuid4().hex[:12]}"
