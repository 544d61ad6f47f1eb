"""DirectWriteManager beyond the shared contract: request costs, retries, ambiguous outcomes, close-then-delete,
encryption and request metrics, on the embedded S3 with faults injected at the server."""

from __future__ import annotations

import os
import pickle
import threading
import traceback

import pytest

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.errors import (
    AbortFailedError,
    AccessDeniedError,
    FileAlreadyExistsError,
    StoreUnavailableError,
    WriteOutcomeUnknownError,
)
from checkpointfs.protocol import ORPHAN_CLOCK_SLACK_S, WRITE_ID_KEY
from checkpointfs.testing import EmbeddedS3, Fault
from checkpointfs.testing.requests import Request

from .managers import FAST, PART, manager, put


def get(s3: EmbeddedS3, key: str) -> bytes:
    body: bytes = s3.client(admin=True).get_object(Bucket="checkpoints", Key=key)["Body"].read()
    return body


# -- costs ---------------------------------------------------------------------------------------------------------
def test_request_costs_of_each_operation(s3: EmbeddedS3) -> None:
    m = manager(s3, checked=False, list_page_size=2)
    put(m, s3.uri("ck/offsets/0"), b"v1\n{}")
    # the process's first create-if-absent to the bucket: the store check (head of the missing key, create, read
    # back, create again, delete)
    assert s3.requests.counts() == {"PutObject": 1 + 2, "HeadObject": 2, "DeleteObject": 1}
    assert s3.keys() == ["ck/offsets/0"]

    s3.requests.clear()
    put(m, s3.uri("ck/offsets/00"), b"v1\n{}")
    assert s3.requests.counts() == {"PutObject": 1}
    m.delete(s3.uri("ck/offsets/00"))

    s3.requests.clear()
    m.mkdirs(s3.uri("ck/commits"))
    assert s3.requests.counts() == {}

    assert m.exists(s3.uri("ck/offsets/0"))
    assert s3.requests.counts() == {}  # published by this manager (docs/contract.md, the probe rule)
    assert manager(s3).exists(s3.uri("ck/offsets/0"))
    assert s3.requests.counts() == {"HeadObject": 1}

    for i in range(1, 5):
        put(m, s3.uri(f"ck/offsets/{i}"), b"v1\n{}")
    s3.requests.clear()
    assert len(m.list(s3.uri("ck/offsets"))) == 5
    assert s3.requests.counts() == {"ListObjectsV2": 3}  # pages of 2

    s3.requests.clear()
    m.delete(s3.uri("ck"))
    counts = s3.requests.counts()
    # the key itself, then the tree under it: listed in pages of 2, deleted in one batch of up to 1000
    assert counts == {"DeleteObject": 1, "ListObjectsV2": 3, "DeleteObjects": 1}
    assert s3.keys("ck/") == []


def test_large_file_streams_parts_while_writing(s3: EmbeddedS3) -> None:
    m = manager(s3)
    out = m.create_atomic(s3.uri("ck/state/1.snapshot"))
    out.write(os.urandom(PART * 2 + 1))
    parts = [0]

    def second_part(request: Request) -> bool:
        parts[0] += request.operation == "UploadPart"
        return parts[0] == 2

    assert s3.requests.wait_for(second_part, timeout=10)[0] is not None  # sent while writing, before close
    assert s3.requests.counts() == {"CreateMultipartUpload": 1, "UploadPart": 2}
    out.write(b"tail")
    out.close()
    assert s3.requests.counts() == {"CreateMultipartUpload": 1, "UploadPart": 3, "CompleteMultipartUpload": 1}


def test_file_of_exactly_part_size_is_one_put(s3: EmbeddedS3) -> None:
    put(manager(s3), s3.uri("ck/exact"), b"x" * PART)
    assert s3.requests.counts() == {"PutObject": 1}


def test_client_metrics_match_server_counts(s3: EmbeddedS3) -> None:
    m = manager(s3)
    put(m, s3.uri("ck/a"), b"a")
    put(m, s3.uri("ck/b"), os.urandom(PART * 2))
    m.exists(s3.uri("ck/a"))
    m.list(s3.uri("ck"))
    m.open(s3.uri("ck/a")).read()
    assert m.requests.snapshot() == s3.requests.counts()
    assert m.requests.total == len(s3.requests)


