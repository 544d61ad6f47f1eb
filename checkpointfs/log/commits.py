"""CommitLog: the ``commits/`` log of a streaming checkpoint (one file per completed batch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .io import LineWriter, LogLines, dumps, field
from .metadata_log import MetadataLog

VERSION_1 = 1
VERSION_2 = 2
VERSION_3 = 3
MAX_VERSION = VERSION_3


@dataclass(frozen=True)
class CommitMetadata:
    """A commit: the watermark for the next batch (ms); version 2 adds ``state_unique_ids`` (operator id ->
    partition -> unique ids of the state store files, checkpoint format v2); version 3 (Spark 4.2 and later, with
    ``spark.sql.streaming.queryEvolution.enableSinkEvolution``) adds ``sink_metadata``, the ``sinkMetadataMap`` of
    the query's named sinks (sink name -> ``sinkName``, ``commitOffset``, ``providerName``, ``apiVersion``,
    ``isActive``). Both kept as parsed JSON, in Spark's order."""

    next_batch_watermark_ms: int = 0
    version: int = VERSION_1
    state_unique_ids: Any = None
    sink_metadata: Any = None

    def __post_init__(self) -> None:
        if self.version not in (VERSION_1, VERSION_2, VERSION_3):
            raise ValueError(f"commit log version must be 1, 2 or 3, got {self.version}")
        if self.version == VERSION_1 and self.state_unique_ids is not None:
            raise ValueError("state_unique_ids needs commit log version 2 or 3")
        if self.version != VERSION_3 and self.sink_metadata is not None:
            raise ValueError("sink_metadata needs commit log version 3")

    def to_json(self) -> str:
        """The metadata line as Spark writes it."""
        body: dict[str, Any] = {"nextBatchWatermarkMs": self.next_batch_watermark_ms}
        if self.state_unique_ids is not None:
            body["stateUniqueIds"] = self.state_unique_ids
        if self.sink_metadata is not None:
            body["sinkMetadataMap"] = self.sink_metadata
        return dumps(body)


class CommitLog(MetadataLog[CommitMetadata]):
    """``<checkpoint>/commits``: ``v1`` (``v2``, ``v3``) then one JSON line; a missing JSON line reads as ``{}``."""

    def write_batch(self, out: LineWriter, metadata: CommitMetadata) -> None:
        out.write(f"v{metadata.version}\n{metadata.to_json()}")

    def read_batch(self, lines: LogLines) -> CommitMetadata:
        version = lines.version(MAX_VERSION, strip=True)
        text = lines.next_line()
        obj = lines.json_line(text) if text is not None else {}
        watermark = field(lines, obj, "nextBatchWatermarkMs", int, optional=True, default=0)
        unique_ids = obj.get("stateUniqueIds") if version >= VERSION_2 else None
        sinks = obj.get("sinkMetadataMap") if version == VERSION_3 else None
        return CommitMetadata(watermark, version, unique_ids, sinks)
