"""Bad input: a clear error naming the path and the cause, nothing partial left behind, no credentials shown."""

from __future__ import annotations

import socket
import traceback

import pytest

from checkpointfs import DirectWriteManager, RenameBasedManager, RetryPolicy, manager_for
from checkpointfs.errors import (
    AccessDeniedError,
    BucketNotFoundError,
    CheckpointFsError,
    InvalidPathError,
    StoreUnavailableError,
)
from checkpointfs.testing import EmbeddedS3

FAST = RetryPolicy(max_attempts=3, initial_backoff_s=0.01, max_backoff_s=0.02, max_elapsed_s=5)


@pytest.mark.parametrize(
    ("uri", "cause"),
    [
        ("s3://", "no bucket"),
        ("s3:///key", "no bucket"),
        ("s3:bucket/key", "malformed URI"),
        ("s3://Bad_Bucket/key", "invalid bucket name"),
        ("s3://ab/key", "invalid bucket name"),
        ("s3://bucket/a//b", "empty path segment"),
        ("file:///tmp/x?y=1", "query"),
        ("://nothing", "malformed URI"),
        ("", "non-empty"),
    ],
)
def test_malformed_uri_is_a_clear_error(uri: str, cause: str) -> None:
    with pytest.raises(InvalidPathError) as raised:
        manager_for(uri)
    assert cause in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_s3_keys_may_hold_any_character(embedded_s3: EmbeddedS3) -> None:
    m = DirectWriteManager(**embedded_s3.manager_options(), retry=FAST)
    path = embedded_s3.uri("out/date=2026-11-21/part 0?#%+.json")
    with m.create_atomic(path) as out:
        out.write(b"x")
    assert embedded_s3.keys("out/") == ["out/date=2026-11-21/part 0?#%+.json"]
    assert [s.path for s in m.list(embedded_s3.uri("out/date=2026-11-21"))] == [path]
    assert m.open(path).read() == b"x"


def test_credentials_in_a_uri_are_refused_and_not_echoed() -> None:
    with pytest.raises(InvalidPathError) as raised:
        manager_for("s3://AKIAUSER:topsecret@bucket/key")
    assert "topsecret" not in str(raised.value) and "AKIAUSER" not in str(raised.value)


@pytest.mark.parametrize("uri", ["ftp://host/x", "sftp://host/x"])
def test_unknown_scheme_is_a_clear_error(uri: str) -> None:
    with pytest.raises(InvalidPathError, match="unsupported scheme"):
        manager_for(uri)


def test_manager_for_picks_by_scheme_and_passes_options(tmp_path: object) -> None:
    s3 = manager_for("s3a://checkpoints/q", part_size=1234, abort_strategy="close-then-delete")
    assert isinstance(s3, DirectWriteManager)
    assert (s3.part_size, s3.abort_strategy) == (1234, "close-then-delete")
    assert isinstance(manager_for("s3://checkpoints/q"), DirectWriteManager)
    for uri in (f"{tmp_path}/q", f"file://{tmp_path}/q", "memory://q", "relative/dir"):
        assert isinstance(manager_for(uri), RenameBasedManager), uri
    assert manager_for(str(tmp_path)).is_local and not manager_for("memory://q").is_local


def test_manager_for_gs_passes_options() -> None:
    pytest.importorskip("google.auth", reason="gs:// needs the gcs extra (google-auth, requests)")
    gcs = manager_for("gs://checkpoints/q", endpoint_url="http://127.0.0.1:1", part_size=512 * 1024)
    assert isinstance(gcs, DirectWriteManager) and gcs.part_size == 512 * 1024
    assert type(gcs.connected).__name__ == "GcsStore"



def test_rename_manager_refuses_file_systems_without_atomic_rename() -> None:
    with pytest.raises(InvalidPathError, match="no atomic no-replace rename"):
        RenameBasedManager("s3")


def test_path_of_another_scheme_is_refused(tmp_path: object) -> None:
    with pytest.raises(InvalidPathError, match="does not belong"):
        RenameBasedManager("memory").create_atomic(f"file://{tmp_path}/x")


def test_missing_bucket(embedded_s3: EmbeddedS3) -> None:
    m = DirectWriteManager(**embedded_s3.manager_options(), retry=FAST)
    path = "s3://no-such-bucket/ck/offsets/0"
    with pytest.raises(BucketNotFoundError) as raised:
        with m.create_atomic(path) as out:
            out.write(b"v1\n{}")
    assert path in str(raised.value) and "'no-such-bucket' does not exist" in str(raised.value)
    assert not isinstance(raised.value, FileNotFoundError)  # never mistaken for an absent file
    for call in (lambda: m.list("s3://no-such-bucket/ck"), lambda: m.open(path),
                 lambda: m.exists("s3://no-such-bucket"), lambda: m.exists(path)):
        with pytest.raises(BucketNotFoundError):
            call()
    assert embedded_s3.open_uploads() == []


def test_missing_bucket_with_large_file_leaves_no_upload(embedded_s3: EmbeddedS3) -> None:
    m = DirectWriteManager(**embedded_s3.manager_options(), part_size=2048, retry=FAST)
    out = m.create_atomic("s3://no-such-bucket/ck/state/1.snapshot")
    with pytest.raises(BucketNotFoundError):
        out.write(b"x" * 5000)
    out.cancel()


def test_wrong_credentials(embedded_s3: EmbeddedS3) -> None:
    secret = "not-the-right-secret-0123456789"
    m = DirectWriteManager(endpoint_url=embedded_s3.endpoint_url, region="us-east-1",
                           aws_access_key_id="AKIAWRONGKEY00000000", aws_secret_access_key=secret, retry=FAST)
    path = embedded_s3.uri("ck/offsets/0")
    with pytest.raises(AccessDeniedError) as raised:
        with m.create_atomic(path) as out:
            out.write(b"v1\n{}")
    text = "".join(traceback.format_exception(raised.value))
    assert path in str(raised.value) and "credentials" in str(raised.value)
    assert secret not in text and "AKIAWRONGKEY00000000" not in text
    assert embedded_s3.keys() == []
    # the store check's first request, the head of its missing canary key, is refused; a refusal is final: not retried
    assert embedded_s3.requests.counts() == {"HeadObject": 1}


def test_unreachable_endpoint() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    m = DirectWriteManager(endpoint_url=f"http://127.0.0.1:{port}", region="us-east-1", aws_access_key_id="k",
                           aws_secret_access_key="s", retry=FAST, connect_timeout_s=1)
    path = "s3://checkpoints/ck/offsets/0"
    with pytest.raises(StoreUnavailableError) as raised:
        with m.create_atomic(path) as out:
            out.write(b"v1\n{}")
    assert path in str(raised.value) and f"127.0.0.1:{port}" in str(raised.value)
    assert m.requests.total == FAST.max_attempts
    # all of them the store check's, retries included, belonging to the create that ran it; no verdict
    assert (m.metrics["createIfAbsent.requests"], m.metrics["retries"], m.metrics["storeCheckUnavailable"]) == (
        FAST.max_attempts, FAST.max_attempts - 1, 1)


def test_every_error_names_its_path_and_cause() -> None:
    error = CheckpointFsError("s3://b/k", "the cause")
    assert (error.path, error.cause, str(error)) == ("s3://b/k", "the cause", "s3://b/k: the cause")
