"""The reliability campaign: a stateful Spark streaming query checkpointing on s3a:// against an embedded S3 that
runs a mixed fault schedule (consistency lag, 503 SlowDown, 500 InternalError, connection resets, lost responses,
truncated answers), its driver killed with SIGKILL at varied points of a micro-batch and restarted on the same
checkpoint until every input file is processed; then one more restart with new input, and the verdict: is the
output exactly-once (every input id once, read through the sink's ``_spark_metadata``), is the checkpoint readable
(offsets, commits, sources, the sink log, with checkpointfs's log readers), how many faults were injected.

The same campaign runs with each checkpoint manager: the checkpointfs shim, Spark's default rename-based manager
and Spark's AbortableStreamBasedCheckpointFileManager. A manager that loses data, duplicates it, fails its query
or leaves an unreadable checkpoint is a result, recorded as such.

``python -m harness.campaign [--long] [--managers shim,default,abortable] [--seed N]`` prints a table
and writes JSON (default ``benchmarks/results/campaign.json``). The embedded S3 runs in this process; each driver
is a subprocess (:mod:`harness.job`) reaching it over HTTP. Kill points are chosen by observed progress
at the server (the first, or a seeded n-th, write of a given checkpoint or sink file since the driver started), not
by sleeps. The fault plan is seeded; the interleaving of a driver's threads is not, so the faults injected vary
from run to run within a seed's schedule.

``--cluster`` runs every driver on a standalone cluster (a master and 2 workers of 1 core, 1 GiB, started here on
127.0.0.1) with 4 shuffle partitions, and adds executor kills: an executor is SIGKILLed while a state-file write is
in flight (the store applies it, the answer is lost), ``--executor-kills`` times per manager; the driver lives on
and Spark retries the tasks elsewhere.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from checkpointfs.errors import PathNotFoundError
from checkpointfs.factory import manager_for
from checkpointfs.log import METADATA_DIR, Checkpoint, FileStreamSinkLog
from checkpointfs.sink import committed_files
from checkpointfs.testing import EmbeddedS3, Fault, FaultPlan, Request
from checkpointfs.testing.faults import APPLIES_REQUEST, profile
from harness.driver import JOB_TIMEOUT_S, Job, JobTimeoutError, kill_when, start_job
from harness.servers.spark_cluster import StandaloneCluster

log = logging.getLogger(__name__)

MANAGERS = ("shim", "default", "abortable")
BUCKET = "checkpoints"
DEFAULT_JSON = Path("benchmarks/results/campaign.json")
"""Where ``--long`` writes its results (docs/reliability.md quotes them); the short campaign writes
``campaign-short.json`` next to it."""
SHORT_JSON = DEFAULT_JSON.with_name("campaign-short.json")
RETRIES = {
    # S3A's own retries, generous: the campaign injects a fault into roughly one request in eight.
    "fs.s3a.retry.limit": "10",
    "fs.s3a.retry.throttle.limit": "10",
}
_WRITES = frozenset({"PutObject", "CopyObject", "CompleteMultipartUpload"})


@dataclass(frozen=True)
class KillPoint:
    """Where in a micro-batch the driver is killed: right after the server stored a key matching ``pattern``
    (searched in the key below the campaign's prefix)."""

    name: str
    pattern: str
    description: str


KILL_POINTS: tuple[KillPoint, ...] = (
    KillPoint("offsets", r"^checkpoint/offsets/\d+$", "batch planned (offsets entry written), nothing run"),
    KillPoint("state", r"^checkpoint/state/\d+/\d+/\d+\.delta$", "mid-batch: a state store file written"),
    KillPoint("sink-data", r"^output/part-[^/]*$", "mid-batch: a sink data file written, its log entry not"),
    KillPoint("sink-log", r"^output/_spark_metadata/\d+(\.compact)?$",
              "sink log entry written, the batch's commit not"),
    KillPoint("commit", r"^checkpoint/commits/\d+$", "right after a batch's commit"),
)


PLANS = ("campaign", "campaign-no-lag")
"""The campaign's own plans; ``campaign-no-lag`` is ``campaign`` without consistency lags (request faults only)."""


def fault_plan(name: str, seed: int) -> FaultPlan:
    """The fault plan ``name`` for ``seed``. ``campaign``: the ``mixed`` profile (503 SlowDown 5%, 500 3%, lost
    responses 3%, resets 2% of requests, 5% of GET bodies cut short; listings that hide new keys and keep deleted
    ones, overwritten keys read stale, for ``LAG_S``) without its read-after-write lag (GET/HEAD of a new key
    answering 404). With that lag every batch fails whatever the checkpoint manager: Spark's file sink
    (ManifestFileCommitProtocol.commitTask) HEADs each data file right after writing it, so no run can finish and
    the campaign would compare nothing. ``campaign-no-lag``: the same request faults, no lag at all. Any other
    name is a profile (``mixed`` keeps the read-after-write lag)."""
    if name not in PLANS:
        return profile(name, seed)
    plan = profile("mixed", seed)
    assert plan.consistency is not None
    plan.consistency = replace(plan.consistency, read_new_404_s=0.0) if name == "campaign" else None
    return plan


@dataclass(frozen=True)
class CampaignConfig:
    """One campaign's size. ``kills`` per manager; ``nth_max``: each kill waits for the n-th matching write, n
    drawn (seeded) from 1..nth_max, so that kills land in different batches."""

    files: int = 8
    records_per_file: int = 5
    kills: dict[str, int] = field(default_factory=lambda: {"shim": 5, "default": 2, "abortable": 2})
    nth_max: int = 1
    profile: str = "campaign"
    """A fault plan: ``campaign`` (see :func:`fault_plan`) or a named profile of checkpointfs.testing.faults."""
    seed: int = 1
    query: str = "dedup"
    max_restarts: int = 4
    """Restarts allowed after the kill schedule, for a query that fails, before the campaign gives up."""
    job_timeout_s: float = JOB_TIMEOUT_S
    input_stream: str = "classic"
    """S3A's ``fs.s3a.input.stream.type``. Hadoop 3.5's default, ``analytics`` (the AWS analytics accelerator),
    does not retry a GET whose body is cut short: the read fails, and the query with it, whatever the checkpoint
    manager; ``classic`` reopens and retries. The campaign uses ``classic`` so that its failures are the
    managers'; ``--input-stream analytics`` measures the default."""
    executor_kills: int = 0
    """On a cluster (``--cluster``): executors SIGKILLed mid state-file write, per manager."""


SHORT = CampaignConfig(files=6, max_restarts=1, kills={"shim": 5, "default": 1, "abortable": 1})
LONG = CampaignConfig(files=16, kills={"shim": 6, "default": 6, "abortable": 6}, nth_max=3)
LONG_PLANS = PLANS


@dataclass
class RunRecord:
    """One driver run: how it ended (killed, ok, failed, hung), where it was killed, its error."""

    index: int
    phase: str
    status: str
    kill_point: str = ""
    killed_at: str = ""
    batches: int | None = None
    error: str = ""
    seconds: float = 0.0


@dataclass
class ManagerResult:
    """What one manager's campaign came to."""

    manager: str
    seed: int
    profile: str
    runs: list[RunRecord] = field(default_factory=list)
    kills: int = 0
    executor_kills: int = 0
    """Executors SIGKILLed with a state-file write in flight (cluster mode); the driver lived on."""
    failures: int = 0
    hangs: int = 0
    failure_causes: dict[str, int] = field(default_factory=dict)
    """Failed runs by cause (the query's exception, paths generalised)."""
    completed: bool = False
    final_restart_ok: bool = False
    faults_injected: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    """Requests the server answered during the campaign (every driver's, S3A's retries included)."""
    expected_ids: int = 0
    output_rows: int = 0
    duplicates: int = 0
    lost: int = 0
    """Ids missing from the output although a run reported them processed (data loss)."""
    unprocessed: int = 0
    """Ids not in the output because no run got to them: the query never completed, or the final restart failed."""
    unexpected: int = 0
    output_readable: bool = False
    output_error: str = ""
    checkpoint_readable: bool = False
    checkpoint_error: str = ""
    last_commit: int | None = None
    last_offsets: int | None = None
    seconds: float = 0.0

    @property
    def exactly_once(self) -> bool:
        """The query completed and every input id is in the committed output exactly once."""
        return (self.completed and self.output_readable and self.duplicates == 0 and self.lost == 0
                and self.unexpected == 0)

    @property
    def faults_total(self) -> int:
        """Faults injected, every kind together."""
        return sum(self.faults_injected.values())

    def outcome(self) -> list[str]:
        """The failures seen, most serious first; ``["fine"]`` when there were none."""
        found: list[str] = []
        if self.lost:
            found.append(f"data loss ({self.lost} ids)")
        if self.duplicates:
            found.append(f"duplicates ({self.duplicates} rows)")
        if self.unexpected:
            found.append(f"unexpected ids ({self.unexpected})")
        if not self.output_readable:
            found.append("output unreadable")
        if not self.checkpoint_readable:
            found.append("unreadable checkpoint")
        if not self.completed:
            found.append(f"query never completed ({self.unprocessed} of {self.expected_ids} ids not output)")
        elif not self.final_restart_ok:
            found.append(f"final restart failed ({self.unprocessed} new ids not output)")
        if self.failures:
            found.append(f"query failed {self.failures}x")
        if self.hangs:
            found.append(f"driver hung {self.hangs}x")
        return found or ["fine"]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ManagerResult:
        """A result back from :meth:`to_json` (derived fields recomputed)."""
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "runs"}
        return cls(**fields, runs=[RunRecord(**run) for run in data.get("runs", [])])

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict, with the derived fields."""
        data = asdict(self)
        data.update(exactly_once=self.exactly_once, faults_total=self.faults_total, outcome=self.outcome())
        return data


class Campaign:
    """One manager's campaign on ``server``: input files and driver logs in ``workdir/<manager>``, output and
    checkpoint under ``campaign/<manager>-<seed>-<n>/`` in the bucket (``n`` tells campaigns on one store apart)."""

    def __init__(self, server: EmbeddedS3, workdir: Path, manager: str, config: CampaignConfig,
                 cluster: StandaloneCluster | None = None) -> None:
        if manager not in MANAGERS:
            raise ValueError(f"unknown manager {manager!r}; expected one of {', '.join(MANAGERS)}")
        self.server = server
        self.manager = manager
        self.config = config
        self.prefix = f"campaign/{manager}-{config.seed}-{time.monotonic_ns() % 10**9}"
        self.workdir = workdir / manager
        self.input_dir = self.workdir / "input"
        self.expected: set[int] = set()
        self.final_ids: set[int] = set()
        """The ids of the final restart's input file."""
        self.cluster = cluster
        self._job: Job | None = None
        self._point = ""
        """The kill point of the driver run under way (``""`` when it runs to its end)."""
        self.random = random.Random(f"{config.seed}-{manager}")
        self.result = ManagerResult(manager, config.seed, config.profile)
        self._plan: FaultPlan | None = None

    # -- set-up ---------------------------------------------------------------------------------------------------
    def add_input(self, index: int) -> None:
        """Input file ``index``: ``records_per_file`` new ids and, for the dedup query, two ids seen before (the
        append query outputs every record, so its input repeats none)."""
        n = self.config.records_per_file
        ids = list(range(index * n, (index + 1) * n))
        if index and self.config.query == "dedup":
            ids += [index * n - 1, self.random.randrange(index * n)]
        self.input_dir.mkdir(parents=True, exist_ok=True)
        path = self.input_dir / f"part-{index:04d}.json"
        path.write_text("".join(json.dumps({"id": i, "key": f"k{i % 7}"}) + "\n" for i in ids))
        stamp = 1_700_000_000 + index  # the file source takes files in modification-time order
        os.utime(path, (stamp, stamp))
        self.expected.update(ids)

    def _uri(self, what: str, scheme: str = "s3a") -> str:
        return self.server.uri(f"{self.prefix}/{what}", scheme=scheme)

    def _start(self, phase: str) -> Job:
        index = len(self.result.runs)
        self._job = start_job(self.server, self.workdir / f"run-{index:02d}-{phase}.log", input_dir=self.input_dir,
                         output=self._uri("output"), checkpoint=self._uri("checkpoint"), query=self.config.query,
                         manager=self.manager, extra=("--app-name", f"checkpointfs-campaign-{self.manager}",
                                                      *self._cluster_args()),
                         s3_overrides={**RETRIES, "fs.s3a.input.stream.type": self.config.input_stream})
        return self._job

    def _cluster_args(self) -> tuple[str, ...]:
        """Job arguments that put the driver on the cluster, with small executors and 4 shuffle partitions."""
        if self.cluster is None:
            return ()
        return ("--master", self.cluster.master_url, "--partitions", "4", "--conf", "spark.executor.memory=512m",
                "--conf", "spark.executor.cores=1")

    def _executor_kills(self) -> Fault:
        """The cluster's executor kills, as a fault: on a state-file write (applied at the store, its answer lost),
        an executor is SIGKILLed before the answer would have left."""

        def kill() -> None:
            assert self.cluster is not None
            job = self._job
            if job is None or job.killed or job.process.poll() is not None or self._point == "state":
                return  # a driver killed (or about to be, at its state kill point): its executors go anyway
            if self.cluster.kill_executors(1):
                self.result.executor_kills += 1
                log.info("%s: an executor SIGKILLed with a state-file write in flight", self.manager)

        return Fault("lost-response", operations=frozenset({"PutObject"}), probability=0.3,
                     key_pattern=rf"{re.escape(self.prefix)}/checkpoint/state/\d+/\d+/\d+\.delta$",
                     times=self.config.executor_kills, then=kill)

    def _written(self, point: KillPoint, nth: int) -> Callable[[Request], bool]:
        """A predicate true on the ``nth`` request (counted from the driver's start) storing a key of ``point``."""
        regex = re.compile(point.pattern)
        head = self.prefix + "/"
        seen = [0]

        def matches(request: Request) -> bool:
            stored = request.operation in _WRITES and (request.status == 200 or request.fault in APPLIES_REQUEST)
            if stored and request.key.startswith(head) and regex.search(request.key[len(head):]):
                seen[0] += 1
            return seen[0] >= nth

        return matches

    # -- the campaign ---------------------------------------------------------------------------------------------
    def run(self) -> ManagerResult:
        """Run the whole campaign; the result (never raises for a manager's failure)."""
        began = time.monotonic()
        config = self.config
        self.workdir.mkdir(parents=True, exist_ok=True)
        for index in range(config.files):
            self.add_input(index)
        first_request = len(self.server.requests)
        self._plan = fault_plan(config.profile, config.seed)
        if self.cluster is not None and config.executor_kills:
            self._plan.add(self._executor_kills())
        self.server.faults = self._plan
        result = self.result
        log.info("%s: %d input files, %d kills planned, profile %s seed %d, under s3a://%s/%s", self.manager,
                 config.files, config.kills.get(self.manager, 0), config.profile, config.seed, BUCKET, self.prefix)
        try:
            self._kill_schedule()
            self._point = ""
            self._finish()
            if result.completed:
                before = set(self.expected)
                self.add_input(config.files)  # new input for the final restart
                self.final_ids = self.expected - before
                outcome = self._run_to_end("final-restart")
                result.final_restart_ok = outcome == "ok"
        finally:
            if self._job is not None:
                self._job.kill()  # a driver left running by an interruption
            result.faults_injected = dict(sorted(self._plan.kinds_injected().items()))
            result.requests = len(self.server.requests) - first_request
            self.server.faults = FaultPlan()  # the verdict is read without faults
        self._verify_output()
        self._verify_checkpoint()
        result.seconds = round(time.monotonic() - began, 1)
        log.info("%s: %s in %.0fs", self.manager, ", ".join(result.outcome()), result.seconds)
        return result

    def _kill_schedule(self) -> None:
        result = self.result
        planned = self.config.kills.get(self.manager, 0)
        attempts = 0
        while result.kills < planned and attempts < planned + self.config.max_restarts:
            attempts += 1
            points = [p for p in KILL_POINTS if p.name != "state" or self.config.query == "dedup"]  # append: no state
            point = points[result.kills % len(points)]
            self._point = point.name
            nth = self.random.randint(1, self.config.nth_max)
            began = time.monotonic()
            job = self._start("kill")
            record = RunRecord(len(result.runs), "kill", "", kill_point=f"{point.name}#{nth}")
            result.runs.append(record)
            try:
                request = kill_when(self.server, job, self._written(point, nth), self.config.job_timeout_s)
            except JobTimeoutError as e:
                record.status, record.error = "hung", str(e)[-2000:]
                result.hangs += 1
                continue
            finally:
                record.seconds = round(time.monotonic() - began, 1)
            if request is not None:
                record.status, record.killed_at = "killed", request.key[len(self.prefix) + 1:]
                result.kills += 1
                log.info("%s: run %d SIGKILLed after %s (%s)", self.manager, record.index, record.killed_at,
                         point.description)
                continue
            self._ended(job, record)
            if record.status == "ok":
                log.warning("%s: run %d processed all input before its kill point %s", self.manager, record.index,
                            point.name)
                result.completed = True
                return

    def _ended(self, job: Job, record: RunRecord) -> None:
        """Fill ``record`` from a driver that ended by itself."""
        try:
            outcome = job.wait(self.config.job_timeout_s)
        except JobTimeoutError as e:
            record.status, record.error = "hung", str(e)[-2000:]
            self.result.hangs += 1
            return
        except AssertionError as e:  # exited without its closing line: the driver crashed
            outcome = {"status": "failed", "error": str(e)[-2000:]}
        record.status = str(outcome["status"])
        record.batches = outcome.get("batches")
        if record.status != "ok":
            record.error = str(outcome.get("error", ""))[:2000]
            self.result.failures += 1
            cause = failure_cause(record.error, self.prefix)
            self.result.failure_causes[cause] = self.result.failure_causes.get(cause, 0) + 1
            log.warning("%s: run %d failed: %s", self.manager, record.index, record.error[:300])

    def _run_to_end(self, phase: str) -> str:
        began = time.monotonic()
        job = self._start(phase)
        record = RunRecord(len(self.result.runs), phase, "")
        self.result.runs.append(record)
        self._ended(job, record)
        record.seconds = round(time.monotonic() - began, 1)
        log.info("%s: run %d (%s) %s, %s batches", self.manager, record.index, phase, record.status, record.batches)
        return record.status

    def _finish(self) -> None:
        """Restart until a run processes all input (or the restarts allowed run out)."""
        if self.result.completed:
            return
        for _ in range(1 + self.config.max_restarts):
            if self._run_to_end("finish") == "ok":
                self.result.completed = True
                return

    # -- the verdict ----------------------------------------------------------------------------------------------
    def _verify_output(self) -> None:
        """Read the committed output (files named by ``_spark_metadata``) and count ids."""
        result = self.result
        result.expected_ids = len(self.expected)
        admin = self.server.client(admin=True)
        ids: list[int] = []
        try:
            try:
                files = committed_files(self._uri("output", "s3"), **self.server.manager_options())
            except PathNotFoundError:  # no batch ever reached the sink's log: an empty output
                files = []
            for uri in files:
                bucket, _, key = uri.removeprefix("s3://").partition("/")
                body = admin.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
                ids.extend(int(json.loads(line)["id"]) for line in body.splitlines() if line.strip())
        except Exception as e:  # noqa: BLE001 - an unreadable output is a result
            result.output_error = f"{type(e).__name__}: {e}"[:2000]
            return
        counts = Counter(ids)
        result.output_readable = True
        result.output_rows = len(ids)
        result.duplicates = sum(n - 1 for n in counts.values() if n > 1)
        missing = self.expected - set(counts)
        if not result.completed:
            pending = missing
        else:
            pending = set() if result.final_restart_ok else missing & self.final_ids
        result.lost, result.unprocessed = len(missing - pending), len(pending)
        result.unexpected = len(set(counts) - self.expected)

    def _verify_checkpoint(self) -> None:
        """Read every log of the checkpoint with checkpointfs's readers: metadata, offsets, commits, the file
        source's log and the sink's ``_spark_metadata``."""
        result = self.result
        manager = manager_for(self._uri("checkpoint"), **self.server.manager_options())
        try:
            checkpoint = Checkpoint(manager, self._uri("checkpoint"), read_only=True)
            if checkpoint.metadata() is None:
                raise ValueError("no metadata file (query id)")
            offsets = checkpoint.offsets.get_range()
            commits = checkpoint.commits.get_range()
            if self.result.completed and not commits:
                raise ValueError(f"the query completed but {len(offsets)} offsets and no commits entries are read")
            checkpoint.source_log(0).all_files()
            FileStreamSinkLog(manager, f"{self._uri('output')}/{METADATA_DIR}", read_only=True).all_files()
            result.last_offsets = offsets[-1][0] if offsets else None
            result.last_commit = commits[-1][0] if commits else None
            if commits and (not offsets or commits[-1][0] not in (offsets[-1][0], offsets[-1][0] - 1)):
                raise ValueError(f"last commit {result.last_commit} vs last offsets {result.last_offsets}")
            result.checkpoint_readable = True
        except Exception as e:  # noqa: BLE001 - an unreadable checkpoint is a result
            result.checkpoint_error = f"{type(e).__name__}: {e}"[:2000]
        finally:
            manager.close()


