"""One stateful query on MinIO moved between checkpoint managers and Spark lines: the helpers of the adoption tests
(tests/backends/test_minio_adopting.py, tests/backends/test_minio_spark_upgrade.py; docs/adopting.md).

A :class:`MovedQuery` owns an input folder, a checkpoint and a file sink on MinIO. Each step adds input files, starts
``python -m harness.job --query dedup`` (in any Python: a Spark line's own venv), SIGKILLs it when the first new batch
has written part of its state (a checkpoint write mid-batch: the batch is not committed), restarts it with
``Trigger.AvailableNow`` and checks the sink against the input: every distinct id once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checkpointfs import DirectWriteManager
from checkpointfs.errors import PathNotFoundError
from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.sink import committed_files
from harness.driver import Job, harness_only_path
from harness.job import S3_ENV
from harness.servers.minio import MinioServer

from .stores import minio_s3a_conf

REPO = Path(__file__).resolve().parents[2]
POLL_S = 0.05
TIMEOUT_S = 600
"""How long a driver may take to reach its kill point or to finish, on a machine shared by many JVMs."""
PROVIDERS = {"hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
             "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"}
STATE_FILE = {"hdfs": ".delta", "rocksdb": ".zip"}
"""The state file each provider writes per partition and version (version = batch id + 1)."""


@dataclass(frozen=True)
class StepResult:
    """What one step did: the batch the kill hit, whether that batch was still uncommitted then, the final run's
    outcome line and the Spark it ran on."""

    killed_batch: int
    killed_uncommitted: bool
    outcome: dict[str, Any]


@dataclass
class MovedQuery:
    """A dedup query's input, checkpoint and sink on MinIO, and the driver processes run over them."""

    server: MinioServer
    tmp_path: Path
    state_store: str
    prefix: str = field(default_factory=lambda: f"adopt/{uuid.uuid4().hex[:12]}")
    files: int = 0
    expected: set[int] = field(default_factory=set)
    jobs: list[Job] = field(default_factory=list)

    # -- where things are ----------------------------------------------------------------------------------------
    @property
    def input_dir(self) -> Path:
        return self.tmp_path / "input"

    @property
    def checkpoint_key(self) -> str:
        return f"{self.prefix}/checkpoint"

    @property
    def output_key(self) -> str:
        return f"{self.prefix}/output"

    def uri(self, key: str, scheme: str = "s3a") -> str:
        return self.server.uri(key, scheme=scheme)

    # -- input ---------------------------------------------------------------------------------------------------
    def add_files(self, count: int) -> None:
        """``count`` more input files (one micro-batch each): 5 new ids, plus ids of earlier batches (the dedup
        state must drop them), each file with a later modification time than the ones before."""
        self.input_dir.mkdir(exist_ok=True)
        for b in range(self.files, self.files + count):
            ids = [*range(b * 5, b * 5 + 5), *(i for i in (b * 5 - 1, b * 5 - 8, 0) if i >= 0)]
            path = self.input_dir / f"part-{b:04d}.json"
            path.write_text("".join(json.dumps({"id": i, "key": f"k{i % 7}"}) + "\n" for i in ids))
            stamp = 1_700_000_000 + b  # the file source takes files in modification-time order
            os.utime(path, (stamp, stamp))
            self.expected.update(ids)
        self.files += count

    # -- drivers -------------------------------------------------------------------------------------------------
    def start(self, manager: str, python: str = sys.executable) -> Job:
        """A driver of ``harness.job --query dedup`` in ``python`` with ``--manager manager`` (``shim``: the shim and
        ``fs.s3a.impl`` set by configure(); ``default``: neither, Spark's own manager on plain S3A). It runs from a
        folder holding only ``harness``, so it imports the checkpointfs installed in ``python``."""
        env = dict(os.environ)
        env[S3_ENV] = json.dumps(minio_s3a_conf(self.server))
        deps = REPO / "jvm-shim" / "target" / "deps"
        if deps.is_dir():
            env.setdefault("CHECKPOINTFS_SPARK_DEPS", str(deps))  # this checkout's s3a jars, as `make lines` does
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        harness_only = harness_only_path()
        env["PYTHONPATH"] = harness_only
        env.pop("PYTHONSAFEPATH", None)
        log_path = self.tmp_path / f"job-{len(self.jobs)}-{manager}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [python, "-m", "harness.job", "--input", str(self.input_dir), "--output", self.uri(self.output_key),
                 "--checkpoint", self.uri(self.checkpoint_key), "--query", "dedup", "--manager", manager,
                 "--state-store", self.state_store],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=harness_only)
        job = Job(process, log_path, 0)
        self.jobs.append(job)
        return job

    def committed_batches(self) -> int:
        """How many batches the checkpoint has committed (``commits/<n>`` keys)."""
        return sum(1 for k in self.server.keys(f"{self.checkpoint_key}/commits/")
                   if k.rsplit("/", 1)[-1].isdigit())

    def kill_mid_batch(self, job: Job, batch: int) -> bool:
        """SIGKILL ``job`` as soon as batch ``batch`` has written a state file (version ``batch + 1``) of any
        partition: a checkpoint write in the middle of the batch. Returns whether the batch was still uncommitted
        when the kill landed. Fails if the job ends first or the point is not reached in time."""
        name = f"{batch + 1}{STATE_FILE[self.state_store]}"
        state = f"{self.checkpoint_key}/state/0/"
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            if any(k.rsplit("/", 1)[-1] == name for k in self.server.keys(state)):
                job.kill()
                return not self.server.keys(f"{self.checkpoint_key}/commits/{batch}")
            if job.process.poll() is not None:
                raise AssertionError(f"job ended before batch {batch} wrote its state; log:\n{job.tail()}")
            time.sleep(POLL_S)
        job.kill()
        raise AssertionError(f"batch {batch} wrote no state within {TIMEOUT_S}s; log:\n{job.tail()}")

    def step(self, manager: str, files: int, python: str = sys.executable, *, killed_under: str | None = None,
             killed_in: str | None = None) -> StepResult:
        """Add ``files`` input files, run the query under ``killed_under`` in ``killed_in`` (default ``manager`` in
        ``python``), SIGKILL it mid-batch in the first new batch, restart it under ``manager`` in ``python`` to the
        end (availableNow) and check the sink: exactly-once."""
        batch = self.committed_batches()
        self.add_files(files)
        killed = self.start(killed_under or manager, killed_in or python)
        try:
            uncommitted = self.kill_mid_batch(killed, batch)
        finally:
            killed.kill()
        self.assert_no_duplicates()
        final = self.start(manager, python)
        try:
            outcome = final.wait(timeout=TIMEOUT_S)
        finally:
            final.kill()
        assert outcome["status"] == "ok", final.tail()
        self.assert_exactly_once()
        assert self.committed_batches() == self.files
        return StepResult(batch, uncommitted, outcome)

    def run_once(self, manager: str, python: str = sys.executable) -> tuple[dict[str, Any], str]:
        """One run to its end, no kill: its outcome line and its log."""
        job = self.start(manager, python)
        try:
            outcome = job.wait(timeout=TIMEOUT_S)
        finally:
            job.kill()
        return outcome, job.log_path.read_text(errors="replace")

    def stop_all(self) -> None:
        for job in self.jobs:
            job.kill()

    # -- what users rely on ----------------------------------------------------------------------------------------
    def output_ids(self) -> list[int]:
        """Every id in the sink's committed files (those its ``_spark_metadata`` log names), with repeats; none
        before the sink's first commit."""
        with DirectWriteManager(**self.server.manager_options()) as manager:
            ids: list[int] = []
            try:
                paths = committed_files(self.uri(self.output_key, scheme="s3"), manager=manager)
            except PathNotFoundError:  # killed before batch 0 committed: no _spark_metadata yet
                return ids
            for path in paths:
                with manager.open(path) as f:
                    ids.extend(int(json.loads(line)["id"]) for line in f.read().splitlines() if line)
        return ids

    def assert_no_duplicates(self) -> None:
        """The committed output holds no id twice and none that is not in the input (after a kill)."""
        counts = Counter(self.output_ids())
        assert not [i for i, n in counts.items() if n > 1], counts
        assert set(counts) <= self.expected

    def assert_exactly_once(self) -> None:
        """The committed output holds every distinct input id exactly once."""
        assert sorted(self.output_ids()) == sorted(self.expected)

    def written_by_shim(self, key: str) -> bool:
        """Whether the object at ``key`` (under the checkpoint) carries the shim's write id in its metadata."""
        head = self.server.client().head_object(Bucket=self.server.buckets[0], Key=f"{self.checkpoint_key}/{key}")
        return bool(head["Metadata"].get(WRITE_ID_KEY))

    def log_writers(self, log: str) -> dict[int, str]:
        """Batch id -> ``checkpointfs`` or ``other`` for every file of ``log`` (``offsets``, ``commits`` under the
        checkpoint, ``_spark_metadata`` under the output), read one HeadObject each: the ground truth for inspect."""
        base = self.output_key if log == "_spark_metadata" else self.checkpoint_key
        client = self.server.client()
        found: dict[int, str] = {}
        for key in self.server.keys(f"{base}/{log}/"):
            name = key.rsplit("/", 1)[-1]
            batch = name.removesuffix(".compact")
            if batch.isdigit():
                head = client.head_object(Bucket=self.server.buckets[0], Key=key)
                found[int(batch)] = "checkpointfs" if head["Metadata"].get(WRITE_ID_KEY) else "other"
        return found

    def snapshot(self) -> dict[str, str]:
        """Every key under the query's prefix (checkpoint and sink) with its ETag: what a refused run must leave."""
        client = self.server.client()
        out: dict[str, str] = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.server.buckets[0],
                                                                      Prefix=self.prefix + "/"):
            out.update({o["Key"]: o["ETag"] for o in page.get("Contents", [])})
        return out

    def inspect(self, python: str = sys.executable) -> dict[str, Any]:
        """``checkpointfs inspect CHECKPOINT --sink OUTPUT --json`` against MinIO (credentials from the AWS
        variables, as a user's shell would give them), parsed; also kept as ``inspect-<batches>.json`` beside the
        job logs."""
        env = {**os.environ, "AWS_ACCESS_KEY_ID": self.server.access_key,
               "AWS_SECRET_ACCESS_KEY": self.server.secret_key, "AWS_DEFAULT_REGION": self.server.region}
        done = subprocess.run(
            [python, "-m", "checkpointfs.cli", "inspect", self.uri(self.checkpoint_key, scheme="s3"),
             "--sink", self.uri(self.output_key, scheme="s3"), "--endpoint-url", self.server.endpoint_url, "--json"],
            env=env, capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stderr
        (self.tmp_path / f"inspect-{self.files}.json").write_text(done.stdout)
        result: dict[str, Any] = json.loads(done.stdout)
        return result


def assert_inspected(found: dict[str, Any], query: MovedQuery, query_id: str | None = None,
                     operator_name: str | None = "dedupe") -> None:
    """What ``checkpointfs inspect`` shows of a checkpoint at rest after a step: the same query (``query_id``),
    every batch planned and committed, the state of every batch, the sink's committed files, no warnings.
    ``operator_name``: from the operator metadata Spark 4.0 and later write (``state/0/_metadata``)."""
    last = query.files - 1
    assert found["offsets"]["latest"] == found["commits"]["latest"] == last, found
    assert found["uncommitted"] == [], found
    # a checkpoint written by both managers says so (mixed_writers, checked by assert_writers); nothing else
    assert [w for w in found["warnings"] if w["kind"] != "mixed_writers"] == [], found
    assert found["sources"][0]["latest"] == last and found["sources"][0]["files"] == query.files, found
    assert [(o["id"], o["partitions"], o["latest_version"], o["provider"], o["name"])
            for o in found["state"]["operators"]] == [
        (0, 2, query.files, PROVIDERS[query.state_store], operator_name)], found
    assert found["sink"]["latest"] == last and found["sink"]["warnings"] == [], found
    if query_id is not None:
        assert found["query_id"] == query_id  # the same query, not a new one started from scratch


def assert_writers(found: dict[str, Any], query: MovedQuery) -> dict[str, dict[str, Any]]:
    """inspect's writers section agrees, batch by batch, with the files' metadata read directly (every retained
    batch is read when a log has at most 16), and a ``mixed_writers`` warning names each log written by both, from
    the batch of its latest switch. Returns the warnings by log."""
    warnings = {w["log"]: w for w in found["warnings"] if w["kind"] == "mixed_writers"}
    for log in found["writers"]["logs"]:
        truth = query.log_writers(log["log"])
        segments: list[dict[str, Any]] = []
        for batch, writer in sorted(truth.items()):
            if segments and segments[-1]["writer"] == writer:
                segments[-1]["last"] = batch
            else:
                segments.append({"first": batch, "last": batch, "writer": writer})
        assert log["exact"] is True and log["segments"] == segments, (log, truth)
        assert log["heads"] == len(truth)
        if len(segments) > 1:
            assert warnings[log["log"]]["since_batch"] == segments[-1]["first"], warnings
        else:
            assert log["log"] not in warnings, warnings
    assert found["writers"]["requests"]["HeadObject"] == sum(log["heads"] for log in found["writers"]["logs"])
    return warnings
