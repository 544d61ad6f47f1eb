"""CompactibleLog through FileStreamSinkLog and FileStreamSourceLog: compaction, interval re-derivation, deletion,
retention, delete actions, and bad input."""

from __future__ import annotations

import pytest

from checkpointfs.clock import system_clock
from checkpointfs.errors import CorruptLogError, PathNotFoundError
from checkpointfs.log import DELETE, FileEntry, FileStreamSinkLog, FileStreamSourceLog, SinkFileStatus

from .conftest import Store

NOW = system_clock()


class Clock:
    """The real clock (ms), moved forward by ``ahead``."""

    def __init__(self) -> None:
        self.ahead = 0

    def __call__(self) -> int:
        return system_clock() + self.ahead


def status(name: str, mtime: int = NOW, action: str = "add") -> SinkFileStatus:
    return SinkFileStatus(f"file:///out/{name}", 10, False, mtime, 1, 33554432, action)


def sink_log(store: Store, **options: object) -> FileStreamSinkLog:
    options.setdefault("clock", Clock())
    return FileStreamSinkLog(store.manager, store.dir("out/_spark_metadata"), **options)  # type: ignore[arg-type]


def test_compaction_files_hold_every_live_entry(store: Store) -> None:
    log = sink_log(store, compact_interval=3)
    for batch in range(6):
        assert log.add(batch, [status(f"b{batch}")])
    assert log.batch_ids() == list(range(6))
    assert sorted(store.names(log.path)) == ["0", "1", "2.compact", "3", "4", "5.compact"]
    assert [s.path for s in log.get(5) or []] == [f"file:///out/b{i}" for i in range(6)]
    expected = "v1\n" + "\n".join(status(f"b{i}").to_json() for i in range(3))
    assert store.read_raw(log.batch_path(2)).decode() == expected
    log.add(6, [status("b6")])
    assert [s.path for s in log.all_files()] == [f"file:///out/b{i}" for i in range(7)]


def test_the_sink_entry_is_byte_for_byte_spark_s() -> None:
    entry = SinkFileStatus("file:///tmp/out%20dir/part-00000-0b1c-c000.json", 18, False, 1795247979626, 1, 33554432,
                           "add")
    assert entry.to_json() == ('{"path":"file:///tmp/out%20dir/part-00000-0b1c-c000.json","size":18,"isDir":false,'
                               '"modificationTime":1795247979626,"blockReplication":1,"blockSize":33554432,'
                               '"action":"add"}')
    assert FileEntry("file:///in/a.json", 1587218148000, 0).to_json() == (
        '{"path":"file:///in/a.json","timestamp":1587218148000,"batchId":0}')


def test_the_interval_is_re_derived_from_existing_compact_files(store: Store) -> None:
    log = sink_log(store, compact_interval=3, deletion=False)
    for batch in range(9):
        log.add(batch, [status(f"b{batch}")])
    reopened = sink_log(store, compact_interval=10)
    assert reopened.compact_interval == 3  # two or more .compact files: their distance
    reopened.add(9, [status("b9")])
    assert "9" in store.names(log.path) and "9.compact" not in store.names(log.path)


def test_a_single_compact_file_derives_the_interval_as_spark_does(store: Store) -> None:
    log = sink_log(store, compact_interval=3, min_batches_to_retain=2, cleanup_delay_ms=0)
    for batch in range(8):
        log.add(batch, [status(f"b{batch}")])
    assert sorted(store.names(log.path)) == ["5.compact", "6", "7"]  # Spark 4.3 left exactly these
    reopened = sink_log(store, compact_interval=3, min_batches_to_retain=2, cleanup_delay_ms=0)
    assert reopened.compact_interval == 6  # what Spark 4.3 derives from a lone 5.compact with default 3
    for batch in range(8, 12):
        reopened.add(batch, [status(f"b{batch}")])
    assert sorted(store.names(log.path)) == ["10", "11.compact", "5.compact", "6", "7", "8", "9"]
    assert len(reopened.all_files()) == 12


def test_deletion_respects_the_cleanup_delay_and_the_switch(store: Store) -> None:
    clock = Clock()
    log = sink_log(store, compact_interval=3, min_batches_to_retain=2, cleanup_delay_ms=3_600_000, clock=clock)
    for batch in range(8):
        log.add(batch, [status(f"b{batch}")])
    assert len(store.names(log.path)) == 8  # nothing is an hour old yet
    clock.ahead += 2 * 3_600_000
    log.add(8, [status("b8")])  # 8.compact; first compaction batch keeping 2 batches is 5: delete below 5
    assert sorted(store.names(log.path)) == ["5.compact", "6", "7", "8.compact"]

    off = FileStreamSinkLog(store.manager, store.dir("off/_spark_metadata"), 3, 2, 0, False, clock=clock)
    for batch in range(9):
        off.add(batch, [status(f"b{batch}")])
    assert len(store.names(off.path)) == 9


def test_retention_applies_at_compaction_and_in_all_files(store: Store) -> None:
    clock = Clock()
    log = sink_log(store, compact_interval=3, retention_ms=60_000, clock=clock)
    now = clock()
    log.add(0, [status("old", mtime=now - 120_000)])
    log.add(1, [status("new", mtime=now)])
    assert [s.path for s in log.all_files()] == ["file:///out/new"]
    log.add(2, [status("newer", mtime=now)])
    assert [s.path for s in log.get(2) or []] == ["file:///out/new", "file:///out/newer"]
    clock.ahead += 120_000
    assert log.all_files() == []


