"""``checkpointfs inspect``: which manager wrote each log (the checkpointfs write id in the objects' metadata, or
none), and from which batch a checkpoint mixes both. Objects are put on the embedded S3 with and without the write id
metadata, as the shim and Spark's own manager leave them (no Spark runs here); the HEADs inspect spends are counted
on the server and must match what it reports."""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.testing import EmbeddedS3
from checkpointfs.tools.writers import SAMPLES, LogWriters, history

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
Writer = Callable[[int], bool]
"""Batch id -> whether the shim wrote it."""


@pytest.fixture
def s3(s3_env: EmbeddedS3) -> EmbeddedS3:
    """The embedded S3, its credentials in the AWS variables."""
    return s3_env


def put(s3: EmbeddedS3, key: str, body: bytes, shim: bool) -> None:
    metadata = {WRITE_ID_KEY: f"w-{key}"} if shim else {}
    s3.client(admin=True).put_object(Bucket="checkpoints", Key=key, Body=body, Metadata=metadata)


def write_checkpoint(s3: EmbeddedS3, batches: range, shim: Writer, *, commits_shim: Writer | None = None,
                     prefix: str = "q/ck") -> str:
    """A checkpoint of ``batches`` (offsets and commits), each file written by the shim where ``shim`` says."""
    put(s3, f"{prefix}/metadata", b'{"id":"5f2c6a52-7a43-4c8e-9d3a-0c6f5e1b2a77"}', False)

    def write(batch: int) -> None:
        put(s3, f"{prefix}/offsets/{batch}", b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}\n'
                                             b'{"logOffset":%d}' % batch, shim(batch))
        put(s3, f"{prefix}/commits/{batch}", b'v1\n{"nextBatchWatermarkMs":0}', (commits_shim or shim)(batch))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, batches))
    return s3.uri(prefix)


def inspect(cli: Any, s3: EmbeddedS3, *args: str) -> dict[str, Any]:
    s3.requests.clear()
    result = cli("inspect", *args, "--endpoint-url", s3.endpoint_url, "--json")
    assert result.code == 0, result.err
    found: dict[str, Any] = result.json
    heads = s3.requests.counts().get("HeadObject", 0)
    assert found["writers"]["requests"].get("HeadObject", 0) == heads  # what it says it spent, it spent
    assert sum(log["heads"] for log in found["writers"]["logs"]) == heads
    return found


