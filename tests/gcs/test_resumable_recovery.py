"""GcsStore's resumable uploads when an answer is lost, against a small model of GCS's documented session protocol
(fake-gcs-server cannot run these: its status query finalizes the upload, tests/gcs/test_emulator_gaps.py). The model
keeps bytes by offset, answers a status query (``Content-Range: bytes */*``) with 308 and the persisted ``Range``, or
the object once finalized, and can apply a request and then drop the connection (a lost answer), or persist only part
of a chunk. It runs on 127.0.0.1 in this process."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("google.auth", reason="the Python GCS store needs the gcs extra (google-auth, requests)")

from checkpointfs import RetryPolicy, protocol
from checkpointfs.store.base import ObjectPath, PutMode
from checkpointfs.store.gcs.client import CHUNK_MULTIPLE, authorized_session, decode_write_id
from checkpointfs.store.gcs.store import GcsStore

FAST = RetryPolicy(max_attempts=4, initial_backoff_s=0.001, max_backoff_s=0.01, max_elapsed_s=5)
WHERE = ObjectPath.parse("gs://model-bucket/ck/state/1.zip")


@dataclass
class Model:
    """One session's state, and the misbehaviours to play."""

    data: bytearray = field(default_factory=bytearray)
    resource: dict[str, Any] | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    lose: set[int] = field(default_factory=set)
    """Numbers (1-based, counting every PUT to the session) of requests applied, then left unanswered."""
    persist_at_most: dict[int, int] = field(default_factory=dict)
    """PUT number -> bytes of its body persisted at most (the rest is dropped, the 308 says so)."""
    puts: list[str] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.model.metadata = body.get("metadata", {})
        self.send_response(200)
        self.send_header("Location", f"http://127.0.0.1:{self.server.server_address[1]}/upload/storage/v1/b/"
                                     "model-bucket/o?uploadType=resumable&upload_id=session-1")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_PUT(self) -> None:
        model = self.server.model
        content_range = self.headers["Content-Range"]
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        model.puts.append(content_range)
        number = len(model.puts)
        match = re.fullmatch(r"bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)", content_range)
        assert match is not None, content_range
        if model.resource is None and match.group(1) is not None:
            start = int(match.group(1))
            assert start <= len(model.data), "a gap in the upload"
            body = body[len(model.data) - start:]  # bytes already persisted are taken once
            body = body[:model.persist_at_most.get(number, len(body))]
            model.data += body
        total = match.group(3)
        if model.resource is None and total != "*" and len(model.data) == int(total):
            model.resource = {"name": WHERE.key, "size": total, "generation": "7", "metadata": model.metadata}
        if number in model.lose:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if model.resource is not None:
            payload = json.dumps(model.resource).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(308)
        if model.data:
            self.send_header("Range", f"bytes=0-{len(model.data) - 1}")
        self.send_header("Content-Length", "0")
        self.end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.model = Model()


@pytest.fixture
def server() -> Iterator[_Server]:
    running = _Server()
    thread = threading.Thread(target=running.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield running
    running.shutdown()
    running.server_close()
    thread.join(5)


@pytest.fixture
def store(server: _Server) -> Iterator[GcsStore]:
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    session, _ = authorized_session(endpoint_url=endpoint, credentials=None, token=None)
    gcs = GcsStore(session, endpoint_url=endpoint, retry=FAST)
    yield gcs
    gcs.close()


def upload(store: GcsStore, chunks: list[bytes], tail: bytes) -> None:
    upload = store.create_multipart(WHERE, mode=PutMode.CREATE, write_id="ours")
    parts = [store.upload_part(WHERE, upload.upload_id, n, chunk) for n, chunk in enumerate(chunks, 1)]
    store.complete_multipart(WHERE, upload.upload_id, parts, mode=PutMode.CREATE, tail=tail)


def test_a_chunk_whose_answer_was_lost_is_not_sent_twice(store: GcsStore, server: _Server) -> None:
    chunks = [b"a" * CHUNK_MULTIPLE, b"b" * CHUNK_MULTIPLE]
    server.model.lose = {2}  # the second chunk lands, its answer does not
    upload(store, chunks, b"tail")
    assert bytes(server.model.data) == b"".join(chunks) + b"tail"
    c = CHUNK_MULTIPLE
    assert server.model.puts == [f"bytes 0-{c - 1}/*", f"bytes {c}-{2 * c - 1}/*", "bytes */*",
                                 f"bytes {2 * c}-{2 * c + 3}/{2 * c + 4}"]
    assert decode_write_id(server.model.metadata[protocol.WRITE_ID_KEY]) == "ours"


def test_a_chunk_persisted_in_part_is_completed_from_the_offset_the_store_reports(store: GcsStore,
                                                                                  server: _Server) -> None:
    chunk = b"x" * (2 * CHUNK_MULTIPLE)
    server.model.persist_at_most = {1: CHUNK_MULTIPLE}
    upload(store, [chunk], b"")
    c = CHUNK_MULTIPLE
    assert server.model.puts == [f"bytes 0-{2 * c - 1}/*", f"bytes {c}-{2 * c - 1}/*", f"bytes */{2 * c}"]
    assert bytes(server.model.data) == chunk


def test_a_final_chunk_whose_answer_was_lost_settles_as_ours(store: GcsStore, server: _Server) -> None:
    server.model.lose = {2}  # the final chunk publishes the object; its answer is lost
    upload(store, [b"a" * CHUNK_MULTIPLE], b"end")
    assert server.model.puts[-1] == "bytes */*" and len(server.model.puts) == 3
    assert server.model.resource is not None and bytes(server.model.data) == b"a" * CHUNK_MULTIPLE + b"end"


def test_a_chunk_the_store_took_nothing_of_is_sent_again_from_the_same_offset(store: GcsStore,
                                                                              server: _Server) -> None:
    chunks = [b"a" * CHUNK_MULTIPLE, b"b" * CHUNK_MULTIPLE]
    server.model.persist_at_most = {2: 0}  # the second chunk's 308 reports no progress
    upload(store, chunks, b"!")
    c = CHUNK_MULTIPLE
    assert server.model.puts == [f"bytes 0-{c - 1}/*", f"bytes {c}-{2 * c - 1}/*", f"bytes {c}-{2 * c - 1}/*",
                                 f"bytes {2 * c}-{2 * c}/{2 * c + 1}"]
    assert bytes(server.model.data) == b"".join(chunks) + b"!"
