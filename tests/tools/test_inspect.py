"""``checkpointfs inspect`` on real Spark 4.3 checkpoints of a stateful query with a file sink."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from .conftest import BATCHES, ROCKSDB, SparkRun

pytestmark = pytest.mark.spark

HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def test_inspect_json_describes_the_query(checkpoint: SparkRun, cli: Any) -> None:
    result = cli("inspect", str(checkpoint.checkpoint), "--sink", str(checkpoint.output), "--json")
    assert result.code == 0, result.err
    found = result.json
    last = BATCHES - 1
    query_id = (checkpoint.checkpoint / "metadata").read_text().split('"')[3]
    assert found["checkpoint"] == str(checkpoint.checkpoint)
    assert found["query_id"] == query_id
    assert found["offsets"]["latest"] == last and found["offsets"]["count"] == BATCHES
    assert found["commits"] == {"latest": last, "count": BATCHES, "version": 1}
    assert found["uncommitted"] == []
    assert found["sources"] == [{"id": 0, "latest": last, "files": BATCHES, "offset": f'{{"logOffset":{last}}}'}]
    assert found["state"]["operators"] == [{"id": 0, "partitions": 3, "latest_version": BATCHES, "provider": HDFS,
                                            "name": "dedupe", "stores": ["default"]}]
    sink = found["sink"]
    assert sink["path"] == str(checkpoint.output)
    assert sink["latest"] == last and sink["compact_interval"] == 3
    assert sink["files"] == len(checkpoint.committed) > 0
    assert found["warnings"] == [] and sink["warnings"] == []


def test_inspect_rocksdb_state(rocksdb_checkpoint: SparkRun, cli: Any) -> None:
    found = cli("inspect", rocksdb_checkpoint.checkpoint.as_uri(), "--json").json
    assert found["state"]["operators"] == [{"id": 0, "partitions": 3, "latest_version": BATCHES,
                                            "provider": ROCKSDB, "name": "dedupe", "stores": ["default"]}]
    assert "sink" not in found


def test_inspect_tables_plain_and_rich(checkpoint: SparkRun, cli: Any) -> None:
    for style in ("--plain", None):
        args = ["inspect", str(checkpoint.checkpoint), "--sink", str(checkpoint.output)]
        result = cli(*args, *([style] if style else []))
        assert result.code == 0 and result.err == ""
        for text in ("query id", "HDFSBackedStateStoreProvider", "dedupe", '{"logOffset":4}', "compact interval"):
            assert text in result.out
        assert ("┃" in result.out) == (style is None)  # rich draws boxes; the plain fallback does not


def test_the_console_script_prints_only_json(checkpoint: SparkRun) -> None:
    done = subprocess.run([sys.executable, "-m", "checkpointfs.cli", "inspect", str(checkpoint.checkpoint), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.lstrip().startswith("{") and done.stdout.rstrip().endswith("}")
    assert done.stderr == ""  # no progress bar when stderr is not a terminal
