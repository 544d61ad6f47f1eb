"""``checkpointfs verify``: each problem kind produced on purpose on real Spark 4.3 output, the information it
reports without failing, and the exit statuses (0 intact, 1 problems, 2 unreadable)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from .conftest import BATCHES, SparkRun

pytestmark = pytest.mark.spark


def verify(cli: Any, run: SparkRun, *extra: str) -> Any:
    return cli("verify", str(run.checkpoint), "--sink", str(run.output), "--json", *extra)


def problems(result: Any) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for problem in result.json["problems"]:
        found.setdefault(problem["kind"], set()).add(problem["path"])
    return found


def part_files(run: SparkRun) -> list[Path]:
    return sorted(p for p in run.output.glob("part-*") if p.is_file())


def test_intact_checkpoint_and_sink(checkpoint: SparkRun, cli: Any) -> None:
    result = verify(cli, checkpoint)
    assert result.code == 0, result.out
    report = result.json
    assert report["ok"] is True and report["problems"] == [] and report["problem_count"] == 0
    assert report["checked"]["sink_files"] == len(checkpoint.committed)
    assert report["checked"]["state_partitions"] == 3
    assert report["last_committed"] == BATCHES - 1 and report["uncommitted"] == []
    assert report["orphans"]["count"] == 0 and report["temp_files"]["count"] == 0


def test_rocksdb_checkpoint_intact_then_missing_version(rocksdb_checkpoint: SparkRun, cli: Any) -> None:
    assert verify(cli, rocksdb_checkpoint).code == 0
    (rocksdb_checkpoint.checkpoint / f"state/0/2/{BATCHES}.zip").unlink()
    result = verify(cli, rocksdb_checkpoint)
    assert result.code == 1
    assert problems(result) == {"missing_state": {str(rocksdb_checkpoint.checkpoint / "state/0/2")}}


def test_rocksdb_missing_sst(rocksdb_checkpoint: SparkRun, cli: Any) -> None:
    """An SST file a version zip of the real Spark run names, deleted: every zip that needs it is named."""
    partition = rocksdb_checkpoint.checkpoint / "state/0/1"
    victim = sorted((partition / "SSTs").glob("*.sst"))[0]  # not Hadoop's checksum beside it (.<name>.sst.crc)
    victim.unlink()
    result = verify(cli, rocksdb_checkpoint)
    assert result.code == 1
    assert problems(result) == {"missing_sst": {str(victim)}}
    assert all(f"named by {partition}/" in p["problem"] for p in result.json["problems"])
    assert result.json["checked"]["state_zips"] > 0


def test_torn_commit_file(checkpoint: SparkRun, cli: Any) -> None:
    torn = checkpoint.checkpoint / "commits" / "3"
    torn.write_bytes(torn.read_bytes()[:6])  # 'v1\n{"n': cut inside the JSON
    result = verify(cli, checkpoint)
    assert result.code == 1
    assert problems(result) == {"torn_log": {str(torn)}}
    assert "not valid JSON" in result.json["problems"][0]["problem"]


def test_torn_sink_manifest(checkpoint: SparkRun, cli: Any) -> None:
    compact = checkpoint.output / "_spark_metadata" / "2.compact"
    data = compact.read_bytes()
    compact.write_bytes(data[: len(data) // 2])
    result = verify(cli, checkpoint)
    assert result.code == 1
    assert str(compact) in problems(result)["torn_log"]


def test_a_newer_log_version_is_said_to_be_a_newer_sparks_not_torn(checkpoint: SparkRun, cli: Any) -> None:
    offsets = checkpoint.checkpoint / "offsets" / "2"
    offsets.write_bytes(b"v9" + offsets.read_bytes()[2:])
    result = verify(cli, checkpoint)
    assert result.code == 1 and problems(result) == {"newer_format": {str(offsets)}}
    said = result.json["problems"][0]["problem"]
    assert said.startswith("written by a newer Spark: ") and "log version v9 is newer than" in said


def test_missing_committed_file(checkpoint: SparkRun, cli: Any) -> None:
    victim = part_files(checkpoint)[0]
    victim.unlink()
    result = verify(cli, checkpoint)
    assert result.code == 1
    assert problems(result) == {"missing_file": {str(victim)}}


def test_truncated_data_file(checkpoint: SparkRun, cli: Any) -> None:
    victim = next(p for p in part_files(checkpoint) if p.stat().st_size > 2)
    victim.write_bytes(victim.read_bytes()[:2])
    result = verify(cli, checkpoint)
    assert result.code == 1 and problems(result) == {"size_mismatch": {str(victim)}}


def test_orphans_are_information(checkpoint: SparkRun, cli: Any) -> None:
    orphan = checkpoint.output / "part-99999-left-by-a-failed-task.c000.json"
    orphan.write_text('{"id":99}\n')
    result = verify(cli, checkpoint)
    assert result.code == 0
    assert result.json["orphans"] == {"count": 1, "paths": [str(orphan)]}


def test_temp_files_are_reported(checkpoint: SparkRun, cli: Any) -> None:
    temps = [checkpoint.checkpoint / "offsets" / ".5.0f1e2d3c-aaaa-bbbb-cccc-1234567890ab.tmp",
             checkpoint.checkpoint / "state" / "0" / "1" / ".6.delta.9f8e7d6c-aaaa-bbbb-cccc-1234567890ab.tmp",
             checkpoint.output / "_temporary" / "0" / "part-00000.json"]
    for temp in temps:
        temp.parent.mkdir(parents=True, exist_ok=True)
        temp.write_text("partial")
    result = verify(cli, checkpoint)
    assert result.code == 0
    assert sorted(result.json["temp_files"]["paths"]) == sorted(str(t) for t in temps)
    table = cli("verify", str(checkpoint.checkpoint), "--sink", str(checkpoint.output), "--plain")
    assert "Temp files (3" in table.out and "verdict: intact" in table.out


def test_one_uncommitted_batch_is_normal_two_are_not(checkpoint: SparkRun, cli: Any) -> None:
    (checkpoint.checkpoint / "commits" / "4").unlink()
    result = verify(cli, checkpoint)
    assert result.code == 0 and result.json["uncommitted"] == [4]
    (checkpoint.checkpoint / "commits" / "3").unlink()
    result = verify(cli, checkpoint)
    assert result.code == 1
    assert problems(result) == {"uncommitted_batches": {str(checkpoint.checkpoint / "offsets")}}
    assert result.json["uncommitted"] == [3, 4]


def test_commit_without_offsets(checkpoint: SparkRun, cli: Any) -> None:
    (checkpoint.checkpoint / "offsets" / "2").unlink()
    result = verify(cli, checkpoint)
    assert result.code == 1
    assert problems(result) == {"commit_without_offsets": {str(checkpoint.checkpoint / "commits" / "2")},
                                "missing_log_batch": {str(checkpoint.checkpoint / "offsets" / "2")}}


def test_missing_state_partition(checkpoint: SparkRun, cli: Any) -> None:
    shutil.rmtree(checkpoint.checkpoint / "state" / "0" / "1")
    result = verify(cli, checkpoint)
    assert result.code == 1
    assert problems(result) == {"missing_state": {str(checkpoint.checkpoint / "state" / "0" / "1")}}


def test_missing_state_version(checkpoint: SparkRun, cli: Any) -> None:
    (checkpoint.checkpoint / "state" / "0" / "0" / f"{BATCHES - 1}.delta").unlink()  # the chain to version 5 breaks
    result = verify(cli, checkpoint)
    assert result.code == 1
    assert problems(result) == {"missing_state": {str(checkpoint.checkpoint / "state" / "0" / "0")}}


def test_tables_list_the_problems(checkpoint: SparkRun, cli: Any) -> None:
    victim = part_files(checkpoint)[0]
    victim.unlink()
    result = cli("verify", str(checkpoint.checkpoint), "--sink", str(checkpoint.output), "--plain")
    assert result.code == 1
    assert "missing_file" in result.out and str(victim) in result.out and "verdict: 1 problem(s) found" in result.out


@pytest.mark.parametrize("where", ["missing", "not-a-checkpoint", "bad-scheme"])
def test_unreadable_checkpoint_exits_2_without_traceback(checkpoint: SparkRun, cli: Any, tmp_path: Path,
                                                         where: str) -> None:
    target = {"missing": str(tmp_path / "nothing-here"), "not-a-checkpoint": str(checkpoint.input),
              "bad-scheme": "gopher://host/ck"}[where]
    result = cli("verify", target, "--json")
    assert result.code == 2
    assert result.out == "" and "Traceback" not in result.err
    assert result.err.startswith("checkpointfs verify: ") and target.split("//")[-1].split("/")[0] in result.err
    assert cli("inspect", target).code == 2