def test_write_id_is_stamped_in_user_metadata(s3: EmbeddedS3) -> None:
    m = manager(s3)
    out = m.create_atomic(s3.uri("ck/offsets/0"))
    out.write(b"v1\n{}")
    out.close()
    head = s3.client(admin=True).head_object(Bucket="checkpoints", Key="ck/offsets/0")
    assert head["Metadata"][WRITE_ID_KEY] == out.write_id  # type: ignore[attr-defined]


# -- retries -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["slowdown", "server-error", "reset"])
def test_transient_failures_are_retried(s3: EmbeddedS3, kind: str) -> None:
    m = manager(s3)
    s3.faults.add(Fault(kind, frozenset({"PutObject"}), times=2))  # type: ignore[arg-type]
    put(m, s3.uri("ck/offsets/0"), b"v1\n{}")
    assert get(s3, "ck/offsets/0") == b"v1\n{}"
    assert s3.requests.counts()["PutObject"] == 3


def test_throttling_beyond_the_budget_fails_without_writing(s3: EmbeddedS3) -> None:
    m = manager(s3)
    s3.faults.add(Fault("slowdown", frozenset({"PutObject"})))
    path = s3.uri("ck/offsets/0")
    with pytest.raises(StoreUnavailableError) as raised:
        put(m, path, b"v1\n{}")
    assert path in str(raised.value) and "SlowDown" in str(raised.value)
    assert s3.requests.counts() == {"PutObject": FAST.max_attempts}
    assert s3.keys() == []


def test_multipart_parts_are_retried(s3: EmbeddedS3) -> None:
    m = manager(s3)
    s3.faults.add(Fault("server-error", frozenset({"UploadPart"}), times=2))
    data = os.urandom(PART * 3)
    put(m, s3.uri("ck/big"), data)
    assert get(s3, "ck/big") == data
    assert s3.open_uploads() == []


# -- ambiguous outcomes --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["lost-response", "error-after-apply"])
def test_own_landed_write_is_success_not_conflict(s3: EmbeddedS3, kind: str) -> None:
    m = manager(s3)
    s3.faults.add(Fault(kind, frozenset({"PutObject"}), times=1))  # type: ignore[arg-type]
    put(m, s3.uri("ck/commits/0"), b"v1\n{}")
    assert get(s3, "ck/commits/0") == b"v1\n{}"
    # first PUT applied but unanswered; the retry met 412 and the HEAD showed our write id
    assert s3.requests.counts() == {"PutObject": 2, "HeadObject": 1}


def test_own_landed_multipart_complete_is_success(s3: EmbeddedS3) -> None:
    m = manager(s3)
    s3.faults.add(Fault("lost-response", frozenset({"CompleteMultipartUpload"}), times=1))
    data = os.urandom(PART * 2 + 7)
    put(m, s3.uri("ck/state/2.zip"), data)
    assert get(s3, "ck/state/2.zip") == data
    assert s3.open_uploads() == []
    # the re-sent complete of an upload that already completed is answered 200, as S3 does
    assert s3.requests.counts()["CompleteMultipartUpload"] == 2


def test_other_writer_winning_during_ambiguity_is_a_conflict(s3: EmbeddedS3) -> None:
    admin = s3.client(admin=True)

    def rival_writes() -> None:
        admin.put_object(Bucket="checkpoints", Key="ck/offsets/5", Body=b"rival", Metadata={WRITE_ID_KEY: "rival"})

    m = manager(s3)
    s3.faults.add(Fault("reset", frozenset({"PutObject"}), key_pattern="ck/offsets/5$", times=1, then=rival_writes))
    with pytest.raises(FileAlreadyExistsError):
        put(m, s3.uri("ck/offsets/5"), b"mine")
    assert get(s3, "ck/offsets/5") == b"rival"


def test_unreadable_outcome_is_unknown_not_success_nor_conflict(s3: EmbeddedS3) -> None:
    m = manager(s3)
    s3.faults.add(Fault("lost-response", frozenset({"PutObject"}), times=1))
    s3.faults.add(Fault("server-error", frozenset({"HeadObject"})))
    path = s3.uri("ck/commits/1")
    with pytest.raises(WriteOutcomeUnknownError) as raised:
        put(m, path, b"v1\n{}")
    assert path in str(raised.value)
    assert not isinstance(raised.value, FileAlreadyExistsError)


