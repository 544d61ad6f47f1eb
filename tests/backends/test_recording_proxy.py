"""The recording proxy in front of MinIO (harness.servers.recording_proxy): boto3's requests reach MinIO
unchanged through it (SigV4 signatures verify, bodies of every framing arrive whole) and each is recorded, classified
by S3 operation, with the status MinIO answered."""

from __future__ import annotations

import hashlib
import http.client
import socket
import threading
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError

from checkpointfs.testing import FaultPlan, Request
from checkpointfs.testing.faults import Latency
from harness.servers.minio import MIN_PART_SIZE
from harness.servers.recording_proxy import LoggedMinio, RecordingProxy

pytestmark = pytest.mark.minio


@pytest.fixture
def store(logged_minio: LoggedMinio) -> tuple[LoggedMinio, str]:
    """The session's logged MinIO with its log cleared, and a fresh prefix."""
    return logged_minio, logged_minio.reset("proxy")


def _seen(server: LoggedMinio, prefix: str) -> list[tuple[str, str, int]]:
    return [(r.operation, r.key, r.status) for r in server.requests.all() if r.key.startswith(prefix)]


def _status(error: ClientError) -> int:
    return int(error.response["ResponseMetadata"]["HTTPStatusCode"])


def test_object_requests_are_relayed_and_recorded(store: tuple[LoggedMinio, str]) -> None:
    server, prefix = store
    client, bucket = server.client(), server.buckets[0]
    key = f"{prefix}/a"
    client.put_object(Bucket=bucket, Key=key, Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as refused:
        client.put_object(Bucket=bucket, Key=key, Body=b"second", IfNoneMatch="*")
    assert _status(refused.value) == 412
    assert client.get_object(Bucket=bucket, Key=key)["Body"].read() == b"first"
    assert client.head_object(Bucket=bucket, Key=key)["ContentLength"] == 5
    with pytest.raises(ClientError) as missing:
        client.head_object(Bucket=bucket, Key=f"{prefix}/missing")
    assert _status(missing.value) == 404
    listed = client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/")
    assert [o["Key"] for o in listed["Contents"]] == [key]
    client.copy_object(Bucket=bucket, Key=f"{prefix}/b", CopySource={"Bucket": bucket, "Key": key})
    client.delete_object(Bucket=bucket, Key=key)

    assert _seen(server, prefix) == [
        ("PutObject", key, 200), ("PutObject", key, 412), ("GetObject", key, 200), ("HeadObject", key, 200),
        ("HeadObject", f"{prefix}/missing", 404), ("ListObjectsV2", f"{prefix}/", 200),
        ("CopyObject", f"{prefix}/b", 200), ("DeleteObject", key, 204)]
    assert server.keys(f"{prefix}/") == [f"{prefix}/b"]


def test_multipart_upload_of_two_5_mib_parts(store: tuple[LoggedMinio, str]) -> None:
    server, prefix = store
    client, bucket, key = server.client(), server.buckets[0], f"{prefix}/big"
    parts = [bytes([n]) * MIN_PART_SIZE for n in (1, 2)]
    upload = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    etags = [client.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=n, Body=body)["ETag"]
             for n, body in enumerate(parts, 1)]
    client.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload, MultipartUpload={
        "Parts": [{"ETag": etag, "PartNumber": n} for n, etag in enumerate(etags, 1)]})

    body = server.client(admin=True).get_object(Bucket=bucket, Key=key)["Body"].read()
    assert hashlib.sha256(body).digest() == hashlib.sha256(b"".join(parts)).digest()
    assert _seen(server, prefix) == [("CreateMultipartUpload", key, 200), ("UploadPart", key, 200),
                                     ("UploadPart", key, 200), ("CompleteMultipartUpload", key, 200)]
    assert [r.part for r in server.requests.all() if r.operation == "UploadPart"] == [1, 2]
    assert server.open_uploads(f"{prefix}/") == []


