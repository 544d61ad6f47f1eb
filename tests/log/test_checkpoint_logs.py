"""Offsets (v1, v2), commits and the checkpoint ``metadata`` file: byte-exact round trips of files Spark 4.3 wrote
(recorded from real runs on these machines), and bad input."""

from __future__ import annotations

import pytest

from checkpointfs.errors import CorruptLogError, UnsupportedLogVersionError
from checkpointfs.log import (
    Checkpoint,
    CommitLog,
    CommitMetadata,
    ControlBatchInfo,
    OffsetMap,
    OffsetSeq,
    OffsetSeqLog,
    OffsetSeqMetadata,
    SourceMetadataInfo,
    StreamMetadata,
)

from .conftest import Store

CONF = ('{"spark.sql.streaming.stateStore.providerClass":"org.apache.spark.sql.execution.streaming.state.'
        'HDFSBackedStateStoreProvider","spark.sql.streaming.multipleWatermarkPolicy":"min",'
        '"spark.sql.shuffle.partitions":"2"}')
SPARK_OFFSETS_V1 = ('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1795247981472,"conf":' + CONF + '}\n'
                    '{"logOffset":7}').encode()
SPARK_OFFSETS_V2 = ('v2\n{"batchWatermarkMs":0,"batchTimestampMs":1795247997811,"conf":' + CONF +
                    ',"sourceMetadataInfo":{}}\n0:{"logOffset":7}').encode()
SPARK_COMMIT_V1 = b'v1\n{"nextBatchWatermarkMs":0}'
SPARK_METADATA = b'{"id":"a8471bf4-3d7c-4a48-8fa8-d49fea5445fc"}'


@pytest.mark.parametrize("data", [SPARK_OFFSETS_V1, SPARK_OFFSETS_V2], ids=["v1", "v2"])
def test_spark_offsets_round_trip_byte_for_byte(store: Store, data: bytes) -> None:
    ck = Checkpoint(store.manager, store.dir("ck"))
    store.write_raw(ck.offsets.batch_path(7), data)
    batch = ck.offsets.get(7)
    assert batch is not None and batch.metadata is not None
    assert batch.metadata.batch_timestamp_ms in (1795247981472, 1795247997811)
    assert batch.metadata.conf["spark.sql.shuffle.partitions"] == "2"
    if batch.version == 2:
        assert isinstance(batch, OffsetMap) and batch.offsets == {"0": '{"logOffset":7}'}
        assert batch.metadata.extra == {"sourceMetadataInfo": {}}
    else:
        assert isinstance(batch, OffsetSeq) and batch.offsets == ['{"logOffset":7}']
    assert ck.offsets.add(8, batch)
    assert store.read_raw(ck.offsets.batch_path(8)) == data


def test_offsets_without_metadata_and_void_offsets(store: Store) -> None:
    log = OffsetSeqLog(store.manager, store.dir("offsets"))
    log.add(0, OffsetSeq([None, '{"a":1}', None]))
    assert store.read_raw(log.batch_path(0)) == b'v1\n\n-\n{"a":1}\n-'
    assert log.get(0) == OffsetSeq([None, '{"a":1}', None])
    log.add(1, OffsetMap({"0": None, "1": "5"}, OffsetSeqMetadata(3, 4, {"k": "v"})))
    assert store.read_raw(log.batch_path(1)) == (b'v2\n{"batchWatermarkMs":3,"batchTimestampMs":4,"conf":{"k":"v"}}'
                                                 b'\n0:-\n1:5')
    assert log.get(1) == OffsetMap({"0": None, "1": "5"}, OffsetSeqMetadata(3, 4, {"k": "v"}))