def test_first_attempt_conflict_needs_no_read_back(s3: EmbeddedS3) -> None:
    m = manager(s3)
    put(m, s3.uri("ck/x"), b"one")
    s3.requests.clear()
    with pytest.raises(FileAlreadyExistsError):
        put(m, s3.uri("ck/x"), b"two")
    assert s3.requests.counts() == {"PutObject": 1}


def test_concurrent_multipart_writers_one_winner_no_upload_left(s3: EmbeddedS3) -> None:
    m = manager(s3)
    results: list[str] = []
    payloads = [os.urandom(PART * 2 + i) for i in range(4)]
    barrier = threading.Barrier(len(payloads))

    def writer(data: bytes) -> None:
        out = m.create_atomic(s3.uri("ck/state/9.snapshot"))
        out.write(data)
        barrier.wait()
        try:
            out.close()
            results.append("won")
        except FileAlreadyExistsError:
            results.append("lost")

    threads = [threading.Thread(target=writer, args=(p,)) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["lost", "lost", "lost", "won"]
    assert get(s3, "ck/state/9.snapshot") in payloads
    assert s3.open_uploads() == []


# -- close-then-delete ---------------------------------------------------------------------------------------------
def test_close_then_delete_retries_failing_deletes(s3: EmbeddedS3) -> None:
    m = manager(s3, abort_strategy="close-then-delete")
    s3.faults.add(Fault("server-error", frozenset({"DeleteObject"}), times=3))
    out = m.create_atomic(s3.uri("ck/state/3.delta"))
    out.write(os.urandom(PART * 2))
    out.cancel()
    assert s3.keys() == []
    assert s3.open_uploads() == []
    counts = s3.requests.counts()
    assert counts["CompleteMultipartUpload"] == 1 and counts["DeleteObject"] == 4


def test_close_then_delete_raises_abort_failed_when_delete_never_succeeds(s3: EmbeddedS3) -> None:
    m = manager(s3, abort_strategy="close-then-delete", delete_retry=RetryPolicy(3, 0.01, 0.02, 5))
    s3.faults.add(Fault("server-error", frozenset({"DeleteObject"})))
    path = s3.uri("ck/state/4.delta")
    out = m.create_atomic(path)
    out.write(os.urandom(PART * 2))
    with pytest.raises(AbortFailedError) as raised:
        out.cancel()
    assert path in str(raised.value) and "visible" in str(raised.value)
    assert s3.requests.counts()["DeleteObject"] == 3
    assert s3.keys() == ["ck/state/4.delta"]  # what the error warned of: the partial object is visible


def test_abort_strategy_sends_no_complete_on_cancel(s3: EmbeddedS3) -> None:
    m = manager(s3)
    out = m.create_atomic(s3.uri("ck/state/5.delta"))
    out.write(os.urandom(PART * 2))
    out.cancel()
    counts = s3.requests.counts()
    assert "CompleteMultipartUpload" not in counts and counts["AbortMultipartUpload"] == 1
    assert s3.keys() == [] and s3.open_uploads() == []


def test_cancel_of_small_file_sends_nothing(s3: EmbeddedS3) -> None:
    for strategy in ("abort", "close-then-delete"):
        out = manager(s3, abort_strategy=strategy).create_atomic(s3.uri("ck/offsets/0"))
        out.write(b"v1\n{}")
        out.cancel()
    assert s3.requests.counts() == {}


# -- encryption ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("large", [False, True], ids=["put", "multipart"])
def test_sse_kms_applied_to_every_write(s3: EmbeddedS3, large: bool) -> None:
    m = manager(s3, sse="aws:kms", sse_kms_key_id="alias/checkpoints")
    put(m, s3.uri("ck/enc"), os.urandom(PART * 2) if large else b"secret state")
    head = s3.client(admin=True).head_object(Bucket="checkpoints", Key="ck/enc")
    assert head["ServerSideEncryption"] == "aws:kms"
    assert head["SSEKMSKeyId"].endswith("alias/checkpoints")


def test_sse_s3_applied(s3: EmbeddedS3) -> None:
    put(manager(s3, sse="AES256"), s3.uri("ck/enc"), b"x")
    assert s3.client(admin=True).head_object(Bucket="checkpoints", Key="ck/enc")["ServerSideEncryption"] == "AES256"


# -- configuration -------------------------------------------------------------------------------------------------
def test_standard_boto3_chain_with_endpoint_from_environment(
    s3: EmbeddedS3, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3.secret_key)
    monkeypatch.setenv("AWS_DEFAULT_REGION", s3.region)
    m = DirectWriteManager()
    put(m, "s3a://checkpoints/ck/env", b"via env")
    assert get(s3, "ck/env") == b"via env"


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="abort_strategy"):
        DirectWriteManager(abort_strategy="pray")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="sse_kms_key_id"):
        DirectWriteManager(sse_kms_key_id="k")
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)


