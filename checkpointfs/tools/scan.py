"""What inspect and verify both read first: the checkpoint's listing, its query id, its offsets and commits."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .. import paths
from ..errors import CheckpointFsError, CorruptLogError, PathNotFoundError, UnsupportedLogVersionError
from ..log import CommitLog, FileStreamSourceLog, OffsetMap, OffsetSeq, OffsetSeqLog, read_stream_metadata
from ..log.io import open_lines
from .layout import OperatorLayout, Tree, operators
from .store import Location


@dataclass
class Problem:
    """Something wrong with a checkpoint or a sink: the path it concerns, what is wrong, and its kind."""

    path: str
    problem: str
    kind: str

    def to_json(self) -> dict[str, str]:
        """The JSON form (``path``, ``problem``, ``kind``)."""
        return {"path": self.path, "problem": self.problem, "kind": self.kind}

    @classmethod
    def of_log(cls, error: CheckpointFsError) -> Problem:
        """A log file that does not read: ``newer_format`` when a newer Spark wrote it (its version is above what
        checkpointfs reads; the file may well be healthy), ``torn_log`` otherwise."""
        if isinstance(error, UnsupportedLogVersionError):
            return cls(error.path, f"written by a newer Spark: {error.cause}", "newer_format")
        return cls(error.path, error.cause, "torn_log")


@dataclass
class Scan:
    """A checkpoint as listed once: its tree, query id, offsets and commits batch ids, latest offsets."""

    location: Location
    tree: Tree
    query_id: str | None = None
    offsets: list[int] = field(default_factory=list)
    commits: list[int] = field(default_factory=list)
    latest_offsets: OffsetSeq | OffsetMap | None = None
    """The latest offsets batch; None when there is none or it cannot be read (:attr:`offsets_problem`)."""
    offsets_problem: Problem | None = None
    """Why the latest offsets batch cannot be read (verify finds it again when it parses every log)."""
    earlier_offsets: OffsetSeq | OffsetMap | None = None
    """When the latest offsets batch cannot be read, the latest one that can: only what does not change from batch
    to batch is taken from it (the query's sources and confs), never a batch's offsets, watermark or time."""
    problems: list[Problem] = field(default_factory=list)

    @property
    def _layout_offsets(self) -> OffsetSeq | OffsetMap | None:
        return self.latest_offsets if self.latest_offsets is not None else self.earlier_offsets

    @property
    def conf(self) -> dict[str, str]:
        """The SQL confs recorded with the latest readable offsets (a query keeps them across batches)."""
        offsets = self._layout_offsets
        if offsets is None or offsets.metadata is None:
            return {}
        return offsets.metadata.conf

    @property
    def last_committed(self) -> int | None:
        """The latest committed batch."""
        return self.commits[-1] if self.commits else None

    @property
    def uncommitted(self) -> list[int]:
        """Batches with offsets and no commit after the last commit."""
        last = self.last_committed
        return [b for b in self.offsets if last is None or b > last]

    def path(self, rel: str) -> str:
        """The full path of ``rel``."""
        return self.location.path(rel)

    def offsets_log(self) -> OffsetSeqLog:
        """The offsets log, read only."""
        return OffsetSeqLog(self.location.manager, self.path("offsets"), read_only=True)

    def commit_log(self) -> CommitLog:
        """The commit log, read only."""
        return CommitLog(self.location.manager, self.path("commits"), read_only=True)

    def source_ids(self) -> list[str]:
        """The sources: those of the latest offsets and those with a ``sources/<id>`` directory. An id is the
        source's index (``"0"``; offsets log v1, and v2 with unnamed sources) or its name (Spark 4.2+, sources named
        with ``DataStreamReader.name`` and source evolution on: offsets log v2 keyed by name, ``sources/<name>/``);
        indexes first, in order, then names."""
        ids = set(self.tree.dirs("sources"))
        offsets = self._layout_offsets
        if isinstance(offsets, OffsetSeq):
            ids |= {str(i) for i in range(len(offsets.offsets))}
        elif isinstance(offsets, OffsetMap):
            ids |= set(offsets.offsets)
        return sorted(ids, key=lambda s: (0, int(s), "") if s.isdigit() else (1, 0, s))

    def source_offset(self, source: str) -> str | None:
        """The latest offset (JSON text) of source ``source`` (an index or a name: :meth:`source_ids`); None when it
        has none or the latest offsets batch cannot be read."""
        return _offset_of(self.latest_offsets, source)

    def is_file_source(self, source: str) -> bool:
        """Whether ``source`` is a file source (its offsets are ``{"logOffset":N}``, or its log holds file
        entries when there are no offsets)."""
        offset = _offset_of(self._layout_offsets, source)
        if offset is not None:
            try:
                return isinstance(parsed := json.loads(offset), dict) and "logOffset" in parsed
            except ValueError:
                return False
        return False

    def source_log(self, source: str) -> FileStreamSourceLog:
        """The log of file source ``source`` (an index or a name), read only."""
        return FileStreamSourceLog(self.location.manager, self.path(f"sources/{source}"), read_only=True,
                                   deletion=False)

    def operators(self) -> list[OperatorLayout]:
        """The stateful operators found under ``state/``."""
        return operators(self.tree)

    def operator_metadata(self, operator: OperatorLayout) -> dict[str, Any] | None:
        """The parsed operator metadata (``state/<id>/_metadata/metadata``, or the latest ``_metadata/v2/<batch>``),
        None when absent; CorruptLogError when unreadable."""
        if operator.metadata_rel is None:
            return None
        path = self.path(operator.metadata_rel)
        with open_lines(self.location.manager, path) as lines:
            lines.version(2)
            text = "".join(line for line in lines)
            obj = lines.json_line(text) if text else None
        if not isinstance(obj, dict):
            raise CorruptLogError(path, "expected the operator's metadata as a JSON object after the version line")
        return obj


def scan(location: Location) -> Scan:
    """List the checkpoint at ``location`` once and read its query id and latest offsets. Raises
    the :mod:`checkpointfs.errors` error of the failure when it cannot be read (:class:`PathNotFoundError`: no
    checkpoint there)."""
    tree = Tree.of(location.walk())
    if tree.count == 0:
        raise PathNotFoundError(location.uri, "no checkpoint here: the directory is empty or does not exist")
    result = Scan(location, tree)
    if not tree.names("offsets") and not tree.names("commits") and "metadata" not in tree.names(""):
        raise PathNotFoundError(location.uri, "not a streaming checkpoint: no offsets/, commits/ or metadata file")
    result.offsets = [b for b, _ in tree.batch_ids("offsets")]
    result.commits = [b for b, _ in tree.batch_ids("commits")]
    try:
        metadata = read_stream_metadata(location.manager, location.uri)
        result.query_id = metadata.id if metadata else None
    except CorruptLogError as e:
        result.problems.append(Problem.of_log(e))
    if result.offsets:
        latest = result.offsets[-1]
        try:
            result.latest_offsets = result.offsets_log().read_file(result.path(f"offsets/{latest}"))
        except CorruptLogError as e:
            result.offsets_problem = Problem.of_log(e)
            result.earlier_offsets = _latest_readable(result)
    return result


def _offset_of(offsets: OffsetSeq | OffsetMap | None, source: str) -> str | None:
    if isinstance(offsets, OffsetSeq):
        return offsets.offsets[int(source)] if source.isdigit() and int(source) < len(offsets.offsets) else None
    if isinstance(offsets, OffsetMap):
        return offsets.offsets.get(source)
    return None


def _latest_readable(result: Scan) -> OffsetSeq | OffsetMap | None:
    log = result.offsets_log()
    for batch_id in reversed(result.offsets[:-1]):
        try:
            return log.read_file(paths.join(log.path, str(batch_id)))
        except CorruptLogError:
            continue
    return None