def logs(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {log["log"]: log for log in found["writers"]["logs"]}


def mixed(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["log"]: w for w in found["warnings"] if w["kind"] == "mixed_writers"}


def test_shim_throughout_every_batch_read_no_warning(s3: EmbeddedS3, cli: Any) -> None:
    found = inspect(cli, s3, write_checkpoint(s3, range(6), lambda b: True))
    for name in ("offsets", "commits"):
        log = logs(found)[name]
        assert log["latest_writer"] == "checkpointfs" and log["latest"] == 5
        assert log["segments"] == [{"first": 0, "last": 5, "writer": "checkpointfs"}]
        assert log["heads"] == 6 and log["exact"] is True and log["switches"] == []
    assert found["warnings"] == []


def test_moved_onto_the_shim_says_from_which_batch(s3: EmbeddedS3, cli: Any) -> None:
    checkpoint = write_checkpoint(s3, range(10), lambda b: b >= 7, commits_shim=lambda b: b >= 6)
    found = inspect(cli, s3, checkpoint)
    assert logs(found)["offsets"]["segments"] == [{"first": 0, "last": 6, "writer": "other"},
                                                  {"first": 7, "last": 9, "writer": "checkpointfs"}]
    assert logs(found)["commits"]["switches"] == [{"batch": 6, "from": "other", "to": "checkpointfs",
                                                   "confirmed": True}]
    warnings = mixed(found)
    assert set(warnings) == {"offsets", "commits"}
    assert warnings["offsets"]["since_batch"] == 7 and warnings["commits"]["since_batch"] == 6
    assert warnings["offsets"]["path"] == f"{checkpoint}/offsets"
    assert warnings["offsets"]["latest_writer"] == "checkpointfs"
    assert "the shim took over at batch 7" in warnings["offsets"]["problem"]
    assert "runs with the shim now" in warnings["offsets"]["problem"]

    table = cli("inspect", checkpoint, "--endpoint-url", s3.endpoint_url, "--plain")
    assert table.code == 0 and "Writers (20 HeadObject requests)" in table.out
    assert "0-6 other, 7-9 checkpointfs" in table.out
    assert f"warning: {checkpoint}/offsets: offsets: the shim took over at batch 7" in table.out


def test_long_log_one_switch_is_found_with_bounded_heads(s3: EmbeddedS3, cli: Any) -> None:
    found = inspect(cli, s3, write_checkpoint(s3, range(90), lambda b: b >= 61))
    offsets = logs(found)["offsets"]
    assert offsets["switches"] == [{"batch": 61, "from": "other", "to": "checkpointfs", "confirmed": True}]
    assert offsets["segments"][-1] == {"first": 61, "last": 89, "writer": "checkpointfs"}
    gap = math.ceil(89 / (SAMPLES - 1))
    assert offsets["heads"] <= SAMPLES + math.ceil(math.log2(gap))  # 16 samples, then a binary search
    assert offsets["exact"] is False and "sampled 16 of 90" in offsets["method"]
    assert mixed(found)["offsets"]["since_batch"] == 61


def test_long_log_taken_over_then_stopped(s3: EmbeddedS3, cli: Any) -> None:
    found = inspect(cli, s3, write_checkpoint(s3, range(300, 380), lambda b: 323 <= b < 371))
    offsets = logs(found)["offsets"]
    assert [(s["batch"], s["to"]) for s in offsets["switches"]] == [(323, "checkpointfs"), (371, "other")]
    assert offsets["latest_writer"] == "other" and offsets["first"] == 300
    warning = mixed(found)["offsets"]
    assert warning["since_batch"] == 371 and warning["latest_writer"] == "other"
    assert "the shim took over at batch 323" in warning["problem"]
    assert "the shim stopped at batch 371" in warning["problem"] and "rollback" in warning["problem"]


def test_sampling_can_miss_a_short_run_and_says_so() -> None:
    """Between two samples that agree nothing is read: a two-batch run there is not seen, and the result is marked
    not exact (the method names the largest such run)."""
    batches = list(range(200))
    probed: list[int] = []

    def probe(batch: int) -> str:
        probed.append(batch)
        return "checkpointfs" if batch in (101, 102) else "other"

    segments, heads, gap = history(batches, probe)
    assert [s.writer for s in segments] == ["other"] and heads == SAMPLES == len(probed)
    assert gap == 14 and 101 not in probed


def test_a_file_gone_since_the_listing_is_unknown_and_breaks_no_switch() -> None:
    found = LogWriters("commits", "s3://b/ck/commits", [0, 1, 2, 3])
    found.segments, found.heads, found.gap = history(
        found.batches, lambda b: {0: "other", 1: "unknown", 2: "checkpointfs", 3: "checkpointfs"}[b])
    assert found.switches() == [{"batch": 2, "from": "other", "to": "checkpointfs", "confirmed": False}]


def test_history_reads_every_batch_of_a_short_log() -> None:
    segments, heads, gap = history([3, 4, 5], lambda b: "checkpointfs" if b == 4 else "other")
    assert [(s.first, s.last, s.writer) for s in segments] == [(3, 3, "other"), (4, 4, "checkpointfs"),
                                                              (5, 5, "other")]
    assert heads == 3 and gap == 1


def test_sink_manifest_writers(s3: EmbeddedS3, cli: Any) -> None:
    checkpoint = write_checkpoint(s3, range(4), lambda b: b >= 2)
    for batch in range(4):
        name = f"part-{batch:05d}.json"
        put(s3, f"q/out/{name}", b"{}\n", batch >= 2)
        entry = {"path": s3.uri(f"q/out/{name}"), "size": 3, "isDir": False, "modificationTime": 1,
                 "blockReplication": 1, "blockSize": 1, "action": "add"}
        put(s3, f"q/out/_spark_metadata/{batch}", b"v1\n" + json.dumps(entry).encode(), batch >= 3)
    found = inspect(cli, s3, checkpoint, "--sink", s3.uri("q/out"))
    sink = logs(found)["_spark_metadata"]
    assert sink["path"] == s3.uri("q/out/_spark_metadata") and sink["latest_writer"] == "checkpointfs"
    assert sink["switches"] == [{"batch": 3, "from": "other", "to": "checkpointfs", "confirmed": True}]
    assert {log: w["since_batch"] for log, w in mixed(found).items()} == {"offsets": 2, "commits": 2,
                                                                          "_spark_metadata": 3}
    assert found["sink"]["warnings"] == []


def test_local_checkpoint_writers_are_unknown(cli: Any, tmp_path: Path) -> None:
    checkpoint = tmp_path / "ck"
    shutil.copytree(FIXTURES / "spark-4.3" / "stateful" / "checkpoint", checkpoint)
    result = cli("inspect", str(checkpoint), "--json")
    assert result.code == 0
    writers = result.json["writers"]
    assert writers["requests"] == {}
    assert [(log["log"], log["latest_writer"], log["segments"], log["exact"]) for log in writers["logs"]] == [
        ("offsets", "unknown", [], False), ("commits", "unknown", [], False)]
    assert {log["method"] for log in writers["logs"]} == {"the store keeps no object metadata"}
    assert result.json["warnings"] == []
    table = cli("inspect", str(checkpoint), "--plain")
    assert "Writers: unknown (the store keeps no object metadata" in table.out
