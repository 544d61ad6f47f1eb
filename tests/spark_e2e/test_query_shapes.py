"""The query shapes production runs, through the shim, across a SIGKILL of the driver at a checkpoint write.

One driver process (``python -m harness.shapes``) runs every shape of the running line at once, each with its own
checkpoint on MinIO (behind the recording proxy that gives the kill points and the request log), on the RocksDB
state store with changelog checkpointing on. It is SIGKILLed at a checkpoint write of one shape (the others are then
wherever their own batches are), restarted on the same checkpoints, and that run goes to the end. Each test then
checks one shape: its output against what Spark's semantics make of the input (``shapes_data``), exactly once; its
checkpoint and state files written directly (the shim's write id on every one, no temp keys, no COPY). Sharing one
driver and one run keeps the matrix within ``make test``'s budget: the Spark start, the kill and the restart are paid
once for all shapes.

What each line has: ``transformWithStateInPandas`` and the state data source arrived in Spark 4.0 (the tests say so
and skip on 3.5).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from checkpointfs.protocol import WRITE_ID_KEY
from checkpointfs.testing import Request
from harness.driver import Job, Restarts
from harness.servers.recording_proxy import LoggedMinio
from harness.shapes_data import BASE, ShapeInput, join_rows, regular, window_counts, write_inputs

from ..conftest import EVERY_LINE
from .probes import (
    RECORD_ARGS,
    assert_next_batches_were_absent,
    assert_no_directory_probed_as_file,
    exists_records,
)

pytestmark = [pytest.mark.spark, pytest.mark.minio, pytest.mark.shapes, getattr(pytest.mark, EVERY_LINE)]

FILES = 4
SINCE_4_0 = ("transform_with_state_in_pandas",)
ALL_SHAPES = ("join_inner", "join_left_outer", "window_append", "window_update_foreach_batch", "dedup",
              "apply_in_pandas_with_state", "flat_map_groups_with_state", "transform_with_state_in_pandas")
ROCKSDB_CHANGELOG = ("--state-store", "rocksdb", "--partitions", "1",
                     "--conf", "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true")
RUN_TIMEOUT_S = 600


def _major() -> int:
    import pyspark

    return int(pyspark.__version__.split(".")[0])


def line_shapes() -> list[str]:
    """The shapes the running line has."""
    return [s for s in ALL_SHAPES if _major() >= 4 or s not in SINCE_4_0]


@dataclass
class ShapesRun:
    """The store, the input and what the last run produced; the checkpoint keys and requests of each shape."""

    server: LoggedMinio
    prefix: str
    data: ShapeInput
    produced: dict[str, Any]
    kills: list[Request]
    jobs: list[Job] = field(default_factory=list)

    def checkpoint(self, shape: str) -> str:
        return f"{self.prefix}/{shape}/checkpoint"


def _put(key: str) -> Callable[[Request], bool]:
    return lambda r: r.operation == "PutObject" and r.key == key and r.status == 200


@pytest.fixture(scope="module")
def shapes_run(logged_minio: LoggedMinio, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShapesRun]:
    """The shapes of this line run in one driver: killed when ``join_inner`` has written ``offsets/1`` (batch 1
    planned), then run to the end. The kill point is in the slowest shape, so that every shape is still running when
    it comes. (A second kill, in the middle of a state upload, left make test for its budget: the cluster test kills
    executors in their RocksDB state uploads, tests/spark_cluster/test_cluster.py.)"""
    server = logged_minio
    prefix = server.reset("shapes")
    tmp = tmp_path_factory.mktemp("shapes")
    data = write_inputs(tmp / "input", FILES)
    shapes = line_shapes()
    args = ["--input", str(tmp / "input"), "--root", server.uri(prefix, scheme="s3a"), "--local-out",
            str(tmp / "local-out"), "--shapes", ",".join(shapes), "--results", str(tmp / "results.json"),
            *ROCKSDB_CHANGELOG, *RECORD_ARGS]
    with Restarts(server, tmp, "harness.shapes", args, RUN_TIMEOUT_S) as runs:
        runs.kill_when(runs.start(), _put(f"{prefix}/join_inner/checkpoint/offsets/1"))
        runs.run_to_end()
        produced = json.loads((tmp / "results.json").read_text())
        yield ShapesRun(server, prefix, data, produced, runs.kills, runs.jobs)


@pytest.fixture
def shape_line(request: pytest.FixtureRequest) -> str:
    shape = str(request.param)
    if shape not in line_shapes():
        import pyspark

        pytest.skip(f"pyspark {pyspark.__version__}: {shape} arrived in Spark 4.0")
    return shape


def _assert_each_once(seen: Counter[int], expected: list[int], run: ShapesRun, shape: str) -> None:
    """Each of ``expected`` seen once; otherwise a message naming the ids missing and repeated, the shape's
    checkpoint requests in order and the last driver's log, so that a failure seen once can be read."""
    missing = sorted(set(expected) - set(seen))
    repeated = {i: n for i, n in sorted(seen.items()) if n > 1}
    unexpected = sorted(set(seen) - set(expected))
    if missing or repeated or unexpected:
        cp = run.checkpoint(shape)
        requests = [f"{r.operation} {r.status} {r.key.removeprefix(cp + '/')}" for r in run.server.requests.all()
                    if r.key.startswith(cp + "/") and r.operation in ("PutObject", "CompleteMultipartUpload",
                                                                      "DeleteObject")]
        kills = [r.key for r in run.kills]
        raise AssertionError(f"{shape}: missing {missing[:50]}, repeated {repeated}, unexpected {unexpected[:50]};"
                             f" kills at {kills}; its writes:\n" + "\n".join(requests)
                             + "\n-- last driver's log --\n" + run.jobs[-1].tail(60))


