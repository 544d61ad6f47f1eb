"""Driver processes of :mod:`harness.job` against a store that logs its requests (the embedded S3, or MinIO behind
:class:`~harness.servers.recording_proxy.LoggedMinio`): started in a session of their own,
killed with SIGKILL (driver and JVM together: a crash, no shutdown hook runs) when the server has answered a chosen
request, and waited for with their closing JSON line. The end-to-end tests and the reliability campaign
(:mod:`harness.campaign`) share these."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol

from checkpointfs.polling import poll
from checkpointfs.spark.config import s3a_settings
from checkpointfs.testing import Request, RequestLog
from harness.job import S3_ENV
from harness.timings import record

JOB_TIMEOUT_S = 180
_EXIT_CHECK_S = 0.25
REPO_ROOT = Path(__file__).resolve().parent.parent


@lru_cache(maxsize=1)
def harness_only_path() -> str:
    """A folder holding only a link to this checkout's ``harness`` package. Driver processes get it as their
    ``PYTHONPATH`` and working directory instead of the checkout, so that they import the checkpointfs installed in
    their interpreter (the wheel, in a line's venv), never the checkout's copy beside ``harness``."""
    digest = hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"checkpointfs-harness-{os.getuid()}-{digest}"
    folder.mkdir(exist_ok=True)
    link = folder / "harness"
    if not link.is_symlink() or link.resolve() != REPO_ROOT / "harness":
        tmp = folder / f".harness.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(REPO_ROOT / "harness", target_is_directory=True)
        tmp.replace(link)
    return str(folder)


class LoggedStore(Protocol):
    """What a driver job needs of its store: S3A settings that reach it (``s3a_settings`` takes it), and the log of
    the requests it served, which kill points watch (:class:`~checkpointfs.testing.EmbeddedS3`,
    :class:`~harness.servers.recording_proxy.LoggedMinio`)."""

    @property
    def requests(self) -> RequestLog: ...

    def hadoop_conf(self) -> dict[str, str]: ...


class JobTimeoutError(AssertionError):
    """A driver did not finish, or did not reach its kill point, in time (it is killed)."""


@dataclass
class Job:
    """One driver process of harness.job."""

    process: subprocess.Popen[bytes]
    log_path: Path
    first_request: int
    """Index in the server's request log when the job was started: its own requests come after."""
    killed: bool = False
    module: str = "harness.job"
    started: float = field(default_factory=time.monotonic)
    recorded: bool = False

    def _record(self) -> None:
        """The driver's life in the run's timings file (harness/timings.py), once it has ended."""
        if not self.recorded and self.process.poll() is not None:
            self.recorded = True
            record("driver", module=self.module, seconds=round(time.monotonic() - self.started, 2),
                   killed=self.killed, nodeid=os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0])

    def wait(self, timeout: float = JOB_TIMEOUT_S) -> dict[str, Any]:
        """Wait for the end; the job's closing JSON line (``{"status": ...}``), or ``{"status": "killed"}``."""
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise JobTimeoutError(f"job did not finish within {timeout}s; log:\n{self.tail()}") from None
        self._record()
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
            self._record()

    def tail(self, lines: int = 40) -> str:
        """The end of the job's output."""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def start_job(server: LoggedStore, log_path: Path, *, input_dir: Path, output: str, checkpoint: str,
              query: str = "append", manager: str = "shim", extra: Sequence[str] = (),
              s3_overrides: Mapping[str, str] | None = None) -> Job:
    """Start a driver process of harness.job on ``server`` (its s3a:// settings, with ``s3_overrides``,
    go through the environment, never the command line); its output goes to ``log_path``."""
    return start_driver(server, log_path, "harness.job",
                        ["--input", str(input_dir), "--output", output, "--checkpoint", checkpoint, "--query", query,
                         "--manager", manager, *extra], s3_overrides=s3_overrides)


