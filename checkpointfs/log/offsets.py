"""OffsetSeqLog: the ``offsets/`` log of a streaming checkpoint, version 1 (positional offsets) and version 2
(offsets keyed by source id, written by Spark 4.3 with ``spark.sql.streaming.offsetLog.formatVersion=2``).

Offsets are kept as the JSON text each source wrote (opaque here, checked only to be valid JSON), so a batch read and
written back is byte for byte the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .io import LineWriter, LogLines, dumps
from .metadata_log import MetadataLog

VERSION_1 = 1
VERSION_2 = 2
MAX_VERSION = VERSION_2
VOID_OFFSET = "-"
"""The line written for a source without an offset."""


@dataclass(frozen=True)
class SourceMetadataInfo:
    """One entry of version 2's ``sourceMetadataInfo`` (Spark's ``SourceMetadataInfo``, SPARK-54583): a source's id,
    its provider and the data source API it is read through."""

    source_id: str
    provider_name: str
    api_version: str


@dataclass(frozen=True)
class ControlBatchInfo:
    """Version 2's ``controlBatchInfo`` (Spark's ``OffsetSeqControlBatchInfo``): the operation a control batch
    carries, and its details when given."""

    operation_type: str
    operation_info: str | None = None


@dataclass(frozen=True)
class OffsetSeqMetadata:
    """The metadata line of an offsets batch: watermark and batch timestamp (ms), the SQL confs the query must keep,
    and any further fields Spark wrote (``extra``, e.g. ``sourceMetadataInfo`` and ``controlBatchInfo`` in version
    2, read through :attr:`source_metadata` and :attr:`control_batch`), kept in order so that a batch read and
    written back is the same. Spark 4.2.1 and 4.3.0 write ``"sourceMetadataInfo":{}`` and no ``controlBatchInfo``:
    no code of theirs fills them (read off their spark-sql jars), so both are read as their classes define them."""

    batch_watermark_ms: int = 0
    batch_timestamp_ms: int = 0
    conf: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def source_metadata(self) -> dict[str, SourceMetadataInfo]:
        """Version 2's ``sourceMetadataInfo`` by source id (empty when absent)."""
        raw = self.extra.get("sourceMetadataInfo") or {}
        return {name: SourceMetadataInfo(info["sourceId"], info["providerName"], info["apiVersion"])
                for name, info in raw.items()}

    @property
    def control_batch(self) -> ControlBatchInfo | None:
        """Version 2's ``controlBatchInfo``, None when absent."""
        raw = self.extra.get("controlBatchInfo")
        return None if raw is None else ControlBatchInfo(raw["operationType"], raw.get("operationInfo"))

    def to_json(self) -> str:
        """The metadata line as Spark writes it."""
        body: dict[str, Any] = {"batchWatermarkMs": self.batch_watermark_ms,
                                "batchTimestampMs": self.batch_timestamp_ms, "conf": self.conf}
        body.update(self.extra)
        return dumps(body)

    @classmethod
    def parse(cls, lines: LogLines, text: str) -> OffsetSeqMetadata:
        """Parse a metadata line."""
        obj = lines.json_line(text)
        if not isinstance(obj, dict):
            raise lines.corrupt("the metadata line must be a JSON object")
        watermark = obj.get("batchWatermarkMs", 0)
        timestamp = obj.get("batchTimestampMs", 0)
        conf = obj.get("conf", {})
        for name, value in (("batchWatermarkMs", watermark), ("batchTimestampMs", timestamp)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise lines.corrupt(f"field {name!r} must be an integer, found {value!r}")
        if not isinstance(conf, dict) or not all(isinstance(v, str) for v in conf.values()):
            raise lines.corrupt("field 'conf' must be an object of strings")
        extra = {k: v for k, v in obj.items() if k not in ("batchWatermarkMs", "batchTimestampMs", "conf")}
        _check_v2_fields(lines, extra)
        return cls(watermark, timestamp, conf, extra)


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _check_v2_fields(lines: LogLines, extra: dict[str, Any]) -> None:
    """Refuse a ``sourceMetadataInfo`` or ``controlBatchInfo`` that Spark could not read back (its json4s reader
    needs these fields, as strings)."""
    sources = extra.get("sourceMetadataInfo")
    if sources is not None:
        if not isinstance(sources, dict):
            raise lines.corrupt("field 'sourceMetadataInfo' must be an object")
        for name, info in sources.items():
            if not (isinstance(info, dict)
                    and all(_is_text(info.get(k)) for k in ("sourceId", "providerName", "apiVersion"))):
                raise lines.corrupt(f"sourceMetadataInfo[{name!r}] must have string fields sourceId, providerName "
                                    "and apiVersion")
    control = extra.get("controlBatchInfo")
    if control is not None:
        if not (isinstance(control, dict) and _is_text(control.get("operationType"))
                and (control.get("operationInfo") is None or _is_text(control.get("operationInfo")))):
            raise lines.corrupt("field 'controlBatchInfo' must be an object with a string operationType (and an "
                                "optional string operationInfo)")


@dataclass(frozen=True)
class OffsetSeq:
    """Version 1: one offset per source, in the query's source order (None where a source has none)."""

    offsets: list[str | None]
    metadata: OffsetSeqMetadata | None = None

    @property
    def version(self) -> int:
        """The format version, 1."""
        return VERSION_1


@dataclass(frozen=True)
class OffsetMap:
    """Version 2: offsets keyed by source id (None where a source has none)."""

    offsets: dict[str, str | None]
    metadata: OffsetSeqMetadata | None = None

    @property
    def version(self) -> int:
        """The format version, 2."""
        return VERSION_2


class OffsetSeqLog(MetadataLog[OffsetSeq | OffsetMap]):
    """``<checkpoint>/offsets``: batch files ``v1`` or ``v2``, a metadata line (empty when none), then the offsets."""

    def write_batch(self, out: LineWriter, metadata: OffsetSeq | OffsetMap) -> None:
        out.write(f"v{metadata.version}\n")
        out.write(metadata.metadata.to_json() if metadata.metadata is not None else "")
        if isinstance(metadata, OffsetMap):
            for source_id, offset in metadata.offsets.items():
                if ":" in source_id or "\n" in source_id:
                    raise ValueError(f"source id {source_id!r} must not contain ':' or a line break")
                out.write(f"\n{source_id}:{VOID_OFFSET if offset is None else _one_line(offset)}")
        else:
            for offset in metadata.offsets:
                out.write(f"\n{VOID_OFFSET if offset is None else _one_line(offset)}")

    def read_batch(self, lines: LogLines) -> OffsetSeq | OffsetMap:
        version = lines.version(MAX_VERSION)
        text = lines.next_line()
        if text is None:
            raise lines.corrupt("incomplete log file: the metadata line is missing")
        metadata = OffsetSeqMetadata.parse(lines, text.strip()) if text.strip() else None
        if version == VERSION_2:
            offsets: dict[str, str | None] = {}
            for line in lines:
                source_id, colon, offset = line.partition(":")
                if not colon:
                    raise lines.corrupt(f"expected '<sourceId>:<offset>', found {line[:80]!r}")
                offsets[source_id] = self._offset(lines, offset)
            return OffsetMap(offsets, metadata)
        return OffsetSeq([self._offset(lines, line) for line in lines], metadata)

    @staticmethod
    def _offset(lines: LogLines, text: str) -> str | None:
        if text == VOID_OFFSET:
            return None
        lines.json_line(text)  # offsets are opaque, but a truncated one must not pass
        return text


def _one_line(offset: str) -> str:
    if "\n" in offset or "\r" in offset:
        raise ValueError("an offset's JSON must be on one line")
    return offset