def _assert_written_directly(run: ShapesRun, shape: str) -> None:
    """Every checkpoint and state file of ``shape`` carries the shim's write id; no temp keys; no COPY."""
    cp = run.checkpoint(shape)
    keys = run.server.keys(cp + "/")
    # The query ended having committed every batch it planned (the output checks say the batches held every input).
    planned = max(int(k.rsplit("/", 1)[1]) for k in keys if k.startswith(f"{cp}/offsets/"))
    assert planned >= FILES - 1 and f"{cp}/commits/{planned}" in keys, keys
    assert [k for k in keys if k.rsplit("/", 1)[-1].startswith(".") or k.endswith(".tmp")] == [], keys
    copies = [r for r in run.server.requests.all() if r.key.startswith(cp + "/")
              and r.operation in ("CopyObject", "UploadPartCopy")]
    assert copies == [], copies
    client = run.server.client(admin=True)
    without_id = [k for k in keys
                  if WRITE_ID_KEY not in client.head_object(Bucket=run.server.buckets[0], Key=k)["Metadata"]]
    assert without_id == [], without_id
    assert [k for k in keys if "/state/0/" in k], f"{shape}: no state files: {keys}"


def test_every_shape_was_killed_mid_run(shapes_run: ShapesRun) -> None:
    """The kills came at their checkpoint writes, and at the first one no shape had finished: each shape's last
    commit was written after it (by a restarted driver)."""
    [first] = shapes_run.kills
    assert first.key == f"{shapes_run.checkpoint('join_inner')}/offsets/1"
    log = shapes_run.server.requests.all()
    killed_at = log.index(first)
    commits = {shape: [(i, r.key.rsplit("/", 1)[-1]) for i, r in enumerate(log) if r.operation == "PutObject"
                       and r.status == 200 and r.key.startswith(f"{shapes_run.checkpoint(shape)}/commits/")]
               for shape in line_shapes()}
    # A shape's last commit, whatever its number: a shape's batch count is not fixed. A kill after the file source
    # logged a batch's file (sources/0/N) and before the batch's offsets/N makes the restarted query plan N up to the
    # source's next offset, two files in one batch (seen in 1 of 3 runs under load: flatMapGroupsWithState ended at
    # commits/4 instead of commits/5, each id once).
    finished = {shape: max((i for i, _ in seen), default=None) for shape, seen in commits.items()}
    assert [s for s, i in finished.items() if i is None] == [], (killed_at, commits)
    assert {s for s, i in finished.items() if i is not None and i < killed_at} == set(), (killed_at, commits)


