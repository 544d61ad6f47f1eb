"""checkpointfs.log on checkpoints written by every supported Spark line (tests/fixtures/spark-<line>/, written by
each line's real Spark with tests/fixtures/generate.py): every log reads, means what Spark meant, and is written back
byte for byte. docs/logs.md describes how the lines differ; the differences are asserted here too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from checkpointfs import RenameBasedManager
from checkpointfs.log import (
    Checkpoint,
    CommitMetadata,
    FileStreamSinkLog,
    MetadataLog,
    OffsetMap,
    OffsetSeq,
)
from checkpointfs.spark.lines import LINES
from checkpointfs.tools.inspect import inspect_checkpoint
from checkpointfs.tools.store import open_location
from checkpointfs.tools.verify import verify_checkpoint

from ..rewrite import rewritten

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
WORK_ROOT = "/tmp/checkpointfs-fixtures"
"""Where the generator ran: the paths inside the logs point there."""
COMPACT_INTERVAL = 3
BATCHES = {"files": 6, "stateful": 4, "rocksdb": 2, "offsets-v2": 1}
"""Micro-batches (= input files) of each fixture query (tests/fixtures/generate.py)."""

LINE_IDS = [line.line for line in LINES]


def fixture_dir(line: str) -> Path:
    path = FIXTURES / f"spark-{line}"
    assert path.is_dir(), f"{path} is missing: run `make fixtures` (tests/fixtures/generate.py in each line's venv)"
    return path


def open_checkpoint(line: str, query: str) -> tuple[Path, Checkpoint]:
    root = fixture_dir(line) / query / "checkpoint"
    return root, Checkpoint(RenameBasedManager(), str(root), read_only=True)


def sink_log(line: str, query: str) -> FileStreamSinkLog:
    return FileStreamSinkLog(RenameBasedManager(), str(fixture_dir(line) / query / "output" / "_spark_metadata"),
                             compact_interval=COMPACT_INTERVAL, read_only=True)


def all_logs(line: str, query: str) -> list[MetadataLog[Any]]:
    _, ck = open_checkpoint(line, query)
    return [ck.offsets, ck.commits, ck.source_log(0, compact_interval=COMPACT_INTERVAL), sink_log(line, query)]


def fixture_of_lines(line: str, query: str, lines: set[str]) -> tuple[Path, Checkpoint] | None:
    """The ``query`` fixture of ``line`` opened, when ``line`` is one of the ``lines`` that write it (None
    otherwise); fails when the fixture's presence disagrees."""
    folder = fixture_dir(line) / query
    assert folder.is_dir() == (line in lines), folder
    return open_checkpoint(line, query) if line in lines else None


def three_commits_of_version(ck: Checkpoint, version: int) -> list[CommitMetadata]:
    """Commits 0, 1 and 2 of ``ck``, each of ``version`` and written back byte for byte."""
    assert ck.commits.batch_ids() == [0, 1, 2]
    commits = []
    for batch_id in ck.commits.batch_ids():
        commit = ck.commits.get(batch_id)
        assert commit is not None and commit.version == version
        assert rewritten(ck.commits, batch_id) == Path(ck.commits.batch_path(batch_id)).read_bytes()
        commits.append(commit)
    return commits


def verified_and_inspected(root: Path) -> dict[str, Any]:
    """verify finds nothing in the checkpoint at ``root``; what inspect says of it."""
    location = open_location(str(root))
    try:
        assert [p.to_json() for p in verify_checkpoint(location).problems] == []
        return inspect_checkpoint(location)
    finally:
        location.close()


@pytest.mark.parametrize("line", LINE_IDS)
def test_fixtures_come_from_that_lines_pyspark(line: str) -> None:
    [pin] = [entry.pyspark for entry in LINES if entry.line == line]
    assert (fixture_dir(line) / "VERSION").read_text() == f"pyspark {pin}\n"


