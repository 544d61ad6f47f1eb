"""The fault layer itself, seen through a plain boto3 client: each kind does what docs/testing.md says."""

from __future__ import annotations

import json
import time

import pytest
from botocore.exceptions import ClientError

from checkpointfs import DirectWriteManager, RetryPolicy
from checkpointfs.testing import EmbeddedS3, Fault, FaultPlan
from checkpointfs.testing.consistency import ConsistencyLag
from checkpointfs.testing.faults import Latency
from checkpointfs.testing.rate_limit import RateLimit

B = "checkpoints"


def listed(s3: EmbeddedS3, prefix: str, delimiter: str = "") -> list[str]:
    answer = s3.client().list_objects_v2(Bucket=B, Prefix=prefix, **({"Delimiter": delimiter} if delimiter else {}))
    return [o["Key"] for o in answer.get("Contents", [])] + [p["Prefix"] for p in answer.get("CommonPrefixes", [])]


def test_new_key_hidden_from_list_for_the_lag(embedded_s3: EmbeddedS3) -> None:
    embedded_s3.faults.consistency = ConsistencyLag(list_hides_new_s=60)
    c = embedded_s3.client()
    c.put_object(Bucket=B, Key="q/offsets/0", Body=b"x")
    c.put_object(Bucket=B, Key="q/commits/0", Body=b"x")
    assert listed(embedded_s3, "q/offsets/") == []
    assert listed(embedded_s3, "q/", "/") == []  # a prefix holding only hidden keys is hidden too
    assert c.get_object(Bucket=B, Key="q/offsets/0")["Body"].read() == b"x"  # reads are not lagged here
    embedded_s3.clock.advance(61)  # the lag is over
    assert listed(embedded_s3, "q/offsets/") == ["q/offsets/0"]
    assert "consistency-list-hidden" in embedded_s3.faults.kinds_injected()


def test_deleted_key_still_listed_for_the_lag(embedded_s3: EmbeddedS3) -> None:
    c = embedded_s3.client()
    c.put_object(Bucket=B, Key="q/offsets/0", Body=b"abc")
    c.put_object(Bucket=B, Key="q/deep/x/1", Body=b"abc")
    embedded_s3.faults.consistency = ConsistencyLag(list_keeps_deleted_s=60)
    c.delete_object(Bucket=B, Key="q/offsets/0")
    c.delete_objects(Bucket=B, Delete={"Objects": [{"Key": "q/deep/x/1"}]})
    answer = c.list_objects_v2(Bucket=B, Prefix="q/offsets/")
    assert [(o["Key"], o["Size"]) for o in answer["Contents"]] == [("q/offsets/0", 3)] and answer["KeyCount"] == 1
    assert listed(embedded_s3, "q/", "/") == ["q/deep/", "q/offsets/"]
    with pytest.raises(ClientError):
        c.head_object(Bucket=B, Key="q/offsets/0")  # gone for reads
    embedded_s3.clock.advance(61)  # the lag is over
    assert listed(embedded_s3, "q/") == []


def test_new_key_reads_404_then_appears(embedded_s3: EmbeddedS3) -> None:
    # a lag far longer than a busy machine takes between the put and the reads; the test moves the clock past it
    embedded_s3.faults.consistency = ConsistencyLag(read_new_404_s=60)
    c = embedded_s3.client()
    c.put_object(Bucket=B, Key="q/offsets/0", Body=b"x")
    for read in (lambda: c.head_object(Bucket=B, Key="q/offsets/0"), lambda: c.get_object(Bucket=B, Key="q/offsets/0")):
        with pytest.raises(ClientError) as raised:
            read()
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    embedded_s3.clock.advance(61)  # the lag is over
    assert c.get_object(Bucket=B, Key="q/offsets/0")["Body"].read() == b"x"


def test_overwritten_key_reads_stale_then_fresh(embedded_s3: EmbeddedS3) -> None:
    c = embedded_s3.client()
    c.put_object(Bucket=B, Key="q/metadata", Body=b"old", Metadata={"v": "1"})
    embedded_s3.faults.consistency = ConsistencyLag(read_overwritten_stale_s=60)
    c.put_object(Bucket=B, Key="q/metadata", Body=b"new!", Metadata={"v": "2"})
    answer = c.get_object(Bucket=B, Key="q/metadata")
    assert (answer["Body"].read(), answer["Metadata"]) == (b"old", {"v": "1"})
    embedded_s3.clock.advance(61)  # the lag is over
    assert c.get_object(Bucket=B, Key="q/metadata")["Body"].read() == b"new!"