def test_no_directory_probed_as_file(shapes_run: ShapesRun) -> None:
    """The probe rule held for every shape, across the kills: no ``exists()`` answered with a HEAD alone was asked of
    a path that is a directory in the store (the shim's DEBUG records of every driver)."""
    records = exists_records(*(job.log_path for job in shapes_run.jobs))
    assert records, shapes_run.jobs[-1].tail()
    assert_no_directory_probed_as_file(records, shapes_run.server)
    assert_next_batches_were_absent(records, shapes_run.server.requests.all())


@pytest.mark.parametrize("shape_line", ["join_inner", "join_left_outer"], indirect=True)
def test_stream_stream_join_exactly_once(shapes_run: ShapesRun, shape_line: str) -> None:
    """Inner: each matching pair once. Left outer: also each unmatched left row once (null right side), emitted when
    the watermark passes it."""
    rows = Counter((int(i), int(ts), k) for i, ts, k in regular(shapes_run.produced[shape_line]["rows"]))
    assert rows == join_rows(shapes_run.data, outer=shape_line == "join_left_outer")
    _assert_written_directly(shapes_run, shape_line)


def test_window_append_exactly_once(shapes_run: ShapesRun) -> None:
    """Each closed window's count per key, once."""
    rows = Counter((int(s), k, int(n)) for s, k, n in shapes_run.produced["window_append"]["rows"]
                   if int(s) < BASE + 50_000)
    assert rows == window_counts(shapes_run.data)
    _assert_written_directly(shapes_run, "window_append")


def test_window_update_through_foreach_batch(shapes_run: ShapesRun) -> None:
    """Update mode into an idempotent foreachBatch sink: one folder per batch id, none missing, and the last update
    of each window is its full count."""
    produced = shapes_run.produced["window_update_foreach_batch"]
    assert produced["batches"] == list(range(len(produced["batches"]))), produced["batches"]
    last: dict[tuple[int, str], tuple[int, int]] = {}
    for batch, start, key, count in produced["rows"]:
        if int(start) < BASE + 50_000 and batch >= last.get((start, key), (-1, 0))[0]:
            last[(int(start), key)] = (batch, int(count))
    assert Counter((s, k, n) for (s, k), (_, n) in last.items()) == window_counts(shapes_run.data)
    _assert_written_directly(shapes_run, "window_update_foreach_batch")


def test_dedup_and_its_state_read_back(shapes_run: ShapesRun) -> None:
    """dropDuplicates: each id once; on Spark 4.0+ the state data source reads the state back through the shim:
    every id is a key."""
    produced = shapes_run.produced["dedup"]
    _assert_each_once(Counter(int(r[0]) for r in regular(produced["rows"])), shapes_run.data.distinct_ids,
                      shapes_run, "dedup")
    if _major() >= 4:
        assert [k for k in produced["state_keys"] if k < 1_000_000] == shapes_run.data.distinct_ids
    _assert_written_directly(shapes_run, "dedup")


@pytest.mark.parametrize("shape", ["apply_in_pandas_with_state", "flat_map_groups_with_state"])
def test_arbitrary_state_exactly_once(shapes_run: ShapesRun, shape: str) -> None:
    """applyInPandasWithState and Java's flatMapGroupsWithState, each emitting an id the first time it is seen:
    each id once."""
    rows = regular(shapes_run.produced[shape]["rows"])
    _assert_each_once(Counter(int(r[0]) for r in rows), shapes_run.data.distinct_ids, shapes_run, shape)
    _assert_written_directly(shapes_run, shape)


@pytest.mark.parametrize("shape_line", ["transform_with_state_in_pandas"], indirect=True)
def test_transform_with_state_timers_exactly_once(shapes_run: ShapesRun, shape_line: str) -> None:
    """transformWithStateInPandas with an event-time timer per id: each id ``first`` once and ``expired`` once."""
    rows = Counter((int(i), kind) for i, kind in regular(shapes_run.produced[shape_line]["rows"]))
    ids = shapes_run.data.distinct_ids
    assert rows == Counter([(i, "first") for i in ids] + [(i, "expired") for i in ids])
    _assert_written_directly(shapes_run, shape_line)
