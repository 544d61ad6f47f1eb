"""A stateful streaming query checkpointing directly on ``abfs://`` through the shim (hadoop-azure's ABFS on a
flat-namespace account over the Blob endpoint, on Azurite behind the recording proxy): exactly-once across
SIGKILLs, and what a checkpoint file costs in requests against Spark's own manager on the same store.

The driver is ``python -m harness.job --query dedup`` (tests/backends/e2e.py: killed when batch 1 is planned, again
in the middle of the sink's writes, then run to the end), set up by ``configure(azure=...)`` alone: hadoop-azure and
its jars fetched for the line, ABFS pointed at the proxy (``fs.azure.abfs.endpoint``):
Azurite has no DFS endpoint, and ABFS reaches a flat-namespace account over the Blob endpoint from hadoop-azure
3.4.2 (``fs.azure.fns.account.service.type=BLOB``; 3.5.0 always). The shim writes each checkpoint file as one
``Put Blob`` with ``If-None-Match: *``, signed with the account's Shared Key (Azurite's published development key);
the sink's part files are ABFS's own writes.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.spark import running_line
from checkpointfs.store.azure.client import classify
from harness.servers.recording_proxy import RecordingProxy

from .e2e import last_commit, run_uninterrupted, run_with_kills

pytestmark = [pytest.mark.spark, pytest.mark.emulator]

CONTAINER = "checkpointfs-shim-e2e"
"""A container of this module's own: Hadoop's FileSystem cache keys abfs:// instances by container and account."""


def classify_abfs(method: str, path: str, query: str, headers: dict[str, str]) -> tuple[str, str, str]:
    """The Blob service's operation names (Azurite's path-style URLs: ``/<account>/<container>/<blob>``); a rename's
    copy (``x-ms-copy-source``) is ``CopyBlob``."""
    return classify(method, path, query, headers, account_in_path=True)


@pytest.fixture(scope="module")
def abfs_proxy(azurite_server: Any) -> Iterator[RecordingProxy]:
    if not running_line().abfs_direct:
        pytest.skip(f"the shim writes abfs:// directly from Hadoop 3.4.2 (Spark 4.1) on; this line's Hadoop is "
                    f"{running_line().hadoop}")
    azurite_server.create_container(CONTAINER)
    with RecordingProxy(azurite_server.endpoint_url.rsplit("/", 1)[0], classifier=classify_abfs,
                        dialect="azure") as proxy:
        yield proxy


def azure_settings(azurite: Any, proxy: RecordingProxy) -> dict[str, str]:
    """``configure(azure=...)`` for abfs:// through ``proxy``, as a user gives it: the endpoint, the account and its
    key (Azurite's published development key: no secret); ``configure()`` fetches hadoop-azure for the line and sets
    the rest (a flat namespace over the Blob endpoint, for an http:// endpoint)."""
    return {"endpoint": proxy.endpoint_url, "account": azurite.account_name, "account_key": azurite.account_key}


def uri(azurite: Any, key: str) -> str:
    return f"abfs://{CONTAINER}@{azurite.account_name}.dfs.core.windows.net/{key}"


def _read(azurite: Any, key: str) -> bytes:
    blob = azurite.service().get_blob_client(CONTAINER, key)
    return bytes(blob.download_blob().readall())


def _committed_ids(azurite: Any, prefix: str) -> list[int]:
    """The ids of every row of the part files the file sink's log under ``prefix`` committed."""
    log = [k for k in azurite.keys(prefix + "/_spark_metadata/", CONTAINER) if k.rsplit("/", 1)[-1].isdigit()]
    assert log, azurite.keys(prefix + "/", CONTAINER)
    files: set[str] = set()
    for key in log:
        for line in _read(azurite, key).decode().splitlines()[1:]:
            entry = json.loads(line)
            if entry.get("action") == "add":
                files.add(entry["path"])
    ids: list[int] = []
    for path in sorted(files):
        data = _read(azurite, path.split(".dfs.core.windows.net/", 1)[1]).decode()
        ids.extend(int(json.loads(line)["id"]) for line in data.splitlines() if line.strip())
    return ids


def _on(requests: list[Any], checkpoint: str) -> list[Any]:
    return [r for r in requests if r.key == checkpoint or r.key.startswith(checkpoint + "/")]


