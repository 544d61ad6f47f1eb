"""The Spark end-to-end SIGKILL/restart exactly-once test on MinIO, with the HDFS-backed and the RocksDB state store:
the shim writes every checkpoint and state file directly (no temp keys, the write id in each object's metadata)
against a real S3 implementation. With MinIO behind a recording proxy (``minio_pipeline``), the driver is killed at a
chosen request and the requests are counted, as on the embedded S3."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pytest

from checkpointfs import DirectWriteManager
from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.sink import committed_files
from checkpointfs.testing import Request
from harness.servers.minio import MinioServer
from tests.spark_e2e.conftest import Pipeline

from .e2e import TIMEOUT_S, add_inputs, last_commit, run_with_kills
from .stores import minio_s3a_conf

pytestmark = [pytest.mark.minio, pytest.mark.spark]


# Both stores `extended`: the query shapes run kills the RocksDB query on MinIO (tests/spark_e2e/test_query_shapes.py)
# and tests/spark_e2e/test_streaming.py kills the HDFS-backed one on the embedded S3 through the same shim and S3A.
@pytest.mark.extended(covered_by="tests/spark_e2e/test_query_shapes.py::test_every_shape_was_killed_mid_run")
@pytest.mark.parametrize("state_store", ["hdfs", "rocksdb"])
def test_kill_9_then_restart_is_exactly_once_on_minio(minio_server: MinioServer, tmp_path: Path,
                                                     state_store: str) -> None:
    prefix = f"e2e/{uuid.uuid4().hex[:12]}"
    cp_key, out_key = f"{prefix}/checkpoint", f"{prefix}/output"

    def planned() -> bool:
        return bool(minio_server.keys(f"{cp_key}/offsets/1"))

    def part_files() -> int:
        return sum(1 for k in minio_server.keys(f"{out_key}/part-"))

    expected = run_with_kills(tmp_path, output=minio_server.uri(out_key, scheme="s3a"),
                              checkpoint=minio_server.uri(cp_key, scheme="s3a"), state_store=state_store, files=6,
                              planned=planned, part_files=part_files, s3=minio_s3a_conf(minio_server))

    options = minio_server.manager_options()
    with DirectWriteManager(**options) as manager:
        ids = [int(json.loads(line)["id"])
               for path in committed_files(minio_server.uri(out_key), manager=manager)
               for line in _read(manager, path).splitlines() if line]
    assert sorted(ids) == sorted(expected)  # every id once: nothing lost, nothing duplicated
    keys = minio_server.keys(cp_key + "/")
    state_file = ".delta" if state_store == "hdfs" else ".zip"  # written through the shim (createAtomic)
    state = [k for k in keys if k.startswith(f"{cp_key}/state/0/") and k.endswith(state_file)]
    assert state, keys
    last = last_commit(keys, cp_key)
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".")], keys  # no temp keys: direct writes
    head = minio_server.client().head_object(Bucket=minio_server.buckets[0], Key=last)
    assert head["Metadata"].get(WRITE_ID_KEY), head["Metadata"]  # MinIO kept the shim's write id
    assert minio_server.open_uploads(prefix + "/") == []


# the query shapes run on MinIO behind the proxy too (tests/spark_e2e/test_query_shapes.py)
@pytest.mark.extended(covered_by="tests/spark_e2e/test_query_shapes.py::test_every_shape_was_killed_mid_run")
def test_kill_9_right_after_an_offsets_put_then_exactly_once_on_minio(minio_pipeline: Pipeline) -> None:
    """The driver is SIGKILLed as soon as MinIO has answered 200 to ``PutObject <checkpoint>/offsets/2`` (batch 2
    planned, not run), seen at the recording proxy, then restarted: exactly-once output, and not one copy of a
    checkpoint key (every checkpoint file is one PutObject, counted at the proxy)."""
    files = 6
    expected = add_inputs(minio_pipeline.input_dir, files)
    cp = minio_pipeline.checkpoint_key
    offsets_2 = f"{cp}/offsets/2"

    job = minio_pipeline.start(query="dedup")
    killed_at = minio_pipeline.kill_when(
        job, lambda r: r.operation == "PutObject" and r.key == offsets_2 and r.status == 200, timeout=TIMEOUT_S)
    assert job.killed, job.tail()
    assert f"{cp}/commits/2" not in minio_pipeline.checkpoint_keys()  # killed before batch 2 was committed
    restarted = minio_pipeline.start(query="dedup")
    outcome = restarted.wait(timeout=TIMEOUT_S)
    assert outcome["status"] == "ok", restarted.tail()

    requests = minio_pipeline.requests(cp)
    keys = minio_pipeline.checkpoint_keys()
    print(f"killed at {killed_at}; requests on checkpoint keys: {dict(Counter(r.operation for r in requests))}")
    assert [r for r in requests if r.operation in ("CopyObject", "UploadPartCopy")] == []
    assert [r.status for r in requests if r.key == offsets_2 and r.operation == "PutObject"] == [200]  # not rewritten
    assert [r for r in requests if r.status >= 500 or r.status == 0] == []
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".") or k.endswith(".tmp")], keys
    assert not [r for r in requests if r.key.rsplit("/", 1)[-1].startswith(".")]
    assert f"{cp}/commits/{files - 1}" in keys
    assert any(k.startswith(f"{cp}/state/0/") and k.endswith(".delta") for k in keys), keys

    server = minio_pipeline.server
    head = server.client(admin=True).head_object(Bucket=server.buckets[0], Key=f"{cp}/commits/{files - 1}")
    assert head["Metadata"].get(WRITE_ID_KEY), head["Metadata"]
    with DirectWriteManager(**minio_pipeline.server.manager_options()) as manager:  # type: ignore[attr-defined]
        ids = [int(json.loads(line)["id"])
               for path in committed_files(server.uri(minio_pipeline.output_key), manager=manager)
               for line in _read(manager, path).splitlines() if line]
    assert sorted(ids) == sorted(expected)  # every id once: nothing lost, nothing duplicated
    assert isinstance(killed_at, Request)


def _read(manager: DirectWriteManager, path: str) -> bytes:
    with manager.open(path) as f:
        return f.read()
