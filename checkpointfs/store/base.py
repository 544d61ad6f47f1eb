"""The object store interface DirectWriteManager keeps its contract on (modelled on arrow-rs ``object_store``):
typed operations with typed results, and failures raised as the errors of :mod:`checkpointfs.errors`, each
carrying the class of the store's answer in :mod:`checkpointfs.protocol`'s table (``answer_class``) and whether
any attempt of the request may have been applied (``maybe_applied``). Implementations retry what the table says is
retried; behaviour is added by wrapping a store in another (:mod:`checkpointfs.store.read_your_writes`)."""

from __future__ import annotations

import enum
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from .. import paths
from ..metrics import RequestMetrics

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
]


class PutMode(enum.Enum):
    """How a write treats an existing object: replace it, or fail with FileAlreadyExistsError (create-if-absent)."""

    OVERWRITE = "overwrite"
    CREATE = "create"


@dataclass(frozen=True)
class ObjectPath:
    """An object's bucket and key, and the ``uri`` errors name it by (the path the caller gave)."""

    bucket: str
    key: str
    uri: str

    @classmethod
    def parse(cls, uri: str) -> ObjectPath:
        """The object ``uri`` (``s3://`` or ``s3a://``) names."""
        bucket, key = paths.parse_s3(uri)
        return cls(bucket, key, uri)

    def at(self, key: str) -> ObjectPath:
        """Another key of the same bucket, named by an ``s3://`` URI."""
        return ObjectPath(self.bucket, key, f"s3://{self.bucket}/{key}")


@dataclass(frozen=True)
class ObjectMeta:
    """What a listing or a head tells of one object. ``write_id``: the id of the create that wrote it (``""``: none,
    or not known, as in a listing)."""

    key: str
    size: int
    last_modified: datetime
    etag: str = ""
    write_id: str = ""


@dataclass(frozen=True)
class ListResult:
    """Objects and common prefixes (each ending with the delimiter) of one listing or one page of it."""

    objects: list[ObjectMeta]
    prefixes: list[str]


class Body(Protocol):
    """An object's bytes as they arrive. ``read`` raises the contract's errors (with their ``answer_class``)."""

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes; ``b""`` at the end of the body (or where it broke off)."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


@dataclass(frozen=True)
class GetResult:
    """An object being read: its ``body`` (from ``start``), its ``etag``, its full ``size`` and its ``write_id``."""

    body: Body
    etag: str
    size: int
    write_id: str


@dataclass(frozen=True)
class MultipartUpload:
    """A created upload. ``lost_attempts``: an attempt of the create may have created another upload whose id was
    never seen (its answer was lost), which is left open until aborted."""

    upload_id: str
    lost_attempts: bool = False


@dataclass(frozen=True)
class Part:
    """An uploaded part: its number and the ETag the completion lists it by."""

    number: int
    etag: str


@dataclass(frozen=True)
class OpenUpload:
    """A multipart upload neither completed nor aborted: its key, id and when the store says it was initiated."""

    key: str
    upload_id: str
    initiated: datetime


class Abandoned(Exception):
    """Raised instead of sending another attempt of a request once its ``abandon`` event is set."""


class ObjectStore(ABC):
    """The operations DirectWriteManager needs from an object store. Every request is counted in :attr:`requests`
    (by the store's API names, such as ``PutObject``); failures are the errors of :mod:`checkpointfs.errors`."""

    requests: RequestMetrics

    @abstractmethod
    def put(self, where: ObjectPath, data: bytes, *, mode: PutMode, write_id: str) -> None:
        """Write ``data`` as the whole object, stamped with ``write_id``; CREATE fails on an existing object."""

    @abstractmethod
    def create_multipart(self, where: ObjectPath, *, write_id: str) -> MultipartUpload:
        """Start a multipart upload of the object, to be stamped with ``write_id``."""

    @abstractmethod
    def upload_part(self, where: ObjectPath, upload_id: str, number: int, data: bytes | bytearray, *,
                    abandon: threading.Event | None = None) -> Part:
        """Upload part ``number`` (``data`` is not copied: not to be changed until this returns); once ``abandon``
        is set, no further attempt is sent (:class:`Abandoned`)."""

    @abstractmethod
    def complete_multipart(self, where: ObjectPath, upload_id: str, parts: Sequence[Part], *, mode: PutMode) -> None:
        """Publish the upload as the object, its parts in the order given; CREATE fails on an existing object."""

    @abstractmethod
    def abort_multipart(self, where: ObjectPath, upload_id: str) -> None:
        """Abort the upload, dropping its parts."""

    @abstractmethod
    def list_uploads(self, where: ObjectPath) -> list[OpenUpload]:
        """The open multipart uploads of keys starting with ``where.key``."""

    @abstractmethod
    def get(self, where: ObjectPath, *, start: int = 0, expected_etag: str | None = None) -> GetResult:
        """Read the object from byte ``start``; with ``expected_etag``, a StoreError (class ``conflict``) if the
        object is no longer that version."""

    @abstractmethod
    def head(self, where: ObjectPath) -> ObjectMeta:
        """The object's metadata; PathNotFoundError if there is none."""

    @abstractmethod
    def head_bucket(self, where: ObjectPath) -> None:
        """Check that ``where.bucket`` exists; PathNotFoundError if it does not."""

    @abstractmethod
    def list_pages(self, where: ObjectPath, *, delimiter: str | None = None, page_size: int = 1000
                   ) -> Iterator[ListResult]:
        """The objects whose keys start with ``where.key``, page by page (``page_size`` entries a request); with a
        ``delimiter``, keys that have it after the prefix are rolled up into common prefixes."""

    @abstractmethod
    def delete(self, where: ObjectPath) -> None:
        """Delete the object (no error if there is none)."""

    @abstractmethod
    def delete_many(self, where: ObjectPath, keys: Sequence[str]) -> None:
        """Delete ``keys`` of ``where.bucket`` (at most 1000): one request; the first key refused raises."""

    @abstractmethod
    def close(self) -> None:
        """Release the connections."""

    def list(self, where: ObjectPath, *, delimiter: str | None = None, page_size: int = 1000) -> ListResult:
        """Every page of :meth:`list_pages`, joined."""
        objects: list[ObjectMeta] = []
        prefixes: list[str] = []
        for page in self.list_pages(where, delimiter=delimiter, page_size=page_size):
            objects += page.objects
            prefixes += page.prefixes
        return ListResult(objects, prefixes)
