"""Reading a sink's committed files from outside Spark (``checkpointfs ls-committed`` prints them)."""

from __future__ import annotations

from typing import Any

from .. import paths
from ..contract import CheckpointFileManager
from ..errors import PathNotFoundError
from ..factory import manager_for
from ..log.sink_log import METADATA_DIR, FileStreamSinkLog, SinkFileStatus
from .manifest_paths import from_manifest_path


def committed_statuses(manager: CheckpointFileManager, dir_uri: str) -> list[SinkFileStatus]:
    """The live manifest entries (files only) of the sink output at ``dir_uri``, as Spark's reader sees them
    (compaction honoured, no retention) and with ``delete`` actions honoured. PathNotFoundError when the directory
    has no ``_spark_metadata``."""
    metadata_dir = paths.join(dir_uri, METADATA_DIR)
    sink_log = FileStreamSinkLog(manager, metadata_dir, read_only=True, deletion=False)
    if not sink_log.batch_ids() and not manager.exists(metadata_dir):
        raise PathNotFoundError(metadata_dir, "no manifest here: not the output directory of a Spark file sink or a "
                                              "checkpointfs FileSink")
    return [status for status in sink_log.all_files() if not status.is_dir]


def committed_files(dir_uri: str, *, s3_scheme: str = "s3", manager: CheckpointFileManager | None = None,
                    **manager_options: Any) -> list[str]:
    """The committed part files of a Spark (or FileSink) output directory, ready for pyarrow, pandas or duckdb:
    local files as plain paths, S3 files as ``<s3_scheme>://bucket/key`` (``s3`` by default), percent-decoded.
    Orphan files in the directory are not in it. ``manager_options`` go to :func:`checkpointfs.manager_for`."""
    own = manager is None
    active = manager or manager_for(dir_uri, **manager_options)
    try:
        return [from_manifest_path(status.path, s3_scheme) for status in committed_statuses(active, dir_uri)]
    finally:
        if own:
            active.close()
