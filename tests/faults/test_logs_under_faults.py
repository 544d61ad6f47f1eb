"""The log layer under every fault profile: a driver's offsets and commits, a sink log with compaction, and a
FileSink, written through DirectWriteManager on a faulty embedded S3, then read back with the faults gone. No
batch lost, none duplicated, nothing partial; a restarted writer replays without duplicates."""

from __future__ import annotations

import json
import uuid

import pytest

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.log import CommitLog, CommitMetadata, FileStreamSinkLog, OffsetSeqLog, SinkFileStatus
from checkpointfs.log.offsets import OffsetSeq, OffsetSeqMetadata
from checkpointfs.sink import FileSink, committed_files
from checkpointfs.testing import EmbeddedS3, FaultPlan
from checkpointfs.testing.faults import LAG_S, PROFILES

pytestmark = pytest.mark.slow  # minutes (about 59 s on the 2-core machine): `make check` leaves it out

RETRY = RetryPolicy(max_attempts=12, initial_backoff_s=0.005, max_backoff_s=0.05, max_elapsed_s=30)
BATCHES = 8


def faulty_manager(s3: EmbeddedS3) -> DirectWriteManager:
    return DirectWriteManager(**s3.manager_options(), part_size=4096, retry=RETRY, consistency_window_s=10 * LAG_S)


def clean_manager(s3: EmbeddedS3) -> DirectWriteManager:
    return DirectWriteManager(**s3.manager_options(), part_size=4096)


@pytest.fixture(params=sorted(PROFILES))
def faulty_s3(request: pytest.FixtureRequest, embedded_s3: EmbeddedS3) -> EmbeddedS3:
    plan: FaultPlan = PROFILES[request.param](7)
    embedded_s3.faults = plan
    request.addfinalizer(lambda: print(f"{request.param}: injected {plan.kinds_injected()}"))
    return embedded_s3


def test_driver_offsets_and_commits(faulty_s3: EmbeddedS3) -> None:
    root = faulty_s3.uri(f"q-{uuid.uuid4().hex}")
    manager = faulty_manager(faulty_s3)
    offsets, commits = OffsetSeqLog(manager, f"{root}/offsets"), CommitLog(manager, f"{root}/commits")
    for batch in range(BATCHES):
        assert offsets.add(batch, OffsetSeq([json.dumps({"logOffset": batch})], OffsetSeqMetadata(0, 1000 + batch)))
        assert commits.add(batch, CommitMetadata(batch))
        assert offsets.get_latest() is not None and offsets.get_latest()[0] == batch  # type: ignore[index]
    # a restarted driver replays its last batch: refused, nothing overwritten
    restarted = OffsetSeqLog(faulty_manager(faulty_s3), f"{root}/offsets")
    assert restarted.add(BATCHES - 1, OffsetSeq(['{"logOffset":999}'], OffsetSeqMetadata(0, 1))) is False

    faulty_s3.faults = FaultPlan()
    reader = clean_manager(faulty_s3)
    got = OffsetSeqLog(reader, f"{root}/offsets").get_range(None, None)
    assert [b for b, _ in got] == list(range(BATCHES))
    assert [json.loads(seq.offsets[0])["logOffset"] for _, seq in got] == list(range(BATCHES))  # type: ignore[union-attr]
    assert [b for b, _ in CommitLog(reader, f"{root}/commits").get_range(None, None)] == list(range(BATCHES))
    assert faulty_s3.open_uploads() == []


def test_sink_log_with_compaction(faulty_s3: EmbeddedS3) -> None:
    root = faulty_s3.uri(f"out-{uuid.uuid4().hex}/_spark_metadata")
    log = FileStreamSinkLog(faulty_manager(faulty_s3), root, compact_interval=3, min_batches_to_retain=2,
                            cleanup_delay_ms=0)
    expected = set()
    for batch in range(BATCHES):
        files = [SinkFileStatus(f"s3a://checkpoints/out/part-{batch}-{i}.json", 10 + i) for i in range(3)]
        assert log.add(batch, files)
        expected |= {f.path for f in files}
    faulty_s3.faults = FaultPlan()
    live = FileStreamSinkLog(clean_manager(faulty_s3), root, compact_interval=3).all_files()
    assert sorted(f.path for f in live) == sorted(expected)  # none lost, none twice


def test_file_sink_exactly_once(faulty_s3: EmbeddedS3) -> None:
    out = faulty_s3.uri(f"sink-{uuid.uuid4().hex}")
    sink = FileSink(out, manager=faulty_manager(faulty_s3), compact_interval=3)
    for batch in range(BATCHES):
        sink.write_batch(batch, [{"batch": batch, "i": i} for i in range(5)])
    sink.close()
    # a restarted sink in a new process: it has no record of its own writes, so it must find them in the store; the
    # generous bound on waiting keeps a loaded CI machine from turning the store's 0.3 s lag into a refusal
    replay = FileSink(out, manager=faulty_manager(faulty_s3), compact_interval=3, listing_lag_s=60)
    assert replay.write_batch(BATCHES - 1, [{"batch": -1, "i": -1}]) is False  # already committed: skipped
    replay.close()

    faulty_s3.faults = FaultPlan()
    reader = clean_manager(faulty_s3)
    rows = []
    for path in committed_files(out, manager=reader):
        with reader.open(path) as f:
            rows += [json.loads(line) for line in f.read().decode().splitlines()]
    assert sorted((r["batch"], r["i"]) for r in rows) == [(b, i) for b in range(BATCHES) for i in range(5)]
    assert faulty_s3.open_uploads() == []
