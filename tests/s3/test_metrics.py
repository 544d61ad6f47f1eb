"""DirectWriteManager.metrics: every counter of protocol.json's metrics table driven by the situation it counts, on
the embedded S3 with faults injected at the server; requests per operation as the server saw them; and the WARN and
INFO lines an operator reads (checkpointfs.events)."""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections import Counter

import pytest

from checkpointfs import DirectWriteManager, RenameBasedManager
from checkpointfs.errors import (
    FileAlreadyExistsError,
    StoreUnavailableError,
    UnsafeStoreError,
    WriteOutcomeUnknownError,
)
from checkpointfs.metrics import snapshot_names
from checkpointfs.protocol.metrics import COUNTERS, METRICS, OPERATIONS
from checkpointfs.testing import EmbeddedS3, Fault
from checkpointfs.testing.requests import Request
from harness.servers.store_check import MULTIPART_CHECK_REQUESTS, PUT_CHECK_REQUESTS

from .managers import FAST, PART, manager, put


def nonzero(m: DirectWriteManager) -> dict[str, float]:
    """The counters that moved (timers' own values left out: they are checked where they matter)."""
    return {k: v for k, v in m.metrics.snapshot().items() if v and ".latency" not in k}


def warnings_of(caplog: pytest.LogCaptureFixture, start: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING and r.getMessage().startswith(start)]


# -- the names -----------------------------------------------------------------------------------------------------
def test_both_managers_show_every_name_of_the_table_at_zero(s3: EmbeddedS3) -> None:
    direct = DirectWriteManager(**s3.manager_options()).metrics.snapshot()
    rename = RenameBasedManager().metrics.snapshot()
    assert list(direct) == list(rename) == list(snapshot_names())
    assert set(METRICS) <= set(direct) and set(direct) - set(METRICS) == {
        f"{op}.latency.{field}" for op in OPERATIONS for field in ("min", "max", "mean")}
    assert not any(direct.values()) and not any(rename.values())


def test_an_unknown_name_is_refused_with_the_known_ones() -> None:
    metrics = DirectWriteManager().metrics
    with pytest.raises(KeyError, match="createIfAbsent"):
        metrics["createIfAbsent.request"]
    with pytest.raises(KeyError, match="conflicts"):
        metrics.count("conflict")


