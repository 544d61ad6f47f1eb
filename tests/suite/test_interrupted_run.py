"""Nothing a test run started outlives it, also when the run is stopped from outside.

A pytest session that has started a standalone cluster (master and two workers, each a daemon in a session of its
own) and a MinIO server is stopped as ``timeout`` stops a command: SIGTERM to its process group. Its fixtures must
tear all of it down: afterwards no process carrying the session's run tag (``CHECKPOINTFS_RUN_TAG``, inherited by
everything it started; harness/leftovers.py) is alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from checkpointfs.testing.readiness import NotReady, wait_ready
from harness.leftovers import TAG_ENV, end, tagged

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.minio]

REPO = Path(__file__).resolve().parents[2]
INNER = REPO / "tests" / "spark_cluster" / "interrupted_session.py"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_session_stopped_midway_leaves_nothing_running(tmp_path: Path, sig: signal.Signals) -> None:
    pytest.importorskip("pyspark", reason="the inner session starts a standalone cluster (extra 'spark')")
    tag = f"interrupted-{uuid.uuid4().hex[:12]}"
    ready = tmp_path / "ready"
    log_path = tmp_path / "inner.log"
    env = {**os.environ, TAG_ENV: tag, "INTERRUPTED_READY": str(ready), "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("CHECKPOINTFS_TIMINGS", None)
    with log_path.open("wb") as log:
        inner = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(INNER)],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    try:
        def started() -> None:
            if not ready.exists():
                raise NotReady("the inner session has not started its cluster and MinIO yet")

        wait_ready("inner pytest session", started, timeout_s=300, exit_code=inner.poll, log_path=log_path)
        servers = [p for p in tagged(tag) if p.pid != inner.pid]  # the inner pytest carries the tag too
        assert len(servers) >= 4, f"the cluster's master, its two workers and MinIO should be running: {servers}"
        os.killpg(inner.pid, sig)  # as `timeout` (SIGTERM) and Ctrl-C (SIGINT) do: the whole process group
        code = inner.wait(timeout=180)
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
            inner.wait()
        left = tagged(tag)
        end(left, grace_s=5)
    output = log_path.read_text(errors="replace")
    assert left == [], f"still running after the session ended: {[p.describe() for p in left]}\n{output[-3000:]}"
    assert code == pytest.ExitCode.INTERRUPTED, output[-3000:]
