"""``manager_for``: the manager a path's scheme calls for."""

from __future__ import annotations

from typing import Any

from . import paths
from .contract import CheckpointFileManager
from .errors import InvalidPathError
from .rename_manager import NO_REPLACE_PROTOCOLS, RenameBasedManager


def manager_for(uri: str, **options: Any) -> CheckpointFileManager:
    """A manager for ``uri``. Object store paths get a :class:`DirectWriteManager` on the store the scheme names
    (:func:`checkpointfs.store.connect`): ``s3://``/``s3a://``; ``gs://`` (the ``gcs`` extra); ``az://``,
    ``abfs[s]://``, ``wasb[s]://`` (the ``azure`` extra). Options are DirectWriteManager's (``endpoint_url``,
    ``part_size``, ``abort_strategy``...: :class:`~checkpointfs.direct.options.DirectWriteOptions`) and the store's
    own (credentials, region, encryption, an Azure account: the store's ``connect``); ``uri`` is the manager's
    ``root`` unless one is given. Only the store's own client library is loaded. ``file://``, local paths,
    ``memory://``, ``hdfs://``, ``viewfs://`` and ``webhdfs://`` get a :class:`RenameBasedManager` (options go to the
    fsspec file system). An unknown scheme or a malformed URI raises :class:`~checkpointfs.errors.InvalidPathError`."""
    parsed = paths.parse(uri)
    if parsed.scheme in paths.OBJECT_SCHEMES:
        paths.parse_object(uri)
        from .direct.manager import DirectWriteManager

        options.setdefault("root", uri)  # the probe rule: paths below the checkpoint directory (docs/contract.md)
        return DirectWriteManager(**options)
    if parsed.scheme in NO_REPLACE_PROTOCOLS:
        return RenameBasedManager(parsed.scheme or "file", **options)
    raise InvalidPathError(
        uri, f"unsupported scheme {parsed.scheme!r}: expected s3, s3a, gs, file, memory, hdfs, viewfs, webhdfs "
             "or a local path (or az, abfs, abfss, wasb, wasbs for Azure Blob Storage)")
