"""FileStreamSourceLog: the ``sources/<n>/`` log of a file source, with FileEntry entries."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..errors import CorruptLogError, PathNotFoundError
from . import names
from .compactible import CompactibleLog
from .io import CANONICAL_INT, CANONICAL_STRING, LogLines, canonical_run, field, json_string

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One input file a file source took into batch ``batch_id``: its URI-encoded ``path`` and modification
    ``timestamp`` (milliseconds)."""

    path: str
    timestamp: int
    batch_id: int

    def to_json(self) -> str:
        """The log line, byte for byte as Spark writes it."""
        return f'{{"path":{json_string(self.path)},"timestamp":{self.timestamp},"batchId":{self.batch_id}}}'


CANONICAL_ENTRY = (r'\{"path":' + CANONICAL_STRING + r',"timestamp":' + CANONICAL_INT + r',"batchId":' + CANONICAL_INT
                   + r'\}')
"""A regular expression for a source log line exactly as :meth:`FileEntry.to_json` (and Spark) writes it."""


class FileStreamSourceLog(CompactibleLog[FileEntry]):
    """The log of a file source (``<checkpoint>/sources/<n>``), as Spark 4.3's FileStreamSourceLog. Defaults are
    Spark's (``spark.sql.streaming.fileSource.log.compactInterval`` 10, ``...cleanupDelay`` 10 min,
    ``...deletion`` true, ``spark.sql.streaming.minBatchesToRetain`` 100)."""

    version = 1
    canonical_entries = canonical_run(CANONICAL_ENTRY)

    def encode_entry(self, entry: FileEntry) -> str:
        return entry.to_json()

    def decode_entry(self, lines: LogLines, obj: object) -> FileEntry:
        return FileEntry(field(lines, obj, "path", str), field(lines, obj, "timestamp", int),
                         field(lines, obj, "batchId", int))

    def get_range(self, start: int | None = None, end: int | None = None) -> list[tuple[int, list[FileEntry]]]:
        """The entries of each batch from ``start`` (default 0) to ``end`` (default: the latest), as Spark's source
        log gives them: a compaction batch yields only its own entries, and batches whose files were deleted after a
        compaction are recovered from the latest ``.compact`` file. The range must be complete."""
        first = 0 if start is None else start
        last = end
        if last is None:
            latest = self.latest_batch_id()
            last = 0 if latest is None else latest
        found: dict[int, list[FileEntry]] = {}
        removed = []
        for batch_id in range(first, last + 1):
            try:
                found[batch_id] = [e for e in self.iter_batch(batch_id) if e.batch_id == batch_id]
            except PathNotFoundError:
                removed.append(batch_id)
        if removed:
            log.warning("%s: batches %s were deleted; reading them from the latest compaction file", self.path,
                        removed[:10])
            found.update(self._from_latest_compaction(set(removed)))
        ids = sorted(found)
        if first <= last:
            self._verify_range(ids, start, end)
        return [(batch_id, found[batch_id]) for batch_id in ids]

    def _from_latest_compaction(self, wanted: set[int]) -> dict[int, list[FileEntry]]:
        latest = self.latest_batch_id()
        if latest is None:
            return {}
        compaction = names.valid_batches(latest, self.compact_interval)[0]
        result: dict[int, list[FileEntry]] = {}
        try:
            for entry in self.iter_batch(compaction):
                if entry.batch_id in wanted:
                    result.setdefault(entry.batch_id, []).append(entry)
        except PathNotFoundError:
            raise CorruptLogError(self.batch_path(compaction), "the latest compaction file is missing") from None
        return result