def test_admin_requests_are_not_recorded(store: tuple[LoggedMinio, str]) -> None:
    server, prefix = store
    admin, bucket = server.client(admin=True), server.buckets[0]
    admin.put_object(Bucket=bucket, Key=f"{prefix}/x", Body=b"x")
    assert server.keys(f"{prefix}/") == [f"{prefix}/x"]
    # the admin header through the proxy: relayed, not recorded
    marked = server.client()
    marked.meta.events.register("before-sign.s3", _mark_admin)
    assert marked.get_object(Bucket=bucket, Key=f"{prefix}/x")["Body"].read() == b"x"
    assert server.requests.all() == []


def _mark_admin(request: Any, **_: Any) -> None:
    request.headers["x-checkpointfs-admin"] = "1"


def test_concurrent_puts_are_all_recorded(store: tuple[LoggedMinio, str]) -> None:
    server, prefix = store
    bucket, threads, per_thread = server.buckets[0], 8, 5
    errors: list[BaseException] = []

    def put(n: int) -> None:
        client = server.client()  # one client (and connection pool) per thread
        try:
            for i in range(per_thread):
                client.put_object(Bucket=bucket, Key=f"{prefix}/{n}/{i}", Body=b"%d" % i * 1000)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    workers = [threading.Thread(target=put, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert errors == []
    puts = [r for r in server.requests.all() if r.operation == "PutObject"]
    assert sorted(r.key for r in puts) == sorted(f"{prefix}/{n}/{i}" for n in range(threads) for i in range(per_thread))
    assert {r.status for r in puts} == {200}
    assert len(server.keys(f"{prefix}/")) == threads * per_thread
    assert server.requests.peak_in_flight("PutObject") >= 2


class _Mirror:
    """A one-connection HTTP upstream that answers each request with the exact bytes it received (head and body;
    a chunked body is read up to its last chunk, with no trailers), sending ``100 Continue`` first when asked to."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        connection, _ = self._listener.accept()
        with connection, connection.makefile("rb") as rfile:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = rfile.readline()
                    if not line:
                        return
                    head += line
                lowered = head.lower()
                if b"expect: 100-continue" in lowered:
                    connection.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                if b"transfer-encoding: chunked" in lowered:
                    pieces = []
                    while True:
                        size_line = rfile.readline()
                        size = int(size_line.split(b";")[0], 16)
                        pieces += [size_line, rfile.read(size + 2)]  # the chunk and its CRLF (the last: the end)
                        if size == 0:
                            break
                    body = b"".join(pieces)
                else:
                    length = lowered.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0] if (
                        b"content-length:" in lowered) else b"0"
                    body = rfile.read(int(length))
                received = head + body
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(received), received))

    def close(self) -> None:
        self._listener.close()


@pytest.mark.parametrize("framing", ["content-length", "chunked", "expect"])
def test_requests_are_relayed_byte_for_byte(framing: str) -> None:
    """The upstream receives exactly what the client sent, Host header included, on one kept-alive connection."""
    mirror = _Mirror()
    try:
        with RecordingProxy(mirror.url) as proxy:
            host = f"127.0.0.1:{proxy.port}"
            sent: list[bytes] = []
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock, \
                    sock.makefile("rb") as answers:
                for n in range(3):
                    body = bytes(range(256)) * 4096 * (n + 1)  # 1, 2 and 3 MiB
                    head = (f"PUT /bucket/key-{n}?x=1 HTTP/1.1\r\nHost: {host}\r\n"
                            f"X-Amz-Content-SHA256: UNSIGNED-PAYLOAD\r\n").encode()
                    if framing == "chunked":
                        half = len(body) // 2
                        request = head + b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(
                            b"%x;chunk-signature=0\r\n%s\r\n" % (len(c), c) for c in (body[:half], body[half:])
                        ) + b"0\r\n\r\n"
                    else:
                        expect = b"Expect: 100-continue\r\n" if framing == "expect" else b""
                        request = head + expect + b"Content-Length: %d\r\n\r\n" % len(body) + body
                    sent.append(request)
                    if framing == "expect":
                        sock.sendall(request[: -len(body)])
                        assert answers.readline() == b"HTTP/1.1 100 Continue\r\n"
                        assert answers.readline() == b"\r\n"
                        sock.sendall(body)
                    else:
                        sock.sendall(request)
                    assert answers.readline() == b"HTTP/1.1 200 OK\r\n"
                    length = int(answers.readline().split(b":")[1])
                    assert answers.readline() == b"\r\n"
                    assert answers.read(length) == request
        assert [(r.operation, r.key, r.status) for r in proxy.requests.all()] == [
            ("PutObject", f"key-{n}", 200) for n in range(3)]
    finally:
        mirror.close()


def test_a_plans_latency_delays_each_request_and_both_bodies() -> None:
    """With a latency model in its plan the proxy makes each request wait its per-request time and both bodies
    their transfer time, and still relays them unchanged (lower bounds only: a busy machine is slower, never
    faster)."""
    mirror = _Mirror()
    try:
        with RecordingProxy(mirror.url) as proxy:
            proxy.faults = FaultPlan(latency=Latency(per_request_s=0.25, bandwidth_bytes_per_s=4 * 1024 * 1024))
            body = bytes(range(256)) * 4096  # 1 MiB: a quarter second each way at 4 MiB/s
            request = (f"PUT /bucket/slow HTTP/1.1\r\nHost: 127.0.0.1:{proxy.port}\r\n"
                       f"Content-Length: {len(body)}\r\n\r\n").encode() + body
            with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock, \
                    sock.makefile("rb") as answers:
                started = time.monotonic()
                sock.sendall(request)
                assert answers.readline() == b"HTTP/1.1 200 OK\r\n"
                length = int(answers.readline().split(b":")[1])
                assert answers.readline() == b"\r\n"
                assert answers.read(length) == request
                spent = time.monotonic() - started
        # 0.25 s a request, 0.25 s for the request's body, 0.25 s for the answer's (the mirror echoes the request)
        assert spent >= 0.74, spent
        assert [(r.operation, r.key, r.status) for r in proxy.requests.all()] == [("PutObject", "slow", 200)]
    finally:
        mirror.close()


def test_unsigned_requests_get_minio_s_answer_on_a_kept_connection(logged_minio: LoggedMinio) -> None:
    """MinIO's refusals are relayed and recorded like any answer, and a connection stays usable after them."""
    logged_minio.reset("raw")
    connection = http.client.HTTPConnection("127.0.0.1", int(logged_minio.endpoint_url.rsplit(":", 1)[1]), timeout=30)
    bucket = logged_minio.buckets[0]
    for n in range(2):
        connection.request("PUT", f"/{bucket}/raw/{n}", body=b"x" * 1000)
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 403
    connection.request("HEAD", f"/{bucket}/raw/0")
    head = connection.getresponse()
    assert (head.status, head.read()) == (403, b"")
    connection.close()
    assert [(r.operation, r.status) for r in logged_minio.requests.all()] == [("PutObject", 403)] * 2 + [
        ("HeadObject", 403)]


def test_stop_closes_the_listening_socket_and_connections(minio_server: Any) -> None:
    with RecordingProxy(minio_server.endpoint_url) as proxy:
        port = proxy.port
        idle = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        idle.request("GET", "/minio/health/live")
        assert idle.getresponse().read() == b""
        assert [r.operation for r in proxy.requests.all()] == ["GetObject"]
    names = [t.name for t in threading.enumerate() if t.name.startswith(f"recording-proxy-{port}")]
    assert names == []
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", port, timeout=2).request("GET", "/")
    assert isinstance(proxy.requests.all()[0], Request)
