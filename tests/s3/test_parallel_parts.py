"""DirectWriteManager's concurrent multipart parts: how many are in flight at the server, the memory bound, parts
finishing out of order, a part that fails, and a cancel while parts are in flight; on the embedded S3."""

from __future__ import annotations

import os
import threading
import time

import pytest

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.errors import StoreUnavailableError
from checkpointfs.testing import EmbeddedS3, Fault, FaultPlan
from checkpointfs.testing.faults import Latency
from checkpointfs.testing.requests import Request
from harness.servers.store_check import pass_store_check

PART = 4096
FAST = RetryPolicy(max_attempts=4, initial_backoff_s=0.01, max_backoff_s=0.05, max_elapsed_s=10)
SLOW_STORE = Latency(per_request_s=0.05)
"""Every request takes 50 ms at the server, so that parts overlap there whenever the client sends them together."""


def manager(s3: EmbeddedS3, inflight: int, **options: object) -> DirectWriteManager:
    """A manager on ``s3`` whose store check (PutObject and multipart) already passed, its requests forgotten: the
    tests count and fault the parts of their own files."""
    settings: dict[str, object] = {"part_size": PART, "max_inflight_parts": inflight, "retry": FAST,
                                   **s3.manager_options(), **options}
    m = DirectWriteManager(**settings)  # type: ignore[arg-type]
    pass_store_check(m, s3.uri("ck/x"), multipart=True)
    s3.requests.clear()
    return m


def get(s3: EmbeddedS3, key: str) -> bytes:
    body: bytes = s3.client(admin=True).get_object(Bucket="checkpoints", Key=key)["Body"].read()
    return body


def part_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("checkpointfs-part")]


def answered_parts(s3: EmbeddedS3) -> list[int]:
    """Part numbers of the UploadParts the server answered with success, in the order it answered them."""
    return [r.part for r in s3.requests.all() if r.operation == "UploadPart" and r.status == 200]


@pytest.mark.parametrize("inflight", [1, 3])
def test_parts_are_in_flight_together_up_to_the_bound(embedded_s3: EmbeddedS3, inflight: int) -> None:
    s3 = embedded_s3
    s3.faults = FaultPlan(latency=SLOW_STORE)
    data = os.urandom(PART * 8 + 100)
    with manager(s3, inflight).create_atomic(s3.uri("ck/state/1.snapshot")) as out:
        out.write(data)
    peak = s3.requests.peak_in_flight("UploadPart")
    assert peak == 1 if inflight == 1 else 1 < peak <= inflight
    assert s3.requests.counts() == {"CreateMultipartUpload": 1, "UploadPart": 9, "CompleteMultipartUpload": 1}
    assert get(s3, "ck/state/1.snapshot") == data
    assert sorted(answered_parts(s3)) == list(range(1, 10))
    assert part_threads() == []


@pytest.mark.parametrize("chunk", [100, PART, PART * 3 + 7, PART * 20])
def test_stream_holds_at_most_inflight_plus_one_parts(embedded_s3: EmbeddedS3, chunk: int) -> None:
    """Sampled from another thread while write() runs, in small chunks and in one call of the whole file."""
    s3 = embedded_s3
    s3.faults = FaultPlan(latency=SLOW_STORE)
    inflight = 3
    data = os.urandom(PART * 20)
    out = manager(s3, inflight).create_atomic(s3.uri("ck/state/2.snapshot"))
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(out.buffered_bytes)  # type: ignore[attr-defined]
            time.sleep(0.001)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        for start in range(0, len(data), chunk):
            out.write(data[start:start + chunk])
            samples.append(out.buffered_bytes)  # type: ignore[attr-defined]
        out.close()
    finally:
        done.set()
        sampler.join()
    assert max(samples) <= (inflight + 1) * PART
    assert max(samples) >= 2 * PART  # parts were in flight while the next one filled: the bound was exercised
    assert out.buffered_bytes == 0  # type: ignore[attr-defined]
    assert get(s3, "ck/state/2.snapshot") == data