@pytest.mark.parametrize("query", sorted(BATCHES))
@pytest.mark.parametrize("line", LINE_IDS)
def test_every_log_file_is_rewritten_byte_for_byte(line: str, query: str) -> None:
    checked = 0
    for log in all_logs(line, query):
        ids = log.batch_ids()
        assert ids == list(range(BATCHES[query])), (log.path, ids)
        for batch_id in ids:
            with open(log.batch_path(batch_id), "rb") as f:
                assert rewritten(log, batch_id) == f.read(), log.batch_path(batch_id)
            checked += 1
    root, ck = open_checkpoint(line, query)
    metadata = ck.metadata()
    assert metadata is not None
    assert (root / "metadata").read_bytes() == metadata.to_json().encode()  # no line end, on every line
    # Every file of the logs' folders was read and rewritten (nothing else lies there).
    on_disk = sum(len(list(Path(log.path).iterdir())) for log in all_logs(line, query))
    assert checked == on_disk == 4 * BATCHES[query]


@pytest.mark.parametrize("line", LINE_IDS)
def test_logs_mean_what_spark_meant(line: str) -> None:
    _, ck = open_checkpoint(line, "files")
    latest = ck.offsets.get_latest()
    assert latest is not None and latest[0] == 5
    assert isinstance(latest[1], OffsetSeq) and latest[1].offsets == ['{"logOffset":5}']
    assert latest[1].metadata is not None and latest[1].metadata.conf["spark.sql.shuffle.partitions"] == "2"
    assert ck.commits.get_latest() == (5, CommitMetadata(0))
    inputs = sorted((fixture_dir(line) / "files" / "input").iterdir())
    source = ck.source_log(0, compact_interval=COMPACT_INTERVAL)
    assert source.batch_ids() == [0, 1, 2, 3, 4, 5]
    assert Path(source.batch_path(2)).name == "2.compact" and Path(source.batch_path(5)).name == "5.compact"
    expected_inputs = [f"file://{WORK_ROOT}/spark-{line}/files/input/{p.name}" for p in inputs]
    assert sorted(e.path for e in source.all_files()) == expected_inputs
    # Each batch took one file; a compaction file holds every entry so far, but reads as its own batch's only.
    assert [[(e.path.rsplit("/", 1)[-1], e.batch_id) for e in entries] for _, entries in source.get_range(0, 5)] == [
        [(p.name, n)] for n, p in enumerate(inputs)]
    assert Path(source.batch_path(5)).read_text().count('"batchId"') == 6

    sink = sink_log(line, "files")
    assert Path(sink.batch_path(5)).name == "5.compact"
    # A compaction file holds every live entry so far, in batch order: 2.compact, 3, 4, then batch 5's own.
    compacted = [s.path for s in sink.read_file(sink.batch_path(5))]
    assert compacted[:-1] == [s.path for n in (2, 3, 4) for s in sink.read_file(sink.batch_path(n))]
    assert len(compacted) == 6
    parts = sorted(p.name for p in (fixture_dir(line) / "files" / "output").glob("part-*"))
    assert sorted(s.path.rsplit("/", 1)[-1] for s in sink.all_files()) == parts
    assert all(s.path.startswith(f"file://{WORK_ROOT}/spark-{line}/files/output/") for s in sink.all_files())
    rows = [json.loads(text) for p in parts
            for text in (fixture_dir(line) / "files" / "output" / p).read_text().splitlines()]
    assert len(rows) == 6 * 3 + 5  # every record, duplicates included (no dedup in this query)


@pytest.mark.parametrize("line", LINE_IDS)
def test_offsets_format_version_2(line: str) -> None:
    """``spark.sql.streaming.offsetLog.formatVersion=2`` is honoured from 4.2 on (older lines lack the setting: v1)."""
    _, ck = open_checkpoint(line, "offsets-v2")
    offsets = ck.offsets.get(0)
    if not _at_least(line, "4.2"):
        assert isinstance(offsets, OffsetSeq) and offsets.offsets == ['{"logOffset":0}']
    else:
        assert isinstance(offsets, OffsetMap) and offsets.offsets == {"0": '{"logOffset":0}'}
        assert offsets.metadata is not None and offsets.metadata.extra == {"sourceMetadataInfo": {}}


