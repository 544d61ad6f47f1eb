"""Checkpoints as a driver crash leaves them, made from the real ones each Spark line wrote (tests/fixtures): the
state ``checkpointfs repair`` recognises (format v2, the sink committed batch ``n``, ``commits/<n>`` missing) and
the states next to it that it must leave alone. Shared by the repair tests on every store."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkpointfs.spark.lines import LINES
from checkpointfs.tools.layout import VERSION_FILE

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FORMAT_V2 = "format-v2"
"""The fixture of a dropDuplicates on RocksDB, changelog checkpointing, state format v2: batches 0..2, the sink log
compacted at batch 2 (interval 3)."""
V2_LINES = [line.line for line in LINES if (FIXTURES / f"spark-{line.line}" / FORMAT_V2).is_dir()]
FORMAT_CONF = "spark.sql.streaming.stateStore.checkpointFormatVersion"


def copy_fixture(line: str, kind: str, target: Path) -> Path:
    """``tests/fixtures/spark-<line>/<kind>`` (its ``checkpoint/`` and ``output/``) copied to ``target``."""
    for part in ("checkpoint", "output"):
        shutil.copytree(FIXTURES / f"spark-{line}" / kind / part, target / part)
    return target


def _remove(root: Path, *rels: str) -> None:
    for rel in rels:
        path = root / rel
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def crash_during(root: Path, n: int) -> None:
    """Roll a finished run back to a crash in batch ``n`` after the sink's commit, before ``commits/<n>``: every
    later batch's files go (offsets, commits, source and sink log entries, state versions above ``n + 1``), then
    ``commits/<n>``."""
    checkpoint, output = root / "checkpoint", root / "output"
    last = max(int(p.name) for p in (checkpoint / "offsets").iterdir())
    for batch in range(n + 1, last + 1):
        _remove(checkpoint, f"offsets/{batch}", f"commits/{batch}")
        for log in (checkpoint / "sources" / "0", output / "_spark_metadata"):
            _remove(log, str(batch), f"{batch}.compact")
    for path in (checkpoint / "state").rglob("*"):
        match = VERSION_FILE.match(path.name.removesuffix(".crc"))
        if path.is_file() and match and int(match.group(1)) > n + 1:
            path.unlink()
    _remove(checkpoint, f"commits/{n}")


def set_version(path: Path, version: int) -> None:
    """Rewrite a log file's version line (``v<N>``), as a newer Spark would have written it."""
    lines = path.read_text().split("\n")
    path.write_text("\n".join([f"v{version}", *lines[1:]]))


def set_conf(path: Path, key: str, value: str) -> None:
    """Record ``key=value`` in an offsets file's conf."""
    lines = path.read_text().split("\n")
    metadata = json.loads(lines[1])
    metadata["conf"][key] = value
    path.write_text("\n".join([lines[0], json.dumps(metadata), *lines[2:]]))


@dataclass(frozen=True)
class Case:
    """A checkpoint state: the fixture it starts from, how it is changed, the verdict ``repair`` must give, words
    its reason must hold, and the sink log files a repair deletes."""

    kind: str
    change: Callable[[Path], None]
    verdict: str
    says: str
    deletes: tuple[str, ...] = ()


