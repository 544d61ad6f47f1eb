"""``checkpointfs repair``: the way out of Spark's format-v2 restart failure (docs/spark.md, "A Spark issue").

With state checkpoint format v2, a driver that died after the file sink committed micro-batch ``n``
(``<output>/_spark_metadata/<n>`` written) and before the commit log's ``commits/<n>`` cannot be restarted: Spark
re-runs batch ``n``, the sink skips it as already committed, no stateful task runs, and the end of the batch fails
with ``AssertionError: CheckpointInfo length: 0``. Removing the sink log's entry for batch ``n`` lets the re-run
batch execute its plan again (docs/upstream/ has the analysis).

The repair recognises exactly that state and nothing else: the offsets log ends at batch ``n`` with no hole, the
commit log at ``n - 1`` (or is empty and ``n`` is 0), the sink's log ends at ``n`` in a plain file (never a
``.compact`` file, which holds every earlier batch too) with ``n - 1`` before it, and the checkpoint's state is in
format v2 (the last commit carries state unique ids, or the state files are named
``<version>_<uniqueId>``). It is a dry run unless applied; applied, it deletes ``_spark_metadata/<n>`` (and Hadoop's
``.<n>.crc`` beside it, on file systems that write one), each file alone (:meth:`Location.delete_file`: through
:mod:`checkpointfs.store` on object stores, fsspec on HDFS and local disk), after checking that
``commits/<n>`` is still absent, and puts the entry back if a running query committed the batch meanwhile.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..errors import CorruptLogError, PathNotFoundError
from ..log.sink_log import METADATA_DIR
from .layout import VERSION_FILE
from .scan import Problem, Scan, scan
from .sinkscan import SinkLog, open_sink_log
from .store import Location

log = logging.getLogger(__name__)

FORMAT_CONF = "spark.sql.streaming.stateStore.checkpointFormatVersion"
"""Spark's setting of the state checkpoint format (1 by default; 2: state files and commits carry unique ids)."""

NOTHING_TO_DO = "nothing_to_do"
REPAIRABLE = "repairable"
REPAIRED = "repaired"
REFUSED = "refused"


class Refusal(Exception):
    """The checkpoint is not in the state the repair recognises: ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NothingToDo(Exception):
    """Spark restarts this checkpoint by itself: ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class RepairReport:
    """What the repair found and did. ``verdict``: ``nothing_to_do``, ``repairable`` (a dry run found the failure
    state), ``repaired`` (applied) or ``refused`` (not the state it recognises, left alone); ``reason`` says why."""

    checkpoint: str
    sink: str
    verdict: str = REFUSED
    reason: str = ""
    batch: int | None = None
    """The uncommitted batch ``n`` (the latest offsets batch), when there is one."""
    state_format: int | None = None
    facts: dict[str, str] = field(default_factory=dict)
    """What was read, by name (``offsets``, ``commits``, ``sink log``, ``state``), as sentences."""
    deletes: list[str] = field(default_factory=list)
    """The files the repair deletes (dry run: would delete)."""
    applied: bool = False

    @property
    def exit_status(self) -> int:
        """0 nothing to do or repaired, 1 repairable (dry run) or refused."""
        return 0 if self.verdict in (NOTHING_TO_DO, REPAIRED) else 1

    def to_json(self) -> dict[str, Any]:
        """The JSON form (docs/tools.md)."""
        return {"checkpoint": self.checkpoint, "sink": self.sink, "verdict": self.verdict, "reason": self.reason,
                "batch": self.batch, "state_format": self.state_format, "facts": self.facts,
                "deletes": self.deletes, "applied": self.applied}


def repair_checkpoint(checkpoint: Location, sink: Location, *, apply: bool = False) -> RepairReport:
    """Diagnose ``checkpoint`` with the output ``sink`` of its file sink and, with ``apply``, delete the sink log's
    entry of the uncommitted batch when the state is the one the repair recognises. Raises the
    :mod:`checkpointfs.errors` error of the failure when either cannot be read at all."""
    report = RepairReport(checkpoint.uri, sink.uri)
    try:
        found, sink_log, targets = _diagnose(checkpoint, sink, report)
    except Refusal as e:
        report.verdict, report.reason = REFUSED, e.reason
        return report
    except NothingToDo as e:
        report.verdict, report.reason = NOTHING_TO_DO, e.reason
        return report
    report.verdict = REPAIRABLE
    if apply:
        try:
            _apply(found, sink_log, targets, report)
        except Refusal as e:
            report.verdict, report.reason = REFUSED, e.reason
    return report


