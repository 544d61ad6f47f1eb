"""FileStreamSinkLog: the ``_spark_metadata`` manifest of a file sink, with SinkFileStatus entries."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..clock import Clock, system_clock
from ..contract import CheckpointFileManager
from .compactible import CompactibleLog
from .io import CANONICAL_INT, CANONICAL_STRING, LogLines, canonical_run, field, json_string

log = logging.getLogger(__name__)

ADD = "add"
DELETE = "delete"
DEFAULT_BLOCK_REPLICATION = 1
DEFAULT_BLOCK_SIZE = 32 * 1024 * 1024
METADATA_DIR = "_spark_metadata"
"""The manifest's directory under a sink's output directory."""
DELTA_CACHE_ENTRIES = 20_000
"""How many entries of the batches since the last compaction a compaction keeps in memory to avoid reading them
twice."""


@dataclass(frozen=True, slots=True)
class SinkFileStatus:
    """One file of a sink's output, as the manifest records it. ``path`` is a URI with special characters
    percent-encoded (``file:///out/part-0.json``, ``s3a://bucket/out/part-0.json``); ``action`` is ``"add"`` or
    ``"delete"`` (a file is live when its last entry adds it)."""

    path: str
    size: int
    is_dir: bool = False
    modification_time: int = 0
    block_replication: int = DEFAULT_BLOCK_REPLICATION
    block_size: int = DEFAULT_BLOCK_SIZE
    action: str = ADD

    def to_json(self) -> str:
        """The manifest line, byte for byte as Spark writes it."""
        return (f'{{"path":{json_string(self.path)},"size":{self.size},"isDir":{"true" if self.is_dir else "false"},'
                f'"modificationTime":{self.modification_time},"blockReplication":{self.block_replication},'
                f'"blockSize":{self.block_size},"action":{json_string(self.action)}}}')


def decode_sink_file_status(lines: LogLines, obj: object) -> SinkFileStatus:
    """A SinkFileStatus from a parsed manifest line."""
    return SinkFileStatus(
        path=field(lines, obj, "path", str),
        size=field(lines, obj, "size", int),
        is_dir=field(lines, obj, "isDir", bool),
        modification_time=field(lines, obj, "modificationTime", int),
        block_replication=field(lines, obj, "blockReplication", int),
        block_size=field(lines, obj, "blockSize", int),
        action=field(lines, obj, "action", str),
    )


CANONICAL_ENTRY = (r'\{"path":' + CANONICAL_STRING + r',"size":' + CANONICAL_INT + r',"isDir":(?:true|false),'
                   r'"modificationTime":' + CANONICAL_INT + r',"blockReplication":' + CANONICAL_INT +
                   r',"blockSize":' + CANONICAL_INT + r',"action":"(?:add|delete)"\}')
"""A regular expression for a manifest line exactly as :meth:`SinkFileStatus.to_json` (and Spark) writes it."""


class FileStreamSinkLog(CompactibleLog[SinkFileStatus]):
    """The manifest of a file sink (``<output>/_spark_metadata``), as Spark 4.3's FileStreamSinkLog.

    Defaults are Spark's: ``compact_interval=10`` (``spark.sql.streaming.fileSink.log.compactInterval``),
    ``min_batches_to_retain=100`` (``spark.sql.streaming.minBatchesToRetain``), ``cleanup_delay_ms=600000``
    (``...fileSink.log.cleanupDelay``), ``deletion=True`` (``...fileSink.log.deletion``). ``retention_ms`` (the
    sink's ``retention`` option) drops entries whose modification time is older than it, at compaction and in
    :meth:`all_files`.

    ``delete`` actions: :meth:`all_files` and compaction honour them (the last entry of a path wins, and compaction
    drops a deleted path's entries). Spark 3.1 and later ignore the action when reading and would still read such a
    file until a compaction by this class removes it.
    """

    version = 1
    canonical_entries = canonical_run(CANONICAL_ENTRY)

    def __init__(
        self,
        manager: CheckpointFileManager,
        path: str,
        compact_interval: int = 10,
        min_batches_to_retain: int = 100,
        cleanup_delay_ms: int = 600_000,
        deletion: bool = True,
        retention_ms: int | None = None,
        *,
        read_only: bool = False,
        clock: Clock = system_clock,
    ) -> None:
        super().__init__(manager, path, compact_interval=compact_interval, min_batches_to_retain=min_batches_to_retain,
                         cleanup_delay_ms=cleanup_delay_ms, deletion=deletion, read_only=read_only, clock=clock)
        if retention_ms is not None and retention_ms < 0:
            raise ValueError(f"retention_ms must not be negative, got {retention_ms}")
        self.retention_ms = retention_ms

    def encode_entry(self, entry: SinkFileStatus) -> str:
        return entry.to_json()

    def decode_entry(self, lines: LogLines, obj: object) -> SinkFileStatus:
        return decode_sink_file_status(lines, obj)

    def retains_all(self) -> bool:
        return self.retention_ms is None

    def should_retain(self, entry: SinkFileStatus, now_ms: int) -> bool:
        if self.retention_ms is None or entry.action == DELETE:
            return True
        return now_ms - entry.modification_time <= self.retention_ms

    def compaction_filter(
        self, batch_id: int, sources: list[int], entries: list[SinkFileStatus], cache: dict[int, list[SinkFileStatus]]
    ) -> Callable[[SinkFileStatus, int], bool] | None:
        """Drop the entries that delete actions of the batches since the last compaction cancel (and those delete
        entries). Reads those plain batches (never the previous ``.compact`` file) ahead, keeping up to
        ``DELTA_CACHE_ENTRIES`` of their entries for the compaction so they are read once; beyond that they are read
        again, and only the deleted paths stay in memory."""
        last_delete: dict[str, int] = {}
        position = 0
        cached = 0
        for source in sources:
            if self.is_compaction_batch(source):
                continue
            kept: list[SinkFileStatus] | None = []
            for entry in self._needed_batch(source, batch_id):
                if entry.action == DELETE:
                    last_delete[entry.path] = position
                position += 1
                if kept is not None:
                    kept.append(entry)
                    cached += 1
                    if cached > DELTA_CACHE_ENTRIES:
                        kept = None
            if kept is not None:
                cache[source] = kept
        for entry in entries:
            if entry.action == DELETE:
                last_delete[entry.path] = position
            position += 1
        if not last_delete:
            return None
        log.info("%s: compaction drops %d deleted paths", self.path, len(last_delete))

        def keep(entry: SinkFileStatus, where: int) -> bool:
            if entry.action == DELETE:
                return where < 0  # deletes of the old compact file stay; the new ones have done their work
            return last_delete.get(entry.path, -2) < where

        return keep

    def live_entries(self, batch_ids: range, now_ms: int) -> list[SinkFileStatus]:
        """The live files: retained ``add`` entries not followed by a ``delete`` of their path (the last entry of a
        path wins), in the order of their last addition."""
        live: dict[str, SinkFileStatus] = {}
        for batch_id in batch_ids:
            for entry in self.iter_batch(batch_id):
                live.pop(entry.path, None)
                if entry.action != DELETE and self.should_retain(entry, now_ms):
                    live[entry.path] = entry
        return list(live.values())
