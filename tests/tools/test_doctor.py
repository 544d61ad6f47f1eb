"""``checkpointfs doctor`` against the embedded S3: safe as it is, not safe with conditional writes switched off in
the fault layer, and it leaves nothing behind either way."""

from __future__ import annotations

from typing import Any

import pytest

from checkpointfs.testing import EmbeddedS3, Fault, FaultPlan

CHECKS = ["reach", "permissions", "put_if_none_match", "complete_multipart_if_none_match", "racing_writers",
          "read_after_write", "list_after_write", "user_metadata", "abort_leaves_nothing", "delete", "bucket_type",
          "clean_up"]


@pytest.fixture
def store(s3_env: EmbeddedS3) -> EmbeddedS3:
    """The embedded S3 (credentials in the AWS variables) with a user's object under the prefix the doctor probes."""
    s3_env.client(admin=True).put_object(Bucket="checkpoints", Key="team/keep-me", Body=b"user data")
    return s3_env


def test_embedded_s3_is_safe(store: EmbeddedS3, cli: Any) -> None:
    result = cli("doctor", store.uri("team"), "--endpoint-url", store.endpoint_url, "--json")
    assert result.code == 0, result.out
    report = result.json
    assert report["safe"] is True
    assert [c["name"] for c in report["checks"]] == CHECKS
    assert all(c["ok"] for c in report["checks"])
    race = next(c for c in report["checks"] if c["name"] == "racing_writers")
    assert race["detail"] == "8 writers, 1 won, 7 lost"
    assert store.keys() == ["team/keep-me"] and store.open_uploads() == []
    puts = [r for r in store.requests.all() if r.operation == "PutObject" and r.status == 412]
    assert len(puts) == 1 + 7  # the second conditional put, and the seven losers of the race


def test_store_ignoring_conditional_writes_is_not_safe(store: EmbeddedS3, cli: Any) -> None:
    store.faults = FaultPlan(ignore_conditional_writes=True)
    result = cli("doctor", store.uri("team"), "--endpoint-url", store.endpoint_url, "--json")
    assert result.code == 1
    report = result.json
    failed = {c["name"]: c["detail"] for c in report["checks"] if not c["ok"]}
    assert report["safe"] is False
    assert set(failed) == {"put_if_none_match", "complete_multipart_if_none_match", "racing_writers"}
    assert "ignores the condition" in failed["put_if_none_match"]
    assert failed["racing_writers"].startswith("8 writers, 8 won")
    assert store.keys() == ["team/keep-me"] and store.open_uploads() == []
    table = cli("doctor", store.uri("team"), "--endpoint-url", store.endpoint_url, "--plain")
    assert table.code == 1 and "FAIL" in table.out and "verdict: NOT safe" in table.out


def test_the_doctor_judges_what_a_manager_ends_with(store: EmbeddedS3, cli: Any) -> None:
    """Answers the protocol retries (SlowDown) are sent again by the store the doctor probes through, as a manager's
    is: the verdict is on the last answer, and the store is safe."""
    store.faults = FaultPlan([Fault("slowdown", frozenset({"PutObject"}), times=3)])
    result = cli("doctor", store.uri("team"), "--endpoint-url", store.endpoint_url, "--json")
    assert result.code == 0 and result.json["safe"] is True, result.out
    assert store.faults.kinds_injected() == {"slowdown": 3}
    slowed = [r for r in store.requests.all() if r.operation == "PutObject" and r.status == 503]
    assert len(slowed) == 3


def test_fault_spec_switch(store: EmbeddedS3) -> None:
    assert FaultPlan.from_spec({"ignore_conditional_writes": True}).ignore_conditional_writes
    store.faults = FaultPlan.from_spec('{"ignore_conditional_writes": true}')
    client = store.client()
    client.put_object(Bucket="checkpoints", Key="k", Body=b"1", IfNoneMatch="*")
    client.put_object(Bucket="checkpoints", Key="k", Body=b"2", IfNoneMatch="*")  # accepted: the condition is dropped
    assert client.get_object(Bucket="checkpoints", Key="k")["Body"].read() == b"2"


def test_doctor_needs_an_object_store(cli: Any, tmp_path: Any) -> None:
    result = cli("doctor", str(tmp_path))
    assert result.code == 2 and "s3://" in result.err


