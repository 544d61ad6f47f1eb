"""The user's path: the wheel `make dist` builds, installed in each Spark line's own venv
(``harness/line_env.sh``), with ``configure()`` fetching its jars itself into a cache that starts empty in a fresh
clone (``.cache/user-path`` in the checkout, kept between lines and runs so the suite's budget holds)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
JAR_CACHE = REPO / ".cache" / "user-path"
"""``$CHECKPOINTFS_CACHE`` of the user's jobs: empty in a fresh clone (git ignores it)."""
SCRIPT = Path(__file__).with_name("user_query.py")
JOB_TIMEOUT_S = 900
WRITE_ID_KEY = "checkpointfs-write-id"


def write_input(folder: Path, index: int, ids: list[int]) -> None:
    """Input file ``index`` (one micro-batch), with a modification time of its own: Spark's file source takes
    files in modification-time order."""
    folder.mkdir(exist_ok=True)
    path = folder / f"part-{index:04d}.json"
    path.write_text("".join(json.dumps({"id": i, "key": f"k{i % 5}"}) + "\n" for i in ids))
    stamp = 1_700_000_000 + index
    os.utime(path, (stamp, stamp))


def run_user_query(python: Path, input_dir: Path, paths: Iterable[str], work: Path, settings: dict[str, str],
                   secrets: Iterable[str] = ()) -> dict[str, Any]:
    """Run user_query.py with ``python`` from ``work`` (outside the checkout), as a user would: no
    ``$CHECKPOINTFS_SPARK_DEPS``, no PYTHONPATH, the jar cache under ``JAR_CACHE``; ``settings`` (the stores'
    settings, ``USER_QUERY_*``) in its environment, ``paths`` its outputs and checkpoints. Its result line, with its
    stderr; none of ``secrets`` may reach its output."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CHECKPOINTFS_SPARK_DEPS", "PYTHONPATH", "PYSPARK_SUBMIT_ARGS", "SPARK_HOME")}
    env.update({"CHECKPOINTFS_CACHE": str(JAR_CACHE), "SPARK_LOCAL_IP": "127.0.0.1", "PYTHONSAFEPATH": "1",
                **settings})
    done = subprocess.run([str(python), str(SCRIPT), str(input_dir), *paths], cwd=work, env=env,
                          capture_output=True, text=True, timeout=JOB_TIMEOUT_S, check=False)
    for secret in secrets:
        assert secret not in done.stdout + done.stderr, "a secret reached the job's output"
    assert done.returncode == 0, f"the user's query failed (exit {done.returncode}):\n{done.stderr[-5000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["stderr"] = done.stderr
    return result


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
