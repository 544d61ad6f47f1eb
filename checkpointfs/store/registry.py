"""One function from a URL and options to a connected store: :func:`connect` (what ``parse_url_opts`` is to arrow-rs
``object_store``). The URL's scheme names the store's folder (``s3://``/``s3a://``: :mod:`.s3`; ``gs://``: :mod:`.gcs`;
``az://``, ``abfs[s]://``, ``wasb[s]://``: :mod:`.azure`); its ``connect`` module is imported only then, so a
``gs://`` store never loads boto3 nor an ``s3://`` one the GCS or Azure libraries.

Options are of two kinds: :class:`Connection`, what every store is reached with (endpoint, timeouts, connections,
retries, the part size the store must accept), and each store's own keywords (its ``connect.OPTIONS``: credentials,
encryption, account). A keyword of another store is refused, naming the store it belongs to.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from types import ModuleType

from .. import paths, protocol
from ..errors import InvalidPathError
from .base import ObjectStore
from .retry import RetryPolicy

__all__ = ["FAMILIES", "NAMES", "Connection", "connect", "family_of", "options_of"]

FAMILIES = {"s3": "checkpointfs.store.s3.connect", "gcs": "checkpointfs.store.gcs.connect",
            "azure": "checkpointfs.store.azure.connect"}
"""Each store family (:attr:`checkpointfs.paths.ObjectUri.family`) and the module that connects it."""
NAMES = {"s3": "S3", "gcs": "Google Cloud Storage", "azure": "Azure Blob Storage"}
"""Each store family's name in messages."""

_OPTIONS = {
    "s3": ("region", "sse", "sse_kms_key_id", "aws_access_key_id", "aws_secret_access_key", "aws_session_token",
           "session", "client", "path_style"),
    "gcs": ("gcs_credentials", "gcs_token"),
    "azure": ("account_name", "account_key", "sas_token", "connection_string", "credential", "api_version"),
}
"""Each store's own keywords, stated here (not read off its module) so that refusing a keyword of another store
loads no client library."""


@dataclass(frozen=True)
class Connection:
    """What every store is reached with.

    Attributes:
        endpoint_url: the store's endpoint (None: the store's default, or its emulator variable).
        retry: the RetryPolicy of every request.
        delete_retry: the RetryPolicy of deletes (None: ``retry``).
        connect_timeout_s: seconds to open a connection before the attempt fails (and is retried).
        read_timeout_s: seconds to wait for an answer before the attempt fails (and is retried).
        max_pool_connections: connections kept open to the endpoint.
        part_size: the part size writers will use (a store that takes parts only in multiples refuses another).
        root: the path the store is connected for (named in messages).
    """

    endpoint_url: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    delete_retry: RetryPolicy | None = None
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 30.0
    max_pool_connections: int = 32
    part_size: int = protocol.PART_SIZE_BYTES
    root: str = ""


def family_of(uri: str) -> str:
    """The store family of ``uri``'s scheme (``s3``, ``gcs``, ``azure``; ``s3://`` alone names S3);
    InvalidPathError for a path of no object store."""
    scheme = paths.parse(uri).scheme
    for family, schemes in (("s3", paths.S3_SCHEMES), ("gcs", paths.GCS_SCHEMES), ("azure", paths.AZURE_SCHEMES)):
        if scheme in schemes:
            return family
    raise InvalidPathError(uri, f"not an object store path: scheme {scheme or '(none)'!r}, expected s3://, s3a://, "
                                "gs://, az://, abfs[s]:// or wasb[s]://")


def options_of(family: str) -> tuple[str, ...]:
    """The keywords of the stores of ``family`` (``s3``, ``gcs``, ``azure``)."""
    return _OPTIONS[family]


def _module(family: str) -> ModuleType:
    return importlib.import_module(FAMILIES[family])


def connect(uri: str, connection: Connection | None = None, **options: object) -> ObjectStore:
    """The store ``uri`` lives in (a scheme alone, ``s3://``, names a store serving every bucket), connected with
    ``connection`` and the store's own ``options`` (None values are unset). ValueError for a keyword this store does
    not take, naming the store it is for; InvalidPathError for a path of no object store."""
    family = family_of(uri)
    given = {name: value for name, value in options.items() if value is not None}
    foreign = sorted(set(given) - set(_OPTIONS[family]))
    if foreign:
        owners = {name: [NAMES[f] for f, names in _OPTIONS.items() if name in names] for name in foreign}
        said = ", ".join(f"{name} (for {' and '.join(owners[name]) or 'no store'})" for name in foreign)
        raise ValueError(f"{uri}: not an option of {NAMES[family]}: {said}")
    connection = connection or Connection()
    if not connection.root:
        connection = replace(connection, root=uri)
    store: ObjectStore = _module(family).connect(uri, connection, **given)
    return store
