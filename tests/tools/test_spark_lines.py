"""inspect and verify on the checkpoints every supported Spark line wrote (tests/fixtures/spark-<line>/, by each
line's real Spark): a stateful query (HDFS and RocksDB state) and a file-source query, each with a JSON file sink."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.spark.lines import LINES

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
WORK_ROOT = "/tmp/checkpointfs-fixtures"
"""Where the generator ran: the sink manifests name files there."""
BATCHES = {"files": 6, "stateful": 4, "rocksdb": 2}
PROVIDERS = {"stateful": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
             "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"}
CASES = [(line.line, kind) for line in LINES for kind in BATCHES]


def relocated(line: str, kind: str, tmp_path: Path) -> tuple[Path, Path]:
    """The fixture copied under ``tmp_path``, its manifest's paths moved with it (as if Spark had written there)."""
    source = FIXTURES / f"spark-{line}" / kind
    target = tmp_path / kind
    shutil.copytree(source, target)
    old, new = f"file://{WORK_ROOT}/spark-{line}/{kind}/output/", f"file://{target}/output/"
    for log_file in (target / "output" / "_spark_metadata").iterdir():
        if not log_file.name.startswith("."):
            log_file.write_text(log_file.read_text().replace(old, new))
    return target / "checkpoint", target / "output"


@pytest.mark.parametrize(("line", "kind"), CASES)
def test_every_line_inspects_and_verifies(line: str, kind: str, cli: Any, tmp_path: Path) -> None:
    fixture = FIXTURES / f"spark-{line}" / kind
    last = BATCHES[kind] - 1
    found = cli("inspect", str(fixture / "checkpoint"), "--json").json
    assert found["offsets"]["latest"] == found["commits"]["latest"] == last
    assert found["uncommitted"] == [] and found["warnings"] == []
    assert found["sources"][0]["latest"] == last and found["sources"][0]["files"] == BATCHES[kind]
    operators = found["state"]["operators"]
    if kind in PROVIDERS:
        assert [(o["id"], o["partitions"], o["latest_version"], o["provider"]) for o in operators] == [
            (0, 2, BATCHES[kind], PROVIDERS[kind])]
    else:
        assert operators == []
    assert cli("verify", str(fixture / "checkpoint"), "--json").code == 0

    checkpoint, output = relocated(line, kind, tmp_path)
    result = cli("verify", str(checkpoint), "--sink", str(output), "--json")
    assert result.code == 0, result.out
    parts = [p for p in output.iterdir() if p.name.startswith("part-")]
    assert result.json["checked"]["sink_files"] == len(parts) > 0
    assert result.json["orphans"]["count"] == 0


@pytest.mark.parametrize("line", [line.line for line in LINES])
def test_every_line_sink_left_in_place_points_elsewhere(line: str, cli: Any) -> None:
    """Unmoved, the fixtures' manifests name files under the generator's directory: verify says so per file."""
    fixture = FIXTURES / f"spark-{line}" / "stateful"
    result = cli("verify", str(fixture / "checkpoint"), "--sink", str(fixture / "output"), "--json")
    assert result.code == 1
    assert set(result.json["problem_kinds"]) == {"outside_output"}
