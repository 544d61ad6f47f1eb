"""Helpers of the Spark end-to-end tests: driver processes of their own (``python -m harness.job``) against
the session's embedded S3 (``pipeline``) or its MinIO behind a recording proxy (``minio_pipeline``), killed with
SIGKILL at chosen requests, and the server's request log to judge them."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.testing import EmbeddedS3, Request
from harness.driver import JOB_TIMEOUT_S, Job, LoggedStore, kill_when, start_job

__all__ = ["JOB_TIMEOUT_S", "Job", "Pipeline", "PipelineStore", "read_ids"]


class PipelineStore(LoggedStore, Protocol):
    """What a :class:`Pipeline` uses of its store (EmbeddedS3, LoggedMinio): a driver's needs, and the helpers that
    name and list keys and read objects without being logged (``client(admin=True)``)."""

    @property
    def buckets(self) -> list[str]: ...

    def uri(self, key: str = "", bucket: str | None = None, scheme: str = "s3") -> str: ...

    def keys(self, prefix: str = "", bucket: str | None = None) -> list[str]: ...

    def client(self, admin: bool = False) -> Any: ...


@dataclass
class Pipeline:
    """Input folder, output and checkpoint on a store that logs its requests, and the jobs run over them."""

    server: PipelineStore
    tmp_path: Path
    prefix: str = field(default_factory=lambda: f"e2e/{uuid.uuid4().hex[:12]}")
    jobs: list[Job] = field(default_factory=list)

    @property
    def input_dir(self) -> Path:
        return self.tmp_path / "input"

    @property
    def checkpoint_key(self) -> str:
        return f"{self.prefix}/checkpoint"

    @property
    def output_key(self) -> str:
        return f"{self.prefix}/output"

    @property
    def checkpoint(self) -> str:
        return self.server.uri(self.checkpoint_key, scheme="s3a")

    @property
    def output(self) -> str:
        return self.server.uri(self.output_key, scheme="s3a")

    def add_input(self, index: int, ids: list[int]) -> None:
        """Input file ``index`` holding records with ``ids`` (each file is one micro-batch)."""
        self.input_dir.mkdir(exist_ok=True)
        path = self.input_dir / f"part-{index:04d}.json"
        path.write_text("".join(json.dumps({"id": i, "key": f"k{i % 7}"}) + "\n" for i in ids))
        stamp = 1_700_000_000 + index  # the file source takes files in modification-time order
        os.utime(path, (stamp, stamp))

    def start(self, *extra: str, manager: str = "shim", query: str = "append",
              s3_overrides: dict[str, str] | None = None) -> Job:
        """Start a driver process on this pipeline (``s3_overrides``: fs.s3a.* settings changed for this job)."""
        job = start_job(self.server, self.tmp_path / f"job-{len(self.jobs)}.log", input_dir=self.input_dir,
                        output=self.output, checkpoint=self.checkpoint, query=query, manager=manager, extra=extra,
                        s3_overrides=s3_overrides)
        self.jobs.append(job)
        return job

    def requests(self, under: str | None = None) -> list[Request]:
        """Requests the server saw for keys under ``under`` (default: this pipeline's prefix)."""
        prefix = (under or self.prefix) + "/"
        return [r for r in self.server.requests.all() if r.key.startswith(prefix)]

    def checkpoint_keys(self) -> list[str]:
        return self.server.keys(self.checkpoint_key + "/")

    def assert_written_by_shim(self, batches: int, partitions: int) -> None:
        """Every offsets and commits file of the checkpoint's first ``batches`` micro-batches and every state delta
        file (at least ``partitions`` a batch) carries the shim's write id: each written directly, driver side and
        executor side; no CopyObject, no temp file left."""
        cp = self.checkpoint_key
        keys = self.checkpoint_keys()
        admin = self.server.client(admin=True)
        written = [f"{cp}/{log}/{n}" for n in range(batches) for log in ("offsets", "commits")]
        written += [k for k in keys if k.startswith(f"{cp}/state/") and k.endswith(".delta")]
        assert len(written) >= (2 + partitions) * batches, keys
        for key in written:
            assert WRITE_ID_KEY in admin.head_object(Bucket=self.server.buckets[0], Key=key)["Metadata"], key
        assert not [r for r in self.requests(cp) if r.operation == "CopyObject"]
        assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".")], keys

    def kill_when(self, job: Job, seen: Callable[[Request], bool], timeout: float = JOB_TIMEOUT_S) -> Request:
        """SIGKILL ``job`` as soon as the server has answered a request matching ``seen`` (among the requests sent
        since the job started); returns that request."""
        request = kill_when(self.server, job, seen, timeout)
        if request is None:
            raise AssertionError(f"job ended before the kill point; log:\n{job.tail()}")
        return request

    def stop_all(self) -> None:
        for job in self.jobs:
            job.kill()


@pytest.fixture
def store_profile(request: pytest.FixtureRequest) -> str | None:
    """The embedded S3's profile a ``pipeline`` runs on: S3 Standard's rules (None) unless a test parametrizes it
    (``@pytest.mark.parametrize("store_profile", [...], indirect=True)``: ``"directory-bucket"``, S3 Express One
    Zone's rules, or ``"directory-bucket:no-metadata"``, the same dropping user metadata)."""
    return getattr(request, "param", None)


@pytest.fixture
def pipeline(embedded_s3: EmbeddedS3, tmp_path: Path, store_profile: str | None) -> Iterator[Pipeline]:
    """A fresh pipeline on the emptied embedded S3, served by the rules of ``store_profile``; its jobs are killed at
    the end of the test."""
    embedded_s3.profile = store_profile
    p = Pipeline(embedded_s3, tmp_path)
    try:
        yield p
    finally:
        p.stop_all()
        embedded_s3.profile = None


@pytest.fixture
def minio_pipeline(logged_minio: Any, tmp_path: Path) -> Iterator[Pipeline]:
    """A pipeline on the session's MinIO behind its recording proxy (``logged_minio``): a fresh prefix, the request
    log cleared; its jobs are killed at the end of the test."""
    p = Pipeline(logged_minio, tmp_path, prefix=logged_minio.reset("e2e"))
    yield p
    p.stop_all()


def committed_ids(pipeline: Pipeline, output_key: str | None = None) -> list[int]:
    """Every id in the pipeline's file sink output (or the one at ``output_key``), sorted, read through its
    ``_spark_metadata`` by checkpointfs's own reader (no Spark session: the same on the embedded S3 and on MinIO)."""
    from checkpointfs import DirectWriteManager
    from checkpointfs.sink import committed_files

    server = pipeline.server
    ids: list[int] = []
    with DirectWriteManager(**server.manager_options()) as manager:
        for path in committed_files(server.uri(output_key or pipeline.output_key), manager=manager):
            with manager.open(path) as f:
                ids += [int(json.loads(line)["id"]) for line in f.read().decode().splitlines() if line]
    return sorted(ids)


def read_ids(spark: Any, output: str) -> list[int]:
    """Every id in the file sink's committed output (Spark reads it through ``_spark_metadata``), sorted."""
    frame = spark.read.schema("id LONG, key STRING").json(output)
    return sorted(int(row.id) for row in frame.select("id").collect())