def _diagnose(checkpoint: Location, sink: Location, report: RepairReport) -> tuple[Scan, SinkLog, list[str]]:
    """The checks, in order; the scan, the sink's log and the files to delete (relative to the sink), or the
    :class:`Refusal` or :class:`NothingToDo` that stops there."""
    found = scan(checkpoint)
    n = _uncommitted_batch(found, report)
    sink_log = _matching_sink_log(sink, n, report)
    report.state_format, evidence = _state_format(found)
    operators = found.operators()
    report.facts["state"] = (f"format v{report.state_format} ({evidence}), {len(operators)} stateful operator"
                             f"{'' if len(operators) == 1 else 's'}")
    if not operators:
        raise NothingToDo(f"the query has no stateful operator: on restart Spark skips batch {n} in the sink and "
                          f"writes commits/{n} itself")
    if report.state_format == 1:
        raise NothingToDo(f"state checkpoint format v1: on restart Spark skips batch {n} in the sink and writes "
                          f"commits/{n} itself (only format v2 fails there)")
    name = sink_log.file_names[n]
    if name != str(n):
        raise Refusal(f"batch {n} is a compaction batch of the sink log ({METADATA_DIR}/{name}): that file holds "
                      f"every earlier batch's entries too, and deleting it would drop them from the sink log; "
                      "no automatic way out")
    targets = [f"{METADATA_DIR}/{name}"]
    crc = f".{name}.crc"
    if any(status.name == crc and not status.is_dir for status in sink.manager.list(sink.path(METADATA_DIR))):
        targets.append(f"{METADATA_DIR}/{crc}")
    report.deletes.extend(sink.path(rel) for rel in targets)
    report.reason = (f"Spark's format-v2 restart failure: the sink committed batch {n} and the commit log did not; "
                     f"on restart the sink skips batch {n}, no stateful task runs and Spark fails with "
                     f"'CheckpointInfo length: 0'. Deleting {METADATA_DIR}/{name} makes the restart run batch {n} "
                     "again (the data files of its first attempt stay in the folder, outside the sink log)")
    return found, sink_log, targets


def _uncommitted_batch(found: Scan, report: RepairReport) -> int:
    """The one uncommitted batch ``n``, after the checks on the offsets and commit logs."""
    if found.offsets_problem is not None:
        raise Refusal(_unreadable(found.offsets_problem))
    if not found.offsets:
        raise NothingToDo("the query has not planned a batch (the offsets log is empty)")
    n = found.offsets[-1]
    report.batch = n
    report.facts["offsets"] = f"batches {found.offsets[0]}..{n}"
    holes = sorted(set(range(found.offsets[0], n + 1)) - set(found.offsets))
    if holes:
        raise Refusal(f"the offsets log has a gap (offsets/{holes[0]} is missing between {found.offsets[0]} and "
                      f"{n}): not the state a crash leaves")
    last = found.last_committed
    report.facts["commits"] = "none" if last is None else f"latest batch {last}"
    if last is not None and last > n:
        raise Refusal(f"commits/{last} has no offsets (the offsets log ends at batch {n}): not the state a crash "
                      "leaves")
    if last == n:
        raise NothingToDo(f"batch {n} is committed (commits/{n}): the query restarts at batch {n + 1}")
    if len(found.uncommitted) > 1:
        missing = ", ".join(str(b) for b in found.uncommitted[:10])
        raise Refusal(f"{len(found.uncommitted)} batches have offsets and no commit ({missing}): a crash leaves "
                      "one; several batches missing from the commit log is not the state the repair recognises")
    if last is None and n != 0:
        raise Refusal(f"the commit log is empty and the offsets log holds only batch {n}: not the state a crash "
                      "leaves")
    return n