CONF_KEYS_ADDED = {
    "3.5": ["spark.sql.streaming.stateStore.providerClass", "spark.sql.streaming.join.stateFormatVersion",
            "spark.sql.streaming.stateStore.compression.codec",
            "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan",
            "spark.sql.streaming.stateStore.rocksdb.formatVersion",
            "spark.sql.streaming.statefulOperator.useStrictDistribution",
            "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion",
            "spark.sql.streaming.multipleWatermarkPolicy", "spark.sql.streaming.aggregation.stateFormatVersion",
            "spark.sql.shuffle.partitions"],
    "4.0": ["spark.sql.streaming.stateStore.encodingFormat"],
    "4.1": [],
    "4.2": ["spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion",
            "spark.sql.streaming.queryEvolution.enableSourceEvolution",
            "spark.sql.streaming.stateStore.rowChecksum.enabled", "spark.sql.function.protobufExtensions.enabled"],
    "4.3": ["spark.sql.dropDuplicates.deterministicKeyOrder.enabled",
            "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled"],
}
"""The SQL confs each line adds to the ``conf`` map of ``offsets/N`` (docs/logs.md)."""


@pytest.mark.parametrize("line", LINE_IDS)
def test_offsets_conf_keys_grow_with_the_line(line: str) -> None:
    _, ck = open_checkpoint(line, "files")
    offsets = ck.offsets.get(0)
    assert offsets is not None and offsets.metadata is not None
    expected = [key for older in LINE_IDS[: LINE_IDS.index(line) + 1] for key in CONF_KEYS_ADDED[older]]
    assert sorted(offsets.metadata.conf) == sorted(expected)


def state_layout(line: str, query: str) -> list[str]:
    """Every file under the query's ``state/`` folder, relative to it."""
    state = fixture_dir(line) / query / "checkpoint" / "state"
    return sorted(str(p.relative_to(state)) for p in state.rglob("*") if p.is_file())


@pytest.mark.parametrize("line", LINE_IDS)
def test_hdfs_state_store_layout(line: str) -> None:
    """One ``<version>.delta`` per partition and batch (versions start at 1); no snapshot within 4 batches."""
    layout = state_layout(line, "stateful")
    deltas = [f"0/{p}/{v}.delta" for p in (0, 1) for v in range(1, 5)]
    assert [f for f in layout if f.endswith(".delta")] == deltas
    assert not [f for f in layout if f.endswith(".snapshot")]
    assert [f for f in layout if not f.endswith(".delta")] == expected_state_metadata(line)


OPERATOR_METADATA_SINCE = "4.0"
"""The first line that writes the operator's ``state/<op>/_metadata/metadata`` (OperatorStateMetadataV1)."""


def _at_least(line: str, since: str) -> bool:
    return tuple(map(int, line.split("."))) >= tuple(map(int, since.split(".")))


def expected_state_metadata(line: str) -> list[str]:
    """The non-data files under ``state/``: the state schema (in partition 0's folder) on every line, and the
    operator metadata from 4.0 on."""
    files = ["0/0/_metadata/schema"]
    if _at_least(line, OPERATOR_METADATA_SINCE):
        files.append("0/_metadata/metadata")
    return files


