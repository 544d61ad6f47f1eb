"""Real-time mode's stateful shapes (Spark 4.3) through the shim on MinIO, across SIGKILLs of the driver.

One driver (``python -m harness.real_time_shapes``) runs every stateful operator real-time mode allows, each as its
own query from Kafka with its own checkpoint: ``dropDuplicates``, a count per key, and the JVM's
``transformWithState`` keeping a running count per key. No state store setting is made, so each runs on Spark's
defaults for real-time mode (4.3.0's ``StreamExecution.setSparkSessionConfigsForRealTimeMode``: state checkpoint
format v2, RocksDB, changelog checkpointing; 4.3's checkpoint file checksums on by default). The source topic has one
partition, so a record's offset is its id.

The driver is killed twice and restarted on the same checkpoints: once in the middle of the end of batch 1 (right
after the count's first version-2 state file is written: the stateful tasks are committing their state, the offset
log entry of the batch is not written yet), once right after an offset log entry (real-time mode writes it when the
batch ends, just before the commit). Neither is the point where format v2 cannot restart (a file sink's commit before
the commit log: docs/spark.md, "A Spark issue"): real-time mode has no file sink.

Each query writes through ``foreach`` one file per batch and partition, replaced when Spark runs the batch again
(:class:`harness.real_time_shapes.EpochFiles`; real-time mode's other sinks, Kafka, console and memory, are
at-least-once across a restart). So the output is checked exactly: each id once and none missing; each key's counts
rise one record at a time to its number of records, none repeated or skipped.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from checkpointfs.testing import Request
from harness.driver import Job, Restarts
from harness.real_time_shapes import SHAPES, checkpoint, read_output
from harness.servers.recording_proxy import LoggedMinio

from . import test_kafka
from .probes import RECORD_ARGS, assert_no_directory_probed_as_file, exists_records
from .test_checkpoint_v2 import V2_KILLS
from .written import (
    V2_STATE_FILE,
    assert_format_v2_state,
    assert_verifies_clean,
    assert_written_directly,
    read_text,
    spark_line,
)

# about 2.5 minutes (three queries, three drivers, a broker): outside `make test`'s budget; the gate's format-v2 kills
# through the shim on MinIO (RocksDB, changelog, checksums) cover its ground
pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.minio, pytest.mark.extended(covered_by=V2_KILLS)]

kafka_jars = test_kafka.kafka_jars  # the line's Kafka connector jars (a module fixture)

RECORDS = 60
KEYS = 7
RUN_TIMEOUT_S = 300
BATCH = "5 seconds"


def _key(i: int) -> str:
    return f"k{i % KEYS}"


@dataclass
class RealTimeRun:
    """The store, where each shape checkpointed and wrote, and what the kills left."""

    server: LoggedMinio
    root: str
    kills: list[Request]
    committed_at_first_kill: dict[str, int]
    """Per shape, how many source records its last commit before the first kill covered (0: none committed)."""
    outputs: dict[str, list[dict[str, Any]]]
    """Per shape, the rows its ``foreach`` files hold, in batch and partition order."""
    jobs: list[Job] = field(default_factory=list)

    def checkpoint(self, shape: str) -> str:
        return checkpoint(self.root, shape)


def _put(match: Callable[[str], bool]) -> Callable[[Request], bool]:
    return lambda r: r.operation == "PutObject" and r.status == 200 and match(r.key)


def _covered(server: LoggedMinio, cp: str) -> int:
    """Source records the checkpoint's last commit covers: its offset log entry's end offsets (one source)."""
    keys = server.keys(cp + "/commits/")
    batches = [int(k.rsplit("/", 1)[1]) for k in keys if k.rsplit("/", 1)[1].isdigit()]
    if not batches:
        return 0
    offsets = json.loads(read_text(server, f"{cp}/offsets/{max(batches)}").strip().splitlines()[-1])
    return sum(int(o) for partitions in offsets.values() for o in partitions.values())


@pytest.fixture(scope="module")
def real_time_run(logged_minio: LoggedMinio, kafka_broker: Any, kafka_jars: str,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealTimeRun]:
    """The shapes in one driver: killed when the count's first version-2 state file is written, restarted, 30 more
    records produced, killed again when ``transform_with_state`` writes its next offset log entry, then run until
    every shape's commits cover all records."""
    if spark_line() < (4, 3):
        pytest.skip("real-time mode's stateful operators came with Spark 4.3")
    server = logged_minio
    prefix = server.reset("real-time")
    tmp = tmp_path_factory.mktemp("real-time")
    tag = uuid.uuid4().hex[:8]
    source = kafka_broker.create_topic(f"rts-in-{tag}", partitions=1)
    output = tmp / "output"
    records = [json.dumps({"id": i, "key": _key(i)}) for i in range(RECORDS)]
    assert kafka_broker.produce(source, records[:RECORDS // 2]) == RECORDS // 2
    root = server.uri(prefix, scheme="s3a")
    args = ["--kafka-bootstrap", kafka_broker.bootstrap, "--source-topic", source, "--output", str(output),
            "--root", root, "--until-source-records", str(RECORDS), "--real-time", BATCH, "--extra-jars", kafka_jars,
            *RECORD_ARGS]
    aggregation_v2 = f"{prefix}/aggregation/checkpoint/state/"
    with Restarts(server, tmp, "harness.real_time_shapes", args, RUN_TIMEOUT_S) as runs:
        runs.kill_when(runs.start(), _put(lambda k: k.startswith(aggregation_v2)
                                          and (m := V2_STATE_FILE.search(k)) is not None and m.group(1) == "2"))
        committed = {shape: _covered(server, checkpoint(prefix, shape)) for shape in SHAPES}
        job = runs.start()
        assert kafka_broker.produce(source, records[RECORDS // 2:]) == RECORDS - RECORDS // 2
        tws_offsets = f"{prefix}/transform_with_state/checkpoint/offsets/"
        runs.kill_when(job, _put(lambda k: k.startswith(tws_offsets)))
        runs.run_to_end()
        outputs = {shape: read_output(output / shape) for shape in SHAPES}
        yield RealTimeRun(server, prefix, runs.kills, committed, outputs, runs.jobs)


def test_dedup_each_id_once_none_missing(real_time_run: RealTimeRun) -> None:
    """``dropDuplicates``: every id is in the output once, though the driver was killed twice with batches running
    (each replayed batch's files replaced its killed run's)."""
    ids = [int(r["id"]) for r in real_time_run.outputs["dedup"]]
    assert sorted(ids) == list(range(RECORDS)), Counter(ids).most_common(3)
    assert real_time_run.committed_at_first_kill["dedup"] < RECORDS


@pytest.mark.parametrize("shape", ["aggregation", "transform_with_state"])
def test_counts_exactly_once(real_time_run: RealTimeRun, shape: str) -> None:
    """A count per key (``groupBy().count()``, the JVM ``transformWithState``): each key's updates, in batch order,
    rise to its number of records and none comes twice (a batch's output left beside its replay's would repeat
    counts; records counted twice in the state would go beyond the number)."""
    expected = Counter(_key(i) for i in range(RECORDS))
    updates: dict[str, list[int]] = {}
    for record in real_time_run.outputs[shape]:
        updates.setdefault(str(record["key"]), []).append(int(record["count"]))
    assert {k: v[-1] for k, v in updates.items()} == dict(expected), updates
    assert all(v == sorted(set(v)) for v in updates.values()), updates


@pytest.mark.parametrize("shape", list(SHAPES))
def test_verify_finds_nothing(real_time_run: RealTimeRun, shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``checkpointfs verify`` (its library call) on each shape's checkpoint after the kills and restarts: no
    problem."""
    assert_verifies_clean(real_time_run.server.minio, real_time_run.checkpoint(shape), monkeypatch)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_checkpoint_written_directly_with_sparks_defaults(real_time_run: RealTimeRun, shape: str) -> None:
    """Every checkpoint and state file of the shape carries the shim's write id, with no temp key and no COPY; the
    state is format v2 on RocksDB with changelog files (real-time mode's defaults: nothing was set), each state file
    with its checksum sidecar but those of the version being written when the first kill came, and the commit log
    names the state's unique ids; the last planned batch is committed."""
    run = real_time_run
    cp = run.checkpoint(shape)
    keys = assert_written_directly(run.server, cp, run.server.requests.all())
    planned = max(int(k.rsplit("/", 1)[1]) for k in keys if re.search(r"/offsets/\d+$", k))
    assert f"{cp}/commits/{planned}" in keys, keys
    state = assert_format_v2_state(run.server, cp, checksums=True, killed_versions={"2"})
    assert [k for k in state if k.endswith(".changelog")], state
    metadata = json.loads(read_text(run.server, f"{cp}/offsets/{planned}").splitlines()[1])
    conf = metadata["conf"]
    assert conf.get("spark.sql.streaming.stateStore.providerClass", "").endswith("RocksDBStateStoreProvider"), conf


def test_kills_came_mid_run_and_the_probe_rule_held(real_time_run: RealTimeRun) -> None:
    """Both kills came at their checkpoint writes while every shape still had batches to run (each shape's last
    commit was written by the last driver), and no ``exists()`` answered by a HEAD alone asked about a directory."""
    run = real_time_run
    log = run.server.requests.all()
    last_kill = log.index(run.kills[-1])
    for shape in SHAPES:
        cp = run.checkpoint(shape)
        commits = [i for i, r in enumerate(log) if r.operation == "PutObject" and r.status == 200
                   and r.key.startswith(f"{cp}/commits/")]
        assert commits and commits[-1] > last_kill, (shape, commits, last_kill)
    records = exists_records(*(job.log_path for job in run.jobs))
    assert records, run.jobs[-1].tail()
    assert_no_directory_probed_as_file(records, run.server)
