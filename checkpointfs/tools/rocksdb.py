"""The references of a RocksDB state store checkpoint: which shared files each version's zip needs.

Format (Spark 3.5 to 4.3, ``RocksDBFileManager``): per state store instance (an operator's partition, or a named
store's subdirectory of it), ``<v>.zip`` (``<v>_<uniqueId>.zip`` with checkpoint format 2) holds RocksDB's own small
files and a ``metadata`` entry: the line ``v1``, then a JSON object whose ``sstFiles`` and ``logFiles`` list the
shared immutable files the version needs, each as ``{"localFileName", "dfsSstFileName" | "dfsLogFileName",
"sizeBytes"}``. The shared files live beside the zip, SST files in ``SSTs/`` and archived WAL files in ``logs/``,
under their DFS names (``<local base name>-<uuid>.<ext>``). Spark reuses a file across versions only when name and
size match, and fails to load a version whose file has another size.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass

from ..errors import CorruptLogError

METADATA_ENTRY = "metadata"
"""The zip entry that names the shared files."""
METADATA_VERSION = "v1"
"""The only version of the metadata entry Spark writes (``RocksDBCheckpointMetadata.VERSION``)."""
SST_DIR = "SSTs"
LOG_DIR = "logs"
MAX_ZIP_BYTES = 256 << 20
"""A version zip larger than this is not read (Spark's hold RocksDB's MANIFEST and OPTIONS files: kilobytes to a
few megabytes)."""


@dataclass(frozen=True, slots=True)
class SharedFile:
    """One shared file a version needs: its path relative to the zip's directory and its recorded size."""

    rel: str
    size: int


def shared_files(data: bytes, path: str) -> list[SharedFile]:
    """The shared files named by the version zip ``data`` (read from ``path``). Raises
    :class:`~checkpointfs.errors.CorruptLogError` naming ``path`` when the zip or its metadata cannot be read."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            try:
                raw = archive.read(METADATA_ENTRY)
            except KeyError:
                raise CorruptLogError(path, f"the zip has no {METADATA_ENTRY!r} entry: not a RocksDB state "
                                            "version") from None
    except (zipfile.BadZipFile, EOFError, ValueError) as e:
        raise CorruptLogError(path, f"not a readable zip ({e}); the file may be truncated or corrupted") from None
    text = raw.decode("utf-8", errors="replace")
    version, _, body = text.partition("\n")
    if version.strip() != METADATA_VERSION:
        raise CorruptLogError(path, f"metadata version {version.strip()[:20]!r}: only {METADATA_VERSION!r} is "
                                    "supported (written by a newer Spark, or corrupted)")
    try:
        parsed = json.loads(body)
    except ValueError as e:
        raise CorruptLogError(path, f"metadata is not valid JSON ({e})") from None
    if not isinstance(parsed, dict):
        raise CorruptLogError(path, "metadata is not a JSON object")
    found: list[SharedFile] = []
    for key, directory, name_key in (("sstFiles", SST_DIR, "dfsSstFileName"), ("logFiles", LOG_DIR, "dfsLogFileName")):
        entries = parsed.get(key) or []
        if not isinstance(entries, list):
            raise CorruptLogError(path, f"metadata {key!r} is not a list")
        for entry in entries:
            name = entry.get(name_key) if isinstance(entry, dict) else None
            size = entry.get("sizeBytes") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not name or "/" in name or not isinstance(size, int):
                raise CorruptLogError(path, f"metadata {key!r} has an entry without a file name and size: "
                                            f"{json.dumps(entry)[:200]}")
            found.append(SharedFile(f"{directory}/{name}", size))
    return found
