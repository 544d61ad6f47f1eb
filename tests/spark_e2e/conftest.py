"""Helpers of the Spark end-to-end tests: driver processes of their own (``python -m checkpointfs.spark.job``) against
the session's embedded S3, killed with SIGKILL at chosen requests, and the server's request log to judge them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from checkpointfs.spark import s3a_settings
from checkpointfs.spark.job import S3_ENV
from checkpointfs.testing import EmbeddedS3, Request

JOB_TIMEOUT_S = 180


@dataclass
class Job:
    """One driver process of checkpointfs.spark.job."""

    process: subprocess.Popen[bytes]
    log_path: Path
    first_request: int
    """Index in the server's request log when the job was started: its own requests come after."""
    killed: bool = False

    def wait(self, timeout: float = JOB_TIMEOUT_S) -> dict[str, Any]:
        """Wait for the end; the job's closing JSON line (``{"status": ...}``), or ``{"status": "killed"}``."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"job did not finish within {timeout}s; log:\n{self.tail()}") from None
        if self.killed:
            return {"status": "killed"}
        for line in reversed(self.log_path.read_text(errors="replace").splitlines()):
            if line.startswith("{") and '"status"' in line:
                return dict(json.loads(line))
        raise AssertionError(f"job exited {self.process.returncode} without a result; log:\n{self.tail()}")

    def kill(self) -> None:
        """SIGKILL the driver and its JVM (the whole process group): a crash, no shutdown hook runs."""
        if self.process.poll() is None:
            self.killed = True
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def tail(self, lines: int = 40) -> str:
        """The end of the job's output."""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class Pipeline:
    """Input folder, output and checkpoint on the embedded S3, and the jobs run over them."""

    server: EmbeddedS3
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
        env = dict(os.environ)
        env[S3_ENV] = json.dumps({**s3a_settings(self.server), **(s3_overrides or {})})
        log_path = self.tmp_path / f"job-{len(self.jobs)}.log"
        first_request = len(self.server.requests)
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "checkpointfs.spark.job", "--input", str(self.input_dir), "--output",
                 self.output, "--checkpoint", self.checkpoint, "--query", query, "--manager", manager, *extra],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        job = Job(process, log_path, first_request)
        self.jobs.append(job)
        return job

    def requests(self, under: str | None = None) -> list[Request]:
        """Requests the server saw for keys under ``under`` (default: this pipeline's prefix)."""
        prefix = (under or self.prefix) + "/"
        return [r for r in self.server.requests.all() if r.key.startswith(prefix)]

    def checkpoint_keys(self) -> list[str]:
        return self.server.keys(self.checkpoint_key + "/")

    def kill_when(self, job: Job, seen: Callable[[Request], bool], timeout: float = JOB_TIMEOUT_S) -> Request:
        """SIGKILL ``job`` as soon as the server has answered a request matching ``seen`` (among the requests sent
        since the job started); returns that request."""
        deadline = time.monotonic() + timeout
        checked = job.first_request
        while time.monotonic() < deadline:
            requests = self.server.requests.all()
            for request in requests[checked:]:
                if seen(request):
                    job.kill()
                    return request
            checked = len(requests)
            if job.process.poll() is not None:
                raise AssertionError(f"job ended before the kill point; log:\n{job.tail()}")
            time.sleep(0.005)
        job.kill()
        raise AssertionError(f"kill point not reached within {timeout}s; log:\n{job.tail()}")

    def stop_all(self) -> None:
        for job in self.jobs:
            job.kill()


@pytest.fixture
def pipeline(embedded_s3: EmbeddedS3, tmp_path: Path) -> Iterator[Pipeline]:
    """A fresh pipeline on the emptied embedded S3; its jobs are killed at the end of the test."""
    p = Pipeline(embedded_s3, tmp_path)
    yield p
    p.stop_all()


def read_ids(spark: Any, output: str) -> list[int]:
    """Every id in the file sink's committed output (Spark reads it through ``_spark_metadata``), sorted."""
    frame = spark.read.schema("id LONG, key STRING").json(output)
    return sorted(int(row.id) for row in frame.select("id").collect())
