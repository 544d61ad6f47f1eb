"""committed_files and ``checkpointfs ls-committed``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkpointfs import RenameBasedManager
from checkpointfs.cli import main
from checkpointfs.errors import PathNotFoundError
from checkpointfs.log import DELETE, FileStreamSinkLog, SinkFileStatus
from checkpointfs.sink import committed_files, from_manifest_path, to_manifest_path

from .conftest import Target, rows_of


def test_paths_convert_to_the_form_spark_reads_and_back() -> None:
    assert to_manifest_path("/tmp/out dir/part-0%.json") == "file:///tmp/out%20dir/part-0%25.json"
    assert to_manifest_path("file:/tmp/a") == to_manifest_path("file:///tmp/a") == "file:///tmp/a"
    assert to_manifest_path("s3://b/k/day=1/é x%.json") == "s3a://b/k/day=1/é%20x%25.json"
    assert from_manifest_path("file:///tmp/out%20dir/x") == "/tmp/out dir/x"
    assert from_manifest_path("file:/tmp/x") == "/tmp/x"
    assert from_manifest_path("s3a://b/k%20x", s3_scheme="s3") == "s3://b/k x"
    assert from_manifest_path("s3a://b/k") == "s3a://b/k"


def test_committed_files_honours_compaction_and_deletes(tmp_path: Path) -> None:
    manager = RenameBasedManager()
    log = FileStreamSinkLog(manager, str(tmp_path / "_spark_metadata"), compact_interval=2)
    entry = lambda name, action="add": SinkFileStatus(to_manifest_path(str(tmp_path / name)), 1,  # noqa: E731
                                                      action=action)
    log.add(0, [entry("a b"), entry("b")])
    log.add(1, [entry("c"), SinkFileStatus(to_manifest_path(str(tmp_path / "d")), 0, is_dir=True)])
    log.add(2, [entry("a b", DELETE)])
    assert committed_files(str(tmp_path)) == [str(tmp_path / "b"), str(tmp_path / "c")]
    assert committed_files(f"file://{tmp_path}") == [str(tmp_path / "b"), str(tmp_path / "c")]
    with pytest.raises(PathNotFoundError, match="no manifest here"):
        committed_files(str(tmp_path / "elsewhere"))


def test_committed_files_on_s3_ignore_orphans(embedded_s3: object) -> None:
    target = Target("s3", embedded_s3.uri("out"), embedded_s3.manager_options())  # type: ignore[attr-defined]
    with target.sink() as sink:
        sink.write_batch(0, rows_of(0, 3))
    manager = target.manager()
    with manager.create_atomic(target.path + "/part-00000-orphan.json") as stream:
        stream.write(b"{}\n")
    files = target.committed()
    assert len(files) == 1 and files[0].startswith("s3://checkpoints/out/part-00000-")
    assert committed_files(target.path, s3_scheme="s3a", **target.options)[0].startswith("s3a://")


def test_ls_committed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = Target("local", str(tmp_path / "out"))
    with target.sink() as sink:
        sink.write_batch(0, rows_of(0, 2))
    assert main(["ls-committed", target.path]) == 0
    assert capsys.readouterr().out.splitlines() == target.committed()
    assert main(["ls-committed", "-l", target.path]) == 0
    size, mtime, path = capsys.readouterr().out.split("\t")
    assert int(size) == Path(path.strip()).stat().st_size and int(mtime) > 0
    assert main(["ls-committed", "--json", target.path]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [f["path"] for f in listed["files"]] == target.committed() and listed["files"][0]["size"] > 0
    assert main(["ls-committed", str(tmp_path / "nothing")]) == 2
    assert "no manifest here" in capsys.readouterr().err