def test_traceback_of_any_failure_carries_no_secret(s3: EmbeddedS3) -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY"
    m = DirectWriteManager(endpoint_url=s3.endpoint_url, aws_access_key_id="AKIAEXAMPLEWRONGKEY",
                           aws_secret_access_key=secret, retry=FAST)
    for action in (lambda: put(m, s3.uri("ck/x"), b"x"), lambda: m.list(s3.uri("ck")),
                   lambda: m.open(s3.uri("ck/x"))):
        with pytest.raises(PermissionError) as raised:
            action()
        text = "".join(traceback.format_exception(raised.value))
        assert secret not in text and "AKIAEXAMPLEWRONGKEY" not in text


@pytest.mark.parametrize("finish", ["close", "cancel"])
def test_upload_orphaned_by_a_lost_create_answer_is_aborted(s3: EmbeddedS3, finish: str) -> None:
    m = manager(s3)
    s3.faults.add(Fault("lost-response", frozenset({"CreateMultipartUpload"}), times=1))
    data = os.urandom(PART * 2 + 5)
    out = m.create_atomic(s3.uri("ck/state/7.snapshot"))
    out.write(data)
    assert len(s3.client(admin=True).list_multipart_uploads(Bucket="checkpoints")["Uploads"]) == 2
    getattr(out, finish)()
    assert s3.open_uploads() == []
    assert s3.keys() == (["ck/state/7.snapshot"] if finish == "close" else [])
    assert s3.requests.counts()["AbortMultipartUpload"] == (1 if finish == "close" else 2)


@pytest.mark.parametrize(("dated_back_s", "aborted"), [(ORPHAN_CLOCK_SLACK_S + 5, False),
                                                       (ORPHAN_CLOCK_SLACK_S - 5, True)])
def test_orphan_cleanup_spares_uploads_started_outside_the_window(s3: EmbeddedS3, dated_back_s: float,
                                                                  aborted: bool) -> None:
    """The window is the protocol's: from the first create attempt less ORPHAN_CLOCK_SLACK_S to the stream's end
    plus it. An upload the store dates beyond the slack is spared; one within it is taken for an orphan."""
    s3.clock.advance(-dated_back_s)  # the store (through its gateway, which dates uploads) dates this one back
    earlier = s3.client().create_multipart_upload(Bucket="checkpoints", Key="ck/state/8.snapshot")["UploadId"]
    s3.clock.reset()
    m = manager(s3)
    s3.faults.add(Fault("lost-response", frozenset({"CreateMultipartUpload"}), times=1))
    put(m, s3.uri("ck/state/8.snapshot"), os.urandom(PART * 2), overwrite=True)
    uploads = s3.client(admin=True).list_multipart_uploads(Bucket="checkpoints").get("Uploads", [])
    assert [u["UploadId"] for u in uploads] == ([] if aborted else [earlier])


# -- typed errors --------------------------------------------------------------------------------------------------
def test_store_errors_carry_the_code_and_status(s3: EmbeddedS3) -> None:
    m = DirectWriteManager(endpoint_url=s3.endpoint_url, aws_access_key_id="AKIAEXAMPLEWRONGKEY",
                           aws_secret_access_key="wrong", retry=FAST)
    with pytest.raises(AccessDeniedError) as raised:
        m.list(s3.uri("ck"))
    assert (raised.value.code, raised.value.status) == ("InvalidAccessKeyId", 403)
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (type(copy), copy.path, copy.code, copy.status) == (
        AccessDeniedError, s3.uri("ck"), "InvalidAccessKeyId", 403)
    listing = manager(s3)  # its store check passed before the fault, so the listing is what meets it
    s3.faults.add(Fault("slowdown"))
    with pytest.raises(StoreUnavailableError) as unavailable:
        listing.list(s3.uri("ck"))  # a GET: the answer has a body with the code (a HEAD's has none)
    assert (unavailable.value.code, unavailable.value.status) == ("SlowDown", 503)