_EXCEPTION = re.compile(r"(?:java|org|software|scala)\.[\w.$]+(?:Exception|Error)(?::[^\n]*)?")


def failure_cause(error: str, prefix: str) -> str:
    """The root of a failed run's error, short, with the campaign's paths generalised: the innermost JVM exception
    named in it, or the text after Spark's "terminated with exception:"."""
    text = error.replace(prefix + "/", "").replace(f"s3a://{BUCKET}/", "")
    found = _EXCEPTION.findall(text)
    cause = found[-1] if found else text.partition("terminated with exception: ")[2] or text
    cause = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<uuid>", cause.split(" SQLSTATE")[0])
    return re.sub(r"\b\d+\b", "<n>", cause)[:240]


def run_campaigns(managers: Sequence[str], config: CampaignConfig, workdir: Path | None = None,
                  server: EmbeddedS3 | None = None, plans: Sequence[str] = (),
                  cluster: StandaloneCluster | None = None) -> list[ManagerResult]:
    """Run the campaign for each plan (default: the config's) and each manager in turn, on ``server`` (default: a
    new EmbeddedS3 in this process), with drivers on ``cluster`` if given."""
    configs = [replace(config, profile=plan) for plan in plans] or [config]
    with tempfile.TemporaryDirectory(prefix="checkpointfs-campaign-") as tmp:
        folder = workdir or Path(tmp)
        with EmbeddedS3([BUCKET]) if server is None else nullcontext(server) as active:
            return [Campaign(active, folder / c.profile, m, c, cluster).run() for c in configs for m in managers]


