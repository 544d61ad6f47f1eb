"""Checks of what a query left in its checkpoint on a store that logs its requests (MinIO behind the recording proxy,
the embedded S3): every file written directly by the shim, and format v2's state files, their checksum sidecars and
the commit log's state unique ids."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Any, Protocol

import pytest

from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.testing import Request
from checkpointfs.tools.store import open_location
from checkpointfs.tools.verify import verify_checkpoint
from tests.backends.e2e import last_commit

V2_STATE_FILE = re.compile(r"/state/\d+/\d+/(?:[^/]+/)?(\d+)_([0-9a-fA-F-]{36})\.(zip|changelog)$")
"""A RocksDB state file of format v2: ``<version>_<uuid>.zip`` or ``.changelog`` (the uuid is the state unique id
the commit log records), in a partition's folder or a store's (``state/<op>/<partition>[/<store>]/``)."""
UNIQUE_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F-]{27}")
COPIES = ("CopyObject", "UploadPartCopy")


class CheckpointStore(Protocol):
    """What the checks read of the store: keys and an admin client that reads unlogged."""

    @property
    def buckets(self) -> list[str]: ...

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]: ...

    def client(self, admin: bool = False) -> Any: ...


def spark_line() -> tuple[int, int]:
    """The running pyspark's (major, minor)."""
    import pyspark

    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)


def assert_written_directly(server: CheckpointStore, checkpoint: str, requests: Iterable[Request]) -> list[str]:
    """Every object under ``checkpoint`` (a key prefix) carries the shim's write id; no temp keys; none of
    ``requests`` copied one. Returns the keys."""
    keys = server.keys(checkpoint + "/")
    assert keys, checkpoint
    assert [k for k in keys if k.rsplit("/", 1)[-1].startswith(".") or k.endswith(".tmp")] == [], keys
    copies = [r for r in requests if r.key.startswith(checkpoint + "/") and r.operation in COPIES]
    assert copies == [], copies
    client = server.client(admin=True)
    without_id = [k for k in keys
                  if WRITE_ID_KEY not in client.head_object(Bucket=server.buckets[0], Key=k)["Metadata"]]
    assert without_id == [], without_id
    return keys


def read_text(server: CheckpointStore, key: str) -> str:
    """The object ``key``, read unlogged."""
    return str(server.client(admin=True).get_object(Bucket=server.buckets[0], Key=key)["Body"].read().decode())


def assert_format_v2_state(server: CheckpointStore, checkpoint: str, *, checksums: bool,
                           killed_versions: Collection[str] = ()) -> list[str]:
    """The checkpoint's state files carry format v2's names; the last commit names state unique ids of those files;
    with ``checksums``, every state file has its ``.crc`` sidecar but those of the versions a kill may have cut
    short (``killed_versions``: a file whose upload the driver died in has none, its sidecar is written after it).
    Returns the state files."""
    keys = server.keys(checkpoint + "/")
    state_files = [k for k in keys if V2_STATE_FILE.search(k)]
    assert state_files, keys
    if checksums:
        sidecars = {k for k in keys if "/state/" in k and k.endswith(".crc")}
        missing = [m for k in state_files if f"{k}.crc" not in sidecars and (m := V2_STATE_FILE.search(k))]
        assert [m.group(0) for m in missing if m.group(1) not in killed_versions] == [], [m.group(0) for m in missing]
        assert len(missing) < len(state_files), (sorted(sidecars), state_files)
    commit = read_text(server, last_commit(keys, checkpoint))
    unique_ids = set(UNIQUE_ID.findall(commit))
    assert unique_ids, commit
    named = {m.group(2) for k in state_files if (m := V2_STATE_FILE.search(k))}
    assert unique_ids <= named, (unique_ids, sorted(named))
    return state_files


def assert_verifies_clean(store: Any, checkpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``checkpointfs verify`` (its library call) finds no problem in the checkpoint at key ``checkpoint`` on
    ``store`` (a MinIO server or the embedded S3, asked directly; its credentials through the environment, as a
    user's)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", store.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", store.secret_key)
    monkeypatch.setenv("AWS_DEFAULT_REGION", store.region)
    location = open_location(store.uri(checkpoint), endpoint_url=store.endpoint_url)
    try:
        assert [p.to_json() for p in verify_checkpoint(location).problems] == []
    finally:
        location.close()