def test_delete_actions_are_honoured_and_compacted_away(store: Store) -> None:
    log = sink_log(store, compact_interval=3)
    log.add(0, [status("a"), status("b")])
    log.add(1, [status("a", action=DELETE), status("c")])
    assert [s.path for s in log.all_files()] == ["file:///out/b", "file:///out/c"]
    log.add(2, [status("a")])  # re-added after the delete: live again
    assert [s.path for s in log.get(2) or []] == ["file:///out/b", "file:///out/c", "file:///out/a"]
    log.add(3, [status("b", action=DELETE)])
    log.add(4, [])
    log.add(5, [])
    assert [s.path for s in log.get(5) or []] == ["file:///out/c", "file:///out/a"]


def test_a_compact_file_whose_predecessors_are_gone_reads_fine(store: Store) -> None:
    log = sink_log(store, compact_interval=3, min_batches_to_retain=1, cleanup_delay_ms=0)
    for batch in range(7):
        log.add(batch, [status(f"b{batch}")])
    assert sorted(store.names(log.path)) == ["5.compact", "6"]
    assert log.get(3) is None
    assert len(log.all_files()) == 7
    assert [b for b, _ in log.get_range(5, 6)] == [5, 6]


def test_a_missing_predecessor_stops_the_compaction_and_writes_nothing(store: Store) -> None:
    log = sink_log(store, compact_interval=3, deletion=False)
    for batch in range(5):
        log.add(batch, [status(f"b{batch}")])
    store.manager.delete(log.batch_path(3))
    before = sorted(store.names(log.path))
    with pytest.raises(CorruptLogError, match="batch 3 is missing, and the compaction of batch 5 needs it") as e:
        log.add(5, [status("b5")])
    assert e.value.path == log.batch_path(3)
    assert sorted(store.names(log.path)) == before
    with pytest.raises(CorruptLogError, match="batch file missing"):
        log.all_files()


def test_a_corrupt_predecessor_stops_the_compaction_and_writes_nothing(store: Store) -> None:
    log = sink_log(store, compact_interval=3, deletion=False)
    log.add(0, [status("b0")])
    store.write_raw(log.batch_path(1), b'v1\n{"path":"file:///out/b1","size":1')
    with pytest.raises(CorruptLogError, match="line 2: not valid JSON"):
        log.add(2, [status("b2")])
    assert sorted(store.names(log.path)) == ["0", "1"]


def test_a_field_of_the_wrong_type_or_missing_is_refused(store: Store) -> None:
    log = sink_log(store)
    store.write_raw(log.batch_path(0), b'v1\n{"path":"p","size":1,"isDir":"no","modificationTime":0,'
                                       b'"blockReplication":1,"blockSize":1,"action":"add"}')
    with pytest.raises(CorruptLogError, match="field 'isDir' must be bool"):
        log.get(0)
    store.write_raw(log.batch_path(1), b'v1\n{"path":"p"}')
    with pytest.raises(CorruptLogError, match="missing field 'size'"):
        log.get(1)
    store.write_raw(log.batch_path(2), b"v2\n")
    with pytest.raises(CorruptLogError, match="newer than the maximum supported version v1"):
        log.get(2)


def test_purge_is_refused_and_an_existing_compaction_is_not_redone(store: Store) -> None:
    log = sink_log(store, compact_interval=2)
    log.add(0, [status("a")])
    assert log.add(1, [status("b")])
    assert log.add(1, [status("c")]) is False
    assert [s.path for s in log.get(1) or []] == ["file:///out/a", "file:///out/b"]
    with pytest.raises(NotImplementedError):
        log.purge(1)


def test_an_interval_of_one_compacts_every_batch(store: Store) -> None:
    log = sink_log(store, compact_interval=1, deletion=False)
    for batch in range(3):
        log.add(batch, [status(f"b{batch}")])
    assert sorted(store.names(log.path)) == ["0.compact", "1.compact", "2.compact"]
    assert len(log.get(2) or []) == 3


def test_source_log_batches_survive_their_files(store: Store) -> None:
    log = FileStreamSourceLog(store.manager, store.dir("sources/0"), 3, 1, 0)
    for batch in range(7):
        log.add(batch, [FileEntry(f"file:///in/{batch}-{i}.json", NOW + batch, batch) for i in range(2)])
    assert sorted(store.names(log.path)) == ["5.compact", "6"]
    ranged = dict(log.get_range(1, 6))
    assert [e.path for e in ranged[1]] == ["file:///in/1-0.json", "file:///in/1-1.json"]
    assert [e.batch_id for e in ranged[5]] == [5, 5]  # a compaction batch yields only its own entries
    assert len(log.all_files()) == 14
    with pytest.raises(PathNotFoundError, match="batch 8 does not exist"):
        log.get_range(1, 8)


def test_compaction_on_s3_reads_each_input_once_and_writes_once(store: Store) -> None:
    if store.s3 is None:
        return
    log = sink_log(store, compact_interval=3, deletion=False)
    log.add(0, [status("a")])
    log.add(1, [status("b")])
    store.s3.requests.clear()
    log.add(2, [status("c")])
    assert store.s3.requests.counts() == {"PutObject": 1}  # its inputs: published by this manager, read from memory
    log.add(3, [status("d", action=DELETE)])
    log.add(4, [status("e")])
    store.s3.requests.clear()
    log.add(5, [status("f")])  # with a delete to apply, still one read per input
    assert store.s3.requests.counts() == {"PutObject": 1}  # its inputs: published by this manager, read from memory
    assert [s.path for s in log.all_files()] == [f"file:///out/{n}" for n in "abcef"]
