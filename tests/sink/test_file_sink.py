"""FileSink: routing, JSON lines, rotation by bytes and batches, gzip, the LRU of open files, SSE, exactly-once,
crashes and gc."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import RenameBasedManager
from checkpointfs.log import FileStreamSinkLog
from checkpointfs.sink import FileSink

from .conftest import Target, by_day, rows_of


def key(row: dict[str, Any]) -> tuple[int, int]:
    return row["batch"], row["i"]


def test_routes_rows_and_commits_each_batch(target: Target) -> None:
    with target.sink(partition_by=by_day) as sink:
        assert sink.write_batch(0, rows_of(0, 9))
        assert sink.committed_through == 0
        assert sink.write_batch(1, rows_of(1, 6))
    assert sorted(target.rows(), key=key) == sorted(rows_of(0, 9) + rows_of(1, 6), key=key)
    files = target.committed()
    assert len(files) == 6
    assert sorted(f.split("/out/")[1].split("/")[0] for f in files) == ["day=0", "day=0", "day=1", "day=1", "day=2",
                                                                        "day=2"]
    assert all("/part-00000-" in f for f in files)
    manifest = FileStreamSinkLog(target.manager(), f"{target.path}/_spark_metadata", read_only=True).all_files()
    scheme = "file:///" if target.kind == "local" else "s3a://"
    assert all(s.path.startswith(scheme) for s in manifest)
    assert sorted(s.size for s in manifest) == sorted(len(target.read(f)) for f in files)


def test_rotation_by_bytes(target: Target) -> None:
    with target.sink(max_bytes=200) as sink:
        sink.write_batch(0, rows_of(0, 40, routes=1))
    files = target.committed()
    sizes = [len(target.read(f)) for f in files]
    assert len(files) >= 5
    assert all(size < 200 + 70 for size in sizes)  # rotated once it reached 200, rows are < 70 bytes
    assert sorted(target.rows(), key=key) == rows_of(0, 40, routes=1)
    assert [f.rsplit("-", 1)[1] for f in files] == [f"c{i:03d}.json" for i in range(len(files))]


def test_rotation_by_batches_commits_the_group_when_it_closes(target: Target) -> None:
    sink = target.sink(rotation_batches=3)
    for batch in range(2):
        sink.write_batch(batch, rows_of(batch, 2, routes=1))
    assert sink.committed_through == -1 and sink.pending_batches == [0, 1]
    assert target.part_files() == []  # nothing published while the group is open
    sink.write_batch(2, rows_of(2, 2, routes=1))
    assert sink.committed_through == 2
    [part] = target.committed()
    assert [key(r) for r in map(json.loads, target.read(part).decode().splitlines())] == [
        (b, i) for b in range(3) for i in range(2)]
    sink_log = FileStreamSinkLog(target.manager(), f"{target.path}/_spark_metadata", read_only=True)
    assert [len(sink_log.get(b) or []) for b in range(3)] == [1, 0, 0]
    sink.write_batch(3, rows_of(3, 1, routes=1))
    sink.close()  # closing commits the pending batch
    assert FileStreamSinkLog(target.manager(), f"{target.path}/_spark_metadata", read_only=True).batch_ids() == [
        0, 1, 2, 3]


def test_an_interrupted_group_commit_is_finished_on_restart(target: Target) -> None:
    with target.sink(rotation_batches=3) as sink:
        for batch in range(3):
            sink.write_batch(batch, rows_of(batch, 2, routes=1))
    manager = target.manager()
    for batch in range(3):  # the state after a crash right after the group record was written
        manager.delete(f"{target.path}/_spark_metadata/{batch}")
    assert FileStreamSinkLog(manager, f"{target.path}/_spark_metadata", read_only=True).all_files() == []
    reopened = target.sink(rotation_batches=3)
    assert reopened.committed_through == 2
    assert reopened.write_batch(2, rows_of(9, 9)) is False
    assert sorted(map(key, target.rows())) == [(b, i) for b in range(3) for i in range(2)]


def test_gzip_parts_are_gzip_json_lines(target: Target) -> None:
    with target.sink(compression="gzip", partition_by=by_day) as sink:
        sink.write_batch(0, rows_of(0, 30))
    files = target.committed()
    assert files and all(f.endswith("-c000.json.gz") or f.endswith(".json.gz") for f in files)
    assert sorted(target.rows(), key=key) == sorted(rows_of(0, 30), key=key)


def test_open_files_are_bounded_and_evicted_ones_are_closed(target: Target) -> None:
    sink = target.sink(partition_by=by_day, max_open_files=2)
    seen: list[int] = []

    def rows() -> Iterator[dict[str, Any]]:
        for row in rows_of(0, 12, routes=4):
            yield row
            seen.append(len(sink._open))

    sink.write_batch(0, rows())
    assert max(seen) == 2
    files = target.committed()
    assert len(files) == 12  # every row's route was evicted before its next row: a part per row
    assert sorted(target.rows(), key=key) == sorted(rows_of(0, 12, routes=4), key=key)
    if target.s3 is not None:
        assert target.s3.open_uploads() == []
    sink.close()
    wide = target.sink(partition_by=by_day, max_open_files=4)
    wide.write_batch(1, rows_of(1, 12, routes=4))
    assert len(target.committed()) == 12 + 4


def test_server_side_encryption_is_passed_through(embedded_s3: Any) -> None:
    target = Target("s3", embedded_s3.uri("enc"), embedded_s3.manager_options(), embedded_s3)
    with target.sink(sse="AES256") as sink:
        sink.write_batch(0, rows_of(0, 3))
    client = embedded_s3.client(admin=True)
    keys = embedded_s3.keys("enc/")
    assert any("/part-" in k for k in keys) and "enc/_spark_metadata/0" in keys
    for k in keys:
        assert client.head_object(Bucket="checkpoints", Key=k)["ServerSideEncryption"] == "AES256"
    with pytest.raises(ValueError, match="on the manager itself"):
        FileSink(target.path, manager=target.manager(), sse="AES256")


def test_a_committed_batch_is_skipped_on_replay(target: Target) -> None:
    with target.sink(listing_lag_s=0) as sink:
        sink.write_batch(0, rows_of(0, 3))
        before = target.part_files()
        assert sink.write_batch(0, rows_of(0, 50)) is False
        assert target.part_files() == before
        with pytest.raises(ValueError, match="out of order; the next batch is 1"):
            sink.write_batch(5, [])
    reopened = target.sink()
    assert reopened.write_batch(0, rows_of(0, 50)) is False
    assert sorted(target.rows(), key=key) == rows_of(0, 3)


def test_a_batch_committed_behind_the_sink_s_back_is_skipped_and_its_files_dropped(target: Target) -> None:
    early = target.sink()  # opened before the batch below is committed: it believes batch 0 is next
    with target.sink() as other:
        other.write_batch(0, rows_of(0, 3))
    assert early.write_batch(0, rows_of(0, 5)) is False  # the store refused the batch file: committed already
    assert early.committed_through == 0
    assert sorted(target.rows(), key=key) == rows_of(0, 3)
    assert target.part_files() == sorted(target.committed())  # the losing attempt's files are gone
    assert early.write_batch(1, rows_of(1, 2))


def test_an_error_mid_batch_leaves_nothing_and_the_batch_can_be_rerun(target: Target) -> None:
    sink = target.sink(max_bytes=100, partition_by=by_day)
    sink.write_batch(0, rows_of(0, 3))

    def failing() -> Iterator[dict[str, Any]]:
        yield from rows_of(1, 20)
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        sink.write_batch(1, failing())
    assert sink.committed_through == 0
    assert len(target.part_files()) == len(target.committed())  # the parts of batch 1 already closed are gone
    if target.s3 is not None:
        assert target.s3.open_uploads() == []
    assert sink.write_batch(1, rows_of(1, 20))
    assert sorted(target.rows(), key=key) == sorted(rows_of(0, 3) + rows_of(1, 20), key=key)


CRASHING_WRITER = textwrap.dedent("""
    import json, os, sys
    from checkpointfs.sink import FileSink
    path, options = sys.argv[1], json.loads(sys.argv[2])
    sink = FileSink(path, max_bytes=120, partition_by=lambda r: f"day={r['day']}", **options)
    rows = lambda b, n: [{"day": i % 3, "batch": b, "i": i, "text": f"row {b}-{i}"} for i in range(n)]
    sink.write_batch(0, rows(0, 10))
    sink.write_batch(1, rows(1, 10))
    def dying():
        for n, row in enumerate(rows(2, 40)):
            if n == 30:
                os._exit(3)   # the process dies mid-batch: no clean-up of any kind
            yield row
    sink.write_batch(2, dying())
