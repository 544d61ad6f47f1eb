"""What a user set up with ``configure(gcs=...)`` / ``configure(azure=...)`` reads when the store is not as the query
needs it, on fake-gcs-server and Azurite: the first line of the JVM's error says plainly that the bucket or container
does not exist, or that the store refused the credentials, and names the path (docs/spark.md, "Errors at start, and
what they say"). The query's sink and checkpoint are both on the store, as a user's would be; a driver of its own
each (``python -m harness.job``), no hand-set Spark settings."""

from __future__ import annotations

import http.server
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the drivers run Spark (extra 'spark'); the line decides what abfs:// does")

from checkpointfs.spark import running_line
from harness.servers.fake_gcs import FakeGcsServer

from .e2e import TIMEOUT_S, Stores, add_inputs, start

pytestmark = [pytest.mark.spark, pytest.mark.gcs]


def _failure(tmp_path: Path, root: str, stores: Stores, output: str | None = None) -> str:
    """Run the dedup query with its checkpoint (and its output, unless ``output`` names another place) under
    ``root``; the first line of the JVM exception it failed with (``<class>: <message>``), after asserting that it
    failed."""
    input_dir = tmp_path / "input"
    add_inputs(input_dir, 1)
    job = start(tmp_path / "job.log", input_dir=input_dir, output=output or f"{root}/out", checkpoint=f"{root}/cp",
                state_store="hdfs", stores=stores)
    try:
        outcome = job.wait(timeout=TIMEOUT_S)
    finally:
        job.kill()
    assert outcome["status"] == "failed", job.tail()
    jvm = [line.lstrip(": ") for line in outcome["error"].splitlines() if line.startswith(": ")]
    assert jvm, outcome["error"]
    return jvm[0]


def test_a_missing_bucket_on_gs_says_so_first(fake_gcs_server: FakeGcsServer, tmp_path: Path) -> None:
    bucket = f"missing-{uuid.uuid4().hex[:8]}"
    first = _failure(tmp_path, f"gs://{bucket}/q", {"gcs": {"endpoint": fake_gcs_server.endpoint_url,
                                                            "project": fake_gcs_server.project, "auth": "none"}})
    assert first.startswith(f"io.checkpointfs.spark.BucketNotFoundException: gs://{bucket}/q/"), first
    assert f": the bucket '{bucket}' does not exist (at {fake_gcs_server.endpoint_url}/)" in first, first
    assert bucket not in fake_gcs_server.bucket_names()  # nothing created it on the way


@pytest.fixture()
def refusing_token_endpoint() -> Iterator[str]:
    """An OAuth token endpoint on 127.0.0.1 that answers every request as Google's does for a revoked or deleted
    service account key (400 ``invalid_grant``, "Invalid JWT Signature."): fake-gcs-server checks no credentials, so
    the refusal a key meets on GCS, at the token exchange, comes from here. Its URL."""

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            body = json.dumps({"error": "invalid_grant", "error_description": "Invalid JWT Signature."}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/token"
    finally:
        server.shutdown()
        server.server_close()


def test_a_refused_service_account_key_on_gs_says_so_first(fake_gcs_server: FakeGcsServer,
                                                            refusing_token_endpoint: str, tmp_path: Path) -> None:
    """The checkpoint is the first to reach the store (the output is local: a file sink on gs:// probes its
    ``_spark_metadata`` through the connector first, and Spark reports the connector's own error, as docs/spark.md
    says)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    key_file = tmp_path / "service-account.json"
    key_file.write_text(json.dumps({
        "type": "service_account", "project_id": fake_gcs_server.project, "private_key_id": "revoked",
        "private_key": private, "client_email": "checkpoints@checkpointfs-test.iam.gserviceaccount.com",
        "client_id": "1", "token_uri": refusing_token_endpoint}))
    bucket = fake_gcs_server.buckets[0]
    gcs = {"endpoint": fake_gcs_server.endpoint_url, "project": fake_gcs_server.project,
           "service_account_key_file": str(key_file), "token_server_url": refusing_token_endpoint}
    first = _failure(tmp_path, f"gs://{bucket}/refused-{uuid.uuid4().hex[:8]}", {"gcs": gcs},
                     output=str(tmp_path / "out"))
    assert first.startswith(f"io.checkpointfs.spark.CredentialsRefusedException: gs://{bucket}/refused-"), first
    assert f": the store refused the credentials for the bucket '{bucket}'" in first, first
    assert "BEGIN PRIVATE KEY" not in (tmp_path / "job.log").read_text(errors="replace")


def _azure(azurite: Any, key: str) -> Stores:
    return {"azure": {"endpoint": azurite.endpoint_url.rsplit("/", 1)[0], "account": azurite.account_name,
                      "account_key": key}}


def _abfs_root(azurite: Any, container: str) -> str:
    return f"abfs://{container}@{azurite.account_name}.dfs.core.windows.net/q"


ABFS_DIRECT = pytest.mark.skipif(
    not running_line().abfs_direct, reason=f"the shim writes abfs:// directly from Hadoop 3.4.2 (Spark 4.1) on; this "
    f"line's Hadoop is {running_line().hadoop}, whose abfs:// is Spark's own manager's")


@ABFS_DIRECT
def test_a_missing_container_on_abfs_says_so_first(azurite_server: Any, tmp_path: Path) -> None:
    container = f"missing-{uuid.uuid4().hex[:8]}"
    root = _abfs_root(azurite_server, container)
    first = _failure(tmp_path, root, _azure(azurite_server, azurite_server.account_key))
    assert first.startswith(f"io.checkpointfs.spark.BucketNotFoundException: {root}/"), first
    assert f": the container '{container}' does not exist (at " in first, first


@ABFS_DIRECT
def test_a_refused_key_on_abfs_says_so_first_without_the_key(azurite_server: Any, tmp_path: Path) -> None:
    azurite_server.create_container("start-errors")
    wrong = "d3Jvbmcta2V5LW5vdC10aGUtYWNjb3VudHMtb3duLWtleS0wMTIzNDU2Nzg5MDEyMzQ1Njc4OQ=="  # base64, not the account's
    root = _abfs_root(azurite_server, "start-errors")
    first = _failure(tmp_path, root, _azure(azurite_server, wrong))
    assert first.startswith(f"io.checkpointfs.spark.CredentialsRefusedException: {root}/"), first
    assert ": the store refused the credentials for the container 'start-errors'" in first, first
    log = (tmp_path / "job.log").read_text(errors="replace")
    assert wrong not in log
    assert not azurite_server.keys("q/", "start-errors")
