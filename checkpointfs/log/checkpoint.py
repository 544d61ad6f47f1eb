"""Checkpoint: the logs of one streaming query's checkpoint directory, opened together."""

from __future__ import annotations

from .. import paths
from ..contract import CheckpointFileManager
from .commits import CommitLog
from .offsets import OffsetSeqLog
from .source_log import FileStreamSourceLog
from .stream_metadata import StreamMetadata, read_stream_metadata, write_stream_metadata


class Checkpoint:
    """The checkpoint at ``root``: ``offsets/``, ``commits/``, ``sources/<n>/`` (``sources/<name>/`` for a named
    source, Spark 4.2+) and the ``metadata`` file.
    ``read_only`` opens the logs without creating their directories."""

    def __init__(self, manager: CheckpointFileManager, root: str, *, read_only: bool = False) -> None:
        self.manager = manager
        self.root = root.rstrip("/")
        self.read_only = read_only
        self.offsets = OffsetSeqLog(manager, paths.join(self.root, "offsets"), read_only=read_only)
        self.commits = CommitLog(manager, paths.join(self.root, "commits"), read_only=read_only)

    def source_log(self, source: int | str, **options: int | bool) -> FileStreamSourceLog:
        """The log of file source ``source``, its index or (a named source) its name; options as for
        FileStreamSourceLog."""
        return FileStreamSourceLog(self.manager, paths.join(self.root, f"sources/{source}"),
                                   read_only=self.read_only, **options)  # type: ignore[arg-type]

    def metadata(self) -> StreamMetadata | None:
        """The query id file, None when absent."""
        return read_stream_metadata(self.manager, self.root)

    def write_metadata(self, metadata: StreamMetadata) -> bool:
        """Write the query id file; False when one exists already."""
        return write_stream_metadata(self.manager, self.root, metadata)

    def last_committed_batch(self) -> int | None:
        """The latest batch in ``commits/``."""
        return self.commits.latest_batch_id()