""")


def test_after_a_crash_the_uncommitted_batch_reruns_without_duplicates(target: Target) -> None:
    crashed = subprocess.run([sys.executable, "-c", CRASHING_WRITER, target.path, json.dumps(target.options)],
                             capture_output=True, text=True, timeout=120)
    assert crashed.returncode == 3, crashed.stderr
    committed_before = target.committed()
    orphans = sorted(set(target.part_files()) - set(committed_before))
    assert orphans, "the crashed batch had closed some rotated parts"
    assert sorted(map(key, target.rows())) == [(b, i) for b in range(2) for i in range(10)]  # nothing of batch 2

    sink = target.sink(max_bytes=120, partition_by=by_day)
    assert sink.committed_through == 1
    assert sink.write_batch(1, rows_of(1, 10)) is False
    assert sink.write_batch(2, rows_of(2, 40))
    assert sorted(map(key, target.rows())) == [(b, i) for b in range(2) for i in range(10)] + [
        (2, i) for i in range(40)]
    assert sink.gc(grace_ms=3_600_000) == []  # the orphans are too young
    deleted = sink.gc(grace_ms=0)
    assert sorted(deleted) == orphans
    assert sorted(target.part_files()) == sorted(target.committed())


def test_gc_deletes_only_unreferenced_old_part_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sink = Target("local", str(out)).sink(partition_by=by_day)
    sink.write_batch(0, rows_of(0, 3))
    orphan = out / "day=1" / "part-00000-orphan-c000.json"
    orphan.write_text('{"day":1}\n')
    (out / "day=1" / ".part-00000-orphan-c000.json.crc").write_text("crc")
    keep = [out / "notes.txt", out / "day=1" / "data.json", out / "_spark_metadata" / "part-in-metadata",
            out / ".hidden" / "part-hidden", out / "_other" / "part-other"]
    for path in keep:
        path.parent.mkdir(exist_ok=True)
        path.write_text("x")
    old = 1_000_000_000
    for path in [orphan, *keep]:
        os.utime(path, (old, old))
    committed = sorted(Target("local", str(out)).committed())
    assert sink.gc() == [str(orphan)]
    assert not orphan.exists() and not (out / "day=1" / ".part-00000-orphan-c000.json.crc").exists()
    assert all(path.exists() for path in keep)
    assert sorted(Target("local", str(out)).committed()) == committed
    assert all(Path(p).exists() for p in committed)


def test_optional_formats_need_their_packages(tmp_path: Path) -> None:
    for option, module in (({"format": "parquet"}, "pyarrow"), ({"compression": "zstd"}, "zstandard")):
        try:
            __import__(module)
        except ImportError:
            with pytest.raises(ImportError, match=module):
                FileSink(str(tmp_path / module), manager=RenameBasedManager(), **option)  # type: ignore[arg-type]
        else:
            with FileSink(str(tmp_path / module), manager=RenameBasedManager(), **option) as sink:  # type: ignore
                sink.write_batch(0, rows_of(0, 5))
            assert len(Target("local", str(tmp_path / module)).committed()) == 1
    with pytest.raises(ValueError, match="format must be one of"):
        FileSink(str(tmp_path / "x"), format="csv")  # type: ignore[arg-type]


def test_route_names_are_checked(tmp_path: Path) -> None:
    sink = Target("local", str(tmp_path / "out")).sink(partition_by=lambda row: row["dir"])
    for bad in ("../up", "_spark_metadata", ".hidden", "a//b"):
        with pytest.raises(ValueError, match="partition_by gave"):
            sink.write_batch(sink.committed_through + 1, [{"dir": bad}])
    assert sink.write_batch(0, [{"dir": "a/b"}, {"dir": ""}, {"dir": None}])
    assert sorted(p.split("/out/")[1].rsplit("/", 1)[0] if "/a/" in p else "root"
                  for p in Target("local", str(tmp_path / "out")).committed()) == ["a/b", "root"]