def test_kill_9_then_restart_is_exactly_once_on_abfs_through_the_shim(
    azurite_server: Any, abfs_proxy: RecordingProxy, tmp_path: Path
) -> None:
    """Batch 1 planned, SIGKILL; mid-sink, SIGKILL; then to the end: every id once in the committed output, the
    checkpoint on abfs:// with no temporary blob and no copy (the shim writes each file once, to its name)."""
    prefix = f"e2e-{uuid.uuid4().hex[:12]}"
    checkpoint, output = f"{prefix}/checkpoint", f"{prefix}/output"

    def keys(under: str) -> list[str]:
        return list(azurite_server.keys(under + "/", CONTAINER))

    def planned() -> bool:
        return f"{checkpoint}/offsets/1" in keys(f"{checkpoint}/offsets")

    def part_files() -> int:
        return sum(1 for k in keys(output) if k.rsplit("/", 1)[-1].startswith("part-"))

    abfs_proxy.requests.clear()
    expected = run_with_kills(tmp_path, output=uri(azurite_server, output), checkpoint=uri(azurite_server, checkpoint),
                              state_store="hdfs", files=6, planned=planned, part_files=part_files,
                              stores={"azure": azure_settings(azurite_server, abfs_proxy)})
    ids = sorted(_committed_ids(azurite_server, output))
    assert ids == sorted(expected), ids
    names = keys(checkpoint)
    assert f"{checkpoint}/metadata" in names and last_commit(names, checkpoint), names
    assert any(n.endswith(".delta") for n in names if "/state/0/" in n), names
    assert not [n for n in names if n.rsplit("/", 1)[-1].startswith(".") or ".tmp" in n], names
    on_checkpoint = _on(abfs_proxy.requests.all(), checkpoint)
    by_operation = Counter(r.operation for r in on_checkpoint)
    print(f"abfs:// shim, killed twice: {dict(by_operation)}")
    assert on_checkpoint and not by_operation["CopyBlob"], by_operation
    # every checkpoint file is one Put Blob (the only blocks are ABFS's, for the sink: none under the checkpoint)
    assert not by_operation["PutBlock"] and not by_operation["PutBlockList"], by_operation
    assert all(not r.key.rsplit("/", 1)[-1].startswith(".") for r in on_checkpoint if r.operation == "PutBlob")


# two more drivers (about 100 s): the numbers of docs/spark.md's abfs:// section; the kill test
@pytest.mark.extended(
    covered_by="tests/backends/test_azure_spark.py::test_kill_9_then_restart_is_exactly_once_on_abfs_through_the_shim")
# above keeps the shim's abfs:// path in `make unit`
def test_requests_per_checkpoint_file_on_abfs_shim_against_sparks_manager(
    azurite_server: Any, abfs_proxy: RecordingProxy, tmp_path: Path
) -> None:
    """The same query, once with the shim and once with Spark's own manager (FileContext-based: a temporary blob,
    then a rename that ABFS does on a flat-namespace account as a copy and a delete): the shim sends one Put Blob per
    checkpoint file, no copy, and fewer requests per checkpoint file and per micro-batch."""
    stores = {"azure": azure_settings(azurite_server, abfs_proxy)}
    files = 6
    measured: dict[str, dict[str, float]] = {}
    for manager in ("shim", "default"):
        abfs_proxy.requests.clear()
        checkpoint, batches = run_uninterrupted(tmp_path, manager, manager, [], files,
                                                lambda key: uri(azurite_server, key), stores)
        sent = _on(abfs_proxy.requests.all(), checkpoint)
        # checkpoint files: ABFS's directory marker blobs (hdi_isfolder, from mkdirs) are not files
        service = azurite_server.service().get_container_client(CONTAINER)
        written = [b.name for b in service.list_blobs(name_starts_with=checkpoint + "/", include=["metadata"])
                   if (b.metadata or {}).get("hdi_isfolder") != "true"]
        by_operation = Counter(r.operation for r in sent)
        measured[manager] = {"requests": len(sent), "batches": batches, "files": len(written),
                             "per_batch": len(sent) / batches, "per_file": len(sent) / len(written)}
        print(f"abfs:// {manager}: {dict(by_operation)}; {measured[manager]}")
        assert batches == files
        if manager == "shim":
            puts = Counter(r.key for r in sent if r.operation == "PutBlob")
            canaries = [k for k in puts if k.rsplit("/", 1)[-1].startswith("_checkpointfs-store-check-")]
            files_put = {k: n for k, n in puts.items() if k not in canaries}
            assert sorted(files_put) == sorted(written), (sorted(files_put), sorted(written))
            assert set(files_put.values()) == {1}, files_put
            assert not by_operation["CopyBlob"] and not by_operation["PutBlockList"], by_operation
        else:
            assert by_operation["CopyBlob"] > 0, by_operation
    assert measured["shim"]["per_file"] < measured["default"]["per_file"], measured
    assert measured["shim"]["per_batch"] < measured["default"]["per_batch"], measured