def test_parts_finishing_out_of_order_make_the_file_in_order(embedded_s3: EmbeddedS3) -> None:
    """Part 1 is refused once, and only after two later parts landed; its retry lands after them."""
    s3 = embedded_s3
    later_parts = [0]

    def others_landed(request: Request) -> bool:
        later_parts[0] += request.operation == "UploadPart" and request.status == 200
        return later_parts[0] == 2

    def hold_until_others_landed() -> None:
        assert s3.requests.wait_for(others_landed, timeout=10)[0] is not None

    m = manager(s3, 4)
    s3.faults.add(Fault("server-error", frozenset({"UploadPart"}), times=1, then=hold_until_others_landed))
    data = os.urandom(PART * 3 + 10)
    out = m.create_atomic(s3.uri("ck/state/3.snapshot"))
    out.write(data[:PART + 1])  # part 1 is the only one sent: it is the one refused
    deadline = time.monotonic() + 10
    while not s3.faults.injected and time.monotonic() < deadline:
        time.sleep(0.005)
    assert [i.operation for i in s3.faults.injected] == ["UploadPart"]
    out.write(data[PART + 1:])
    out.close()
    answered = answered_parts(s3)
    assert answered.index(1) >= 2 and sorted(answered) == [1, 2, 3, 4]  # part 1 landed after two later parts
    assert get(s3, "ck/state/3.snapshot") == data
    assert s3.open_uploads() == []


@pytest.mark.parametrize("fail_at", ["write", "close"])
def test_a_failing_part_fails_the_write_and_leaves_nothing(embedded_s3: EmbeddedS3, fail_at: str) -> None:
    s3 = embedded_s3
    s3.faults.add(Fault("server-error", frozenset({"UploadPart"}), key_pattern="ck/state/4"))
    path = s3.uri("ck/state/4.snapshot")
    out = manager(s3, 2).create_atomic(path)
    with pytest.raises(StoreUnavailableError) as raised:
        if fail_at == "write":  # more parts than slots: write waits for a slot and meets the failure
            out.write(os.urandom(PART * 10))
        else:  # two parts, both in flight at once: write returns, close meets the failure
            out.write(os.urandom(PART * 2 + 1))
            out.close()
    assert path in str(raised.value) and "upload_part" in str(raised.value)
    if fail_at == "write":
        with pytest.raises(StoreUnavailableError):
            out.close()  # a close after the failure raises it too, and aborts
    assert s3.keys() == [] and s3.open_uploads() == []
    counts = s3.requests.counts()
    assert counts["AbortMultipartUpload"] == 1 and "CompleteMultipartUpload" not in counts
    assert part_threads() == []


@pytest.mark.parametrize("strategy", ["abort", "close-then-delete"])
def test_cancel_with_parts_in_flight_leaves_nothing(embedded_s3: EmbeddedS3, strategy: str) -> None:
    s3 = embedded_s3
    s3.faults = FaultPlan(latency=Latency(per_request_s=0.2))
    out = manager(s3, 4, abort_strategy=strategy).create_atomic(s3.uri("ck/state/5.delta"))
    out.write(os.urandom(PART * 4 + 1))  # four parts sent, none answered yet
    assert out.buffered_bytes > PART  # type: ignore[attr-defined]
    out.cancel()
    assert s3.keys() == [] and s3.open_uploads() == []
    operations = [r.operation for r in s3.requests.all()]
    parts = operations.count("UploadPart")
    assert 1 <= parts <= 4
    if strategy == "abort":
        assert operations[-1] == "AbortMultipartUpload"  # after every part was answered: none can land later
        assert "CompleteMultipartUpload" not in operations
    else:
        assert operations[-2:] == ["CompleteMultipartUpload", "DeleteObject"] and parts == 4
    assert part_threads() == []


def test_cancel_sends_no_further_attempt_of_a_failing_part(embedded_s3: EmbeddedS3) -> None:
    """A part being retried is abandoned by cancel: the backoff is cut short and no attempt follows."""
    s3 = embedded_s3
    patient = RetryPolicy(max_attempts=50, initial_backoff_s=2.0, max_backoff_s=2.0, max_elapsed_s=120)
    m = manager(s3, 2, retry=patient)
    s3.faults.add(Fault("slowdown", frozenset({"UploadPart"})))
    out = m.create_atomic(s3.uri("ck/state/6.delta"))
    out.write(os.urandom(PART + 1))
    assert s3.requests.wait_for(lambda r: r.operation == "UploadPart", timeout=10)[0] is not None
    out.cancel()  # returns without waiting out the 2 s backoffs of up to 50 attempts
    counts = s3.requests.counts()
    assert counts["UploadPart"] <= 2 and counts["AbortMultipartUpload"] == 1
    assert s3.keys() == [] and s3.open_uploads() == []


def test_max_inflight_parts_is_validated_and_reaches_the_stream(embedded_s3: EmbeddedS3) -> None:
    with pytest.raises(ValueError, match="max_inflight_parts"):
        manager(embedded_s3, 0)
    from checkpointfs import manager_for

    m = manager_for(embedded_s3.uri("ck"), **embedded_s3.manager_options(), max_inflight_parts=7)
    assert isinstance(m, DirectWriteManager) and m.max_inflight_parts == 7
