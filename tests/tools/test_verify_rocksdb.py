"""``checkpointfs verify`` on RocksDB state: every SST and log file a version zip names is on the store with the size
the zip recorded. On the RocksDB checkpoints every supported Spark line wrote (tests/fixtures/spark-<line>/rocksdb),
damaged on purpose, locally and on the embedded S3; no Spark runs here."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.spark.lines import LINES
from checkpointfs.testing import EmbeddedS3

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def fixture_copy(tmp_path: Path, line: str = "4.3") -> Path:
    """A copy of a line's RocksDB checkpoint (2 batches, 2 partitions: versions 1 and 2, SST files shared)."""
    target = tmp_path / "ck"
    shutil.copytree(FIXTURES / f"spark-{line}" / "rocksdb" / "checkpoint", target)
    return target


def zip_metadata(zip_path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(zip_path) as archive:
        version, _, body = archive.read("metadata").decode().partition("\n")
    assert version == "v1"
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def rewrite_metadata(zip_path: Path, metadata: dict[str, Any] | str, version_line: str = "v1") -> None:
    """Replace the zip's metadata entry (a JSON object, or the text after the version line), keeping its other
    entries."""
    with zipfile.ZipFile(zip_path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    body = metadata if isinstance(metadata, str) else json.dumps(metadata)
    entries["metadata"] = f"{version_line}\n{body}".encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    zip_path.write_bytes(buffer.getvalue())


def problems(result: Any) -> list[tuple[str, str]]:
    return sorted((p["kind"], p["path"]) for p in result.json["problems"])


@pytest.mark.parametrize("line", [line.line for line in LINES])
def test_every_line_references_are_checked(line: str, cli: Any) -> None:
    result = cli("verify", str(FIXTURES / f"spark-{line}" / "rocksdb" / "checkpoint"), "--json")
    assert result.code == 0, result.out
    # versions 1 and 2 in each of 2 partitions; version 1 names one SST, version 2 that one and a new one
    assert result.json["checked"]["state_zips"] == 4
    assert result.json["checked"]["state_shared_files"] == 6


def test_missing_sst_names_every_zip_that_needs_it(cli: Any, tmp_path: Path) -> None:
    checkpoint = fixture_copy(tmp_path)
    partition = checkpoint / "state/0/1"
    shared = zip_metadata(partition / "1.zip")["sstFiles"][0]["dfsSstFileName"]
    (partition / "SSTs" / shared).unlink()
    result = cli("verify", str(checkpoint), "--json")
    assert result.code == 1
    sst = str(partition / "SSTs" / shared)
    assert problems(result) == [("missing_sst", sst), ("missing_sst", sst)]
    texts = sorted(p["problem"] for p in result.json["problems"])
    assert str(partition / "1.zip") in texts[0] and "state version 1 cannot be loaded" in texts[0]
    assert str(partition / "2.zip") in texts[1] and "state version 2 cannot be loaded" in texts[1]
    assert result.json["problem_kinds"] == {"missing_sst": 2}

    plain = cli("verify", str(checkpoint), "--plain")
    assert plain.code == 1 and "missing_sst" in plain.out and shared in plain.out


def test_truncated_sst_is_a_size_mismatch(cli: Any, tmp_path: Path) -> None:
    checkpoint = fixture_copy(tmp_path)
    partition = checkpoint / "state/0/0"
    newest = zip_metadata(partition / "2.zip")["sstFiles"][-1]
    victim = partition / "SSTs" / newest["dfsSstFileName"]
    victim.write_bytes(victim.read_bytes()[:100])
    result = cli("verify", str(checkpoint), "--json")
    assert result.code == 1
    assert problems(result) == [("sst_size_mismatch", str(victim))]
    assert f"size on the store 100 differs from the {newest['sizeBytes']} bytes" in result.json["problems"][0][
        "problem"]


def test_checkpoint_format_2_zip_names(cli: Any, tmp_path: Path) -> None:
    """Checkpoint format 2 names a version ``<v>_<uniqueId>.zip``; its references are checked alike."""
    checkpoint = fixture_copy(tmp_path)
    partition = checkpoint / "state/0/0"
    unique = partition / "2_0f1e2d3c-77aa-4c1b-9a0e-1234567890ab.zip"
    (partition / "2.zip").rename(unique)
    assert cli("verify", str(checkpoint), "--json").code == 0
    newest = zip_metadata(unique)["sstFiles"][-1]["dfsSstFileName"]
    (partition / "SSTs" / newest).unlink()
    result = cli("verify", str(checkpoint), "--json")
    assert problems(result) == [("missing_sst", str(partition / "SSTs" / newest))]
    assert str(unique) in result.json["problems"][0]["problem"]


def test_archived_log_files_are_checked_in_logs(cli: Any, tmp_path: Path) -> None:
    """A version that names archived WAL files (``logFiles``) needs them in ``logs/``."""
    checkpoint = fixture_copy(tmp_path)
    partition = checkpoint / "state/0/0"
    metadata = zip_metadata(partition / "2.zip")
    metadata["logFiles"] = [{"localFileName": "000012.log", "dfsLogFileName": "000012-abc.log", "sizeBytes": 7}]
    rewrite_metadata(partition / "2.zip", metadata)
    result = cli("verify", str(checkpoint), "--json")
    assert problems(result) == [("missing_sst", str(partition / "logs/000012-abc.log"))]
    (partition / "logs").mkdir()
    (partition / "logs/000012-abc.log").write_bytes(b"7 bytes")
    assert cli("verify", str(checkpoint), "--json").code == 0


@pytest.mark.parametrize(("damage", "expected"), [
    ("truncate", "not a readable zip"),
    ("no-metadata", "has no 'metadata' entry"),
    ("v9", "only 'v1' is supported"),
    ("json", "metadata is not valid JSON"),
    ("entry", "an entry without a file name and size"),
])
def test_unreadable_zip_is_torn_state(damage: str, expected: str, cli: Any, tmp_path: Path) -> None:
    checkpoint = fixture_copy(tmp_path)
    victim = checkpoint / "state/0/1/2.zip"
    metadata = zip_metadata(victim)
    if damage == "truncate":
        victim.write_bytes(victim.read_bytes()[:50])
    elif damage == "no-metadata":
        with zipfile.ZipFile(victim) as archive:
            kept = {n: archive.read(n) for n in archive.namelist() if n != "metadata"}
        with zipfile.ZipFile(victim, "w") as archive:
            for name, data in kept.items():
                archive.writestr(name, data)
    elif damage == "v9":
        rewrite_metadata(victim, metadata, "v9")
    elif damage == "json":
        rewrite_metadata(victim, '{"sstFiles": [')
    else:
        metadata["sstFiles"][0].pop("dfsSstFileName")
        rewrite_metadata(victim, metadata)
    result = cli("verify", str(checkpoint), "--json")
    assert result.code == 1
    assert problems(result) == [("torn_state", str(victim))]
    assert expected in result.json["problems"][0]["problem"]


def test_on_s3_one_get_per_zip_and_no_probe_per_sst(s3_env: EmbeddedS3, cli: Any, tmp_path: Path) -> None:
    embedded_s3 = s3_env
    source = fixture_copy(tmp_path)
    admin = embedded_s3.client(admin=True)
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        admin.put_object(Bucket="checkpoints", Key=f"rocks/ck/{path.relative_to(source)}", Body=path.read_bytes())
    endpoint = ["--endpoint-url", embedded_s3.endpoint_url]
    embedded_s3.requests.clear()
    result = cli("verify", embedded_s3.uri("rocks/ck"), "--json", *endpoint)
    assert result.code == 0, result.out
    reads = [r for r in embedded_s3.requests.all() if r.operation in ("GetObject", "HeadObject")]
    assert sorted(r.key for r in reads if r.key.endswith(".zip")) == sorted(
        f"rocks/ck/state/0/{p}/{v}.zip" for p in (0, 1) for v in (1, 2))
    assert not [r for r in reads if "/SSTs/" in r.key]  # existence and sizes come from the listing

    victim = next(k for k in embedded_s3.keys("rocks/ck/state/0/0/SSTs/"))
    admin.delete_object(Bucket="checkpoints", Key=victim)
    result = cli("verify", embedded_s3.uri("rocks/ck"), "--json", *endpoint)
    assert result.code == 1
    assert {(p["kind"], p["path"]) for p in result.json["problems"]} == {
        ("missing_sst", embedded_s3.uri(victim))}