@pytest.mark.parametrize("line", LINE_IDS)
def test_rocksdb_state_store_layout(line: str) -> None:
    """A ``<version>.zip`` per partition and batch, whose ``metadata`` names the SST files uploaded beside it."""
    import zipfile

    layout = state_layout(line, "rocksdb")
    zips = [f"0/{p}/{v}.zip" for p in (0, 1) for v in (1, 2)]
    assert [f for f in layout if f.endswith(".zip")] == zips
    state = fixture_dir(line) / "rocksdb" / "checkpoint" / "state"
    for partition in (0, 1):
        with zipfile.ZipFile(state / "0" / str(partition) / "2.zip") as archive:
            text = archive.read("metadata").decode()
            members = sorted(archive.namelist())
        version, _, body = text.partition("\n")
        assert version == "v1"
        new_format = _at_least(line, "4.0")  # RocksDB 9.8.4 (8.3.2 in 3.5) and column families
        assert members == sorted(["CURRENT", "MANIFEST-000005", "OPTIONS-000007", "metadata"]
                                 + (["000004.log"] if new_format else []))
        added = ["numInternalKeys", "columnFamilyMapping", "columnFamilyTypeMap", "maxColumnFamilyId"]
        assert list(json.loads(body)) == ["sstFiles", "numKeys"] + (added if new_format else [])
        named = sorted(f"0/{partition}/SSTs/{sst['dfsSstFileName']}" for sst in json.loads(body)["sstFiles"])
        assert named == [f for f in layout if f.startswith(f"0/{partition}/SSTs/")]
    assert [f for f in layout if not f.endswith((".zip", ".sst"))] == expected_state_metadata(line)


SINK_EVOLUTION_LINES = {"4.2", "4.3"}
"""Lines whose Spark names sinks and writes commit log version 3 with sink evolution on (SPARK-56971, backported to
4.2): tests/fixtures/generate.py writes the ``sink-evolution`` query where ``DataStreamWriter`` has ``name``."""


@pytest.mark.parametrize("line", LINE_IDS)
def test_sink_evolution_writes_commit_log_version_3_from_4_2(line: str) -> None:
    """With sink evolution on and the sink named, every commit is version 3 and carries the sink's metadata; each
    reads and is written back byte for byte, and ``verify`` finds the checkpoint intact (a healthy checkpoint never
    verifies as broken)."""
    opened = fixture_of_lines(line, "sink-evolution", SINK_EVOLUTION_LINES)
    if opened is None:
        return
    root, ck = opened
    for commit in three_commits_of_version(ck, 3):
        assert commit.sink_metadata == {"s": {
            "sinkName": "s", "commitOffset": "-",
            "providerName": "org.apache.spark.sql.execution.streaming.sinks.FileStreamSink",
            "apiVersion": "DSv1", "isActive": True}}

    described = verified_and_inspected(root)
    assert described["commits"]["version"] == 3 and described["warnings"] == []
    assert [(s["name"], s["api"], s["active"]) for s in described["sinks"]] == [("s", "DSv1", True)]


SOURCE_NAME_LINES = {"4.2", "4.3"}
"""Lines whose Spark names sources (``DataStreamReader.name``, with source evolution): tests/fixtures/generate.py
writes the ``source-evolution`` query where the reader has ``name``."""


@pytest.mark.parametrize("line", LINE_IDS)
def test_named_sources_key_offsets_and_logs_by_name_from_4_2(line: str, tmp_path: Path) -> None:
    """Two named file sources in a union (offsets log v2, source evolution on): offsets keyed by name, one
    ``sources/<name>/`` log each; every log reads and is written back byte for byte; inspect shows both sources by
    name and verify finds the checkpoint intact, and names a torn batch of a named source's log."""
    opened = fixture_of_lines(line, "source-evolution", SOURCE_NAME_LINES)
    if opened is None:
        return
    root, ck = opened
    assert ck.offsets.batch_ids() == [0, 1, 2]
    for batch_id in ck.offsets.batch_ids():
        batch = ck.offsets.get(batch_id)
        assert isinstance(batch, OffsetMap) and set(batch.offsets) == {"left", "right"}
        assert batch.offsets["left"] == batch.offsets["right"] == f'{{"logOffset":{batch_id}}}'
        assert batch.metadata is not None and batch.metadata.source_metadata == {}
        assert batch.metadata.control_batch is None
        assert rewritten(ck.offsets, batch_id) == Path(ck.offsets.batch_path(batch_id)).read_bytes()
    for name in ("left", "right"):
        source = ck.source_log(name, compact_interval=COMPACT_INTERVAL)
        assert [len(list(source.iter_batch(b))) for b in (0, 1)] == [1, 1]
        assert rewritten(source, 0) == Path(source.batch_path(0)).read_bytes()

    described = verified_and_inspected(root)
    assert described["offsets"]["version"] == 2 and described["warnings"] == []
    assert [(s["id"], s["latest"], s["files"]) for s in described["sources"]] == [("left", 2, 3), ("right", 2, 3)]

    torn = tmp_path / "torn"
    shutil.copytree(root, torn)
    latest = torn / "sources" / "left" / "2.compact"  # the file Spark reads to restart (compact interval 3)
    latest.write_bytes(latest.read_bytes()[:20])
    location = open_location(str(torn))
    try:
        problems = [p.to_json() for p in verify_checkpoint(location).problems]
        assert [(p["kind"], p["path"].endswith("/sources/left/2.compact")) for p in problems] == [("torn_log", True)]
        warnings = inspect_checkpoint(location)["warnings"]
        assert [w["path"].endswith("/sources/left/2.compact") for w in warnings] == [True]
    finally:
        location.close()


