"""Every supported Spark line, the way a user runs it: the wheel beside that line's pyspark, ``configure()`` given
only the store's settings, fetching hadoop-aws and the AWS SDK itself (Spark's Maven resolution) into a jar cache
that starts empty in a fresh clone; a stateful query on a real MinIO, stopped and resumed on the same checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.spark.lines import LINES, SparkLine
from harness.servers.minio import MinioServer

from .conftest import JAR_CACHE, REPO, WRITE_ID_KEY, line_python, run_user_query, write_input


def run_minio_query(python: Path, minio: MinioServer, input_dir: Path, prefix: str, work: Path) -> dict[str, Any]:
    """user_query.py on ``minio`` (run_user_query), its output and checkpoint under ``prefix``."""
    s3 = {"endpoint": minio.endpoint_url, "region": minio.region, "access_key": minio.access_key,
          "secret_key": minio.secret_key}
    bucket = minio.buckets[0]
    return run_user_query(python, input_dir, [f"s3a://{bucket}/{prefix}/out", f"s3a://{bucket}/{prefix}/cp"], work,
                          {"USER_QUERY_S3": json.dumps(s3)}, secrets=[minio.secret_key])


def output_ids(minio: MinioServer, prefix: str) -> list[int]:
    """Every id in the committed output files (JSON lines), duplicates kept."""
    client = minio.client()
    ids: list[int] = []
    for key in minio.keys(f"{prefix}/out/"):
        if "/_spark_metadata/" in key or not key.endswith(".json"):
            continue
        body = client.get_object(Bucket=minio.buckets[0], Key=key)["Body"].read().decode()
        ids.extend(json.loads(line)["id"] for line in body.splitlines() if line)
    return ids


@pytest.fixture(scope="module")
def minio() -> Any:
    with MinioServer(["user-path"]) as server:
        yield server


@pytest.mark.parametrize("line", LINES, ids=lambda line: f"spark-{line.line}")
def test_wheel_with_self_fetched_jars_runs_a_stateful_query(line: SparkLine, minio: MinioServer,
                                                            tmp_path: Path) -> None:
    started = time.monotonic()
    python = line_python(line.line)
    version = subprocess.run([str(python), "-c", "import pyspark, checkpointfs; print(pyspark.__version__); "
                              "print(checkpointfs.__file__)"], capture_output=True, text=True, check=True,
                             cwd=tmp_path).stdout.split()
    assert version[0] == line.pyspark
    assert not Path(version[1]).resolve().is_relative_to(REPO), "checkpointfs came from the checkout, not the wheel"

    prefix = f"spark-{line.line}"
    input_dir = tmp_path / "input"
    write_input(input_dir, 0, [1, 2, 3, 4])
    write_input(input_dir, 1, [3, 4, 5, 6])
    fetched_before = (JAR_CACHE / "s3a-jars" / f"hadoop-{line.hadoop}" / "listing.txt").exists()
    first = run_minio_query(python, minio, input_dir, prefix, tmp_path)
    fetching = f"checkpointfs: fetching hadoop-aws {line.hadoop} and the AWS SDK jars S3A needs"
    # The one-time fetch is said before it starts and when it ends, at default logging; a cache hit says nothing.
    said = fetching in first["stderr"]
    assert said == ("checkpointfs: fetched " in first["stderr"]) and not (said and fetched_before)
    if not fetched_before and [other.hadoop for other in LINES].count(line.hadoop) == 1:
        assert said, first["stderr"][-3000:]  # (lines sharing a Hadoop may race: the other one fetched it)
    assert first["spark"] == line.pyspark
    jars = first["jars"].split(",")
    assert not any(str(REPO) in jar for jar in jars if str(JAR_CACHE) not in jar), (
        f"the job loaded jars from the checkout: {jars}")
    assert any(f"hadoop-aws-{line.hadoop}.jar" in jar and str(JAR_CACHE) in jar for jar in jars), (
        f"configure() did not fetch hadoop-aws {line.hadoop} itself: {jars}")
    assert sorted(output_ids(minio, prefix)) == [1, 2, 3, 4, 5, 6]

    # Resumed on the same checkpoint with one more file: the state store remembers ids 1-6.
    write_input(input_dir, 2, [5, 6, 7, 8])
    second = run_minio_query(python, minio, input_dir, prefix, tmp_path)
    assert second["batches"] >= 1 and fetching not in second["stderr"]
    assert sorted(output_ids(minio, prefix)) == [1, 2, 3, 4, 5, 6, 7, 8]

    client = minio.client()
    checkpoint = minio.keys(f"{prefix}/cp/")
    written = [k for k in checkpoint if "/offsets/" in k or "/commits/" in k or "/state/" in k]
    assert written, checkpoint
    for key in written:
        head = client.head_object(Bucket=minio.buckets[0], Key=key)
        assert head["Metadata"].get(WRITE_ID_KEY), f"{key} was not written by the checkpointfs shim"
    assert not [k for k in checkpoint if k.endswith(".tmp")], f"temp files in the checkpoint: {checkpoint}"
    print(f"spark {line.line}: {time.monotonic() - started:.0f} s, jar cache {JAR_CACHE}", file=sys.stderr)