def start_driver(server: LoggedStore | None, log_path: Path, module: str, args: Sequence[str],
                 s3_overrides: Mapping[str, str] | None = None) -> Job:
    """Start ``python -m <module> <args>`` (a harness driver: harness.job, harness.shapes) on ``server``, in a
    session of its own, with the s3a:// settings in the environment (none without a ``server``); its output goes
    to ``log_path``."""
    env = dict(os.environ)
    env.pop(S3_ENV, None)
    if server is not None:
        env[S3_ENV] = json.dumps({**s3a_settings(server), **(s3_overrides or {})})
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the driver's ports (RPC, block manager, UI) on loopback only
    env.setdefault("PYSPARK_PYTHON", sys.executable)  # Python workers (UDFs, pandas) in the driver's environment
    # How long a Python worker waits to connect back to its JVM (pyspark's default, 15 s, is too short for a machine
    # busy with other JVMs: transformWithStateInPandas's driver-side worker timed out at load 14).
    env.setdefault("SPARK_AUTH_SOCKET_TIMEOUT", "120")
    harness_only = harness_only_path()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [harness_only, env.get("PYTHONPATH")]))  # harness.*
    first_request = len(server.requests) if server is not None else 0
    with log_path.open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", module, *args], stdout=log, stderr=subprocess.STDOUT,
                                   env=env, start_new_session=True, cwd=harness_only)
    return Job(process, log_path, first_request, module=module)


def kill_when(server: LoggedStore, job: Job, seen: Callable[[Request], bool],
              timeout: float = JOB_TIMEOUT_S) -> Request | None:
    """SIGKILL ``job`` as soon as the server has answered a request matching ``seen`` (among the requests sent
    since the job started); returns that request, or None when the job ended first (it is not killed then).
    :class:`JobTimeoutError` (after killing the job) when neither happens within ``timeout``.

    The wait is on the request log's condition, signalled by every request the server records: the kill follows
    the matching answer at once. Between requests, the job's exit is checked every ``_EXIT_CHECK_S``."""

    checked = job.first_request

    def killed_or_ended() -> Request | Literal["ended"] | None:
        nonlocal checked
        request, checked = server.requests.wait_for(seen, since=checked, timeout=_EXIT_CHECK_S)
        if request is not None:
            job.kill()
            return request
        return "ended" if job.process.poll() is not None else None

    outcome = poll(killed_or_ended, timeout, first_delay_s=0.0, max_delay_s=0.0)
    if outcome is None:
        job.kill()
        raise JobTimeoutError(f"kill point not reached within {timeout}s; log:\n{job.tail()}")
    return outcome if isinstance(outcome, Request) else None


@dataclass
class Restarts:
    """One harness driver (``python -m <module> <args>`` on ``server``) SIGKILLed at chosen requests and started
    again on the same arguments (so on the same checkpoints), as a crashed application is resubmitted: every driver
    it started and every request it killed one at. Used as a context manager, which kills whatever still runs at the
    end."""

    server: LoggedStore
    log_dir: Path
    module: str
    args: Sequence[str]
    timeout: float = JOB_TIMEOUT_S
    jobs: list[Job] = field(default_factory=list)
    kills: list[Request] = field(default_factory=list)

    def __enter__(self) -> Restarts:
        return self

    def __exit__(self, *_: object) -> None:
        for job in self.jobs:
            job.kill()

    def start(self) -> Job:
        """Start the driver once more; its log is ``job-<n>.log`` in ``log_dir``."""
        job = start_driver(self.server, self.log_dir / f"job-{len(self.jobs)}.log", self.module, self.args)
        self.jobs.append(job)
        return job

    def kill_when(self, job: Job, seen: Callable[[Request], bool]) -> Request:
        """SIGKILL ``job`` as soon as the server has answered a request matching ``seen`` (:func:`kill_when`); that
        request. AssertionError, with the driver's log, when the driver ended first."""
        request = kill_when(self.server, job, seen, timeout=self.timeout)
        if request is None:
            raise AssertionError(f"the driver ended before kill point {len(self.kills) + 1}:\n{job.tail(80)}")
        self.kills.append(request)
        return request

    def run_to_end(self) -> dict[str, Any]:
        """Start the driver once more and wait for its end; its closing JSON line, whose status must be ``ok``."""
        job = self.start()
        outcome = job.wait(timeout=self.timeout)
        assert outcome["status"] == "ok", f"{outcome.get('errors')}\n{job.tail(80)}"
        return outcome
