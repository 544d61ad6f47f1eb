"""RenameBasedManager beyond the shared contract: the temp file, the no-replace primitive, durability steps."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from checkpointfs import RenameBasedManager
from checkpointfs.errors import FileAlreadyExistsError
from checkpointfs.rename_manager import _rename_noreplace


def test_writes_a_hidden_temp_file_in_the_same_directory(tmp_path: Path) -> None:
    m = RenameBasedManager()
    out = m.create_atomic(str(tmp_path / "offsets" / "3"))
    out.write(b"v1\n")
    [temp] = os.listdir(tmp_path / "offsets")
    assert re.fullmatch(r"\.3\.[0-9a-f-]{36}\.tmp", temp)
    out.close()
    assert os.listdir(tmp_path / "offsets") == ["3"]


def test_cancel_and_failed_publish_remove_the_temp_file(tmp_path: Path) -> None:
    m = RenameBasedManager()
    target = tmp_path / "commits" / "0"
    out = m.create_atomic(str(target))
    out.write(b"x")
    out.cancel()
    assert os.listdir(tmp_path / "commits") == []
    target.write_bytes(b"first")
    with pytest.raises(FileAlreadyExistsError):
        with m.create_atomic(str(target)) as out:
            out.write(b"second")
    assert os.listdir(tmp_path / "commits") == ["0"] and target.read_bytes() == b"first"


def test_uris_and_local_paths_name_the_same_files(tmp_path: Path) -> None:
    m = RenameBasedManager()
    with m.create_atomic(f"file://{tmp_path}/a") as out:
        out.write(b"via uri")
    assert (tmp_path / "a").read_bytes() == b"via uri"
    assert [s.path for s in m.list(f"file://{tmp_path}")] == [f"file://{tmp_path}/a"]
    assert [s.path for s in m.list(str(tmp_path))] == [f"{tmp_path}/a"]
    assert [s.path for s in m.list(f"file:{tmp_path}")] == [f"file:{tmp_path}/a"]  # Hadoop's form
    assert m.create_checkpoint_directory(str(tmp_path / "q")) == f"file://{tmp_path}/q"


def test_renameat2_noreplace_fallback_refuses_an_existing_target(tmp_path: Path) -> None:
    temp, target = tmp_path / ".t.tmp", tmp_path / "t"
    temp.write_bytes(b"one")
    _rename_noreplace(str(target), str(temp), str(target))
    assert target.read_bytes() == b"one" and not temp.exists()
    temp.write_bytes(b"two")
    with pytest.raises(FileAlreadyExistsError):
        _rename_noreplace(str(target), str(temp), str(target))
    assert target.read_bytes() == b"one"


def test_metrics_count_file_system_operations(tmp_path: Path) -> None:
    m = RenameBasedManager()
    with m.create_atomic(str(tmp_path / "0")) as out:
        out.write(b"x")
    assert m.requests.snapshot() == {"create": 1, "rename": 1}
    assert (m.metrics["createIfAbsent.calls"], m.metrics["createIfAbsent.requests"],
            m.metrics["createIfAbsent.bytesWritten"]) == (1, 2, 1)
