"""gs:// and abfs:// the way a user sets them up: the wheel beside a line's pyspark, ``configure(gcs=...,
azure=...)`` given only the store's short settings, fetching Google's connector and hadoop-azure for the line into a
jar cache that starts empty in a fresh clone; a stateful query on fake-gcs-server (and, where the shim writes
abfs:// directly, one on Azurite), stopped and resumed on the same checkpoint: every id once, every checkpoint file
carrying the shim's write id.

One case per line where a connector differs (:func:`lines_where_connectors_differ`: Google's connector release, the
Hadoop 3.5 defaults it needs, the hadoop-azure the shim writes through), read off the line facts."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.protocol import AZURE_WRITE_ID_KEY, WRITE_ID_KEY
from checkpointfs.spark.lines import LINES, SparkLine
from harness.servers.fake_gcs import FakeGcsServer

from .conftest import JAR_CACHE, line_python, run_user_query, write_input

BUCKET = "user-path-gcs"
CONTAINER = "user-path-abfs"


def lines_where_connectors_differ() -> list[SparkLine]:
    """The fewest lines, newest first, that between them meet every Google connector release (with and without
    Hadoop 3.5's own gs:// defaults) and every hadoop-azure the shim writes abfs:// through."""
    chosen: list[SparkLine] = []
    seen: set[tuple[str, ...]] = set()
    for line in reversed(LINES):
        keys = {("gcs", line.gcs_connector.version, str(line.names_hadoop_gcp))}
        if line.abfs_direct:
            keys.add(("azure", line.hadoop))
        if keys - seen:
            chosen.append(line)
            seen |= keys
    return chosen


@pytest.fixture(scope="module")
def gcs() -> Iterator[FakeGcsServer]:
    with FakeGcsServer([BUCKET]) as server:
        yield server


Store = tuple[str, Callable[[str], list[int]], Callable[[str], list[tuple[str, bool]]]]
"""A store of the test: its URL root, the ids in the committed output under a prefix, and each checkpoint file under a
prefix with whether it carries the shim's write id."""


def gcs_store(server: FakeGcsServer) -> Store:
    def ids(prefix: str) -> list[int]:
        return _ids(server.keys(prefix + "/"), lambda key: server.read(key, bucket=BUCKET))

    def stamped(prefix: str) -> list[tuple[str, bool]]:
        return [(o["name"], WRITE_ID_KEY in (o.get("metadata") or {})) for o in server.objects(prefix + "/")]

    return f"gs://{BUCKET}", ids, stamped


def azure_store(azurite: Any) -> Store:
    container = azurite.service().get_container_client(CONTAINER)

    def ids(prefix: str) -> list[int]:
        return _ids(azurite.keys(prefix + "/", CONTAINER),
                    lambda key: bytes(container.get_blob_client(key).download_blob().readall()))

    def stamped(prefix: str) -> list[tuple[str, bool]]:
        blobs = container.list_blobs(name_starts_with=prefix + "/", include=["metadata"])
        return [(b.name, AZURE_WRITE_ID_KEY in (b.metadata or {})) for b in blobs
                if (b.metadata or {}).get("hdi_isfolder") != "true"]  # ABFS's directory markers are no files

    return f"abfs://{CONTAINER}@{azurite.account_name}.dfs.core.windows.net", ids, stamped


def _ids(keys: list[str], read: Callable[[str], bytes]) -> list[int]:
    """Every id in the committed JSON lines files among ``keys``, duplicates kept."""
    ids: list[int] = []
    for key in keys:
        if "/_spark_metadata/" not in key and key.endswith(".json"):
            ids.extend(json.loads(line)["id"] for line in read(key).decode().splitlines() if line)
    return ids


@pytest.mark.parametrize("line", lines_where_connectors_differ(), ids=lambda line: f"spark-{line.line}")
def test_configure_alone_sets_up_gs_and_abfs(line: SparkLine, gcs: FakeGcsServer, azurite_server: Any,
                                              tmp_path: Path) -> None:
    started = time.monotonic()
    python = line_python(line.line)
    settings: dict[str, dict[str, Any]] = {
        "gcs": {"endpoint": gcs.endpoint_url, "project": gcs.project, "auth": "none"}}
    stores = [gcs_store(gcs)]
    if line.abfs_direct:
        azurite_server.create_container(CONTAINER)
        settings["azure"] = {"endpoint": azurite_server.endpoint_url.rsplit("/", 1)[0],
                             "account": azurite_server.account_name, "account_key": azurite_server.account_key}
        stores.append(azure_store(azurite_server))
    prefix = f"spark-{line.line}-{int(time.time())}"
    paths = [p for root, _, _ in stores for p in (f"{root}/{prefix}/out", f"{root}/{prefix}/cp")]
    env = {"USER_QUERY_STORES": json.dumps(settings)}

    input_dir = tmp_path / "input"
    write_input(input_dir, 0, [1, 2, 3, 4])
    write_input(input_dir, 1, [3, 4, 5, 6])
    first = run_user_query(python, input_dir, paths, tmp_path, env, secrets=[azurite_server.account_key])
    assert first["spark"] == line.pyspark
    jars = first["jars"].split(",")
    wanted = [line.gcs_connector.jar_name, *([f"hadoop-azure-{line.hadoop}.jar"] if line.abfs_direct else [])]
    for name in wanted:  # fetched by configure() itself, into the user's cache
        assert any(jar.endswith("/" + name) and str(JAR_CACHE) in jar for jar in jars), (name, jars)
    for root, ids, _ in stores:
        assert sorted(ids(f"{prefix}/out")) == [1, 2, 3, 4, 5, 6], root

    # Resumed on the same checkpoints with one more file: the state stores remember ids 1-6.
    write_input(input_dir, 2, [5, 6, 7, 8])
    second = run_user_query(python, input_dir, paths, tmp_path, env, secrets=[azurite_server.account_key])
    assert second["batches"] >= len(stores) and "checkpointfs: fetching" not in second["stderr"]
    for root, ids, stamped in stores:
        assert sorted(ids(f"{prefix}/out")) == [1, 2, 3, 4, 5, 6, 7, 8], root
        files = stamped(f"{prefix}/cp")
        logs = [name for name, _ in files if "/offsets/" in name or "/commits/" in name or "/state/" in name]
        assert logs, (root, files)
        assert all(has_id for name, has_id in files if name in logs), f"{root}: not written by the shim: {files}"
        assert not [name for name, _ in files if name.endswith(".tmp") or "/." in name], files
    print(f"spark {line.line}: gs:// and {'abfs://' if line.abfs_direct else 'no abfs://'} in "
          f"{time.monotonic() - started:.0f} s")
