"""Deleting part files that no manifest references."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from .. import paths
from ..contract import CheckpointFileManager, FileStatus
from .manifest_paths import canonical_store_path

log = logging.getLogger(__name__)

PART_PREFIX = "part-"


def walk_files(manager: CheckpointFileManager, root: str) -> Iterator[tuple[FileStatus, set[str]]]:
    """Every file under ``root`` with the names of its directory's entries, skipping directories whose name starts
    with ``_`` or ``.`` (``_spark_metadata``, ``_checkpointfs``, hidden ones)."""
    pending = [root]
    while pending:
        directory = pending.pop()
        listing = manager.list(directory)
        siblings = {status.name for status in listing}
        for status in listing:
            if status.is_dir:
                if not status.name.startswith(("_", ".")):
                    pending.append(status.path)
            else:
                yield status, siblings


def collect_garbage(manager: CheckpointFileManager, root: str, keep: set[str], older_than_ms: int) -> list[str]:
    """Delete the part files (names starting ``part-``) under ``root`` whose canonical path is not in ``keep`` and
    that were last modified at or before ``older_than_ms``, with their ``.<name>.crc`` side files. Nothing else is
    touched. Returns the deleted part files."""
    deleted = []
    for status, siblings in walk_files(manager, root):
        name = status.name
        if not name.startswith(PART_PREFIX) or status.modification_time_ms > older_than_ms:
            continue
        if canonical_store_path(status.path) in keep:
            continue
        manager.delete(status.path)
        deleted.append(status.path)
        crc = f".{name}.crc"
        if crc in siblings:
            manager.delete(paths.join(paths.parent(status.path), crc))
    if deleted:
        log.info("%s: deleted %d unreferenced part files", root, len(deleted))
    return deleted