def table(results: Sequence[ManagerResult]) -> str:
    """The results as a Markdown table."""
    lines = ["| manager | plan | runs | kills | faults injected | exactly-once | duplicates | lost | failed runs | "
             "checkpoint readable | outcome |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        faults = ", ".join(f"{k} {n}" for k, n in r.faults_injected.items()) or "none"
        once = ("yes" if r.exactly_once else "no") if r.completed else "n/a"
        lost = f"{r.lost} (+{r.unprocessed} not processed)" if r.unprocessed else str(r.lost)
        kills = f"{r.kills} + {r.executor_kills} executor" if r.executor_kills else str(r.kills)
        lines.append(f"| {r.manager} | {r.profile} | {len(r.runs)} | {kills} | {r.faults_total} ({faults}) | "
                     f"{once} | {r.duplicates} | {lost} | {r.failures + r.hangs} | "
                     f"{'yes' if r.checkpoint_readable else 'no'} | {'; '.join(r.outcome())} |")
    return "\n".join(lines)


def causes(results: Sequence[ManagerResult]) -> str:
    """The failed runs' causes, per manager and plan, as Markdown list items."""
    lines = []
    for r in results:
        for cause, n in sorted(r.failure_causes.items(), key=lambda item: -item[1]):
            lines.append(f"- {r.manager} / {r.profile}: {n}x `{cause}`")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the campaign from the command line; prints the table, writes JSON. Exit 1 when the shim's campaign was
    run and is not exactly-once with a readable checkpoint (the baselines' failures are results, not errors)."""
    parser = argparse.ArgumentParser(prog="python -m harness.campaign", description=__doc__.split("\n\n")[0])
    parser.add_argument("--long", action="store_true", help=f"the long campaign ({LONG.files} files, "
                        f"{LONG.kills['shim']} kills per manager); default: the short one of the test suite")
    parser.add_argument("--managers", default=",".join(MANAGERS), help="comma-separated: shim, default, abortable")
    parser.add_argument("--seed", type=int, default=None, help="fault plan and kill point seed")
    parser.add_argument("--plans", default=None,
                        help="comma-separated fault plans: campaign, campaign-no-lag, or profiles of "
                             "checkpointfs.testing.faults (default: campaign; with --long: campaign,campaign-no-lag)")
    parser.add_argument("--query", choices=["dedup", "append"], default=None,
                        help="the job's query (default dedup: stateful, its state store written through the manager)")
    parser.add_argument("--input-stream", choices=["classic", "analytics", "prefetch"], default=None,
                        help="S3A's fs.s3a.input.stream.type (default: classic; Hadoop 3.5's own default is analytics)")
    parser.add_argument("--json", type=Path, default=None,
                        help=f"results file (default {DEFAULT_JSON} with --long, else {SHORT_JSON})")
    parser.add_argument("--workdir", type=Path, default=None, help="keep input files and driver logs here")
    parser.add_argument("--render", type=Path, default=None, metavar="JSON",
                        help="print the table of a results file written earlier, and run nothing")
    parser.add_argument("--cluster", action="store_true",
                        help="drivers on a standalone cluster started here (master, 2 workers), with executor kills")
    parser.add_argument("--executor-kills", type=int, default=2, help="with --cluster: executor kills per manager")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.render is not None:
        saved = [ManagerResult.from_json(r) for r in json.loads(args.render.read_text())["results"]]
        print(table(saved))
        if any(r.failure_causes for r in saved):
            print("\nfailed runs, by cause:\n" + causes(saved))
        return 0
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("harness.campaign").setLevel(logging.INFO)
    config = LONG if args.long else SHORT
    if args.seed is not None:
        config = CampaignConfig(**{**asdict(config), "seed": args.seed})
    plans = [p.strip() for p in args.plans.split(",")] if args.plans else list(LONG_PLANS if args.long else ())
    for plan in plans:
        try:
            fault_plan(plan, 0)  # an unknown name is refused here, before any driver starts
        except ValueError as e:
            parser.error(str(e))
    if args.query is not None:
        config = CampaignConfig(**{**asdict(config), "query": args.query})
    if args.input_stream is not None:
        config = CampaignConfig(**{**asdict(config), "input_stream": args.input_stream})
    if args.cluster:  # executors relaunched after kills take minutes on a busy 2-core machine
        config = CampaignConfig(**{**asdict(config), "executor_kills": args.executor_kills,
                                   "job_timeout_s": max(config.job_timeout_s, 600)})
    managers = [m.strip() for m in args.managers.split(",") if m.strip()]
    unknown = set(managers) - set(MANAGERS)
    if unknown:
        parser.error(f"unknown managers: {', '.join(sorted(unknown))}")
    began = time.monotonic()
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    if args.cluster:
        os.environ.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_HOSTNAME="127.0.0.1")  # drivers on loopback
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the cluster below is stopped
        with StandaloneCluster(workers=2, cores=1, memory="1g") as cluster:
            results = run_campaigns(managers, config, args.workdir, plans=plans, cluster=cluster)
    else:
        results = run_campaigns(managers, config, args.workdir, plans=plans)
    elapsed = time.monotonic() - began
    print(f"campaign ({'long' if args.long else 'short'}{', cluster' if args.cluster else ''}, "
          f"plans {', '.join(plans or [config.profile])}, "
          f"seed {config.seed}, "
          f"{config.files} input files, query {config.query}, S3A input stream {config.input_stream}) "
          f"in {elapsed:.0f}s\n")
    print(table(results))
    if any(r.failure_causes for r in results):
        print("\nfailed runs, by cause:\n" + causes(results))
    args.json = args.json or (DEFAULT_JSON if args.long else SHORT_JSON)
    if args.cluster and not args.json.stem.endswith("-cluster"):
        args.json = args.json.with_name(f"{args.json.stem}-cluster.json")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"config": asdict(config), "plans": plans or [config.profile], "long": args.long,
                                     "cluster": args.cluster,
                                     "seconds": round(elapsed, 1),
                                     "results": [r.to_json() for r in results]}, indent=2) + "\n")
    print(f"\nwritten to {args.json}")
    shim = [r for r in results if r.manager == "shim"]
    return 1 if any(not (r.exactly_once and r.checkpoint_readable and r.final_restart_ok) for r in shim) else 0


if __name__ == "__main__":
    raise SystemExit(main())