def _then(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        for step in steps:
            step(root)

    return change


def _rm(*rels: str) -> Callable[[Path], None]:
    return lambda root: _remove(root, *rels)


def _crash(n: int) -> Callable[[Path], None]:
    return lambda root: crash_during(root, n)


RECOGNISED = "repairable"
CASES: dict[str, Case] = {
    "v2 crash in batch 1": Case(FORMAT_V2, _crash(1), RECOGNISED, "format-v2 restart failure",
                                ("output/_spark_metadata/1",)),
    "v2 crash in batch 0, no commit yet": Case(FORMAT_V2, _crash(0), RECOGNISED, "format-v2 restart failure",
                                               ("output/_spark_metadata/0",)),
    "v2 crash in a compaction batch": Case(FORMAT_V2, _crash(2), "refused", "compaction batch"),
    "v1 crash": Case("stateful", _rm("checkpoint/commits/3"), "nothing_to_do", "format v1"),
    "stateless crash": Case("files", _rm("checkpoint/commits/5"), "nothing_to_do", "no stateful operator"),
    "every batch committed": Case(FORMAT_V2, lambda root: None, "nothing_to_do", "is committed"),
    "the sink did not commit the batch": Case(
        FORMAT_V2, _then(_crash(1), _rm("output/_spark_metadata/1")), "nothing_to_do", "has not committed batch 1"),
    "no sink log": Case(FORMAT_V2, _then(_crash(1), _rm("output/_spark_metadata")), "refused", "no sink log"),
    "a gap in the offsets": Case(FORMAT_V2, _then(_crash(2), _rm("checkpoint/offsets/1")), "refused", "gap"),
    "several batches uncommitted": Case(FORMAT_V2, _then(_crash(2), _rm("checkpoint/commits/1")), "refused",
                                        "2 batches have offsets and no commit"),
    "the sink log is ahead": Case(FORMAT_V2, _then(_rm("checkpoint/offsets/2", "checkpoint/commits/2"),
                                                   _rm("checkpoint/commits/1")), "refused", "is ahead of"),
    "the sink log is behind": Case(FORMAT_V2, _then(_crash(2), _rm("output/_spark_metadata/2.compact",
                                                                   "output/_spark_metadata/1")),
                                   "refused", "is behind"),
    "a gap in the sink log": Case(FORMAT_V2, _then(_crash(1), _rm("output/_spark_metadata/0")), "refused",
                                  "not batch 0"),
    "a sink log from a newer Spark": Case(
        FORMAT_V2, _then(_crash(1), lambda root: set_version(root / "output/_spark_metadata/1", 99)), "refused",
        "written by a newer Spark"),
    "a commit log from a newer Spark": Case(
        FORMAT_V2, _then(_crash(1), lambda root: set_version(root / "checkpoint/commits/0", 99)), "refused",
        "written by a newer Spark"),
    "offsets from a newer Spark": Case(
        FORMAT_V2, _then(_crash(1), lambda root: set_version(root / "checkpoint/offsets/1", 99)), "refused",
        "written by a newer Spark"),
    "a format the conf contradicts": Case(
        FORMAT_V2, _then(_crash(1), lambda root: set_conf(root / "checkpoint/offsets/1", FORMAT_CONF, "1")),
        "refused", "ambiguous"),
    "a newer state format": Case(
        FORMAT_V2, _then(_crash(1), lambda root: set_conf(root / "checkpoint/offsets/1", FORMAT_CONF, "3")),
        "refused", "does not know"),
}


def build(case: Case, target: Path, line: str = "4.3") -> Path:
    """The checkpoint state of ``case`` from ``line``'s fixture, under ``target`` (``checkpoint/``, ``output/``)."""
    root = copy_fixture(line, case.kind, target)
    case.change(root)
    return root


def files_under(root: Path) -> set[str]:
    """Every file below ``root``, relative, ``/``-separated."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


Repair = Callable[..., tuple[int, dict[str, Any]]]
"""``checkpointfs repair ARGS --json`` on a store: the exit status and the report."""


def repair_round_trip(write: Callable[[str, bytes], None], listed: Callable[[], set[str]], root: str,
                      repair: Repair, tmp_path: Path) -> None:
    """The recognised state (Spark 4.3's format-v2 fixture, a crash in batch 1) written to a store under ``root``
    (``write(relative path, bytes)``; ``listed()``: the relative paths there now), then repaired through the store's
    URIs: the dry run names the entry and changes nothing, ``--apply`` deletes it and nothing else."""
    local = build(CASES["v2 crash in batch 1"], tmp_path / "state")
    for rel in sorted(files_under(local)):
        write(rel, (local / rel).read_bytes())
    before = listed()
    checkpoint, output = f"{root}/checkpoint", f"{root}/output"
    code, report = repair(checkpoint, "--sink", output)
    assert (code, report["verdict"], report["deletes"]) == (1, RECOGNISED, [f"{output}/_spark_metadata/1"]), report
    assert listed() == before
    code, report = repair(checkpoint, "--sink", output, "--apply")
    assert (code, report["verdict"]) == (0, "repaired"), report
    assert listed() == before - {"output/_spark_metadata/1"}
