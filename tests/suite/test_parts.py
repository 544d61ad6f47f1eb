"""harness/parts.sh, the runner of `make test` and `make test-all`: parts in order with their times, the first failure
ends the run (all run with --keep-going), a process left running fails it, and SIGTERM ends the running part and
still checks for leftovers. Run on a small Makefile of its own in a copy of harness/."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from checkpointfs.testing.readiness import NotReady, wait_ready

REPO = Path(__file__).resolve().parents[2]
MAKEFILE = """\
ok:
\t@echo fine
fail:
\t@exit 3
leak:
\t@setsid sleep 300 >/dev/null 2>&1 &
slow:
\t@touch started && sleep 300
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "harness").mkdir()
    for name in ("parts.sh", "leftovers.py"):
        shutil.copy(REPO / "harness" / name, tmp_path / "harness" / name)
    (tmp_path / "Makefile").write_text(MAKEFILE)
    return tmp_path


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CHECKPOINTFS_RUN_TAG", "CHECKPOINTFS_TIMINGS")}
    env["CHECKPOINTFS_TIMINGS"] = str(project / "timings.jsonl")
    return subprocess.run(["bash", "harness/parts.sh", *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_parts_run_in_order_and_the_first_failure_ends_the_run(project: Path) -> None:
    run = _run(project, "--name", "gate", "ok", "fail", "ok")
    assert run.returncode == 1
    assert "== gate: failed: fail" in run.stderr
    parts = [json.loads(line) for line in (project / "timings.jsonl").read_text().splitlines()]
    assert [(p["part"], p["exit"]) for p in parts] == [("ok", 0), ("fail", 2)]  # make's status for a failed recipe


def test_keep_going_runs_every_part_and_names_the_failed(project: Path) -> None:
    run = _run(project, "--keep-going", "fail", "ok", "fail")
    assert run.returncode == 1
    assert [json.loads(line)["part"] for line in (project / "timings.jsonl").read_text().splitlines()] == [
        "fail", "ok", "fail"]
    assert "failed: fail fail" in run.stderr


def test_a_process_left_running_fails_the_run_and_is_ended(project: Path) -> None:
    run = _run(project, "ok", "leak")
    assert run.returncode == 1
    assert "outlived it" in run.stderr and "sleep 300" in run.stderr
    assert "processes outlived the run" in run.stderr
    assert _run(project, "ok").returncode == 0


def test_sigterm_ends_the_running_part_and_the_run(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CHECKPOINTFS_RUN_TAG"}
    env["CHECKPOINTFS_TIMINGS"] = str(project / "timings.jsonl")  # its parts are not the outer run's
    runner = subprocess.Popen(["bash", "harness/parts.sh", "slow", "ok"], cwd=project, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def started() -> None:
        if not (project / "started").exists():
            raise NotReady("the part has not started")

    wait_ready("the slow part", started, timeout_s=60, exit_code=runner.poll)
    start = time.monotonic()
    runner.send_signal(signal.SIGTERM)
    _, err = runner.communicate(timeout=60)
    assert runner.returncode == 130, err
    assert time.monotonic() - start < 30
    assert "== test: interrupted" in err
    assert "== test: ok" not in err  # the run ended with the interrupted part
    assert "nothing of run" in err