# -- one test per counter ------------------------------------------------------------------------------------------
def test_conflicts_two_managers_racing_one_key(s3: EmbeddedS3, caplog: pytest.LogCaptureFixture) -> None:
    managers = [manager(s3), manager(s3)]
    streams = [m.create_atomic(s3.uri("ck/offsets/12")) for m in managers]
    for i, out in enumerate(streams):
        out.write(b"v1\n{}" + bytes([i]))
    barrier = threading.Barrier(2)
    lost: list[int] = []

    def close(i: int) -> None:
        barrier.wait()
        try:
            streams[i].close()
        except FileAlreadyExistsError:
            lost.append(i)

    caplog.set_level(logging.WARNING, logger="checkpointfs")
    threads = [threading.Thread(target=close, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (loser,) = lost
    winner = 1 - loser
    assert nonzero(managers[loser]) == {"createIfAbsent.calls": 1, "createIfAbsent.requests": 1,
                                        "createIfAbsent.failures": 1, "conflicts": 1}
    assert nonzero(managers[winner]) == {"createIfAbsent.calls": 1, "createIfAbsent.requests": 1,
                                         "createIfAbsent.bytesWritten": 6}
    (record,) = warnings_of(caplog, "conflict:")
    message = record.getMessage()
    write_id = streams[loser].write_id  # type: ignore[attr-defined]
    assert (f"[checkpoint={s3.uri('ck')} file={s3.uri('ck/offsets/12')} batch=12 write_id={write_id}]"
            in message)
    assert (record.checkpoint, record.batch, record.write_id) == (s3.uri("ck"), 12, write_id)  # type: ignore[attr-defined]


def test_ambiguous_settled_a_lost_answer_read_back(s3: EmbeddedS3, caplog: pytest.LogCaptureFixture) -> None:
    m = manager(s3)
    s3.faults.add(Fault("lost-response", frozenset({"PutObject"}), times=1))
    caplog.set_level(logging.WARNING, logger="checkpointfs")
    out = m.create_atomic(s3.uri("ck/commits/3"))
    out.write(b"v1\n{}")
    out.close()
    # the lost PUT, its retry (412: our own write), the HEAD that read our write id back
    assert nonzero(m) == {"createIfAbsent.calls": 1, "createIfAbsent.requests": 3, "createIfAbsent.bytesWritten": 5,
                          "retries": 1, "ambiguousSettled": 1}
    (record,) = warnings_of(caplog, "ambiguous answer settled")
    assert "carries this write's id, so the create succeeded" in record.getMessage()
    assert f"batch=3 write_id={out.write_id}]" in record.getMessage()  # type: ignore[attr-defined]


def test_unknown_outcome_when_the_write_id_cannot_be_read(s3: EmbeddedS3, caplog: pytest.LogCaptureFixture) -> None:
    m = manager(s3)
    s3.faults.add(Fault("lost-response", frozenset({"PutObject"}), times=1))
    s3.faults.add(Fault("server-error", frozenset({"HeadObject"})))
    caplog.set_level(logging.WARNING, logger="checkpointfs")
    out = m.create_atomic(s3.uri("ck/state/0/4/7.delta"))
    out.write(b"delta")
    with pytest.raises(WriteOutcomeUnknownError):
        out.close()
    counts = nonzero(m)
    assert (counts["unknownOutcomes"], counts["createIfAbsent.failures"], counts.get("ambiguousSettled", 0)) == (
        1, 1, 0)
    assert counts["createIfAbsent.requests"] == 2 + FAST.max_attempts  # the PUT twice, the HEAD's attempts
    (record,) = warnings_of(caplog, "unknown outcome")
    assert (f"[checkpoint={s3.uri('ck')} file={s3.uri('ck/state/0/4/7.delta')} version=7 "
            f"write_id={out.write_id}]") in record.getMessage()  # type: ignore[attr-defined]


def test_cancels_and_aborted_uploads_a_large_stream_cancelled(s3: EmbeddedS3) -> None:
    m = manager(s3)
    out = m.create_atomic(s3.uri("ck/state/0/0/5.snapshot"))
    out.write(os.urandom(PART * 2 + 1))
    out.cancel()
    assert s3.open_uploads() == []
    assert nonzero(m) == {"createIfAbsent.calls": 1, "cancels": 1, "abortedUploads": 1,
                          "createIfAbsent.requests": len(s3.requests)}  # create, 2 parts, abort
    assert len(s3.requests) == 4
    assert m.metrics["createIfAbsent.latency"] == 1


def test_orphan_uploads_cleaned_after_a_lost_create_answer(s3: EmbeddedS3, caplog: pytest.LogCaptureFixture) -> None:
    m = manager(s3)
    s3.faults.add(Fault("lost-response", frozenset({"CreateMultipartUpload"}), times=1))
    caplog.set_level(logging.WARNING, logger="checkpointfs")
    out = m.create_atomic(s3.uri("ck/state/1/2/9.zip"))
    out.write(os.urandom(PART * 2 + 5))
    out.close()
    assert s3.open_uploads() == []
    counts = nonzero(m)
    assert (counts["orphanUploadsCleaned"], counts["retries"], counts.get("abortedUploads", 0)) == (1, 1, 0)
    assert counts["createIfAbsent.requests"] == len(s3.requests)
    (record,) = warnings_of(caplog, "orphan upload cleaned")
    assert f"version=9 write_id={out.write_id}]" in record.getMessage()  # type: ignore[attr-defined]


def test_retries_and_throttled_slow_down_answers(s3: EmbeddedS3) -> None:
    m = manager(s3)
    s3.faults.add(Fault("slowdown", frozenset({"PutObject"}), times=2))
    put(m, s3.uri("ck/offsets/0"), b"v1\n{}")
    assert nonzero(m) == {"createIfAbsent.calls": 1, "createIfAbsent.requests": 3, "createIfAbsent.bytesWritten": 5,
                          "retries": 2, "throttled": 2}


def test_a_server_error_is_retried_but_not_throttling(s3: EmbeddedS3) -> None:
    m = manager(s3)
    s3.faults.add(Fault("server-error", frozenset({"ListObjectsV2"}), times=1))
    m.list(s3.uri("ck"))
    assert nonzero(m) == {"list.calls": 1, "list.requests": 2, "retries": 1}


def test_store_check_verdicts_safe(s3: EmbeddedS3) -> None:
    m = manager(s3, checked=False)
    put(m, s3.uri("ck/offsets/0"), b"v1\n{}")
    put(m, s3.uri("ck/state/0/0/1.snapshot"), os.urandom(PART * 2))
    counts = nonzero(m)
    assert (counts["storeChecks"], counts["storeCheckSafe"]) == (2, 2)
    # the checks' requests belong to the creates that ran them
    assert counts["createIfAbsent.requests"] == (PUT_CHECK_REQUESTS + 1 + MULTIPART_CHECK_REQUESTS
                                                 + 1 + 2 + 1) == len(s3.requests)


def test_store_check_verdict_unsafe(s3: EmbeddedS3) -> None:
    m = manager(s3, checked=False)
    s3.faults.ignore_conditional_writes = True
    for _ in range(2):  # the verdict is remembered: the second create runs no check
        with pytest.raises(UnsafeStoreError):
            put(m, s3.uri("ck/offsets/0"), b"v1\n{}")
    counts = nonzero(m)
    assert (counts["storeChecks"], counts["storeCheckUnsafe"], counts["createIfAbsent.failures"]) == (1, 1, 2)
    assert "storeCheckSafe" not in counts and "conflicts" not in counts


@pytest.mark.parametrize("kind", ["slowdown", "server-error"])
def test_store_check_verdict_unavailable(s3: EmbeddedS3, kind: str) -> None:
    """No verdict: the create fails with the check's error. A server error may have created the canary, not the
    file, which was never sent: not an unknown outcome of the file."""
    m = manager(s3, checked=False)
    s3.faults.add(Fault(kind, frozenset({"PutObject"})))  # type: ignore[arg-type]
    with pytest.raises(StoreUnavailableError) as raised:
        put(m, s3.uri("ck/offsets/0"), b"v1\n{}")
    assert not isinstance(raised.value, WriteOutcomeUnknownError) and "store check" in str(raised.value)
    counts = nonzero(m)
    assert (counts["storeChecks"], counts["storeCheckUnavailable"], counts["retries"]) == (
        1, 1, FAST.max_attempts - 1)
    assert counts.get("throttled", 0) == (FAST.max_attempts if kind == "slowdown" else 0)
    assert not {"storeCheckSafe", "storeCheckUnsafe", "unknownOutcomes"} & set(counts)


# -- requests, bytes, calls, latency -------------------------------------------------------------------------------
_PREFIXES = {"ck/ia/": "createIfAbsent", "ck/ow/": "createOverwrite", "ck/rd/": "open", "ck/ls/": "list",
             "ck/ex/": "exists", "ck/dl": "delete"}


def _operation_of(request: Request) -> str:
    if request.operation == "DeleteObjects":  # sent to the bucket: its key is no file's
        return "delete"
    for prefix, operation in _PREFIXES.items():
        if request.key.startswith(prefix) or prefix.startswith(request.key + "/"):
            return operation
    raise AssertionError(f"a request no operation of the test sent: {request}")


def test_requests_per_operation_are_those_the_server_saw(s3: EmbeddedS3) -> None:
    admin = s3.client(admin=True)
    for key in ("ck/rd/0", "ck/ls/a", "ck/ls/b", "ck/dl/x", "ck/dl/y"):
        admin.put_object(Bucket="checkpoints", Key=key, Body=b"0123456789")
    m = manager(s3, checked=False)
    s3.faults.add(Fault("server-error", frozenset({"GetObject"}), times=1))
    s3.faults.add(Fault("slowdown", frozenset({"UploadPart"}), times=1))
    large = os.urandom(PART * 2 + 3)
    put(m, s3.uri("ck/ia/offsets/0"), b"v1\n{}")
    put(m, s3.uri("ck/ia/state/0/0/1.zip"), large)
    put(m, s3.uri("ck/ow/metadata"), b"{}", overwrite=True)
    put(m, s3.uri("ck/ow/state/0/0/2.zip"), large, overwrite=True)
    assert m.open(s3.uri("ck/rd/0")).read() == b"0123456789"
    assert len(m.list(s3.uri("ck/ls"))) == 2
    assert not m.exists(s3.uri("ck/ex/0"))
    m.delete(s3.uri("ck/dl"))

    seen = Counter(_operation_of(r) for r in s3.requests.all())
    assert {op: int(m.metrics[f"{op}.requests"]) for op in OPERATIONS} == {op: seen[op] for op in OPERATIONS}
    assert sum(m.metrics[f"{op}.requests"] for op in OPERATIONS) == len(s3.requests) == m.requests.total
    assert m.metrics["createIfAbsent.bytesWritten"] == 5 + len(large)
    assert m.metrics["createOverwrite.bytesWritten"] == 2 + len(large)
    assert m.metrics["open.bytesRead"] == 10
    assert m.metrics["retries"] == 2 and m.metrics["throttled"] == 1
    calls = {op: m.metrics[f"{op}.calls"] for op in OPERATIONS}
    assert calls == {"createIfAbsent": 2, "createOverwrite": 2, "open": 1, "list": 1, "exists": 1, "delete": 1}


def test_latency_is_timed_per_call_and_failures_counted(s3: EmbeddedS3) -> None:
    m = manager(s3)
    for i in range(3):
        put(m, s3.uri(f"ck/offsets/{i}"), b"v1\n{}")
    with pytest.raises(FileAlreadyExistsError):
        put(m, s3.uri("ck/offsets/0"), b"v1\n{}")
    reader = m.open(s3.uri("ck/offsets/1"))  # kept by the manager: no request, bytes still read
    assert reader.read() == b"v1\n{}"
    assert m.metrics["open.latency"] == 0  # from the call to the stream's close
    reader.close()
    snapshot = m.metrics.snapshot()
    assert (snapshot["createIfAbsent.calls"], snapshot["createIfAbsent.latency"],
            snapshot["createIfAbsent.failures"]) == (4, 4, 1)
    assert (snapshot["open.calls"], snapshot["open.latency"], snapshot["open.requests"],
            snapshot["open.bytesRead"]) == (1, 1, 0, 5)
    assert 0 < snapshot["createIfAbsent.latency.min"] <= snapshot["createIfAbsent.latency.mean"] <= snapshot[
        "createIfAbsent.latency.max"]
    timer = m.metrics.timer("createIfAbsent.latency")
    assert timer.count == 4 and timer.max_s * 1000 == snapshot["createIfAbsent.latency.max"]
    m.metrics.reset()
    assert not any(m.metrics.snapshot().values())


# -- logs ----------------------------------------------------------------------------------------------------------
def test_one_info_per_checkpoint_root_and_none_per_file(s3: EmbeddedS3, caplog: pytest.LogCaptureFixture) -> None:
    root = f"ck/{uuid.uuid4().hex}"
    caplog.set_level(logging.INFO, logger="checkpointfs")
    first, second = manager(s3, checked=False), manager(s3, checked=False)
    for i in range(20):
        m = first if i % 2 else second
        put(m, s3.uri(f"{root}/offsets/{i}"), b"v1\n{}")
        put(m, s3.uri(f"{root}/state/0/{i % 4}/{i}.delta"), os.urandom(PART * 2 if i % 5 == 0 else 10))
        assert m.open(s3.uri(f"{root}/offsets/{i}")).read() == b"v1\n{}"
        assert m.exists(s3.uri(f"{root}/offsets/{i}"))
        m.list(s3.uri(f"{root}/offsets"))
    m.delete(s3.uri(f"{root}/state"))
    infos = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    announced = [text for text in infos if text.startswith(f"checkpoint {s3.uri(root)}:")]
    assert announced == [f"checkpoint {s3.uri(root)}: files written directly to their final keys (put-if-absent, "
                         "no temp file, no rename), store check on"]
    # besides it, the store check's verdicts (once per bucket and kind of write) only: nothing per file
    assert [t for t in infos if t not in announced and "refuses a second put-if-absent" not in t] == []
    assert len(infos) <= 3


def test_unexpected_delegations_stay_zero_in_python(s3: EmbeddedS3) -> None:
    """"unexpectedDelegations" counts checkpoint roots the JVM shim meant to write and left to Spark's manager; a
    Python manager never delegates: it shows the name, at zero, whatever it writes (the shim's count is tested by its
    RouterSuite)."""
    m = manager(s3)
    put(m, s3.uri("ck/offsets/0"), b"v1")
    assert m.metrics.snapshot()["unexpectedDelegations"] == 0 and "unexpectedDelegations" not in nonzero(m)


def test_counters_of_the_table_are_all_driven_here() -> None:
    """Every counter of the table has its test in this module (a counter added to protocol.json needs one)."""
    source = open(__file__, encoding="utf-8").read()
    assert [name for name in COUNTERS if f'"{name}"' not in source] == []