def _matching_sink_log(sink: Location, n: int, report: RepairReport) -> SinkLog:
    """The sink's log, when it belongs to this query: its latest batch is ``n`` and the batch before is there."""
    try:
        sink_log = open_sink_log(sink)
    except PathNotFoundError:
        if n == 0:
            raise NothingToDo(f"the sink has not committed batch 0 (no sink log at {sink.path(METADATA_DIR)}): on "
                              "restart Spark runs batch 0 in full") from None
        raise Refusal(f"no sink log at {sink.path(METADATA_DIR)}: not the output of a Spark file sink, or it never "
                      "committed a batch") from None
    latest = sink_log.latest
    assert latest is not None  # open_sink_log refuses an empty log
    report.facts["sink log"] = f"latest batch {latest} ({METADATA_DIR}/{sink_log.file_names[latest]})"
    if latest == n - 1:
        raise NothingToDo(f"the sink has not committed batch {n} (its log ends at {latest}): on restart Spark runs "
                          f"batch {n} in full")
    if latest != n:
        relation = "ahead of" if latest > n else "behind"
        raise Refusal(f"the sink log's latest batch {latest} is {relation} the checkpoint's uncommitted batch {n}: "
                      "this output does not belong to this query's checkpoint (or one of them was replaced)")
    if n > 0 and n - 1 not in sink_log.batch_ids:
        raise Refusal(f"the sink log has batch {n} but not batch {n - 1}: a gap, not the state a crash leaves")
    path = sink.path(f"{METADATA_DIR}/{sink_log.file_names[n]}")
    try:
        sink_log.log.read_file(path)
    except CorruptLogError as e:
        raise Refusal(_unreadable(Problem.of_log(e))) from None
    return sink_log


def _state_format(found: Scan) -> tuple[int, str]:
    """The checkpoint's state format version and what says so: the offsets' conf, else the last commit (state
    unique ids or none), else the state files' names (``<version>_<uniqueId>`` or ``<version>``); 1 when nothing
    says otherwise (Spark's default). Refuses a newer commit log and evidence that disagrees. No line through 4.3
    records the format in the offsets' conf (``OffsetSeqMetadata.relevantSQLConfs`` leaves it out, read off the
    4.0.5 to 4.3.0 jars): on Spark's checkpoints the commit and the file names decide; the conf counts only where
    something else wrote it."""
    said: list[tuple[int, str]] = []
    conf = found.conf.get(FORMAT_CONF)
    if conf is not None:
        if conf not in ("1", "2"):
            raise Refusal(f"the offsets' conf records {FORMAT_CONF}={conf}: a format the repair does not know")
        said.append((int(conf), f"the offsets' conf sets {FORMAT_CONF}={conf}"))
    last = found.last_committed
    if last is not None:
        try:
            commit = found.commit_log().get(last)
        except CorruptLogError as e:
            raise Refusal(_unreadable(Problem.of_log(e))) from None
        if commit is not None and found.operators():
            said.append((2, f"commits/{last} carries state unique ids") if commit.state_unique_ids else
                        (1, f"commits/{last} carries no state unique ids"))
    names = {name for operator in found.operators() for stores in operator.partitions.values() for store in stores
             for name in found.tree.names(store.rel)}
    kinds = {2 if match.group(2) else 1 for name in names if (match := VERSION_FILE.match(name))}
    if not said and kinds:
        said.append((max(kinds), "its state files are named <version>_<uniqueId>" if kinds == {2} else
                     "its state files are named <version>, without unique ids"))
    versions = {version for version, _ in said}
    if len(versions) > 1:
        raise Refusal("the state format is ambiguous: " + "; ".join(text for _, text in said))
    return (said[0] if said else (1, "Spark's default: nothing records another"))


def _apply(found: Scan, sink_log: SinkLog, targets: list[str], report: RepairReport) -> None:
    """Delete ``targets`` (the files the report names, relative to the sink), each alone
    (:meth:`Location.delete_file`: never what lies below it), unless ``commits/<n>`` appeared (a running query); if
    it appears during the delete, write the sink log's entry back."""
    n = report.batch
    assert n is not None
    checkpoint, sink = found.location, sink_log.location
    if _committed(checkpoint, n):
        raise Refusal(f"commits/{n} appeared since the checkpoint was read: the query is running; stop it first")
    entry = report.deletes[0]
    with sink.manager.open(entry) as stream:
        kept = stream.read()
    for rel in targets:
        log.info("repair: deleting %s", sink.path(rel))
        sink.delete_file(rel)
    if _committed(checkpoint, n):
        with sink.manager.create_atomic(entry) as out:
            out.write(kept)
        raise Refusal(f"commits/{n} appeared while {entry} was deleted: the query is running; the sink log's entry "
                      "was written back. Stop the query first")
    report.applied = True
    report.verdict = REPAIRED


def _committed(checkpoint: Location, n: int) -> bool:
    """Whether ``commits/<n>`` is listed now (a fresh listing, never what a manager remembers)."""
    return any(status.name == str(n) for status in checkpoint.manager.list(checkpoint.path("commits")))


def _unreadable(problem: Problem) -> str:
    return f"{problem.path} cannot be read: {problem.problem}"

