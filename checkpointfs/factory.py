"""``manager_for``: the manager a path's scheme calls for."""

from __future__ import annotations

from typing import Any

from . import paths
from .contract import CheckpointFileManager
from .errors import InvalidPathError
from .rename_manager import NO_REPLACE_PROTOCOLS, RenameBasedManager


def manager_for(uri: str, **options: Any) -> CheckpointFileManager:
    """A manager for ``uri``: ``s3://``/``s3a://`` and ``gs://`` get a :class:`DirectWriteManager` (options such as
    ``endpoint_url``, ``part_size``, ``max_inflight_parts``, ``abort_strategy`` go to it; ``gs://`` needs the
    ``gcs`` extra, and takes ``gcs_credentials``/``gcs_token``); ``file://``, local
    paths, ``memory://``, ``hdfs://``, ``viewfs://`` and ``webhdfs://`` get a :class:`RenameBasedManager` (options
    go to the fsspec file system). An object store manager takes ``uri`` as its ``root`` unless one is given. An unknown
    scheme or a malformed URI raises :class:`~checkpointfs.errors.InvalidPathError`.

    Azure Blob Storage paths (``az://``, ``abfs[s]://``, ``wasb[s]://``) get a DirectWriteManager on an AzureStore
    (the ``azure`` extra; the account and credential options: :mod:`checkpointfs.store.azure_connect`)."""
    parsed = paths.parse(uri)
    if parsed.scheme in paths.S3_SCHEMES:
        paths.parse_s3(uri)
        from .s3.manager import DirectWriteManager  # here: boto3 is loaded only by those who use S3

        options.setdefault("root", uri)  # the probe rule: paths below the checkpoint directory (docs/contract.md)
        return DirectWriteManager(**options)
    if parsed.scheme in paths.GCS_SCHEMES:
        paths.parse_object(uri)
        from .s3.manager import DirectWriteManager  # the GCS libraries load with its store, not before

        options.setdefault("root", uri)
        return DirectWriteManager(**options)
    if parsed.scheme in paths.AZURE_SCHEMES:  # az://, abfs[s]://, wasb[s]://: the azure extra
        from .store.azure_connect import azure_manager

        return azure_manager(uri, **options)
    if parsed.scheme in NO_REPLACE_PROTOCOLS:
        return RenameBasedManager(parsed.scheme or "file", **options)
    raise InvalidPathError(
        uri, f"unsupported scheme {parsed.scheme!r}: expected s3, s3a, gs, file, memory, hdfs, viewfs, webhdfs "
             "or a local path (or az, abfs, abfss, wasb, wasbs for Azure Blob Storage)")
