"""The scale benchmark's own arithmetic (benchmarks/bench_scale.py): its input and the exactly-once check of the
windows it expects, the floor, batch-time statistics and the ratios between contenders of one combination."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bench_scale import (
    EPOCH_S,
    add_ratios,
    batch_stats,
    check_exactly_once,
    dependent_requests,
    floor_ms,
    merged,
    where_the_time_goes,
    write_input,
)
from harness.job import WINDOW_S


def test_input_files_fill_one_window_each_and_repeat_one_record(tmp_path: Path) -> None:
    expected = write_input(tmp_path / "in", files=3, records=25)
    assert expected == {EPOCH_S: 25, EPOCH_S + 2 * WINDOW_S: 25, EPOCH_S + 4 * WINDOW_S: 25}
    files = sorted((tmp_path / "in").iterdir())
    rows = [[json.loads(line) for line in f.read_text().splitlines()] for f in files]
    assert [len(r) for r in rows] == [25, 26, 26]  # each later file repeats the last record of the one before
    assert rows[1][-1] == rows[0][-1] and rows[2][-1] == rows[1][-1 - 1]
    for n, file_rows in enumerate(rows):
        start = EPOCH_S + 2 * WINDOW_S * n
        assert all(start <= r["t"] < start + WINDOW_S for r in file_rows[:25])
    assert len({f.stat().st_mtime for f in files}) == 3  # the file source takes them one by one, in order


def test_exactly_once_names_repeated_wrong_and_missing_windows() -> None:
    expected = {0: 5, 20: 5, 40: 5, 60: 5}
    assert check_exactly_once([(0, 5), (20, 5)], expected) is None  # the last two may still be open
    assert check_exactly_once([(0, 5), (20, 5), (40, 5), (60, 5)], expected) is None
    problem = check_exactly_once([(0, 5), (0, 5), (20, 4)], expected)
    assert problem is not None and "repeated [0]" in problem and "(20, 4, 5)" in problem
    missing = check_exactly_once([(20, 5)], expected)
    assert missing is not None and "missing [0]" in missing
    unknown = check_exactly_once([(0, 5), (20, 5), (99, 1)], expected)
    assert unknown is not None and "(99, 1, None)" in unknown


def test_floor_counts_driver_writes_and_one_write_round_per_wave_of_tasks() -> None:
    assert floor_ms(200, 20.0) == (3 + 2 * 100) * 20.0
    assert floor_ms(7, 10.0) == (3 + 2 * 4) * 10.0  # a last, partial wave counts whole
    assert floor_ms(200, 0.0) == 0.0


def test_batch_stats_leave_out_batch_zero() -> None:
    assert batch_stats([9999, 10, 30, 20]) == {"median": 20, "p95": 30, "min": 10, "max": 30}
    assert batch_stats([5000]) == {"median": None, "p95": None, "min": None, "max": None}
    twenty = batch_stats([0, *range(1, 21)])
    assert twenty["p95"] == 19


def _row(contender: str, median: float, requests: float | None = None, throttle: float | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"contender": contender, "partitions": 200, "changelog": True,
                           "latency_ms_per_request": 20.0, "throttle_writes_per_s": throttle,
                           "batch_ms": {"median": median}}
    if requests is not None:
        row["requests_per_batch"] = requests
    return row


def test_ratios_are_taken_within_one_combination() -> None:
    shim, default, local = _row("shim", 6_000, 500), _row("default", 30_000, 5_000), _row("local", 2_000)
    throttled = _row("shim", 9_000, 520, throttle=100)
    other = {**_row("default", 1.0, 1.0), "partitions": 8}  # another combination: never an anchor here
    rows = [shim, default, local, throttled, other]
    add_ratios(rows)
    assert shim["batch_time_vs_default"] == 0.2 and shim["requests_vs_default"] == 0.1
    assert shim["checkpoint_overhead_ms"] == 4_000
    assert shim["floor_ms"] == floor_ms(200, 20.0)
    assert shim["overhead_vs_floor"] == pytest.approx(4_000 / floor_ms(200, 20.0), abs=1e-3)
    assert default["checkpoint_overhead_ms"] == 28_000
    assert "checkpoint_overhead_ms" not in local
    assert throttled["throttled_vs_unthrottled"] == 1.5
    assert "batch_time_vs_default" not in throttled  # no default run under that limit


def test_the_limits_cost_stays_against_its_own_runs_unthrottled_time_after_a_merge() -> None:
    first = [_row("shim", 18_000, 417), _row("shim", 36_000, 480, throttle=10)]
    add_ratios(first)  # one invocation: throttled and unthrottled from the same runs
    assert first[1]["throttled_vs_unthrottled"] == 2.0
    later = merged({"results": first}, {"results": [_row("shim", 16_000, 417)], "method": "m"})  # a later quiet run
    add_ratios(later["results"])
    throttled = next(r for r in later["results"] if r["throttle_writes_per_s"])
    assert throttled["throttled_vs_unthrottled"] == 2.0
    assert throttled["unthrottled_same_run_batch_ms"] == {"median": 18_000}


def test_latency_overhead_is_against_the_same_contender_with_no_latency() -> None:
    shim_far, shim_near = _row("shim", 17_000, 417), {**_row("shim", 15_000, 417), "latency_ms_per_request": 0.0}
    default_far = _row("default", 140_000, 8_900)  # no 0 ms run of its own: no latency overhead
    local = _row("local", 28_000)
    add_ratios([shim_far, shim_near, default_far, local])
    assert shim_far["latency_overhead_ms"] == 2_000 and shim_far["floor_ms"] == 4_060
    assert shim_far["latency_overhead_vs_floor"] == round(2_000 / 4_060, 3)
    assert "latency_overhead_ms" not in shim_near and "latency_overhead_ms" not in default_far
    assert "latency_overhead_ms" not in local and shim_far["checkpoint_overhead_ms"] == -11_000


def test_where_the_time_goes_takes_medians_after_batch_zero_and_sums_operators() -> None:
    def batch(add: int, commit: int, changelog: int) -> dict[str, Any]:
        return {"durationMs": {"addBatch": add, "walCommit": 40},
                "stateOperators": [{"commitTimeMs": commit, "allUpdatesTimeMs": 5,
                                    "customMetrics": {"rocksdbChangeLogWriterCommitLatencyMs": changelog}},
                                   {"commitTimeMs": commit, "allUpdatesTimeMs": 5, "customMetrics": {}}]}

    where = where_the_time_goes([batch(90_000, 99_999, 99_999), batch(10_000, 100, 80), batch(14_000, 300, 200),
                                 {}, batch(12_000, 200, 120)])
    assert where["driver.addBatch"] == 12_000 and where["driver.walCommit"] == 40
    assert where["tasks.commitTimeMs"] == 400 and where["tasks.rocksdbChangeLogWriterCommitLatencyMs"] == 120
    assert where["tasks.allUpdatesTimeMs"] == 10 and where["tasks.rocksdbLoadLatencyMs"] == 0


def test_dependent_requests_are_the_drivers_all_and_the_tasks_spread_over_the_slots() -> None:
    by_prefix = {"checkpoint": 6.0, "sink log": 2.0, "state": 16.0, "rocksdb files": 4.0, "sink data": 10.0,
                 "source": 0.0, "other": 3.0}  # "other" (e.g. the store check) is neither's
    assert dependent_requests(by_prefix) == 6 + 2 + (16 + 4 + 10) / 2
    assert dependent_requests(by_prefix, slots=1) == 6 + 2 + 16 + 4 + 10
    assert dependent_requests({"checkpoint": 3.0}) == 3.0  # a prefix absent counts nothing
    with pytest.raises(ValueError, match="slots"):
        dependent_requests(by_prefix, slots=0)
