"""ManifestCommitProtocol on the embedded S3 and locally: naming, invisibility of unfinished files, task and job
commit and abort, and the race error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from checkpointfs import DirectWriteManager, RenameBasedManager
from checkpointfs.errors import FileAlreadyExistsError, PathNotFoundError
from checkpointfs.log import FileStreamSinkLog
from checkpointfs.sink import ManifestCommitProtocol
from checkpointfs.testing import EmbeddedS3

PART_RE = re.compile(r"part-00003-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.json$")


def protocol_on_s3(s3: EmbeddedS3, batch_id: int = 0) -> tuple[ManifestCommitProtocol, DirectWriteManager]:
    manager = DirectWriteManager(part_size=1024, **s3.manager_options())
    sink_log = FileStreamSinkLog(manager, s3.uri("out/_spark_metadata"))
    return ManifestCommitProtocol(manager, s3.uri("out"), sink_log, batch_id), manager


def test_a_job_commits_its_tasks_files_to_the_manifest(embedded_s3: EmbeddedS3) -> None:
    protocol, manager = protocol_on_s3(embedded_s3)
    protocol.setup_job()
    task = protocol.setup_task(3)
    stream = protocol.create_task_file(task, "day=1", ".json")
    assert PART_RE.search(stream.path) and "/out/day=1/" in stream.path
    stream.write(b"x" * 5000)  # beyond the part size: parts are uploading, the file is not visible
    assert embedded_s3.open_uploads() and not [k for k in embedded_s3.keys("out/") if "part-" in k]
    stream.close()
    path = protocol.new_task_temp_file(task, None, ".json")
    with manager.create_atomic(path) as own:
        own.write(b'{"a":1}\n')
    statuses = protocol.commit_task(task)
    assert [s.size for s in statuses] == [5000, 8]
    assert [s.path for s in statuses] == [stream.path.replace("s3://", "s3a://"), path.replace("s3://", "s3a://")]
    protocol.on_task_commit(statuses)
    embedded_s3.requests.clear()
    protocol.commit_job([statuses])
    # one PUT, and once per log the listing that derives the compaction interval from existing .compact files
    assert embedded_s3.requests.counts() == {"ListObjectsV2": 1, "PutObject": 1}
    assert protocol.sink_log.get(0) == statuses


def test_a_second_commit_of_a_batch_is_a_race(embedded_s3: EmbeddedS3) -> None:
    first, _ = protocol_on_s3(embedded_s3)
    second, _ = protocol_on_s3(embedded_s3)
    for protocol in (first, second):
        protocol.setup_job()
    first.commit_job([[]])
    with pytest.raises(FileAlreadyExistsError, match="Race while writing batch 0"):
        second.commit_job([[]])


def test_aborts_delete_the_files(embedded_s3: EmbeddedS3) -> None:
    protocol, _ = protocol_on_s3(embedded_s3)
    protocol.setup_job()
    failed = protocol.setup_task(0)
    with protocol.create_task_file(failed, None, ".json") as stream:
        stream.write(b"done\n")
    unfinished = protocol.create_task_file(failed, None, ".json")
    unfinished.write(b"y" * 3000)
    protocol.abort_task(failed)
    assert embedded_s3.keys("out/") == [] and embedded_s3.open_uploads() == []
    ok = protocol.setup_task(1)
    with protocol.create_task_file(ok, None, ".json") as stream:
        stream.write(b"done\n")
    protocol.on_task_commit(protocol.commit_task(ok))
    protocol.abort_job()
    assert embedded_s3.keys("out/") == []


def test_commit_task_refuses_open_files_and_reports_missing_ones(tmp_path: Path) -> None:
    manager = RenameBasedManager()
    protocol = ManifestCommitProtocol(manager, str(tmp_path / "out"),
                                      FileStreamSinkLog(manager, str(tmp_path / "out/_spark_metadata")), 0)
    protocol.setup_job()
    task = protocol.setup_task(0)
    stream = protocol.create_task_file(task, None, ".json")
    with pytest.raises(ValueError, match="close or cancel"):
        protocol.commit_task(task)
    stream.cancel()
    assert protocol.commit_task(task) == []  # a cancelled file is left out
    protocol.new_task_temp_file(task, None, ".json")  # never written
    with pytest.raises(PathNotFoundError, match="does not exist"):
        protocol.commit_task(task)
    with pytest.raises(RuntimeError, match="setup_job"):
        ManifestCommitProtocol(manager, str(tmp_path), protocol.sink_log, 1).commit_job([])
