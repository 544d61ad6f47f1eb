"""The tools on s3:// and s3a://: a real Spark 4.3 query checkpointing through the shim to the embedded S3, then
inspect and verify over S3 (existence by listing, no per-file requests), and unreadable stores (exit 2, no
credentials in any output)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from checkpointfs.testing import EmbeddedS3

from .conftest import run_query, write_inputs

S3_BATCHES = 3
"""Enough for a sink compaction (interval 3) while keeping the query short on the embedded S3."""

pytestmark = pytest.mark.spark


def test_spark_on_s3_inspect_and_verify(spark: Any, s3_env: EmbeddedS3, cli: Any, tmp_path: Path) -> None:
    write_inputs(tmp_path / "in", S3_BATCHES)
    checkpoint, output = s3_env.uri("tools/ck", scheme="s3a"), s3_env.uri("tools/out", scheme="s3a")
    committed = run_query(spark, str(tmp_path / "in"), checkpoint, output)
    endpoint = ["--endpoint-url", s3_env.endpoint_url]

    found = cli("inspect", checkpoint, "--sink", output, "--json", *endpoint).json
    assert found["commits"] == {"latest": S3_BATCHES - 1, "count": S3_BATCHES, "version": 1}
    assert found["state"]["operators"][0]["partitions"] == 3
    assert found["state"]["operators"][0]["latest_version"] == S3_BATCHES
    assert found["sink"]["compact_interval"] == 3
    assert found["sink"]["files"] == len(committed)

    s3_env.requests.clear()
    result = cli("verify", s3_env.uri("tools/ck"), "--sink", s3_env.uri("tools/out"), "--json", *endpoint)
    assert result.code == 0, result.out
    assert result.json["checked"]["sink_files"] == len(committed)
    reads = [r for r in s3_env.requests.all() if r.operation in ("GetObject", "HeadObject")]
    assert not [r for r in reads if "/part-" in r.key or r.key.startswith("tools/out/part-")]  # listed, never probed
    assert all("_spark_metadata" in r.key or r.key.startswith("tools/ck/") for r in reads)

    victim = next(k for k in s3_env.keys("tools/out/") if "/part-" in k)
    s3_env.client(admin=True).delete_object(Bucket="checkpoints", Key=victim)
    result = cli("verify", checkpoint, "--sink", output, "--json", *endpoint)
    assert result.code == 1
    assert [(p["kind"], p["path"]) for p in result.json["problems"]] == [
        ("missing_file", f"{output}/{victim.removeprefix('tools/out/')}")]


def test_wrong_credentials_exit_2_and_stay_secret(s3_env: EmbeddedS3, cli: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "wJalrXUtnFEMI-not-the-right-secret-0123456789"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    for command in ("inspect", "verify"):
        result = cli(command, s3_env.uri("tools/ck"), "--endpoint-url", s3_env.endpoint_url)
        assert result.code == 2
        assert "access denied" in result.err and "Traceback" not in result.err
        assert secret not in result.err + result.out and "AKIAWRONGWRONGWRONG1" not in result.err + result.out
    result = cli("doctor", s3_env.uri("probe"), "--endpoint-url", s3_env.endpoint_url)
    assert result.code == 2 and secret not in result.err + result.out


def test_missing_bucket_and_unreachable_store_exit_2(s3_env: EmbeddedS3, cli: Any) -> None:
    result = cli("verify", "s3://no-such-bucket/ck", "--endpoint-url", s3_env.endpoint_url, "--json")
    assert result.code == 2 and result.out == ""
    assert "s3://no-such-bucket/ck" in result.err and "bucket does not exist" in result.err
    result = cli("verify", s3_env.uri("nothing/here"), "--endpoint-url", s3_env.endpoint_url)
    assert result.code == 2 and "no checkpoint here" in result.err
    result = cli("inspect", "s3://checkpoints/ck", "--endpoint-url", "http://user:hunter22@127.0.0.1:9")
    assert result.code == 2 and "cannot be reached" in result.err and "hunter22" not in result.err