def test_minio_is_safe(minio_server: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real MinIO honours If-None-Match on PutObject and CompleteMultipartUpload."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", minio_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", minio_server.secret_key)
    monkeypatch.setenv("AWS_DEFAULT_REGION", minio_server.region)
    before = sorted(o["Key"] for o in minio_server.client().list_objects_v2(
        Bucket="checkpointfs-minio").get("Contents", []))
    result = cli("doctor", "s3://checkpointfs-minio/doctor", "--endpoint-url", minio_server.endpoint_url, "--json")
    report = result.json
    assert result.code == 0, report
    assert [c["name"] for c in report["checks"]] == CHECKS and report["safe"] is True
    after = sorted(o["Key"] for o in minio_server.client().list_objects_v2(
        Bucket="checkpointfs-minio").get("Contents", []))
    assert after == before
    assert minio_server.secret_key not in result.out + result.err


@pytest.mark.parametrize(("profile", "kept"), [
    ("directory-bucket", "the write id came back"),
    ("directory-bucket:no-metadata", "no user metadata kept, but the sha256")])
def test_directory_bucket_is_named_and_safe(s3_env: EmbeddedS3, cli: Any, profile: str, kept: str) -> None:
    """On the directory-bucket profile (S3 Express One Zone's rules), in a bucket named as AWS names directory
    buckets: the doctor names the bucket type, finds the listing rules it relies on, and settles by the write id or,
    where user metadata is dropped, by the checksum and size that came back."""
    from checkpointfs.testing.embedded_s3 import DIRECTORY_BUCKET

    s3_env.profile = profile
    try:
        s3_env.create_bucket(DIRECTORY_BUCKET)
        result = cli("doctor", s3_env.uri("team", bucket=DIRECTORY_BUCKET), "--endpoint-url", s3_env.endpoint_url,
                     "--json")
        assert result.code == 0, result.out
        checks = {c["name"]: c for c in result.json["checks"]}
        assert list(checks) == CHECKS and all(c["ok"] for c in checks.values()), checks
        assert checks["bucket_type"]["detail"].startswith("a directory bucket (S3 Express One Zone); ")
        # the profile orders a listing by a seeded hash of each name; the doctor's few random names can fall in name
        # order by chance, and the doctor says which order it saw
        detail = checks["bucket_type"]["detail"]
        assert "a directory listing showed every name, in no set order" in detail or \
            "a directory listing showed every name, in name order" in detail, detail
        assert checks["user_metadata"]["detail"].startswith(kept)
        assert s3_env.keys(bucket=DIRECTORY_BUCKET) == [] and s3_env.open_uploads(DIRECTORY_BUCKET) == []
    finally:
        s3_env.profile = None


@pytest.mark.parametrize(("policy", "ok", "named"), [
    ("no-delete", False, "delete: grant s3:DeleteObject on bucket 'checkpointfs-minio'"),
    ("no-put", False, "put: grant s3:PutObject on bucket 'checkpointfs-minio'"),
    ("no-upload-cleanup", True, "list_uploads: grant s3:ListBucketMultipartUploads on bucket 'checkpointfs-minio'; "
                                "abort_upload: grant s3:AbortMultipartUpload on bucket 'checkpointfs-minio' (works at "
                                "a cost")])
def test_minio_names_a_missing_permission(minio_server: Any, cli: Any, monkeypatch: pytest.MonkeyPatch,
                                          policy: str, ok: bool, named: str) -> None:
    """MinIO STS credentials whose session policy lacks what one feature needs: the permissions probe names it."""
    from harness.servers.least_privilege import POLICIES, assume

    creds = assume(minio_server, POLICIES[policy])
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", creds.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", creds.secret_key)
    monkeypatch.setenv("AWS_SESSION_TOKEN", creds.session_token)
    monkeypatch.setenv("AWS_DEFAULT_REGION", minio_server.region)
    result = cli("doctor", "s3://checkpointfs-minio/doctor-lp", "--endpoint-url", minio_server.endpoint_url, "--json")
    checks = {c["name"]: c for c in result.json["checks"]}
    assert checks["permissions"]["ok"] is ok and named in checks["permissions"]["detail"], checks["permissions"]
    assert result.json["safe"] is False  # the other probes meet the refusal too (the delete, the clean-up, the abort)
    assert creds.secret_key not in result.out + result.err and creds.session_token not in result.out + result.err


def test_minio_without_list_bucket_names_it(minio_server: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without s3:ListBucket the doctor cannot list its prefix: it stops there, naming it and the bucket."""
    from harness.servers.least_privilege import POLICIES, assume

    creds = assume(minio_server, POLICIES["no-list"])
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", creds.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", creds.secret_key)
    monkeypatch.setenv("AWS_SESSION_TOKEN", creds.session_token)
    monkeypatch.setenv("AWS_DEFAULT_REGION", minio_server.region)
    result = cli("doctor", "s3://checkpointfs-minio/doctor-lp", "--endpoint-url", minio_server.endpoint_url, "--json")
    assert result.code != 0
    said = result.out + result.err
    assert "s3:ListBucket" in said and "'checkpointfs-minio'" in said, said