def test_lag_applies_only_to_matching_keys(embedded_s3: EmbeddedS3) -> None:
    embedded_s3.faults.consistency = ConsistencyLag(list_hides_new_s=5, key_pattern="/offsets/")
    c = embedded_s3.client()
    c.put_object(Bucket=B, Key="q/offsets/0", Body=b"x")
    c.put_object(Bucket=B, Key="q/commits/0", Body=b"x")
    assert listed(embedded_s3, "q/") == ["q/commits/0"]


def test_truncated_body_is_resumed_by_the_reader(embedded_s3: EmbeddedS3) -> None:
    data = bytes(range(256)) * 4000
    embedded_s3.client().put_object(Bucket=B, Key="q/state/1.snapshot", Body=data)
    embedded_s3.faults.add(Fault("truncate", frozenset({"GetObject"}), times=1))
    embedded_s3.requests.clear()
    m = DirectWriteManager(**embedded_s3.manager_options())
    assert m.open(embedded_s3.uri("q/state/1.snapshot")).read() == data
    # the first GET was cut half-way; the second resumed at the break with a ranged GET pinned to the ETag
    assert embedded_s3.requests.counts() == {"GetObject": 2}


def test_latency_model_delays_every_request(embedded_s3: EmbeddedS3) -> None:
    c = embedded_s3.client()
    c.put_object(Bucket=B, Key="k", Body=b"x" * 100_000)
    embedded_s3.faults.latency = Latency(per_request_s=0.05, bandwidth_bytes_per_s=1_000_000)
    start = time.perf_counter()
    c.get_object(Bucket=B, Key="k")["Body"].read()
    assert time.perf_counter() - start >= 0.05 + 0.1


def test_plan_from_json_spec(tmp_path: object) -> None:
    spec = {"seed": 3, "faults": [{"kind": "slowdown", "operations": ["PutObject"], "probability": 0.25}],
            "consistency": {"list_hides_new_s": 2}, "latency": {"per_request_s": 0.02}}
    plan = FaultPlan.from_spec(json.dumps(spec))
    assert plan.seed == 3 and plan.consistency == ConsistencyLag(list_hides_new_s=2)
    assert plan.latency == Latency(per_request_s=0.02)
    assert plan.pick("GetObject", "b", "k") is None
    assert [f.kind for f in FaultPlan.from_spec("lost-responses")._faults] == ["lost-response"]
    assert FaultPlan.from_spec("mixed").consistency is not None
    with pytest.raises(ValueError, match="unknown fault profile 'chaos'; known: throttling"):
        FaultPlan.from_spec("chaos")
    with pytest.raises(ValueError, match="unknown fault spec fields"):
        FaultPlan.from_spec({"chaos": 1})
    with pytest.raises(ValueError, match="not valid JSON"):
        FaultPlan.from_spec("{nope")
    with pytest.raises(ValueError, match="bad fault spec"):
        FaultPlan.from_spec({"faults": [{"kind": "slowdown", "when": "always"}]})


@pytest.mark.embedded_s3_faults({"faults": [{"kind": "slowdown", "operations": ["PutObject"], "times": 1}]})
def test_marker_puts_a_spec_in_force(embedded_s3: EmbeddedS3) -> None:
    c = embedded_s3.client()
    with pytest.raises(ClientError, match="SlowDown"):
        c.put_object(Bucket=B, Key="k", Body=b"x")
    c.put_object(Bucket=B, Key="k", Body=b"x")
    assert embedded_s3.faults.kinds_injected() == {"slowdown": 1}


def test_cli_server_with_faults() -> None:
    import os
    import signal
    import subprocess
    import sys

    import boto3
    from botocore.config import Config

    from checkpointfs.testing.embedded_s3 import DEFAULT_ACCESS_KEY, DEFAULT_SECRET_KEY

    spec = json.dumps({"faults": [{"kind": "server-error", "operations": ["PutObject"], "times": 1}]})
    proc = subprocess.Popen([sys.executable, "-m", "checkpointfs.cli", "s3-server", "--faults", spec],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        endpoint = proc.stdout.readline().split()[3]
        c = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=DEFAULT_ACCESS_KEY,
                         aws_secret_access_key=DEFAULT_SECRET_KEY, config=Config(retries={"total_max_attempts": 1}))
        with pytest.raises(ClientError, match="InternalError"):
            c.put_object(Bucket="checkpoints", Key="k", Body=b"x")
        c.put_object(Bucket="checkpoints", Key="k", Body=b"x")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_latency_model_charges_server_side_copies(embedded_s3: EmbeddedS3) -> None:
    c = embedded_s3.client()
    c.put_object(Bucket=B, Key="big", Body=b"x" * 200_000)
    embedded_s3.faults.latency = Latency(copy_bytes_per_s=1_000_000)
    start = time.perf_counter()
    c.copy_object(Bucket=B, Key="copy", CopySource={"Bucket": B, "Key": "big"})
    assert time.perf_counter() - start >= 0.2


