"""CommitLog: the ``commits/`` log of a streaming checkpoint (one file per completed batch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .io import LineWriter, LogLines, dumps, field
from .metadata_log import MetadataLog

VERSION_1 = 1
VERSION_2 = 2
MAX_VERSION = VERSION_2


@dataclass(frozen=True)
class CommitMetadata:
    """A commit: the watermark for the next batch (ms); version 2 adds ``state_unique_ids`` (operator id ->
    partition -> unique ids of the state store files), kept as parsed JSON."""

    next_batch_watermark_ms: int = 0
    version: int = VERSION_1
    state_unique_ids: Any = None

    def __post_init__(self) -> None:
        if self.version not in (VERSION_1, VERSION_2):
            raise ValueError(f"commit log version must be 1 or 2, got {self.version}")
        if self.version == VERSION_1 and self.state_unique_ids is not None:
            raise ValueError("state_unique_ids needs commit log version 2")

    def to_json(self) -> str:
        """The metadata line as Spark writes it."""
        body: dict[str, Any] = {"nextBatchWatermarkMs": self.next_batch_watermark_ms}
        if self.state_unique_ids is not None:
            body["stateUniqueIds"] = self.state_unique_ids
        return dumps(body)


class CommitLog(MetadataLog[CommitMetadata]):
    """``<checkpoint>/commits``: ``v1`` (or ``v2``) then one JSON line; a missing JSON line reads as ``{}``."""

    def write_batch(self, out: LineWriter, metadata: CommitMetadata) -> None:
        out.write(f"v{metadata.version}\n{metadata.to_json()}")

    def read_batch(self, lines: LogLines) -> CommitMetadata:
        version = lines.version(MAX_VERSION, strip=True)
        text = lines.next_line()
        obj = lines.json_line(text) if text is not None else {}
        watermark = field(lines, obj, "nextBatchWatermarkMs", int, optional=True, default=0)
        unique_ids = obj.get("stateUniqueIds") if version == VERSION_2 else None
        return CommitMetadata(watermark, version, unique_ids)
