"""checkpointfs.testing.readiness: the wait every server fixture uses, on real servers and processes. Start-up
answers (a refused connection, 503 SlowDown, a connection closed without an answer) are waited through; any other
answer ends the wait at once; a server that exits or misses its deadline fails naming itself, the deadline, the
last answer and the end of its log."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from checkpointfs.testing import EmbeddedS3, Fault
from checkpointfs.testing.embedded_s3 import s3_client
from checkpointfs.testing.readiness import NotReady, ServerNotReadyError, wait_ready
from harness.servers.minio import not_ready_answer
from harness.servers.spark_cluster import free_port


def _s3_probe(client: Any) -> Any:
    """ListBuckets, with MinioServer's reading of start-up answers."""

    def probe() -> Any:
        try:
            return client.list_buckets()
        except Exception as e:  # classified: start-up answers are retried, the rest re-raised
            answer = not_ready_answer(e)
            if answer is None:
                raise
            raise NotReady(answer) from None

    return probe


def test_a_refused_connection_is_waited_for_until_the_server_serves() -> None:
    port = free_port()
    server = EmbeddedS3(["readiness-late"], port=port)
    starter = threading.Timer(1.0, server.start)
    starter.start()
    try:
        client = s3_client(f"http://127.0.0.1:{port}", "us-east-1", server.access_key, server.secret_key)
        began = time.monotonic()
        answer = wait_ready("late S3", _s3_probe(client), 60)
        assert time.monotonic() - began >= 0.9  # it was refused first, then served
        assert "Buckets" in answer  # served: a real ListBuckets answer
    finally:
        starter.join()
        server.stop()


@pytest.mark.parametrize("kind", ["slowdown", "reset"])
def test_start_up_answers_are_retried(embedded_s3: EmbeddedS3, kind: str) -> None:
    """503 SlowDown (what MinIO answers while it starts, as XMinioServerNotInitialized is) and a connection closed
    without an answer, three times each, then the request is served."""
    embedded_s3.faults.add(Fault(kind, frozenset({"ListBuckets"}), times=3))  # type: ignore[arg-type]
    wait_ready("embedded S3", _s3_probe(embedded_s3.client()), 60)
    assert embedded_s3.faults.kinds_injected() == {kind: 3}


def test_an_answer_that_is_not_about_starting_ends_the_wait_at_once(embedded_s3: EmbeddedS3) -> None:
    client = s3_client(embedded_s3.endpoint_url, "us-east-1", "AKIAUNKNOWNKEY000000", "secret")
    began = time.monotonic()
    with pytest.raises(ClientError, match="InvalidAccessKeyId"):
        wait_ready("embedded S3", _s3_probe(client), 60)
    assert time.monotonic() - began < 30


def test_a_server_that_exits_while_starting_fails_the_wait_naming_it(tmp_path: Path) -> None:
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-c", "print('port already in use'); raise SystemExit(3)"],
                                   stdout=out, stderr=subprocess.STDOUT)

    def probe() -> None:
        raise NotReady("connection refused")

    with pytest.raises(ServerNotReadyError) as raised:
        wait_ready(f"toy server (pid {process.pid})", probe, 120, exit_code=process.poll, log_path=log_path)
    process.wait()
    assert raised.value.exit_code == 3
    message = str(raised.value)
    assert f"toy server (pid {process.pid}) exited (3)" in message
    assert "last answer: connection refused" in message and "port already in use" in message


def test_the_deadline_names_the_server_the_deadline_and_the_last_answer(tmp_path: Path) -> None:
    log_path = tmp_path / "server.log"
    log_path.write_text("starting\nstill initialising storage\n")
    answers = iter(range(1_000_000))

    def probe() -> None:
        raise NotReady(f"HTTP 503 XMinioServerNotInitialized (probe {next(answers)})")

    began = time.monotonic()
    with pytest.raises(ServerNotReadyError) as raised:
        wait_ready("slow server", probe, 2, log_path=log_path)
    assert 2 <= time.monotonic() - began < 30
    message = str(raised.value)
    assert message.startswith("slow server was not ready within 2s; last answer: HTTP 503 XMinioServerNotInitialized")
    assert "still initialising storage" in message and raised.value.exit_code is None
