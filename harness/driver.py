"""Driver processes of :mod:`checkpointfs.spark.job` against an embedded S3: started in a session of their own,
killed with SIGKILL (driver and JVM together: a crash, no shutdown hook runs) when the server has answered a chosen
request, and waited for with their closing JSON line. The end-to-end tests and the reliability campaign
(:mod:`checkpointfs.spark.campaign`) share these."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..testing import EmbeddedS3, Request
from .config import s3a_settings
from .job import S3_ENV

JOB_TIMEOUT_S = 180


class JobTimeoutError(AssertionError):
    """A driver did not finish, or did not reach its kill point, in time (it is killed)."""


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
            raise JobTimeoutError(f"job did not finish within {timeout}s; log:\n{self.tail()}") from None
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


def start_job(server: EmbeddedS3, log_path: Path, *, input_dir: Path, output: str, checkpoint: str,
              query: str = "append", manager: str = "shim", extra: Sequence[str] = (),
              s3_overrides: Mapping[str, str] | None = None) -> Job:
    """Start a driver process of checkpointfs.spark.job on ``server`` (its s3a:// settings, with ``s3_overrides``,
    go through the environment, never the command line); its output goes to ``log_path``."""
    env = dict(os.environ)
    env[S3_ENV] = json.dumps({**s3a_settings(server), **(s3_overrides or {})})
    first_request = len(server.requests)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "checkpointfs.spark.job", "--input", str(input_dir), "--output", output,
             "--checkpoint", checkpoint, "--query", query, "--manager", manager, *extra],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return Job(process, log_path, first_request)


def kill_when(server: EmbeddedS3, job: Job, seen: Callable[[Request], bool],
              timeout: float = JOB_TIMEOUT_S) -> Request | None:
    """SIGKILL ``job`` as soon as the server has answered a request matching ``seen`` (among the requests sent
    since the job started); returns that request, or None when the job ended first (it is not killed then).
    :class:`JobTimeoutError` (after killing the job) when neither happens within ``timeout``."""
    deadline = time.monotonic() + timeout
    checked = job.first_request
    while time.monotonic() < deadline:
        requests = server.requests.all()
        for request in requests[checked:]:
            if seen(request):
                job.kill()
                return request
        checked = len(requests)
        if job.process.poll() is not None:
            return None
        time.sleep(0.005)
    job.kill()
    raise JobTimeoutError(f"kill point not reached within {timeout}s; log:\n{job.tail()}")
