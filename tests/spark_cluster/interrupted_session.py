"""The session that tests/suite/test_interrupted_run.py starts and then stops with SIGTERM (not a ``test_*`` module:
only run when named). It brings up what a real run's fixtures start, a standalone cluster (master and 2 workers,
daemons in sessions of their own) and a MinIO server, says so by writing the file ``$INTERRUPTED_READY`` names, and
waits to be stopped."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from harness.servers.spark_cluster import StandaloneCluster


def test_waits_to_be_interrupted(standalone_cluster: StandaloneCluster, minio_server: Any) -> None:
    Path(os.environ["INTERRUPTED_READY"]).write_text(f"{os.getpid()}\n")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:  # ended by the signal; the deadline only bounds a run nobody stops
        time.sleep(0.2)
    raise AssertionError("nobody stopped this session")