# -- S3's per-prefix request rates ----------------------------------------------------------------------------------
def test_requests_beyond_a_prefix_rate_are_answered_slowdown_and_not_applied(embedded_s3: EmbeddedS3) -> None:
    # 5 writes and 3 reads a prefix may send at once, refilled at 1 a minute: the test's pace cannot refill them
    embedded_s3.faults.limit_rate(RateLimit(writes_per_s=1 / 60, reads_per_s=1 / 100, burst_s=300),
                                  clock=embedded_s3.clock.monotonic)
    c = embedded_s3.client()
    answers = []
    for i in range(8):
        try:
            c.put_object(Bucket=B, Key=f"ckpt/state/0/{i}.delta", Body=b"x")
            answers.append(200)
        except ClientError as e:
            assert e.response["Error"]["Code"] == "SlowDown"
            answers.append(e.response["ResponseMetadata"]["HTTPStatusCode"])
    assert answers == [200] * 5 + [503] * 3
    assert listed(embedded_s3, "ckpt/") == [f"ckpt/state/0/{i}.delta" for i in range(5)]  # refused ones not applied
    c.put_object(Bucket=B, Key="other/offsets/0", Body=b"x")  # another prefix has its own rate
    assert embedded_s3.faults.throttle is not None
    assert embedded_s3.faults.throttle.throttled == {f"{B}/ckpt/": 3}
    assert embedded_s3.faults.kinds_injected() == {"rate-limited": 3}
    assert [r.status for r in embedded_s3.requests.all() if r.operation == "PutObject"][-4:] == [503, 503, 503, 200]
    embedded_s3.clock.advance(60)  # a minute later the prefix may write one more
    c.put_object(Bucket=B, Key="ckpt/state/0/5.delta", Body=b"x")
    with pytest.raises(ClientError):
        c.put_object(Bucket=B, Key="ckpt/state/0/6.delta", Body=b"x")


def test_rate_limit_from_a_spec_and_its_prefixes() -> None:
    plan = FaultPlan.from_spec({"rate_limit": {"writes_per_s": 100, "reads_per_s": 200, "prefix_depth": 2}})
    assert plan.throttle is not None and plan.throttle.limit == RateLimit(100, 200, prefix_depth=2)
    limit = plan.throttle.limit
    assert limit.prefix("b", "ckpt/state/0/1/2.delta") == "b/ckpt/state/"
    assert limit.prefix("b", "ckpt/offsets/7") == "b/ckpt/offsets/"
    assert limit.prefix("b", "top") == "b/"
    with pytest.raises(ValueError, match="positive"):
        RateLimit(writes_per_s=0)


def test_direct_write_manager_backs_off_under_a_prefix_rate_and_writes_every_file(embedded_s3: EmbeddedS3) -> None:
    # 4 writes a second per prefix, a burst of 2: 12 files and the store check's canaries exceed it several times
    embedded_s3.faults.limit_rate(RateLimit(writes_per_s=4, reads_per_s=100, burst_s=0.5),
                                  clock=embedded_s3.clock.monotonic)
    retry = RetryPolicy(max_attempts=20, initial_backoff_s=0.05, max_backoff_s=0.5, max_elapsed_s=60)
    with DirectWriteManager(**embedded_s3.manager_options(), retry=retry, root=f"s3://{B}/ckpt") as manager:
        for i in range(12):
            with manager.create_atomic(f"s3://{B}/ckpt/offsets/{i}") as out:
                out.write(f"batch {i}".encode())
        assert manager.metrics["throttled"] > 0
    assert embedded_s3.faults.throttle is not None and embedded_s3.faults.throttle.throttled[f"{B}/ckpt/"] > 0
    objects = {k: embedded_s3.client(admin=True).get_object(Bucket=B, Key=k)["Body"].read()
               for k in listed(embedded_s3, "ckpt/offsets/")}
    assert objects == {f"ckpt/offsets/{i}": f"batch {i}".encode() for i in range(12)}
