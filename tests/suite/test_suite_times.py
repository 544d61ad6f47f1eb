"""harness/suite_times.py: a gate run's timings file aggregated into the results file and docs/testing.md's table."""

from __future__ import annotations

import json
from pathlib import Path

from harness.suite_times import BEGIN, END, aggregate, read, table, write_docs

RECORDS = [
    {"kind": "part", "gate": "test", "part": "unit", "seconds": 600, "exit": 0, "start": 1000, "end": 1600},
    {"kind": "part", "gate": "test", "part": "floors", "seconds": 60, "exit": 0, "start": 1600, "end": 1660},
    {"kind": "fixture", "fixture": "hdfs_server", "scope": "session", "seconds": 7.5, "nodeid": "t", "line": "4.3"},
    {"kind": "fixture", "fixture": "case", "scope": "function", "seconds": 0.6, "nodeid": "t", "line": "4.3"},
    {"kind": "test", "nodeid": "tests/a.py::test_x", "phase": "setup", "outcome": "passed", "seconds": 7.6,
     "line": "4.3", "at": 1100},
    {"kind": "test", "nodeid": "tests/a.py::test_x", "phase": "call", "outcome": "passed", "seconds": 2.0,
     "line": "4.3", "at": 1102},
    {"kind": "test", "nodeid": "tests/b.py::test_y", "phase": "setup", "outcome": "skipped", "seconds": 0.1,
     "line": "3.5", "at": 1620},
    {"kind": "driver", "module": "harness.job", "seconds": 30.0, "killed": True, "nodeid": "tests/a.py::test_x"},
    {"kind": "driver", "module": "harness.job", "seconds": 20.0, "killed": False, "nodeid": "tests/a.py::test_x"},
]


def test_parts_tests_fixtures_and_drivers_are_aggregated(tmp_path: Path) -> None:
    timings = tmp_path / "timings.jsonl"
    timings.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n{\"torn")  # a run ended mid-line
    results = aggregate(read(timings))
    assert results["total_seconds"] == 660
    assert results["outcomes"] == {"passed": 1, "skipped": 1}
    assert results["tests_by_part"] == {"unit": {"count": 1, "seconds": 2.0}}
    assert results["drivers"] == {"started": 2, "sigkilled": 1, "seconds": 50.0}
    assert list(results["fixtures"]) == ["hdfs_server"]  # only the server and JVM starts
    assert results["modules"][0] == {"module": "tests/a.py", "line": "4.3", "count": 1, "seconds": 9.6}
    text = table(results)
    assert "| `make unit` | 10 min 00 s | 1 (2.0 s) |" in text
    assert "2 (1 of them SIGKILLed)" in text


def test_the_docs_section_is_replaced_between_its_markers(tmp_path: Path) -> None:
    docs = tmp_path / "testing.md"
    docs.write_text(f"before\n{BEGIN}\nold\n{END}\nafter\n")
    write_docs(aggregate(RECORDS), docs)
    text = docs.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert "| `make floors` | 1 min 00 s |" in text
