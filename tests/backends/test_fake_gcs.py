"""harness.servers.fake_gcs.FakeGcsServer itself, without Spark: what the gs:// tests rely on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.servers.fake_gcs import FakeGcsServer, GcsRequestError

pytestmark = pytest.mark.gcs


def test_helpers_reach_the_server(fake_gcs_server: FakeGcsServer) -> None:
    prefix = "helpers/"
    assert "checkpointfs-gcs" in fake_gcs_server.bucket_names()
    fake_gcs_server.create_bucket("checkpointfs-gcs")  # again: no error
    names = [f"{prefix}d/", *(f"{prefix}d/{n}" for n in range(5))]
    for name in names:
        fake_gcs_server.write(name, name.encode())
    # listed across pages, in name order; a directory marker beside the objects under it is kept (memory backend)
    assert fake_gcs_server.keys(prefix) == names
    assert [o["name"] for o in fake_gcs_server.objects(prefix, page_size=2)] == names
    assert fake_gcs_server.read(f"{prefix}d/3") == f"{prefix}d/3".encode()
    with pytest.raises(GcsRequestError) as missing:
        fake_gcs_server.read(f"{prefix}absent")
    assert missing.value.status == 404
    assert fake_gcs_server.uri("a/b") == "gs://checkpointfs-gcs/a/b"
    conf = fake_gcs_server.hadoop_conf()
    assert conf["fs.gs.storage.root.url"] == fake_gcs_server.endpoint_url + "/"
    assert conf["fs.gs.auth.type"] == "UNAUTHENTICATED"


def test_start_waits_for_the_server_and_stop_ends_it() -> None:
    server = FakeGcsServer(["fresh-bucket"], backend="filesystem")
    with server:
        pid, log_path = server.pid, server.log_path
        assert server.running and server.bucket_names() == ["fresh-bucket"]  # served as soon as start() returns
        server.write("x", b"1")
        assert server.keys() == ["x"]
        assert log_path is not None and log_path.is_file()
    assert not server.running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not Path(log_path).parent.exists()  # its temporary directory is gone


def test_a_refused_bucket_stops_the_server_it_started() -> None:
    server = FakeGcsServer(["x"])  # GCS bucket names have 3 to 63 characters
    with pytest.raises(GcsRequestError) as refused:
        server.start()
    assert refused.value.status == 400
    assert not server.running
    assert server.log_path is not None and not server.log_path.parent.exists()
