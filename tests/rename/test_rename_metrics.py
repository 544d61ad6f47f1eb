"""RenameBasedManager.metrics: the names of protocol.json's table, counted for file-system operations (its requests
are those of RenameBasedManager.requests, mkdirs aside), and the conflict WARN an operator reads."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from checkpointfs import RenameBasedManager
from checkpointfs.errors import FileAlreadyExistsError, PathNotFoundError
from checkpointfs.metrics import snapshot_names
from checkpointfs.protocol.metrics import OPERATIONS


def nonzero(m: RenameBasedManager) -> dict[str, float]:
    return {k: v for k, v in m.metrics.snapshot().items() if v and ".latency" not in k}


def test_a_conflict_is_counted_and_logged_with_the_write_id(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    m = RenameBasedManager()
    target = str(tmp_path / "q" / "commits" / "4")
    first, second = m.create_atomic(target), m.create_atomic(target)
    first.write(b"one")
    second.write(b"two")
    first.close()
    caplog.set_level(logging.WARNING, logger="checkpointfs")
    with pytest.raises(FileAlreadyExistsError):
        second.close()
    assert (tmp_path / "q" / "commits" / "4").read_bytes() == b"one"
    assert nonzero(m) == {"createIfAbsent.calls": 2, "createIfAbsent.requests": 2 + 3,  # create, rename; + delete
                          "createIfAbsent.bytesWritten": 3, "createIfAbsent.failures": 1, "conflicts": 1}
    (record,) = [r for r in caplog.records if r.getMessage().startswith("conflict:")]
    assert f"[checkpoint={tmp_path / 'q'} file={target} batch=4 write_id={second.write_id}]" in record.getMessage()  # type: ignore[attr-defined]
    assert second.write_id and second.write_id != first.write_id  # type: ignore[attr-defined]


def test_every_operation_counts_its_file_system_operations(tmp_path: Path) -> None:
    m = RenameBasedManager()
    root = tmp_path / "q"
    m.mkdirs(str(root))
    with m.create_atomic(str(root / "offsets" / "0")) as out:
        out.write(b"v1\n{}")
    with m.create_atomic(str(root / "metadata"), overwrite_if_possible=True) as out:
        out.write(b"{}")
    out = m.create_atomic(str(root / "offsets" / "1"))
    out.write(b"dropped")
    out.cancel()
    with m.open(str(root / "offsets" / "0")) as reader:
        assert reader.read() == b"v1\n{}"
    with pytest.raises(PathNotFoundError):
        m.open(str(root / "offsets" / "9"))
    assert [s.name for s in m.list(str(root / "offsets"))] == ["0"]
    assert m.exists(str(root / "metadata"))
    m.delete(str(root / "offsets"))
    calls = {op: m.metrics[f"{op}.calls"] for op in OPERATIONS}
    assert calls == {"createIfAbsent": 2, "createOverwrite": 1, "open": 2, "list": 1, "exists": 1, "delete": 1}
    assert nonzero(m) == {**{f"{op}.calls": n for op, n in calls.items()},
                          "createIfAbsent.requests": 2 + 2, "createOverwrite.requests": 2, "open.requests": 2,
                          "list.requests": 1, "exists.requests": 1, "delete.requests": 1,
                          "createIfAbsent.bytesWritten": 5, "createOverwrite.bytesWritten": 2, "open.bytesRead": 5,
                          "open.failures": 1, "cancels": 1}
    requests = m.requests.snapshot()
    assert sum(m.metrics[f"{op}.requests"] for op in OPERATIONS) == m.requests.total - requests["mkdirs"]
    assert list(m.metrics.snapshot()) == list(snapshot_names())


def test_one_info_per_checkpoint_root(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="checkpointfs")
    for _ in range(2):
        m = RenameBasedManager()
        for i in range(10):
            with m.create_atomic(str(tmp_path / "q" / "offsets" / str(i)), overwrite_if_possible=True) as out:
                out.write(b"v1\n{}")
            with m.open(str(tmp_path / "q" / "offsets" / str(i))) as reader:
                reader.read()
        for day in range(10):  # a file sink's data files, one partition directory each: outside any checkpoint
            data_file = str(tmp_path / "out" / f"day={day}" / "part-0.json")
            with m.create_atomic(data_file, overwrite_if_possible=True) as out:
                out.write(b"{}")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == [
        f"checkpoint {tmp_path / 'q'}: files written through a temp file and an atomic rename "
        "(RenameBasedManager, file)"]
