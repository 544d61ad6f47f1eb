"""Connecting to Google Cloud Storage (``gs://``): the authorized session for a
:class:`~checkpointfs.store.registry.Connection` and the GCS options (credentials or a token), and the
:class:`~.store.GcsStore` on it. Needs the ``gcs`` extra (``pip install 'checkpointfs[gcs]'``)."""

from __future__ import annotations

from typing import Any

from ..registry import Connection

try:
    from .client import CHUNK_MULTIPLE, authorized_session, endpoint_of
    from .store import GcsStore
except ImportError as missing:
    raise ImportError(f"gs:// needs the gcs extra: pip install 'checkpointfs[gcs]' ({missing})") from missing

__all__ = ["connect"]


def connect(uri: str, connection: Connection, *, gcs_credentials: Any = None, gcs_token: str | None = None
            ) -> GcsStore:
    """The GCS store of ``uri``: requests sent with ``gcs_credentials`` (a ``google.auth.credentials.Credentials``),
    else the OAuth2 access token ``gcs_token`` (not refreshed), else anonymously when the endpoint is an emulator,
    else with Application Default Credentials. The connection's part size must be a multiple of 256 KiB: GCS takes
    a resumable upload's chunks in such multiples."""
    if connection.part_size % CHUNK_MULTIPLE:
        raise ValueError(f"part_size must be a multiple of {CHUNK_MULTIPLE} (256 KiB) on gs://, got "
                         f"{connection.part_size}: GCS takes a resumable upload's chunks in such multiples")
    endpoint = endpoint_of(connection.endpoint_url)
    session, secret = authorized_session(endpoint_url=endpoint, credentials=gcs_credentials, token=gcs_token,
                                         path=connection.root)
    return GcsStore(session, endpoint_url=endpoint, retry=connection.retry, delete_retry=connection.delete_retry,
                    timeout=(connection.connect_timeout_s, connection.read_timeout_s),
                    max_pool_connections=connection.max_pool_connections, secrets=(secret,))
