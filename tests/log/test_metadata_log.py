"""MetadataLog (HDFSMetadataLog) behaviour on both stores, with CommitLog as the concrete log."""

from __future__ import annotations

import threading

import pytest

from checkpointfs import DirectWriteManager
from checkpointfs.errors import CorruptLogError, PathNotFoundError, UnsupportedLogVersionError
from checkpointfs.log import CommitLog, CommitMetadata
from checkpointfs.testing import EmbeddedS3
from harness.servers.store_check import pass_store_check

from .conftest import Store


def commit(watermark: int) -> CommitMetadata:
    return CommitMetadata(watermark)


def test_add_get_and_the_file_format(store: Store) -> None:
    log = CommitLog(store.manager, store.dir("commits"))
    assert log.add(0, commit(5)) is True
    assert store.read_raw(log.batch_path(0)) == b'v1\n{"nextBatchWatermarkMs":5}'
    assert log.get(0) == commit(5)
    assert log.get(1) is None
    assert log.get_latest() == (0, commit(5))


def test_add_of_an_existing_batch_returns_false_and_never_overwrites(store: Store) -> None:
    log = CommitLog(store.manager, store.dir("commits"))
    assert log.add(3, commit(1))
    assert log.add(3, commit(2)) is False
    assert log.get(3) == commit(1)


def test_a_race_is_settled_by_the_store(store: Store) -> None:
    logs = [CommitLog(store.manager, store.dir("commits")) for _ in range(8)]
    results: list[bool] = [False] * len(logs)
    barrier = threading.Barrier(len(logs))

    def run(i: int) -> None:
        barrier.wait()
        results[i] = logs[i].add(0, commit(i))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(logs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(results) == 1
    assert logs[0].get(0) == commit(results.index(True))


def test_on_s3_an_add_is_one_put_and_a_get_one_get(embedded_s3: EmbeddedS3) -> None:
    manager = DirectWriteManager(**embedded_s3.manager_options())
    log = CommitLog(manager, embedded_s3.uri("ck/commits"))
    pass_store_check(manager, embedded_s3.uri("ck/commits/0"))  # the process's first create-if-absent pays it
    embedded_s3.requests.clear()
    log.add(0, commit(0))
    assert embedded_s3.requests.counts() == {"PutObject": 1}
    embedded_s3.requests.clear()
    assert log.add(0, commit(1)) is False
    assert embedded_s3.requests.counts() == {"PutObject": 1}  # refused by If-None-Match, no exists() before
    embedded_s3.requests.clear()
    assert log.get(0) == commit(0)
    assert embedded_s3.requests.counts() == {"GetObject": 1}


def test_a_failing_writer_leaves_nothing(store: Store) -> None:
    log = CommitLog(store.manager, store.dir("commits"))

    def fill(out: object) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        log.add_by_writer(0, fill)  # type: ignore[arg-type]
    assert log.batch_ids() == []
    assert log.add(0, commit(1))


def test_ranges_latest_and_holes(store: Store) -> None:
    log = CommitLog(store.manager, store.dir("commits"))
    for i in range(5):
        log.add(i, commit(i))
    assert [b for b, _ in log.get_range(1, 3)] == [1, 2, 3]
    assert [b for b, _ in log.get_range(None, 1)] == [0, 1]
    assert [b for b, _ in log.get_range(3, None)] == [3, 4]
    with pytest.raises(PathNotFoundError, match="batch 7 does not exist"):
        log.get_range(3, 7)
    store.manager.delete(log.batch_path(2))
    with pytest.raises(CorruptLogError, match="batches 2 are missing"):
        log.get_range(0, 4)
    assert log.latest_batch_id() == 4


def test_purge_and_purge_after(store: Store) -> None:
    log = CommitLog(store.manager, store.dir("commits"))
    for i in range(10):
        log.add(i, commit(i))
    log.purge(2)
    assert log.batch_ids() == list(range(2, 10))
    log.purge(7)
    assert log.batch_ids() == list(range(7, 10))
    log.purge_after(8)
    assert log.batch_ids() == [7, 8]


def test_names_that_are_not_batch_ids_are_ignored(store: Store) -> None:
    log = CommitLog(store.manager, store.dir("commits"))
    log.add(0, commit(0))
    for name in (".0.crc", ".1.9f3e.tmp", "_SUCCESS", "notes", "1.compact"):
        store.write_raw(store.dir(f"commits/{name}"), b"garbage")
    store.write_raw(store.dir("commits/7/inside"), b"a directory named like a batch")
    assert log.batch_ids() == [0]
    assert log.get_latest() == (0, commit(0))
    assert sorted(store.names(store.dir("commits"))) == sorted([".0.crc", ".1.9f3e.tmp", "0", "1.compact", "7",
                                                               "_SUCCESS", "notes"])


BAD_FILES = [
    (b"", CorruptLogError, "empty"),
    (b"v1\n{\"nextBatchWatermarkMs\":", CorruptLogError, "line 2: not valid JSON"),
    (b"v1\n[1, 2]", CorruptLogError, "line 2: expected a JSON object"),
    (b"v1\n{\"nextBatchWatermarkMs\":\"5\"}", CorruptLogError, "must be an integer"),
    (b"v4\n{}", UnsupportedLogVersionError, "v4 is newer than the maximum supported version v3"),
    (b"v\n{}", CorruptLogError, "malformed version line"),
    (b"x1\n{}", CorruptLogError, "malformed version line"),
    (b"v-1\n{}", CorruptLogError, "malformed version line"),
    (b"v0\n{}", CorruptLogError, "malformed version line"),
    (b"v1x\n{}", CorruptLogError, "malformed version line"),
    (b"v1\n\xff\xfe", CorruptLogError, "not valid UTF-8"),
]


@pytest.mark.parametrize(("data", "kind", "message"), BAD_FILES)
def test_bad_batch_files_raise_a_clear_error_and_change_nothing(
    store: Store, data: bytes, kind: type[Exception], message: str
) -> None:
    log = CommitLog(store.manager, store.dir("commits"))
    log.add(0, commit(0))
    store.write_raw(log.batch_path(1), data)
    with pytest.raises(kind, match=message) as caught:
        log.get(1)
    assert caught.value.path == log.batch_path(1)  # type: ignore[attr-defined]
    with pytest.raises(kind):
        log.get_latest()
    assert log.add(1, commit(9)) is False
    assert store.read_raw(log.batch_path(1)) == data
    assert log.batch_ids() == [0, 1]


def test_read_only_does_not_create_the_directory(store: Store) -> None:
    CommitLog(store.manager, store.dir("absent"), read_only=True)
    assert not store.manager.exists(store.dir("absent"))
