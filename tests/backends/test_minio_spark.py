"""The Spark end-to-end SIGKILL/restart exactly-once test on MinIO, with the HDFS-backed and the RocksDB state store:
the shim writes every checkpoint and state file directly (no temp keys, the write id in each object's metadata)
against a real S3 implementation."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from checkpointfs import DirectWriteManager
from checkpointfs.s3 import WRITE_ID_KEY
from checkpointfs.sink import committed_files
from checkpointfs.testing.minio import MinioServer

from .e2e import run_with_kills
from .stores import minio_s3a_conf

pytestmark = [pytest.mark.minio, pytest.mark.spark]


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
    assert f"{cp_key}/commits/5" in keys
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".")], keys  # no temp keys: direct writes
    head = minio_server.client().head_object(Bucket=minio_server.buckets[0], Key=f"{cp_key}/commits/5")
    assert head["Metadata"].get(WRITE_ID_KEY), head["Metadata"]  # MinIO kept the shim's write id
    assert minio_server.open_uploads(prefix + "/") == []


def _read(manager: DirectWriteManager, path: str) -> bytes:
    with manager.open(path) as f:
        return f.read()
