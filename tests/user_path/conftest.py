"""The user's path: the wheel `make dist` builds, installed in each Spark line's own venv
(``harness/line_env.sh``), with ``configure()`` fetching its jars itself into a cache that starts empty in a fresh
clone (``.cache/user-path`` in the checkout, kept between lines and runs so the suite's budget holds)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JAR_CACHE = REPO / ".cache" / "user-path"
"""``$CHECKPOINTFS_CACHE`` of the user's jobs: empty in a fresh clone (git ignores it)."""


def newest_wheel() -> Path:
    """The newest wheel in ``dist/`` (``make dist``; ``make userpath`` builds it first)."""
    wheels = sorted((REPO / "dist").glob("checkpointfs-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        pytest.skip("no wheel in dist/: the user's path installs the wheel; run `make userpath` (it runs make dist)")
    return wheels[-1]


def line_python(line: str) -> Path:
    """The python of ``line``'s venv with the newest wheel installed (made or refreshed by harness/line_env.sh)."""
    wheel = newest_wheel()
    env = {**os.environ, "CHECKPOINTFS_WHEEL": str(wheel)}
    done = subprocess.run(["bash", str(REPO / "harness" / "line_env.sh"), line], env=env, capture_output=True,
                          text=True, check=False, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"harness/line_env.sh {line} failed:\n{done.stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1])
