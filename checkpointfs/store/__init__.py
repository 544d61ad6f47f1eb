"""Object stores, in the shape of arrow-rs ``object_store``: the interface DirectWriteManager keeps its contract on
(:mod:`.base`: ``put`` with :class:`PutMode`, multipart uploads, ``head``, ``list``, ``delete``), one function from a
URL and options to a connected store (:func:`connect`, :mod:`.registry`), one folder per store, each the only place
that calls its client library (:mod:`.s3`, :mod:`.gcs`, :mod:`.azure`, each with ``store``, ``client`` and
``connect`` modules, loaded only when a path of theirs is used), and what applies to every store: the contract's
errors for an answer (:mod:`.errors`), retries (:mod:`.retry`, :mod:`.attempts`), settling a lost answer by the write
id (:mod:`.settle`), and the wrapper stores: the store check before the first put-if-absent (:mod:`.check`) and
read-your-writes for lagging stores (:mod:`.read_your_writes`)."""

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
from .registry import Connection, connect
from .retry import RetryPolicy

__all__ = [
    "Abandoned",
    "Body",
    "Connection",
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
    "connect",
]
