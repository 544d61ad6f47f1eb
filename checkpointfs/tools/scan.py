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
    problems: list[Problem] = field(default_factory=list)

    @property
    def conf(self) -> dict[str, str]:
        """The SQL confs recorded with the latest offsets."""
        if self.latest_offsets is None or self.latest_offsets.metadata is None:
            return {}
        return self.latest_offsets.metadata.conf

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

    def source_ids(self) -> list[int]:
        """The source indexes: those of the latest offsets and those with a ``sources/<n>`` directory."""
        ids = {int(n) for n in self.tree.dirs("sources") if n.isdigit()}
        if isinstance(self.latest_offsets, OffsetSeq):
            ids |= set(range(len(self.latest_offsets.offsets)))
        elif isinstance(self.latest_offsets, OffsetMap):
            ids |= {int(k) for k in self.latest_offsets.offsets if k.isdigit()}
        return sorted(ids)

    def source_offset(self, index: int) -> str | None:
        """The latest offset (JSON text) of source ``index``."""
        if isinstance(self.latest_offsets, OffsetSeq):
            return self.latest_offsets.offsets[index] if index < len(self.latest_offsets.offsets) else None
        if isinstance(self.latest_offsets, OffsetMap):
            return self.latest_offsets.offsets.get(str(index))
        return None

    def is_file_source(self, index: int) -> bool:
        """Whether source ``index`` is a file source (its offsets are ``{"logOffset":N}``, or its log holds file
        entries when there are no offsets)."""
        offset = self.source_offset(index)
        if offset is not None:
            try:
                return isinstance(parsed := json.loads(offset), dict) and "logOffset" in parsed
            except ValueError:
                return False
        return False

    def source_log(self, index: int) -> FileStreamSourceLog:
        """The log of file source ``index``, read only."""
        return FileStreamSourceLog(self.location.manager, self.path(f"sources/{index}"), read_only=True,
                                   deletion=False)

    def operators(self) -> list[OperatorLayout]:
        """The stateful operators found under ``state/``."""
        return operators(self.tree)

    def operator_metadata(self, operator: OperatorLayout) -> dict[str, Any] | None:
        """The parsed ``state/<id>/_metadata/metadata``, None when absent; CorruptLogError when unreadable."""
        if not operator.has_metadata:
            return None
        path = self.path(f"{operator.rel}/_metadata/metadata")
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
        except CorruptLogError:
            result.latest_offsets = _latest_readable(result)
    return result


def _latest_readable(result: Scan) -> OffsetSeq | OffsetMap | None:
    log = result.offsets_log()
    for batch_id in reversed(result.offsets[:-1]):
        try:
            return log.read_file(paths.join(log.path, str(batch_id)))
        except CorruptLogError:
            continue
    return None
