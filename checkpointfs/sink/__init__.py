"""Writing and reading file-sink output with Spark's manifest: the commit protocol
(:class:`ManifestCommitProtocol`), the rolling :class:`FileSink`, and :func:`committed_files` for readers outside
Spark."""

from .commit_protocol import ManifestCommitProtocol, TaskAttempt, TrackedStream
from .file_sink import FileSink, Router
from .manifest_paths import from_manifest_path, to_manifest_path
from .reader import committed_files, committed_statuses

__all__ = [
    "FileSink",
    "ManifestCommitProtocol",
    "Router",
    "TaskAttempt",
    "TrackedStream",
    "committed_files",
    "committed_statuses",
    "from_manifest_path",
    "to_manifest_path",
]
