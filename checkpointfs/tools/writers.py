"""Which manager wrote a checkpoint's logs: checkpointfs (the JVM shim or Python's DirectWriteManager) stamps every
object it creates with the write id (user metadata ``x-amz-meta-<protocol WRITE_ID_KEY>``); Spark's own managers
write a temp file and rename it (S3A: CopyObject), so their files carry none.

A listing does not return user metadata: telling the writer takes a HeadObject per file, so only what is needed is
asked. Per log (``offsets/``, ``commits/``, the sink's ``_spark_metadata/``): every retained batch when there are at
most :data:`SAMPLES`; otherwise :data:`SAMPLES` batches evenly spread from the first to the latest, then a binary
search between each two neighbouring samples that differ, down to two adjacent batches (the switch is confirmed:
both sides were read). Samples that agree are taken to have no switch between them, which a run shorter than the
gap between samples can break: the result says when it sampled. A log costs at most :data:`SAMPLES` HEADs plus
about ``log2(gap)`` per switch found, and the search stops at :data:`MAX_HEADS` a log. Stores that keep no object
metadata (local files, HDFS) give ``unknown``, never a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from ..errors import CheckpointFsError, PathNotFoundError
from ..store.base import ObjectPath
from ..store.registry import Connection
from ..store.retry import RetryPolicy
from .store import Location

CHECKPOINTFS = "checkpointfs"
"""A file with the write id: written by the shim or Python's DirectWriteManager."""
OTHER = "other"
"""A file without the write id: Spark's own manager (temp file and rename), or any other that is not checkpointfs."""
UNKNOWN = "unknown"
"""The store keeps no object metadata, or the file could not be read."""
SAMPLES = 16
"""A log of at most this many retained batches is read whole; a longer one is sampled at this many batches."""
MAX_HEADS = 64
"""The binary search between samples stops when a log has cost this many HeadObjects."""
DESCRIPTIONS = {CHECKPOINTFS: "checkpointfs (write id)", OTHER: "no write id (Spark's own manager)",
                UNKNOWN: "unknown"}
"""Each writer in words (inspect's human rendering)."""
NO_METADATA = "the store keeps no object metadata"
"""The ``method`` of a log on a store without object metadata (local files, HDFS): every writer unknown."""

Probe = Callable[[int], str]
"""Batch id -> the writer of its file."""


@dataclass
class Segment:
    """Consecutive read batches with one writer: ``first`` and ``last`` were read (batches between them, when the
    log was sampled, are assumed to agree)."""

    first: int
    last: int
    writer: str

    def to_json(self) -> dict[str, Any]:
        """``{"first", "last", "writer"}``."""
        return {"first": self.first, "last": self.last, "writer": self.writer}


@dataclass
class LogWriters:
    """The writers of one log."""

    log: str
    path: str
    batches: list[int]
    segments: list[Segment] = field(default_factory=list)
    heads: int = 0
    gap: int = 1
    """The most batches between two neighbouring samples (1: every batch was read)."""
    note: str = ""

    @property
    def latest_writer(self) -> str:
        """The writer of the latest batch read (``unknown`` when none was)."""
        return self.segments[-1].writer if self.segments else UNKNOWN

    def switches(self) -> list[dict[str, Any]]:
        """Where the writer changed: the first batch read with the new writer, whether the batch before it was read
        too (``confirmed``), and the writers before and after."""
        found = []
        index = {batch: i for i, batch in enumerate(self.batches)}
        known = [s for s in self.segments if s.writer != UNKNOWN]  # a file gone since the listing says nothing
        for before, after in pairwise(known):
            if before.writer == after.writer:
                continue
            found.append({"batch": after.first, "from": before.writer, "to": after.writer,
                          "confirmed": index[after.first] - index[before.last] == 1})
        return found

    def method(self) -> str:
        """How the log was read, in words (and, when sampled, how long a run it could miss)."""
        if not self.batches:
            return "no batches"
        if self.note:
            return self.note
        if self.gap == 1:
            return f"every retained batch read ({len(self.batches)})"
        return (f"sampled {SAMPLES} of {len(self.batches)} retained batches (at most {self.gap} apart), binary search "
                f"between samples that differ: a run of at most {self.gap - 1} batches between two samples that "
                "agree would be missed")

    def to_json(self) -> dict[str, Any]:
        """The log's entry in inspect's ``writers.logs`` (docs/tools.md)."""
        return {"log": self.log, "path": self.path, "batches": len(self.batches),
                "first": self.batches[0] if self.batches else None,
                "latest": self.batches[-1] if self.batches else None, "latest_writer": self.latest_writer,
                "segments": [s.to_json() for s in self.segments], "switches": self.switches(),
                "heads": self.heads, "exact": self.gap == 1 and not self.note, "method": self.method()}


