"""One JSON-lines record of a test run's time: appended to the file ``$CHECKPOINTFS_TIMINGS`` names, when it does.

The tests' plugin (tests/timings.py) writes each test phase and costly fixture set-up, harness/driver.py each
Spark driver process it started (how long it lived, whether it was SIGKILLed), harness/parts.sh each part of a gate;
harness/suite_times.py reads them. Each record is one line written with O_APPEND, so concurrent writers (xdist
workers, per-line sessions) never interleave.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

TIMINGS_ENV = "CHECKPOINTFS_TIMINGS"


def record(kind: str, **fields: Any) -> None:
    """Append ``{"kind": kind, **fields, "pid", "at"}`` to the timings file (nothing without one)."""
    path = os.environ.get(TIMINGS_ENV)
    if not path:
        return
    data = (json.dumps({"kind": kind, **fields, "pid": os.getpid(), "at": round(time.time(), 1)},
                       separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
