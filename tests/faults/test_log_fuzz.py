"""The log readers fuzzed: random, truncated and garbage batch files, hostile JSON and huge lines. Whatever is in
a log directory, a read either returns a value or raises the documented CorruptLogError (with its subclass
UnsupportedLogVersionError), naming the file; and reading never changes, adds or deletes a file."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkpointfs import RenameBasedManager
from checkpointfs.errors import CorruptLogError
from checkpointfs.log import (
    CommitLog,
    CommitMetadata,
    FileEntry,
    FileStreamSinkLog,
    FileStreamSourceLog,
    OffsetSeqLog,
    SinkFileStatus,
    read_stream_metadata,
)
from checkpointfs.log.offsets import OffsetSeq, OffsetSeqMetadata

VALID: dict[str, bytes] = {
    "offsets": b'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1700000000000,'
               b'"conf":{"spark.sql.shuffle.partitions":"2"}}\n{"logOffset":3}\n-',
    "commits": b'v1\n{"nextBatchWatermarkMs":0}',
    "sink": b'v1\n{"path":"s3a://b/out/part-00000-1.json","size":12,"isDir":false,"modificationTime":1,'
            b'"blockReplication":1,"blockSize":134217728,"action":"add"}',
    "source": b'v1\n{"path":"file:///in/a.json","timestamp":1,"batchId":0}',
}
HOSTILE_LINES = [
    b"[" * 100_000 + b"]" * 100_000,  # nesting deep enough to exhaust a recursive parser
    b'{"path":' + b'"' + b"x" * 3_000_000 + b'"}',  # a huge line
    b'{"size":1e999999,"path":"p"}',
    b'{"size":NaN,"path":"p"}',
    b'{"path":"p","path":"q","size":-1,"isDir":"yes","action":"drop"}',
    b'{"path":null,"size":{},"timestamp":[]}',
    b"\xff\xfe\x00garbage",
    b'"just a string"',
    b"{" * 5000,
    b"",
]


def reader(kind: str, manager: RenameBasedManager, directory: str) -> Callable[[], Any]:
    """Everything a user reads from a log of ``kind``."""
    if kind == "offsets":
        log: Any = OffsetSeqLog(manager, directory)
    elif kind == "commits":
        log = CommitLog(manager, directory)
    elif kind == "sink":
        log = FileStreamSinkLog(manager, directory, compact_interval=3)
    else:
        log = FileStreamSourceLog(manager, directory, compact_interval=3)

    def read_all() -> Any:
        out = [log.get(0), log.get_latest(), log.get_range(None, None)]
        if kind in ("sink", "source"):
            out.append(log.all_files())
        return out

    return read_all


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def check_read(tmp: Path, kind: str, files: dict[str, bytes]) -> None:
    directory = tmp / kind
    directory.mkdir(parents=True, exist_ok=True)
    for p in directory.iterdir():
        p.unlink()
    for name, data in files.items():
        (directory / name).write_bytes(data)
    before = tree_digest(directory)
    manager = RenameBasedManager()
    try:
        reader(kind, manager, str(directory))()
    except CorruptLogError as e:
        assert e.path.startswith(str(directory)), e
        assert e.cause
    assert tree_digest(directory) == before


KINDS = st.sampled_from(sorted(VALID))
NAMES = st.sampled_from(["0", "1", "2", "2.compact", "5.compact", "7", ".0.crc", "x", "00", "-1"])


@st.composite
def mutated(draw: st.DrawFn, kind: str) -> bytes:
    data = bytearray(VALID[kind])
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "flip", "insert", "line"]))
        if op == "truncate":
            del data[draw(st.integers(0, len(data))):]
        elif op == "flip" and data:
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            i = draw(st.integers(0, len(data)))
            data[i:i] = draw(st.binary(max_size=20))
        else:
            data += b"\n" + draw(st.sampled_from(HOSTILE_LINES[2:]))
    return bytes(data)


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(kind=KINDS, files=st.dictionaries(NAMES, st.binary(max_size=300), max_size=4))
def test_random_bytes(tmp_path: Path, kind: str, files: dict[str, bytes]) -> None:
    check_read(tmp_path, kind, files)


@FUZZ
@given(data=st.data(), kind=KINDS)
def test_mutated_valid_files(tmp_path: Path, data: st.DataObject, kind: str) -> None:
    files = {name: data.draw(mutated(kind)) for name in data.draw(st.sets(NAMES, min_size=1, max_size=3))}
    check_read(tmp_path, kind, files)


@pytest.mark.parametrize("kind", sorted(VALID))
@pytest.mark.parametrize("line", HOSTILE_LINES, ids=range(len(HOSTILE_LINES)))
def test_hostile_json_lines(tmp_path: Path, kind: str, line: bytes) -> None:
    check_read(tmp_path, kind, {"0": b"v1\n" + line})
    check_read(tmp_path, kind, {"0": VALID[kind] + b"\n" + line})


@pytest.mark.parametrize("kind", sorted(VALID))
def test_valid_files_read(tmp_path: Path, kind: str) -> None:
    """The generator's seed files are themselves valid: the fuzz starts from what the readers accept."""
    (tmp_path / "0").write_bytes(VALID[kind])
    assert reader(kind, RenameBasedManager(), str(tmp_path))()[0] is not None


@FUZZ
@given(data=st.one_of(st.binary(max_size=200), st.sampled_from(HOSTILE_LINES)))
def test_checkpoint_metadata_file(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "metadata").write_bytes(data)
    try:
        read_stream_metadata(RenameBasedManager(), str(tmp_path))
    except CorruptLogError as e:
        assert e.path.endswith("/metadata")
    assert (tmp_path / "metadata").read_bytes() == data


def test_a_failed_read_does_not_stop_later_writes(tmp_path: Path) -> None:
    """A corrupt batch is reported, never overwritten; the next batch id is still writable."""
    manager = RenameBasedManager()
    log = CommitLog(manager, str(tmp_path))
    (tmp_path / "0").write_bytes(b"v1\n{broken")
    with pytest.raises(CorruptLogError):
        log.get(0)
    assert log.add(0, CommitMetadata(0)) is False
    assert (tmp_path / "0").read_bytes() == b"v1\n{broken"
    assert log.add(1, CommitMetadata(5)) is True


def test_entry_types_round_trip(tmp_path: Path) -> None:
    """A guard on the fixtures above: the log types they name exist with these fields, and read back what they
    wrote."""
    manager = RenameBasedManager()
    sink_entry, source_entry = SinkFileStatus("s3a://b/x", 1), FileEntry("file:///x", 1, 0)
    offsets = OffsetSeq([None], OffsetSeqMetadata(0, 1))
    sink = FileStreamSinkLog(manager, os.fspath(tmp_path / "s"))
    source = FileStreamSourceLog(manager, os.fspath(tmp_path / "f"))
    offset_log = OffsetSeqLog(manager, os.fspath(tmp_path / "o"))
    assert sink.add(0, [sink_entry]) and source.add(0, [source_entry]) and offset_log.add(0, offsets)
    assert FileStreamSinkLog(manager, os.fspath(tmp_path / "s")).get(0) == [sink_entry]
    assert FileStreamSourceLog(manager, os.fspath(tmp_path / "f")).get(0) == [source_entry]
    assert OffsetSeqLog(manager, os.fspath(tmp_path / "o")).get(0) == offsets
