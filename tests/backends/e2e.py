"""The Spark end-to-end SIGKILL/restart exactly-once scenario on a real store (MinIO, HDFS or fake-gcs-server).

Real stores keep no request log here, so the kill points are conditions on the store's contents, polled: "offsets/1
exists" (batch 1 planned), "the sink has written its 3rd part file" (mid-batch). The driver is the same job the
embedded-S3 tests run (``python -m harness.job``), in a session of its own, killed with its JVM.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.driver import Job
from harness.job import AZURE_ENV, GCS_ENV, S3_ENV

Stores = dict[str, dict[str, Any]]
"""``configure()``'s store settings by keyword (``gcs``, ``azure``)."""
REPO = Path(__file__).resolve().parents[2]
"""The repository root: ``harness`` is importable from there."""
POLL_S = 0.05
TIMEOUT_S = 900
"""How long a driver may take to reach a kill point or to finish: generous, for a machine shared by many JVMs."""


def add_inputs(input_dir: Path, files: int) -> set[int]:
    """``files`` JSON lines input files (one micro-batch each) with duplicates of earlier batches; the distinct ids."""
    input_dir.mkdir(exist_ok=True)
    expected: set[int] = set()
    for b in range(files):
        ids = [i for i in [*range(b * 5, b * 5 + 5), b * 5 - 1, 0] if i >= 0]
        path = input_dir / f"part-{b:04d}.json"
        path.write_text("".join(json.dumps({"id": i, "key": f"k{i % 7}"}) + "\n" for i in ids))
        stamp = 1_700_000_000 + b  # the file source takes files in modification-time order
        os.utime(path, (stamp, stamp))
        expected.update(ids)
    return expected


def start(log_path: Path, *, input_dir: Path, output: str, checkpoint: str, state_store: str,
          s3: dict[str, str] | None = None, stores: Stores | None = None, extra_args: Sequence[str] = ()) -> Job:
    """A dedup job (``--query dedup``, the shim as checkpoint manager) in a session of its own. S3A settings, with
    their secrets, go through the environment, never the command line, as do ``stores`` (``configure()``'s ``gcs``
    and ``azure`` settings); ``extra_args`` go to ``harness.job`` (a connector's ``--extra-jars`` and ``--conf``
    settings)."""
    env = {k: v for k, v in os.environ.items() if k not in (GCS_ENV, AZURE_ENV)}
    env[S3_ENV] = json.dumps(s3 or {})
    for name, settings in (stores or {}).items():
        env[{"gcs": GCS_ENV, "azure": AZURE_ENV}[name]] = json.dumps(settings)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "harness.job", "--input", str(input_dir), "--output", output,
             "--checkpoint", checkpoint, "--query", "dedup", "--manager", "shim", "--state-store", state_store,
             *extra_args],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=REPO)
    return Job(process, log_path, 0)


def kill_when(job: Job, reached: Callable[[], bool], timeout: float = TIMEOUT_S) -> None:
    """SIGKILL ``job`` (driver and JVM) as soon as ``reached()`` holds; fails if the job ends first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if reached():
            job.kill()
            return
        if job.process.poll() is not None:
            raise AssertionError(f"job ended before the kill point; log:\n{job.tail()}")
        time.sleep(POLL_S)
    job.kill()
    raise AssertionError(f"kill point not reached within {timeout}s; log:\n{job.tail()}")


def run_with_kills(tmp_path: Path, *, output: str, checkpoint: str, state_store: str, files: int,
                   planned: Callable[[], bool], part_files: Callable[[], int],
                   s3: dict[str, str] | None = None, stores: Stores | None = None,
                   extra_args: Sequence[str] = ()) -> set[int]:
    """Kill the job when batch 1 is planned (``planned()``), then again in the middle of the sink's writes (when
    ``part_files()``, the number of part files in the output, has grown by 3), then run it to the end; returns the
    distinct input ids (what the output must hold, once each)."""
    input_dir = tmp_path / "input"
    expected = add_inputs(input_dir, files)
    jobs: list[Job] = []

    def launch() -> Job:
        job = start(tmp_path / f"job-{len(jobs)}.log", input_dir=input_dir, output=output, checkpoint=checkpoint,
                    state_store=state_store, s3=s3, stores=stores, extra_args=extra_args)
        jobs.append(job)
        return job

    try:
        kill_when(launch(), planned)
        before = part_files()
        kill_when(launch(), lambda: part_files() >= before + 3)
        final = launch()
        outcome = final.wait(timeout=TIMEOUT_S)
        assert outcome["status"] == "ok", final.tail()
    finally:
        for job in jobs:
            job.kill()
    return expected


def last_commit(names: Iterable[str], checkpoint: str) -> str:
    """The name of the checkpoint's last commit file, after asserting that the query ran to the end: the last planned
    batch (``offsets/N``) is committed and every batch before it too, each once.

    Six input files make six batches, or five: the kill points are polled, and a kill that lands between the file
    source's log of its next file (``sources/0/N``, written while batch N is planned) and ``offsets/N`` makes the
    restarted query plan batch N up to the source's following offset, two files in one batch (Spark's
    FileStreamSource). Each kill may merge one pair, so the batch count is not asserted; the ids are (each once,
    none missing).
    """
    def batches(log: str) -> list[int]:
        prefix = f"{checkpoint}/{log}/"
        return sorted(int(n[len(prefix):]) for n in names if n.startswith(prefix) and n[len(prefix):].isdigit())

    offsets, commits = batches("offsets"), batches("commits")
    assert offsets and commits == list(range(len(commits))) and commits[-1] == offsets[-1], (offsets, commits)
    return f"{checkpoint}/commits/{commits[-1]}"


def run_uninterrupted(tmp_path: Path, name: str, manager: str, args: Sequence[str], files: int,
                      uri: Callable[[str], str], stores: Stores | None = None) -> tuple[str, int]:
    """One uninterrupted run of the dedup query (HDFS-backed state) over ``files`` input files, one batch each, with
    ``manager``, the job arguments ``args`` and ``configure()``'s ``stores``, its output and checkpoint at
    ``uri(key)``; its checkpoint key and the batches it ran (the request comparisons of the gs:// and abfs://
    tests)."""
    prefix = f"cost-{name}-{uuid.uuid4().hex[:12]}"
    input_dir = tmp_path / f"input-{name}"
    add_inputs(input_dir, files)
    job = start(tmp_path / f"{name}.log", input_dir=input_dir, output=uri(f"{prefix}/output"),
                checkpoint=uri(f"{prefix}/checkpoint"), state_store="hdfs", stores=stores,
                extra_args=[*args, "--manager", manager])
    try:
        outcome = job.wait(timeout=TIMEOUT_S)
    finally:
        job.kill()
    assert outcome["status"] == "ok", job.tail()
    return f"{prefix}/checkpoint", int(outcome["batches"])
