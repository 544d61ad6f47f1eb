"""Spark's streaming logs in Python, byte-compatible with Spark 4.3, through any CheckpointFileManager:

- :class:`MetadataLog` (HDFSMetadataLog) and :class:`CompactibleLog` (CompactibleFileStreamLog, streaming compaction);
- :class:`FileStreamSinkLog` with :class:`SinkFileStatus` (``_spark_metadata/``);
- :class:`FileStreamSourceLog` with :class:`FileEntry` (``sources/<n>/``);
- :class:`OffsetSeqLog` (``offsets/``, versions 1 and 2), :class:`CommitLog` (``commits/``), the ``metadata`` file
  (:class:`StreamMetadata`), and :class:`Checkpoint` to open them together.
"""

from .checkpoint import Checkpoint
from .commits import CommitLog, CommitMetadata
from .compactible import CompactibleLog
from .io import LineWriter, LogLines
from .metadata_log import MetadataLog
from .names import COMPACT_SUFFIX
from .offsets import ControlBatchInfo, OffsetMap, OffsetSeq, OffsetSeqLog, OffsetSeqMetadata, SourceMetadataInfo
from .sink_log import ADD, DELETE, METADATA_DIR, FileStreamSinkLog, SinkFileStatus
from .source_log import FileEntry, FileStreamSourceLog
from .stream_metadata import StreamMetadata, read_stream_metadata, write_stream_metadata

__all__ = [
    "ADD",
    "COMPACT_SUFFIX",
    "DELETE",
    "METADATA_DIR",
    "Checkpoint",
    "CommitLog",
    "CommitMetadata",
    "CompactibleLog",
    "ControlBatchInfo",
    "FileEntry",
    "FileStreamSinkLog",
    "FileStreamSourceLog",
    "LineWriter",
    "LogLines",
    "MetadataLog",
    "OffsetMap",
    "OffsetSeq",
    "OffsetSeqLog",
    "OffsetSeqMetadata",
    "SinkFileStatus",
    "SourceMetadataInfo",
    "StreamMetadata",
    "read_stream_metadata",
    "write_stream_metadata",
]