@pytest.mark.parametrize(("data", "kind", "message"), [
    (b"v1", CorruptLogError, "metadata line is missing"),
    (b"v3\n{}", UnsupportedLogVersionError, "v3 is newer than the maximum supported version v2"),
    (b"v2\n\nno-colon", CorruptLogError, "expected '<sourceId>:<offset>'"),
    (b'v1\n\n{"logOffset":', CorruptLogError, "line 3: not valid JSON"),
    (b'v1\n{"batchWatermarkMs":"x"}', CorruptLogError, "batchWatermarkMs"),
    (b"", CorruptLogError, "empty"),
    (b'v2\n{"sourceMetadataInfo":[]}\n', CorruptLogError, "'sourceMetadataInfo' must be an object"),
    (b'v2\n{"sourceMetadataInfo":{"a":{"sourceId":"a"}}}\n', CorruptLogError,
     "sourceMetadataInfo\\['a'\\] must have string fields"),
    (b'v2\n{"controlBatchInfo":{"operationInfo":"x"}}\n', CorruptLogError, "'controlBatchInfo' must be an object"),
])
def test_bad_offsets(store: Store, data: bytes, kind: type[Exception], message: str) -> None:
    log = OffsetSeqLog(store.manager, store.dir("offsets"))
    store.write_raw(log.batch_path(0), data)
    with pytest.raises(kind, match=message):
        log.get(0)
    assert store.read_raw(log.batch_path(0)) == data


def test_commits_v1_v2_and_a_missing_json_line(store: Store) -> None:
    log = CommitLog(store.manager, store.dir("commits"))
    store.write_raw(log.batch_path(0), SPARK_COMMIT_V1)
    assert log.get(0) == CommitMetadata(0)
    store.write_raw(log.batch_path(1), b"v1 \n")  # Spark trims the commit log's version line
    assert log.get(1) == CommitMetadata(0)
    v2 = CommitMetadata(7, 2, {"0": [["a", "b"]]})
    log.add(2, v2)
    assert store.read_raw(log.batch_path(2)) == b'v2\n{"nextBatchWatermarkMs":7,"stateUniqueIds":{"0":[["a","b"]]}}'
    assert log.get(2) == v2
    with pytest.raises(ValueError):
        CommitMetadata(1, 1, {"0": []})


def test_the_metadata_file(store: Store) -> None:
    ck = Checkpoint(store.manager, store.dir("ck"))
    assert ck.metadata() is None
    metadata = StreamMetadata("a8471bf4-3d7c-4a48-8fa8-d49fea5445fc")
    assert ck.write_metadata(metadata)
    assert store.read_raw(store.dir("ck/metadata")) == SPARK_METADATA
    assert ck.write_metadata(StreamMetadata.new()) is False
    assert ck.metadata() == metadata


@pytest.mark.parametrize("data", [b"", b'{"id":', b"[]", b'{"id":5}', b"\xff"])
def test_a_bad_metadata_file(store: Store, data: bytes) -> None:
    ck = Checkpoint(store.manager, store.dir("ck"))
    store.write_raw(store.dir("ck/metadata"), data)
    with pytest.raises(CorruptLogError) as caught:
        ck.metadata()
    assert caught.value.path == store.dir("ck/metadata")


SOURCE_INFO = ('{"left":{"sourceId":"left","providerName":"FileStreamSource","apiVersion":"DSv1"}}')
POPULATED_V2 = ('v2\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{},"sourceMetadataInfo":' + SOURCE_INFO +
                ',"controlBatchInfo":{"operationType":"addSource","operationInfo":"left"}}\nleft:{"logOffset":0}')


def test_offsets_v2_source_metadata_and_control_batch(store: Store) -> None:
    """Version 2's ``sourceMetadataInfo`` and ``controlBatchInfo`` as Spark's classes define them (Spark 4.2.1 and
    4.3.0 write the first empty and never the second): read as typed values and written back byte for byte."""
    ck = Checkpoint(store.manager, store.dir("ck"))
    store.write_raw(ck.offsets.batch_path(0), POPULATED_V2.encode())
    batch = ck.offsets.get(0)
    assert isinstance(batch, OffsetMap) and batch.metadata is not None
    assert batch.metadata.source_metadata == {"left": SourceMetadataInfo("left", "FileStreamSource", "DSv1")}
    assert batch.metadata.control_batch == ControlBatchInfo("addSource", "left")
    assert ck.offsets.add(1, batch)
    assert store.read_raw(ck.offsets.batch_path(1)) == POPULATED_V2.encode()