FORMAT_V2_LINES = {"4.0", "4.1", "4.2", "4.3"}
CHECKSUM_LINES = {"4.1", "4.2", "4.3"}


@pytest.mark.parametrize("line", LINE_IDS)
def test_state_format_v2_with_changelog_and_checksums_from_4_0(line: str) -> None:
    """The dedup on RocksDB with changelog checkpointing and state checkpoint format v2 (and, from 4.1, Spark's own
    ``.crc`` sidecars): commits are version 2 with one unique id per partition, naming the changelog files of the
    latest version; every log is written back byte for byte; verify finds nothing and inspect shows the state."""
    opened = fixture_of_lines(line, "format-v2", FORMAT_V2_LINES)
    if opened is None:
        return
    root, ck = opened
    last = three_commits_of_version(ck, 2)[-1]
    [(operator, partitions)] = last.state_unique_ids.items()
    assert operator == "0" and len(partitions) == 2
    for partition, (unique_id,) in enumerate(partitions):
        assert (root / "state" / "0" / str(partition) / f"3_{unique_id}.changelog").is_file()
    sidecars = sorted(p.name for p in (root / "state" / "0" / "0").iterdir() if p.name.endswith(".crc"))
    changelogs = sorted(p.name for p in (root / "state" / "0" / "0").iterdir() if p.name.endswith(".changelog"))
    assert sidecars == ([f"{c}.crc" for c in changelogs] if line in CHECKSUM_LINES else [])

    described = verified_and_inspected(root)
    assert described["warnings"] == [] and described["commits"]["version"] == 2
    [state] = described["state"]["operators"]
    assert (state["partitions"], state["latest_version"]) == (2, 3)
    assert state["provider"].endswith("RocksDBStateStoreProvider")


@pytest.mark.parametrize("line", LINE_IDS)
def test_transform_with_state_from_4_0(line: str) -> None:
    """``transformWithStateInPandas`` on RocksDB: its state schema file and operator metadata version 2
    (``state/0/_metadata/v2/<batch>``, naming the schema file); verify finds nothing and inspect reads the operator's
    name and store from the version 2 metadata."""
    opened = fixture_of_lines(line, "transform-with-state", FORMAT_V2_LINES)
    if opened is None:
        return
    root, ck = opened
    assert ck.commits.batch_ids() == [0, 1, 2]
    metadata = (root / "state" / "0" / "_metadata" / "v2" / "0").read_text().split("\n", 1)
    assert metadata[0] == "v2"
    [store] = json.loads(metadata[1])["stateStoreInfo"]
    [schema] = store["stateSchemaFilePaths"]
    assert (root / "state" / "0" / "_stateSchema" / "default" / schema.rsplit("/", 1)[-1]).is_file()

    described = verified_and_inspected(root)
    assert described["warnings"] == []
    [state] = described["state"]["operators"]
    assert (state["name"], state["stores"], state["partitions"], state["latest_version"]) == (
        "transformWithStateInPandasExec", ["default"], 2, 3)
