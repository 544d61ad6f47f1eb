"""One checkpoint across Spark upgrades with the shim on, on MinIO (docs/adopting.md, "Upgrading Spark").

A dedup query (HDFS-backed or RocksDB state) runs under the shim on Spark 3.5, then 4.0, then the newest line, each
in that line's own venv (harness/line_env.sh: the ones `make lines` makes). Every step adds input and SIGKILLs the
driver when the step's first batch has written part of its state; from the second line on, that driver still runs
the line before, so the upgrade happens across the crash: the restart (availableNow) on the new line finishes the
batch the old line left half-done. The sink is checked against the input after every kill and restart: every id
once. Where Spark itself refuses to continue a checkpoint, the test asserts that the refusal is Spark's and that the
refused run changed no key of the checkpoint or the sink; the next line then takes the checkpoint as the last
accepted line left it.

Marked ``upgrade``: `make unit` leaves it out (the line venvs do not exist yet in a fresh clone); `make upgrade`,
which `make test` runs after `make lines`, runs it with the venvs `make lines` made.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from checkpointfs.spark.lines import DEFAULT_LINE, LINES
from harness.servers.minio import MinioServer

from .migration import REPO, MovedQuery, assert_inspected

pytestmark = [pytest.mark.minio, pytest.mark.spark, pytest.mark.upgrade]

UPGRADE = ("3.5", "4.0", DEFAULT_LINE.line)
"""The lines one checkpoint goes through, oldest first: the oldest supported, the next, the newest (.venv's)."""
REFUSED: dict[tuple[str, str, str], str] = {}
"""(state store, line that wrote the checkpoint, line that refuses to continue it) -> text of Spark's error."""


def line_python(line: str) -> str:
    """The python of ``line``'s venv: the running one for the main line, else what harness/line_env.sh prints (it
    reuses the venv `make lines` made, with the same CHECKPOINTFS_FROM_WHEEL and CHECKPOINTFS_LINE_VENVS, or makes
    it)."""
    if line == DEFAULT_LINE.line:
        return sys.executable
    done = subprocess.run(["bash", str(REPO / "harness" / "line_env.sh"), line], capture_output=True, text=True,
                          check=False, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def pythons() -> dict[str, str]:
    """Each line of :data:`UPGRADE` -> its venv's python, checked to run that line's pinned pyspark."""
    pins = {line.line: line.pyspark for line in LINES}
    found: dict[str, str] = {}
    for line in UPGRADE:
        python = line_python(line)
        version = subprocess.run([python, "-c", "import pyspark; print(pyspark.__version__)"], capture_output=True,
                                 text=True, check=True).stdout.strip()
        assert version == pins[line], (line, python, version)
        found[line] = python
    return found


# The HDFS-backed state store's upgrade is `make extended` (make test's budget): RocksDB's is the format with more to
# carry across lines (zips, SST files, changelogs); the HDFS-backed store's files cross lines in the MinIO adoption and
# per-line kill tests.
@pytest.fixture(params=[pytest.param("hdfs", marks=pytest.mark.extended(covered_by="[hdfs] -> [rocksdb]")), "rocksdb"])
def query(request: pytest.FixtureRequest, minio_server: MinioServer, tmp_path: Path) -> Iterator[MovedQuery]:
    """A fresh dedup query on the session's MinIO with the parametrized state store."""
    moved = MovedQuery(minio_server, tmp_path, request.param)
    yield moved
    moved.stop_all()


def test_one_checkpoint_across_spark_lines_with_the_shim(query: MovedQuery, pythons: dict[str, str]) -> None:
    query_id: str | None = None
    accepted: list[str] = []
    for line in UPGRADE:
        refusal = REFUSED.get((query.state_store, accepted[-1], line)) if accepted else None
        if refusal is not None:
            query.add_files(1)
            before = query.snapshot()
            outcome, log = query.run_once("shim", pythons[line])
            assert outcome["status"] == "failed" and refusal in outcome["error"], log[-4000:]
            assert query.snapshot() == before  # the refused run wrote, moved and deleted nothing
            continue
        # the upgrade across a crash: killed mid-batch on the line before, restarted on this one
        step = query.step("shim", files=2, python=pythons[line], killed_in=pythons[accepted[-1]] if accepted else None)
        assert step.killed_uncommitted, step
        assert query.written_by_shim(f"commits/{query.files - 1}")
        found = query.inspect()
        assert_inspected(found, query, query_id, operator_name=None if line == "3.5" and not accepted else "dedupe")
        query_id = found["query_id"]
        accepted.append(line)
    assert accepted[0] == UPGRADE[0] and accepted[-1] == UPGRADE[-1], accepted
