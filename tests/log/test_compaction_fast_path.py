"""The compaction's shortcut (runs of canonical lines copied as they are) gives the same bytes as decoding and
encoding every entry, whatever the input looks like: canonical or not, any line ends, runs cut anywhere."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkpointfs.errors import CorruptLogError
from checkpointfs.log import FileEntry, FileStreamSinkLog, FileStreamSourceLog, SinkFileStatus, io
from checkpointfs.log.io import LogLines, json_string
from checkpointfs.log.sink_log import CANONICAL_ENTRY, decode_sink_file_status
from checkpointfs.log.source_log import CANONICAL_ENTRY as SOURCE_ENTRY

from .conftest import Store

LONG = st.integers(min_value=-(2**63), max_value=2**63 - 1)
PATHS = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
STATUSES = st.builds(SinkFileStatus, PATHS, LONG, st.booleans(), LONG, LONG, LONG, st.sampled_from(["add", "delete"]))
SINK = re.compile(CANONICAL_ENTRY)
# No per-example deadline: make unit runs these beside another worker on a 2-core machine, where one example now and
# then takes longer than hypothesis's default 200 ms with nothing wrong.
PROPERTY = settings(max_examples=300, deadline=None)


@PROPERTY
@given(STATUSES)
def test_every_entry_written_is_canonical(entry: SinkFileStatus) -> None:
    assert SINK.fullmatch(entry.to_json())
    assert re.fullmatch(SOURCE_ENTRY, FileEntry(entry.path, entry.size, entry.block_size).to_json())


@PROPERTY
@given(st.from_regex(SINK, fullmatch=True))
def test_a_canonical_line_is_written_back_unchanged(line: str) -> None:
    lines = LogLines("p", None)  # type: ignore[arg-type]
    assert decode_sink_file_status(lines, lines.json_line(line)).to_json() == line


def test_control_characters_are_escaped_as_spark_escapes_them() -> None:
    assert json_string("a\x1f\x01\n\\u001f") == '"a\\u001F\\u0001\\n\\\\u001f"'
    assert io.dumps({"k": "\x0b"}) == '{"k":"\\u000B"}'


def entry(i: int, path: str = "") -> SinkFileStatus:
    return SinkFileStatus(f"file:///out/{path}part-{i:05d}.json", i, i % 7 == 0, 1_700_000_000_000 + i)


AWKWARD = [
    '{"path": "file:///out/spaced", "size": 1, "isDir": false, "modificationTime": 2, "blockReplication": 1, '
    '"blockSize": 3, "action": "add"}',
    '{"size":4,"path":"file:///out/reordered","isDir":false,"modificationTime":5,"blockReplication":1,'
    '"blockSize":6,"action":"add"}',
    '{"path":"file:///out/\\u00e9\\/x\\u001f","size":-0,"isDir":true,"modificationTime":7,"blockReplication":1,'
    '"blockSize":8,"action":"add"}',
]


@pytest.mark.parametrize("line_end", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("read_bytes", [1, 97, 1 << 20])
def test_compaction_writes_every_entry_as_spark_would(
    store: Store, monkeypatch: pytest.MonkeyPatch, line_end: str, read_bytes: int
) -> None:
    monkeypatch.setattr(io, "READ_BYTES", read_bytes)
    log = FileStreamSinkLog(store.manager, store.dir("out/_spark_metadata"), compact_interval=3, deletion=False)
    odd = [entry(0, 'q"\\\x01é\u2028😀 '), entry(1)]
    previous = [entry(i) for i in range(2, 40)]
    lines = [e.to_json() for e in odd] + AWKWARD + [e.to_json() for e in previous]
    store.write_raw(log.batch_path(2), ("v1" + line_end + line_end.join(lines)).encode())
    log.add(3, [entry(40)])
    store.write_raw(log.batch_path(4), ("v1" + line_end + entry(41).to_json() + line_end).encode())
    assert log.add(5, [entry(42)])
    decoded = [SinkFileStatus(**{"path": o["path"], "size": o["size"], "is_dir": o["isDir"],
                                 "modification_time": o["modificationTime"],
                                 "block_replication": o["blockReplication"], "block_size": o["blockSize"],
                                 "action": o["action"]}) for o in map(json.loads, AWKWARD)]
    expected = odd + decoded + previous + [entry(40), entry(41), entry(42)]
    assert store.read_raw(log.batch_path(5)).decode() == "v1\n" + "\n".join(e.to_json() for e in expected)
    assert log.get(5) == expected


def test_a_source_log_compaction_copies_its_lines(store: Store) -> None:
    log = FileStreamSourceLog(store.manager, store.dir("sources/0"), 2, 100, 0)
    log.add(0, [FileEntry(f"file:///in/{i}.json", i, 0) for i in range(5)])
    assert log.add(1, [FileEntry("file:///in/x.json", 9, 1)])
    expected = [FileEntry(f"file:///in/{i}.json", i, 0) for i in range(5)] + [FileEntry("file:///in/x.json", 9, 1)]
    assert store.read_raw(log.batch_path(1)).decode() == "v1\n" + "\n".join(e.to_json() for e in expected)


LINE = entry(9).to_json().encode()


@pytest.mark.parametrize(("data", "line"), [(b"v1\n" + LINE + b"\n" + (LINE + b"\n") * 4 + b"\xff", 7),
                                            (b"v1\r\n" + LINE + b"\r" + LINE + b"\n\xc3", 4)])
def test_invalid_utf8_names_its_line(store: Store, monkeypatch: pytest.MonkeyPatch, data: bytes, line: int) -> None:
    monkeypatch.setattr(io, "READ_BYTES", 4)
    log = FileStreamSinkLog(store.manager, store.dir("out/_spark_metadata"), compact_interval=3, deletion=False)
    store.write_raw(log.batch_path(2), data)
    with pytest.raises(CorruptLogError, match=f"line {line}: not valid UTF-8"):
        log.get(2)
    log.add(3, [entry(3)])
    log.add(4, [entry(4)])
    with pytest.raises(CorruptLogError, match=f"line {line}: not valid UTF-8"):
        log.add(5, [entry(5)])
    assert not store.manager.exists(log.batch_path(5))


def test_canonical_lines_of_the_previous_compaction_are_not_decoded(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = FileStreamSinkLog(store.manager, store.dir("out/_spark_metadata"), compact_interval=3, deletion=False)
    store.write_raw(log.batch_path(2), ("v1\n" + "\n".join(entry(i).to_json() for i in range(100))).encode())
    log.add(3, [entry(100)])
    log.add(4, [entry(101)])
    decoded = []
    monkeypatch.setattr(FileStreamSinkLog, "decode_entry",
                        lambda self, lines, obj: decoded.append(obj) or decode_sink_file_status(lines, obj))
    assert log.add(5, [entry(102)])
    assert len(decoded) == 2  # batches 3 and 4, read ahead for delete actions; none of 2.compact's 100
    assert log.get(5) == [entry(i) for i in range(103)]
