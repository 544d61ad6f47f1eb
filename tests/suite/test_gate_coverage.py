"""Every test `make test` leaves out names the gate test that covers its ground, and docs/testing.md lists them
all (harness/outside_gate.py; the markers at the tests are the only list)."""

from __future__ import annotations

import pytest

from harness.outside_gate import DOCS, Outside, collect, covered, outside_gate, replaced, table

pytest.importorskip("py4j", reason="the modules that drive the JVM are collected only where pyspark is installed")


def test_every_test_outside_the_gate_is_covered_and_listed() -> None:
    outside, problems = outside_gate(collect())
    assert problems == []
    assert {o.marker for o in outside} == {"extended", "comparison"}
    text = DOCS.read_text()
    assert replaced(text, table(outside)) == text, "docs/testing.md is stale: run python -m harness.outside_gate"


@pytest.mark.parametrize(("covered_by", "gate", "expected"), [
    ("tests/a.py::test_b", ["tests/a.py::test_b"], True),
    ("tests/a.py::test_b", ["tests/a.py::test_b[x]"], True),
    ("tests/a.py::TestC", ["tests/a.py::TestC::test_d[x]"], True),
    ("tests/a.py::test_b", ["tests/a.py::test_bc"], False),
    ("[hdfs] -> [rocksdb]", ["tests/a.py::test_e[rocksdb]"], True),
    ("[hdfs] -> [rocksdb]", ["tests/a.py::test_e[hdfs]"], False),
    ("[nothing] -> [rocksdb]", ["tests/a.py::test_e[hdfs]", "tests/a.py::test_e[rocksdb]"], False),
])
def test_covered_by_names_a_gate_test(covered_by: str, gate: list[str], expected: bool) -> None:
    assert covered(Outside("tests/a.py::test_e[hdfs]", "extended", covered_by), gate) is expected
