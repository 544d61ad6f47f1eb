"""inspect and verify never call a broken file healthy: each log's latest file (the one Spark reads to restart),
truncated, emptied, with a line of bad JSON or with a version from a newer Spark, is named by both tools, on local
disk and on the embedded S3. The checkpoint is Spark 4.3's own (tests/fixtures/spark-4.3/files: 6 batches, source
and sink logs compacted at batch 5)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.testing import EmbeddedS3

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "spark-4.3" / "files"
WORK_ROOT = "/tmp/checkpointfs-fixtures/spark-4.3/files"
"""Where the generator ran: the sink log names files there."""

LATEST = {
    "offsets": "checkpoint/offsets/5",
    "commits": "checkpoint/commits/5",
    "source": "checkpoint/sources/0/5.compact",
    "sink": "output/_spark_metadata/5.compact",
    "metadata": "checkpoint/metadata",
}


def truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def emptied(data: bytes) -> bytes:
    return b""


def bad_json(data: bytes) -> bytes:
    head, sep, _ = data.partition(b"\n")
    return head + sep + b'{"not json' if sep else b'{"not json'


def newer_version(data: bytes) -> bytes:
    return b"v99" + data[data.index(b"\n"):]


CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "truncated": truncated, "empty": emptied, "bad-json": bad_json, "newer-version": newer_version}
CASES = [(log, kind) for log in LATEST for kind in CORRUPTIONS
         if not (log == "metadata" and kind == "newer-version")]  # the metadata file has no version line
EXPECTED_KIND = {"truncated": {"torn_log", "corrupt_log"}, "empty": {"torn_log"},
                 "bad-json": {"corrupt_log", "torn_log"}, "newer-version": {"newer_format"}}


def copy_fixture(target: Path, output_uri: str) -> None:
    """The fixture under ``target``, its sink log naming the part files at ``output_uri``."""
    shutil.copytree(FIXTURE, target)
    for log_file in (target / "output" / "_spark_metadata").iterdir():
        log_file.write_text(log_file.read_text().replace(f"file://{WORK_ROOT}/output/", output_uri))


def damage(root: Path, log: str, kind: str) -> None:
    path = root / LATEST[log]
    path.write_bytes(CORRUPTIONS[kind](path.read_bytes()))


def check_both_tools(cli: Any, checkpoint: str, output: str, damaged: str, kind: str, *options: str) -> None:
    inspected = cli("inspect", checkpoint, "--sink", output, "--json", *options)
    warnings = inspected.json["warnings"] + inspected.json.get("sink", {}).get("warnings", [])
    named = [w for w in warnings if w["path"].endswith(damaged)]
    assert named, f"inspect did not name {damaged}: {warnings}"
    assert inspected.code == 1
    if damaged.endswith("offsets/5"):  # no earlier batch's data under batch 5's number
        assert inspected.json["watermark_ms"] is None and inspected.json["offsets"]["version"] is None
        assert [s["offset"] for s in inspected.json["sources"]] == [None]
    verified = cli("verify", checkpoint, "--sink", output, "--json", *options)
    assert verified.code == 1
    found = [p for p in verified.json["problems"] if p["path"].endswith(damaged)]
    assert found and {p["kind"] for p in found} <= EXPECTED_KIND[kind], verified.json["problems"]


@pytest.mark.parametrize(("log", "kind"), CASES)
def test_local_disk(log: str, kind: str, cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "files"
    copy_fixture(root, f"file://{root}/output/")
    damage(root, log, kind)
    check_both_tools(cli, str(root / "checkpoint"), str(root / "output"), LATEST[log], kind)


@pytest.mark.parametrize(("log", "kind"), CASES)
def test_embedded_s3(log: str, kind: str, cli: Any, tmp_path: Path, s3_env: EmbeddedS3) -> None:
    bucket, prefix = "checkpoints", f"corrupt/{log}-{kind}"
    root = tmp_path / "files"
    copy_fixture(root, f"s3a://{bucket}/{prefix}/output/")
    damage(root, log, kind)
    client = s3_env.client()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(root)}", Body=path.read_bytes())
    check_both_tools(cli, f"s3://{bucket}/{prefix}/checkpoint", f"s3://{bucket}/{prefix}/output", LATEST[log], kind,
                     "--endpoint-url", s3_env.endpoint_url)