def history(batches: list[int], probe: Probe, *, samples: int = SAMPLES, max_heads: int = MAX_HEADS
            ) -> tuple[list[Segment], int, int]:
    """The writer segments of ``batches`` (sorted ids) read through ``probe`` (batch id -> writer), the number of
    probes made, and the most batches between two neighbouring samples (1: every batch was read)."""
    if not batches:
        return [], 0, 1
    seen: dict[int, str] = {}

    def read(index: int) -> str:
        if index not in seen:
            seen[index] = probe(batches[index])
        return seen[index]

    n = len(batches)
    sampled = n > samples
    points = sorted({round(k * (n - 1) / (samples - 1)) for k in range(samples)}) if sampled else list(range(n))
    for index in points:
        read(index)
    for lo, hi in pairwise(points):
        while hi - lo > 1 and read(lo) != read(hi) and len(seen) < max_heads:
            mid = (lo + hi) // 2
            if read(mid) == read(lo):
                lo = mid
            else:
                hi = mid
    segments: list[Segment] = []
    for index in sorted(seen):
        writer = seen[index]
        if segments and segments[-1].writer == writer:
            segments[-1].last = batches[index]
        else:
            segments.append(Segment(batches[index], batches[index], writer))
    return segments, len(seen), max((hi - lo for lo, hi in pairwise(points)), default=1)


class WriterProbe:
    """A head request of log files through the store layer (a store of its own, each request sent once), counting
    the requests it sends."""

    def __init__(self, location: Location) -> None:
        self.location = location
        self.store = location.object_store(Connection(retry=RetryPolicy(max_attempts=1)))

    def close(self) -> None:
        """Release the store."""
        self.store.close()

    def writer(self, rel: str) -> str:
        """The writer of the file ``rel`` under the location."""
        key = f"{self.location.key}/{rel}" if self.location.key else rel
        try:
            meta = self.store.head(ObjectPath(self.location.bucket, key, self.location.path(rel)))
        except PathNotFoundError:
            return UNKNOWN  # removed since the listing (retention of a running query)
        return CHECKPOINTFS if meta.write_id else OTHER

    @property
    def requests(self) -> dict[str, int]:
        """The requests sent so far, by the store's operation names (S3's: ``HeadObject``)."""
        return self.store.requests.snapshot()


def log_writers(probe: WriterProbe | None, log: str, path: str, batches: list[tuple[int, str]]) -> LogWriters:
    """The writers of the log whose files ``batches`` (``(batch id, file name)``) are in directory ``log`` of the
    probe's location; all unknown without a probe (a store without object metadata)."""
    result = LogWriters(log, path, [b for b, _ in batches])
    if probe is None or not batches:
        if batches:
            result.note = NO_METADATA
        return result
    files = dict(batches)
    try:
        result.segments, result.heads, result.gap = history(
            result.batches, lambda batch: probe.writer(f"{log}/{files[batch]}"))
    except CheckpointFsError as e:
        result.segments, result.note = [], f"could not read the files' metadata: {e.cause}"
    return result


def mixed_warning(found: LogWriters) -> dict[str, Any] | None:
    """The ``mixed_writers`` warning of a log written by both checkpointfs and another manager, None otherwise."""
    switches = found.switches()
    if not switches:
        return None
    told = []
    for switch in switches:
        where = f"batch {switch['batch']}" + ("" if switch["confirmed"] else " (or a little earlier: not every "
                                                                              "batch was read)")
        if switch["to"] == CHECKPOINTFS:
            told.append(f"the shim took over at {where} (its files carry the checkpointfs write id)")
        else:
            told.append(f"the shim stopped at {where} (from there on, files have no write id)")
    if found.latest_writer == CHECKPOINTFS:
        meaning = ("the query runs with the shim now; the older files stay as the other manager wrote them until "
                   "Spark's retention removes them (expected after adopting the shim)")
    else:
        meaning = ("the query's latest batches were written without the shim: it runs with Spark's own manager "
                   "(spark.sql.streaming.checkpointFileManagerClass is not the shim), expected only after a rollback")
    return {"path": found.path, "kind": "mixed_writers", "log": found.log,
            "since_batch": switches[-1]["batch"], "latest_writer": found.latest_writer,
            "problem": f"{found.log}: " + "; ".join(told) + f": {meaning}"}


def describe_writers(logs: list[tuple[Location, str, list[tuple[int, str]]]]) -> dict[str, Any]:
    """The ``writers`` section of inspect for ``logs``: ``(location, log directory under it, batch files)``."""
    probes: dict[Location, WriterProbe | None] = {}  # one a location: its client counts the requests once
    found = []
    for location, name, files in logs:
        if location not in probes:
            probes[location] = WriterProbe(location) if location.is_object_store else None
        found.append(log_writers(probes[location], name, location.path(name), files))
    requests: dict[str, int] = {}
    for probe in probes.values():
        for operation, count in (probe.requests if probe else {}).items():
            requests[operation] = requests.get(operation, 0) + count
        if probe is not None:
            probe.close()
    return {"logs": [f.to_json() for f in found], "requests": dict(sorted(requests.items())),
            "warnings": [w for f in found if (w := mixed_warning(f)) is not None]}
