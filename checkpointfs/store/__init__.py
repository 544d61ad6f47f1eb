"""Object stores: the interface DirectWriteManager keeps its contract on (:mod:`.base`), its S3 implementation
(:mod:`.s3`, which loads boto3: import it by name), its Google Cloud Storage one (:mod:`.gcs`, which loads
google-auth and requests, the ``gcs`` extra: import it by name), retries (:mod:`.retry`) and the read-your-writes
wrapper for lagging stores (:mod:`.read_your_writes`)."""

from __future__ import annotations

from .base import (
    Abandoned,
    Body,
    GetResult,
    ListResult,
    MultipartUpload,
    ObjectMeta,
    ObjectPath,
    ObjectStore,
    OpenUpload,
    Part,
    PutMode,
)
from .read_your_writes import ReadYourWritesStore
from .retry import RetryPolicy

__all__ = [
    "Abandoned",
    "Body",
    "GetResult",
    "ListResult",
    "MultipartUpload",
    "ObjectMeta",
    "ObjectPath",
    "ObjectStore",
    "OpenUpload",
    "Part",
    "PutMode",
    "ReadYourWritesStore",
    "RetryPolicy",
]
