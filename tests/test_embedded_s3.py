"""The embedded S3 itself: request classification at the server, credential checks, faults, the CLI server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from checkpointfs.testing import EmbeddedS3, Fault, FaultPlan, Request, RequestLog
from checkpointfs.testing.embedded_s3 import DEFAULT_ACCESS_KEY, DEFAULT_SECRET_KEY


def test_server_counts_each_operation(embedded_s3: EmbeddedS3) -> None:
    c = embedded_s3.client()
    c.put_object(Bucket="checkpoints", Key="a/.0.tmp", Body=b"x")
    c.copy_object(Bucket="checkpoints", Key="a/0", CopySource={"Bucket": "checkpoints", "Key": "a/.0.tmp"})
    c.delete_object(Bucket="checkpoints", Key="a/.0.tmp")
    c.head_object(Bucket="checkpoints", Key="a/0")
    c.get_object(Bucket="checkpoints", Key="a/0")["Body"].read()
    c.list_objects_v2(Bucket="checkpoints", Prefix="a/")
    upload = c.create_multipart_upload(Bucket="checkpoints", Key="b")["UploadId"]
    c.abort_multipart_upload(Bucket="checkpoints", Key="b", UploadId=upload)
    c.delete_objects(Bucket="checkpoints", Delete={"Objects": [{"Key": "a/0"}]})
    assert embedded_s3.requests.counts() == {
        "PutObject": 1, "CopyObject": 1, "DeleteObject": 1, "HeadObject": 1, "GetObject": 1, "ListObjectsV2": 1,
        "CreateMultipartUpload": 1, "AbortMultipartUpload": 1, "DeleteObjects": 1,
    }


def test_unknown_access_key_is_refused(embedded_s3: EmbeddedS3) -> None:
    c = boto3.client("s3", endpoint_url=embedded_s3.endpoint_url, region_name="us-east-1",
                     aws_access_key_id="someone-else", aws_secret_access_key="x",
                     config=Config(s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}))
    with pytest.raises(ClientError) as raised:
        c.put_object(Bucket="checkpoints", Key="k", Body=b"x")
    assert raised.value.response["Error"]["Code"] == "InvalidAccessKeyId"
    assert embedded_s3.keys() == []


def test_put_if_absent_is_atomic_under_concurrency(embedded_s3: EmbeddedS3) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def attempt(i: int) -> bool:
        try:
            embedded_s3.client().put_object(Bucket="checkpoints", Key="race", Body=str(i).encode(), IfNoneMatch="*")
            return True
        except ClientError as e:
            assert e.response["Error"]["Code"] == "PreconditionFailed"
            return False

    for _ in range(5):
        embedded_s3.client(admin=True).delete_object(Bucket="checkpoints", Key="race")
        with ThreadPoolExecutor(8) as pool:
            assert sum(pool.map(attempt, range(8))) == 1


def test_lost_response_applies_the_request(embedded_s3: EmbeddedS3) -> None:
    embedded_s3.faults.add(Fault("lost-response", frozenset({"PutObject"}), times=1))
    with pytest.raises(Exception, match="Connection was closed"):
        embedded_s3.client().put_object(Bucket="checkpoints", Key="k", Body=b"landed")
    assert embedded_s3.keys() == ["k"]
    assert embedded_s3.faults.kinds_injected() == {"lost-response": 1}


def test_faults_are_seeded_and_reproducible() -> None:
    def run(seed: int) -> list[bool]:
        plan = FaultPlan([Fault("slowdown", probability=0.5)], seed=seed)
        return [plan.pick("PutObject", "b", f"k{i}") is not None for i in range(50)]

    assert run(7) == run(7)
    assert run(7) != run(8)
    assert 10 < sum(run(7)) < 40


def test_bad_fault_specs_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        Fault("gremlins")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="probability"):
        Fault("slowdown", probability=2)


def test_cli_serves_until_terminated() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "checkpointfs.cli", "s3-server", "--bucket", "demo-bucket"],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        endpoint = first.split()[3]
        assert endpoint.startswith("http://127.0.0.1:")
        c = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                         aws_access_key_id=DEFAULT_ACCESS_KEY, aws_secret_access_key=DEFAULT_SECRET_KEY)
        c.put_object(Bucket="demo-bucket", Key="k", Body=b"served")
        assert c.get_object(Bucket="demo-bucket", Key="k")["Body"].read() == b"served"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_uploads_report_when_they_were_started(embedded_s3: EmbeddedS3) -> None:
    import datetime

    c = embedded_s3.client()
    c.create_multipart_upload(Bucket="checkpoints", Key="k")
    [upload] = c.list_multipart_uploads(Bucket="checkpoints")["Uploads"]
    age = datetime.datetime.now(datetime.timezone.utc) - upload["Initiated"]
    assert abs(age.total_seconds()) < 5  # moto alone reports 2010-11-10 for every upload


def test_request_log_wakes_a_waiter_on_the_matching_request() -> None:
    log = RequestLog()
    log.add(Request("PutObject", "b", "early", 200))
    found: list[tuple[Request | None, int]] = []
    waiter = threading.Thread(target=lambda: found.append(
        log.wait_for(lambda r: r.operation == "PutObject", since=1, timeout=60)))
    waiter.start()
    log.add(Request("GetObject", "b", "k", 200))
    log.add(Request("PutObject", "b", "late", 200))
    log.add(Request("PutObject", "b", "later", 200))
    waiter.join(60)
    assert found == [(Request("PutObject", "b", "late", 200), 3)]  # requests before ``since`` are not looked at
    looked_at: list[Request] = []
    assert log.wait_for(lambda r: looked_at.append(r) is not None, since=3, timeout=0) == (None, 4)
    assert looked_at == [Request("PutObject", "b", "later", 200)]  # each request once
