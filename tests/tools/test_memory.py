"""verify holds a bounded part of a large manifest in memory: the live entries are sorted in runs spilled to temp
files and merged with the listing. Measured with tracemalloc against what holding every entry costs."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from checkpointfs import RenameBasedManager
from checkpointfs.log import FileStreamSinkLog, SinkFileStatus
from checkpointfs.tools import open_location, verify_checkpoint
from checkpointfs.tools.extsort import ExternalSorter

pytestmark = pytest.mark.slow  # minutes (about 36 s on the 2-core machine): `make check` leaves it out

SMALL, LARGE = 20_000, 80_000
RUN_SIZE = 500


def _sink(tmp_path: Path, entries: int) -> tuple[Path, Path]:
    """A checkpoint with one committed batch, and an output whose manifest lists ``entries`` files, all present."""
    checkpoint, output = tmp_path / "ck", tmp_path / "out"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "commits").mkdir()
    (checkpoint / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}\n-')
    (checkpoint / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')
    output.mkdir()
    for n in range(entries):
        (output / f"part-{n:05d}-c000.json").touch()
    log = FileStreamSinkLog(RenameBasedManager(), str(output / "_spark_metadata"), compact_interval=1)
    log.add(0, (SinkFileStatus(f"file://{output}/part-{n:05d}-c000.json", 0, modification_time=n)
                for n in range(entries)))
    return checkpoint, output


def _peak(run: object) -> int:
    tracemalloc.start()
    try:
        run()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _verify_peak(tmp_path: Path, entries: int) -> tuple[int, Path]:
    checkpoint, output = _sink(tmp_path, entries)
    reports = []

    def run_verify() -> None:
        reports.append(verify_checkpoint(open_location(str(checkpoint)), open_location(str(output)),
                                         run_size=RUN_SIZE))

    peak = _peak(run_verify)
    report = reports[0]
    assert report.ok and report.checked["sink_files"] == entries and report.checked["listed"] == entries + 1
    return peak, output


def test_verify_memory_is_bounded(tmp_path: Path) -> None:
    """verify's peak does not grow with the manifest (4x the entries), and stays far below what holding every entry
    of the larger one costs. (Its floor is the log reader's 1 MiB read runs and the sorter's runs.)"""
    small_peak, _ = _verify_peak(tmp_path / "small", SMALL)
    large_peak, output = _verify_peak(tmp_path / "large", LARGE)

    def hold_everything() -> None:
        log = FileStreamSinkLog(RenameBasedManager(), str(output / "_spark_metadata"), read_only=True)
        held.append(({e.path for e in log.all_files()}, {p.name for p in output.iterdir()}))

    held: list[object] = []
    held_peak = _peak(hold_everything)
    mib = 2**20
    assert large_peak < 1.5 * small_peak, (
        f"verify's peak grew with the manifest: {small_peak / mib:.1f} MiB at {SMALL}, {large_peak / mib:.1f} MiB "
        f"at {LARGE} entries")
    assert held_peak > 3 * large_peak, (
        f"holding every entry took {held_peak / mib:.1f} MiB, verify {large_peak / mib:.1f} MiB")


def test_external_sorter_merges_spilled_runs(tmp_path: Path) -> None:
    items = [[f"k{(n * 7919) % 5003:05d}", n] for n in range(5003)]
    with ExternalSorter(run_size=500, directory=str(tmp_path)) as sorter:
        for item in items:
            sorter.add(item)
        merged = list(sorter)
        assert sorter.runs == 11
    with ExternalSorter(run_size=50, directory=str(tmp_path)) as sorter:  # 101 runs: merged in two levels
        for item in items:
            sorter.add(item)
        assert list(sorter) == sorted(items)
    assert merged == sorted(items)
    assert list(tmp_path.iterdir()) == []  # temp files removed
