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
    "StoreCapabilities",
]


class PutMode(enum.Enum):
    """How a write treats an existing object: replace it, or fail with FileAlreadyExistsError (create-if-absent)."""

    OVERWRITE = "overwrite"
    CREATE = "create"


@dataclass(frozen=True)
class ObjectPath:
    """An object's bucket (an Azure container) and key, the ``uri`` errors name it by (the path the caller gave),
    and the ``base`` URI of its bucket other keys are named under (``""``: ``s3://<bucket>``)."""

    bucket: str
    key: str
    uri: str
    base: str = ""

    @classmethod
    def parse(cls, uri: str) -> ObjectPath:
        """The object ``uri`` names (any scheme of :data:`checkpointfs.paths.OBJECT_SCHEMES`)."""
        parsed = paths.parse_object(uri)
        return cls(parsed.bucket, parsed.key, uri, parsed.base)

    def at(self, key: str) -> ObjectPath:
        """Another key of the same bucket, named under the same base URI."""
        base = self.base or f"s3://{self.bucket}"
        return ObjectPath(self.bucket, key, f"{base}/{key}", self.base)

    def below(self, key: str) -> ObjectPath:
        """Another key of the same bucket, named by this path's ``uri`` (errors of a listing below it name it)."""
        return ObjectPath(self.bucket, key, self.uri, self.base)


@dataclass(frozen=True)
class ObjectMeta:
    """What a listing or a head tells of one object. ``write_id``: the id of the create that wrote it (``""``: none,
    or not known, as in a listing). ``checksum``: the checksum the store kept of it, as ``<algorithm>:<value>``
    (``sha256:<base64>``; ``""``: none, or not known), compared with :meth:`ObjectStore.checksum` of what a writer
    sent where the store keeps no write id."""

    key: str
    size: int
    last_modified: datetime
    etag: str = ""
    write_id: str = ""
    checksum: str = ""


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


@dataclass(frozen=True)
class StoreCapabilities:
    """Where stores' protocols differ, what this store's allows; DirectWriteStream adapts to it.

    ``family``: the paths it serves (:attr:`checkpointfs.paths.ObjectUri.family`). ``parallel_parts``: parts of one
    upload may be in flight together (not so for GCS's resumable upload, whose chunks go in order).
    ``tail_in_completion``: the last part is sent by :meth:`ObjectStore.complete_multipart` (``tail``), as GCS's
    resumable upload publishes with its final chunk. ``aborts_uploads``: :meth:`ObjectStore.abort_multipart` drops
    the parts (Azure's uncommitted blocks cannot be dropped: invisible, they expire)."""

    family: str = "s3"
    parallel_parts: bool = True
    tail_in_completion: bool = False
    aborts_uploads: bool = True


class Abandoned(Exception):
    """Raised instead of sending another attempt of a request once its ``abandon`` event is set."""


class ObjectStore(ABC):
    """The operations DirectWriteManager needs from an object store. Every request is counted in :attr:`requests`
    (by the store's API names, such as ``PutObject``); failures are the errors of :mod:`checkpointfs.errors`."""

    requests: RequestMetrics
    capabilities: StoreCapabilities = StoreCapabilities()

    @abstractmethod
    def put(self, where: ObjectPath, data: bytes, *, mode: PutMode, write_id: str) -> None:
        """Write ``data`` as the whole object, stamped with ``write_id``; CREATE fails on an existing object."""

    @abstractmethod
    def create_multipart(self, where: ObjectPath, *, mode: PutMode, write_id: str) -> MultipartUpload:
        """Start a multipart upload of the object, to be stamped with ``write_id`` and published as ``mode`` says
        (stores that take the condition at the start, as GCS does, need it here)."""

    @abstractmethod
    def upload_part(self, where: ObjectPath, upload_id: str, number: int, data: bytes | bytearray, *,
                    abandon: threading.Event | None = None) -> Part:
        """Upload part ``number`` (``data`` is not copied: not to be changed until this returns); once ``abandon``
        is set, no further attempt is sent (:class:`Abandoned`)."""

    @abstractmethod
    def complete_multipart(self, where: ObjectPath, upload_id: str, parts: Sequence[Part], *, mode: PutMode,
                           tail: bytes = b"") -> None:
        """Publish the upload as the object, its parts in the order given, then ``tail`` (only where
        :attr:`StoreCapabilities.tail_in_completion`); CREATE fails on an existing object."""

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

    def checksum(self, data: bytes) -> str:
        """The checksum :meth:`put` sends with ``data`` and the store keeps, as :attr:`ObjectMeta.checksum` names it
        (``""``: this store sends none)."""
        del data
        return ""

    def list(self, where: ObjectPath, *, delimiter: str | None = None, page_size: int = 1000) -> ListResult:
        """Every page of :meth:`list_pages`, joined."""
        objects: list[ObjectMeta] = []
        prefixes: list[str] = []
        for page in self.list_pages(where, delimiter=delimiter, page_size=page_size):
            objects += page.objects
            prefixes += page.prefixes
        return ListResult(objects, prefixes)
