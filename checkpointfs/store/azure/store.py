""":class:`AzureStore`: the object store interface on Azure Blob Storage (block blobs), through Microsoft's
``azure-storage-blob`` SDK (the ``azure`` extra), typed by the SDK's own annotations.

Why the SDK and not fsspec's ``adlfs``: a small put-if-absent is one Put Blob with ``If-None-Match: *`` carrying our
write id as metadata, which adlfs cannot send (its file API always stages a block and commits it: two requests; its
single-put ``pipe_file`` hard-codes its own metadata, so no write id can be stamped). adlfs also builds its clients
with the SDK's default retries (3, backing off 15 s and more), which it gives no way to turn off, and flattens block
failures into ``RuntimeError`` without their status. Here the SDK's retries are off (``retry_total=0``): every
attempt is one request our retry table governs (:mod:`checkpointfs.protocol`), each counted in
:attr:`AzureStore.requests` by the Blob service's operation names (:mod:`checkpointfs.store.azure.client`).

How the contract maps onto the Blob service:

- put: one Put Blob, ``If-None-Match: *`` for a create (409 ``BlobAlreadyExists`` when the name is taken), the write
  id in ``x-ms-meta-checkpointfs_write_id`` (:data:`checkpointfs.protocol.AZURE_WRITE_ID_KEY`: metadata names must be
  C# identifiers, so the S3 key's hyphens are refused there);
- a large file: no request to start it (the upload id is the write id), one Put Block per part, in parallel, block
  ids of one fixed length derived from the write id (``<write id>-<part number, 6 digits>``) so that two writers'
  blocks of one name never mix, then one Put Block List with ``If-None-Match: *`` and the write id;
- cancel: Azure has no request that drops uncommitted blocks; they are invisible to Get Blob, Get Blob Properties and
  List Blobs, are discarded by the next Put Blob or Put Block List of the name, and expire after 7 days. The abort
  sends one Delete Blob with ``If-Unmodified-Since`` at the start of 1970: a committed blob was modified since, so it
  is never touched (412); a name that has only uncommitted blocks is dropped where the service keeps such a name as a
  blob (Azurite does, and would otherwise answer a later put-if-absent Put Blob of the name with 409), and is absent
  otherwise (404). No upload can leak, so :meth:`AzureStore.list_uploads` is always empty;
- read: one Get Blob, pinned with ``If-Match`` to the ETag of the first answer when a read resumes; sent through the
  SDK's generated operation, not ``download_blob``, which sends a second GET for an empty blob and re-sends GETs of
  its own, unseen by our retry table, when a body breaks off;
- list: List Blobs with the metadata, where folder marker blobs (``hdi_isfolder=true``, made by Hadoop's ABFS and
  WASB for ``mkdirs``) are directories, never files;
- delete many: Blob Batch requests of at most 256 deletes each.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from azure.core.exceptions import AzureError
from azure.core.pipeline import PipelineRequest
from azure.storage.blob import BlobBlock, BlobClient, BlobPrefix, BlobProperties, BlobServiceClient, BlobType
from azure.storage.blob._generated.models import ModifiedAccessConditions

from ... import protocol
from ...errors import (
    CheckpointFsError,
    PathNotFoundError,
    StoreError,
)
from ...metrics import RequestMetrics
from ..attempts import Attempts, run_attempts
from ..base import (
    GetResult,
    ListResult,
    MultipartUpload,
    ObjectMeta,
    ObjectPath,
    ObjectStore,
    OpenUpload,
    Part,
    PutMode,
    StoreCapabilities,
)
from ..errors import error_for
from ..retry import RetryPolicy
from .client import answer_of, translate
from .client import operation as operation_of

log = logging.getLogger(__name__)

__all__ = ["BATCH_DELETE_LIMIT", "FOLDER_MARKER_KEY", "AzureStore", "block_id"]
T = TypeVar("T")

BATCH_DELETE_LIMIT = 256
"""Sub-requests of one Blob Batch request, at most (the service's limit)."""
FOLDER_MARKER_KEY = "hdi_isfolder"
"""Metadata of the 0-byte blobs Hadoop's Azure file systems write as directories (value ``true``)."""
_LONG_AGO = datetime.datetime(1970, 1, 2, tzinfo=datetime.timezone.utc)
"""Before any blob's Last-Modified: a delete conditional on no change since then never deletes a committed blob."""
_PART_DIGITS = 6  # Azure allows 50,000 blocks a blob


def block_id(write_id: str, number: int) -> str:
    """The id of part ``number`` of the write ``write_id`` (before the SDK's base64): one length for every part of a
    write, and different for every writer, so that two writers' blocks of one name never mix."""
    return f"{write_id}-{number:0{_PART_DIGITS}d}"


class AzureStore(ObjectStore):
    """The store on one storage account's Blob service (``service``, a ``BlobServiceClient``): requests retried per
    ``retry`` (deletes per ``delete_retry``), writes stamped with the write id under
    :data:`~checkpointfs.protocol.AZURE_WRITE_ID_KEY`. ``endpoint`` names the account's endpoint in messages;
    ``secrets`` are redacted from every message. Each call turns the SDK's retries off, so ``service`` may be one
    built elsewhere."""

    capabilities = StoreCapabilities(family="azure", parallel_parts=True, tail_in_completion=False,
                                     aborts_uploads=False)

    def __init__(self, service: BlobServiceClient, *, retry: RetryPolicy, delete_retry: RetryPolicy | None = None,
                 endpoint: str = "", secrets: tuple[str, ...] = ()) -> None:
        self.service = service
        """The SDK's client of the account (for tests and tools that need raw requests to the same account)."""
        self.retry = retry
        self.delete_retry = delete_retry or retry
        self.endpoint_url = endpoint or service.url
        """The account's Blob endpoint, as messages and the store check name it (``endpoint_url``, as GCS's)."""
        self.requests = RequestMetrics()
        """Every request sent, by Blob service operation name (``PutBlob``), retries included."""
        self._secrets = tuple(s for s in secrets if s)
        # per call: every attempt counted (the hook runs once per attempt), and the SDK's own retries off
        self._call: dict[str, Any] = {"raw_request_hook": self._count_request, "retry_total": 0}

    def _count_request(self, request: PipelineRequest[Any]) -> None:
        http = request.http_request
        query = http.url.partition("?")[2]
        self.requests.record(operation_of(http.method, query, http.headers))

    def close(self) -> None:
        self.service.close()

    def _blob(self, where: ObjectPath) -> BlobClient:
        return self.service.get_blob_client(where.bucket, where.key)

    # -- sending -----------------------------------------------------------------------------------------------
    def _run(self, where: ObjectPath, operation: str, send: Callable[[], T], *, policy: RetryPolicy | None = None,
             abandon: threading.Event | None = None, attempts: Attempts | None = None) -> T:
        """``send`` with retries while the answer's class is retried (checkpointfs.store.attempts)."""
        return run_attempts(policy or self.retry, f"{operation} {where.uri}", send,
                            lambda e: self._failure(e, where, operation), abandon=abandon, attempts=attempts)

    def _failure(self, error: Exception, where: ObjectPath, operation: str) -> tuple[CheckpointFsError, bool] | None:
        """An Azure SDK failure as the checkpointfs error it stands for, and whether the service asked to slow
        down."""
        if not isinstance(error, AzureError):
            return None
        return translate(error, where, operation, self._secrets), protocol.is_throttle(answer_of(error))

    @staticmethod
    def _metadata(write_id: str) -> dict[str, str]:
        return {protocol.AZURE_WRITE_ID_KEY: write_id}

    # -- writing -----------------------------------------------------------------------------------------------
    def put(self, where: ObjectPath, data: bytes, *, mode: PutMode, write_id: str) -> None:
        blob = self._blob(where)
        self._run(where, "put_blob", lambda: blob.upload_blob(
            data, blob_type=BlobType.BLOCKBLOB, length=len(data), overwrite=mode is PutMode.OVERWRITE,
            metadata=self._metadata(write_id), max_concurrency=1, **self._call))

    def create_multipart(self, where: ObjectPath, *, mode: PutMode, write_id: str) -> MultipartUpload:
        """No request: blocks are staged under the blob's name, and the upload id is the write id (the completion
        stamps it)."""
        del where, mode
        return MultipartUpload(write_id)

    def upload_part(self, where: ObjectPath, upload_id: str, number: int, data: bytes | bytearray, *,
                    abandon: threading.Event | None = None) -> Part:
        blob = self._blob(where)
        block = block_id(upload_id, number)
        body = cast(bytes, data)  # a bytearray goes out as it is: no copy of the part
        self._run(where, "put_block", lambda: blob.stage_block(block, body, length=len(data), **self._call),
                  abandon=abandon)
        return Part(number, block)

    def complete_multipart(self, where: ObjectPath, upload_id: str, parts: Sequence[Part], *, mode: PutMode,
                           tail: bytes = b"") -> None:
        if tail:
            raise ValueError("Azure stages every block before the block list: no tail")
        blob = self._blob(where)
        condition: dict[str, Any] = {"if_none_match": "*"} if mode is PutMode.CREATE else {}
        blocks = [BlobBlock(block_id=part.etag) for part in parts]
        self._run(where, "put_block_list", lambda: blob.commit_block_list(
            blocks, metadata=self._metadata(upload_id), **condition, **self._call))

    def abort_multipart(self, where: ObjectPath, upload_id: str) -> None:
        """Drop the name's uncommitted blocks where the service keeps them as a blob, never a committed blob: one
        Delete Blob with ``If-Unmodified-Since`` 1970 (412 for a committed blob, 404 for an absent one: both
        fine). The blocks of ``upload_id`` are invisible either way and expire after 7 days on Azure."""
        blob = self._blob(where)
        try:
            self._run(where, "delete_blob", lambda: blob.delete_blob(if_unmodified_since=_LONG_AGO, **self._call),
                      policy=self.delete_retry)
        except CheckpointFsError as e:
            if e.answer_class is None or e.answer_class.name not in ("conflict", "not-found"):
                raise
        log.debug("%s: upload %s dropped; its uncommitted blocks are invisible and expire after 7 days", where.uri,
                  upload_id)

    def list_uploads(self, where: ObjectPath) -> list[OpenUpload]:
        """None: no request exists to list or drop uncommitted blocks, and they are never visible (see the module)."""
        del where
        return []

    # -- reading -----------------------------------------------------------------------------------------------
    def get(self, where: ObjectPath, *, start: int = 0, expected_etag: str | None = None) -> GetResult:
        generated: Any = self._blob(where)._client  # the SDK's generated operations (private: see the module)
        conditions = ModifiedAccessConditions(if_match=expected_etag) if expected_etag is not None else None

        def send() -> Any:
            # the generated operation: one GET, whatever the size (download_blob would send two for an empty blob)
            return generated.blob.download(
                range=f"bytes={start}-" if start else None, modified_access_conditions=conditions,
                cls=lambda pipeline_response, body, headers: (pipeline_response.http_response, body), **self._call)

        try:
            response, body = self._run(where, "get_blob", send)
        except CheckpointFsError as e:
            if expected_etag is None or e.answer_class is None or e.answer_class.name != "conflict":
                raise
            error = StoreError(where.uri, "the object was replaced while it was being read",
                               code=getattr(e, "code", ""), status=getattr(e, "status", 0))
            error.answer, error.answer_class = e.answer, e.answer_class
            raise error from None
        headers = response.headers
        if _is_marker(_metadata_of(headers)):
            _close(response)
            raise PathNotFoundError(where.uri, "get_blob: a directory (folder marker blob), not a file")
        return GetResult(_AzureBody(body, response, where, self._secrets), str(headers.get("ETag", "")),
                         start + int(headers.get("Content-Length", 0)),
                         _metadata_of(headers).get(protocol.AZURE_WRITE_ID_KEY.lower(), ""))

    def head(self, where: ObjectPath) -> ObjectMeta:
        blob = self._blob(where)
        props: BlobProperties = self._run(where, "get_blob_properties",
                                          lambda: blob.get_blob_properties(**self._call))
        metadata = {k.lower(): v for k, v in (props.metadata or {}).items()}
        if _is_marker(metadata):
            raise PathNotFoundError(where.uri, "get_blob_properties: a directory (folder marker blob), not a file")
        return ObjectMeta(where.key, int(props.size), props.last_modified, str(props.etag or ""),
                          metadata.get(protocol.AZURE_WRITE_ID_KEY.lower(), ""))

    def head_bucket(self, where: ObjectPath) -> None:
        container = self.service.get_container_client(where.bucket)
        self._run(where, "get_container_properties", lambda: container.get_container_properties(**self._call))

    def list_pages(self, where: ObjectPath, *, delimiter: str | None = None, page_size: int = 1000
                   ) -> Iterator[ListResult]:
        container = self.service.get_container_client(where.bucket)
        options: dict[str, Any] = {"name_starts_with": where.key or None, "include": ["metadata"],
                                   "results_per_page": page_size, **self._call}
        listing = (container.walk_blobs(delimiter=delimiter, **options) if delimiter
                   else container.list_blobs(**options))
        pages = listing.by_page()
        seen_prefixes: set[str] = set()
        while True:
            page = self._run(where, "list_blobs", lambda: _next_page(pages))
            if page is None:
                return
            objects: list[ObjectMeta] = []
            prefixes: list[str] = []
            for item in page:
                if isinstance(item, BlobPrefix):
                    name = str(item.name)
                elif _is_marker({k.lower(): v for k, v in (item.metadata or {}).items()}):
                    if not delimiter:
                        continue  # a directory: no file of a flat listing
                    name = str(item.name) + delimiter
                else:
                    objects.append(ObjectMeta(str(item.name), int(item.size), item.last_modified,
                                              str(item.etag or "")))
                    continue
                if name not in seen_prefixes:
                    seen_prefixes.add(name)
                    prefixes.append(name)
            yield ListResult(objects, sorted(prefixes))

    # -- deleting ----------------------------------------------------------------------------------------------
    def delete(self, where: ObjectPath) -> None:
        blob = self._blob(where)
        try:
            self._run(where, "delete_blob", lambda: blob.delete_blob(**self._call), policy=self.delete_retry)
        except PathNotFoundError:
            pass  # nothing to delete

    def delete_many(self, where: ObjectPath, keys: Sequence[str]) -> None:
        """Blob Batch requests of at most :data:`BATCH_DELETE_LIMIT` deletes (one request for up to 256 keys); keys
        that are absent are no error; the first key refused raises. Where the account refuses the batch or its
        sub-requests as malformed (400: accounts with a hierarchical namespace take no Blob Batch; Azurite refuses
        older SDKs' sub-requests), the keys are deleted one request each."""
        container = self.service.get_container_client(where.bucket)
        for first in range(0, len(keys), BATCH_DELETE_LIMIT):
            batch = list(keys[first:first + BATCH_DELETE_LIMIT])

            def send(batch: list[str] = batch) -> list[Any]:
                return list(container.delete_blobs(*batch, raise_on_any_failure=False, **self._call))

            try:
                answers = self._run(where, "blob_batch", send, policy=self.delete_retry)
            except StoreError as e:
                if e.status not in (400, 405, 501):
                    raise
                log.info("%s: the account refused a Blob Batch (%s); deleting %d keys one by one", where.uri,
                         e.cause, len(batch))
                answers = [None] * len(batch)
            if len(answers) != len(batch):  # the batch as a whole was refused (one answer): one request a key
                log.info("%s: a Blob Batch of %d deletes got %d answers; deleting the keys one by one", where.uri,
                         len(batch), len(answers))
                answers = [None] * len(batch)
            for key, answer in zip(batch, answers, strict=True):
                status = int(getattr(answer, "status_code", 400) or 0)
                if status == 400:  # the sub-request was refused as malformed: one request of its own
                    self.delete(where.at(key))
                elif status >= 300 and status != 404:
                    code = str(answer.headers.get("x-ms-error-code", "") or "")
                    raise error_for(protocol.Answer(status=status, code=code), where.at(key).uri, "blob_batch")


def _close(response: Any) -> None:
    """Release an azure-core response's connection (its transport's own response: azure-core before 1.31 gives the
    wrapper no ``close``)."""
    internal = getattr(response, "internal_response", None)
    (internal if internal is not None else response).close()


def _next_page(pages: Iterator[Any]) -> list[Any] | None:
    """The next page's items (one List Blobs request), or None after the last page."""
    try:
        return list(next(pages))
    except StopIteration:
        return None


def _metadata_of(headers: Any) -> dict[str, str]:
    """The user metadata in a response's headers (``x-ms-meta-<name>``), names lowercased."""
    prefix = "x-ms-meta-"
    return {str(name)[len(prefix):].lower(): str(value) for name, value in headers.items()
            if str(name).lower().startswith(prefix)}


def _is_marker(metadata: dict[str, str]) -> bool:
    """Whether lowercased ``metadata`` is that of a folder marker blob."""
    return metadata.get(FOLDER_MARKER_KEY, "").lower() == "true"


class _AzureBody:
    """A Get Blob body whose read failures come out as the contract's errors, carrying their class."""

    def __init__(self, chunks: Iterator[bytes], response: Any, where: ObjectPath, secrets: tuple[str, ...]) -> None:
        self._chunks = chunks
        self._response = response
        self._where = where
        self._secrets = secrets
        self._pending = b""
        self._ended = False

    def read(self, size: int) -> bytes:
        while len(self._pending) < size and not self._ended:
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self._ended = True
                break
            except AzureError as e:
                raise translate(e, self._where, "get_blob", self._secrets) from None
            except OSError as e:
                raise translate(e, self._where, "get_blob", self._secrets) from e
            self._pending += chunk
        data, self._pending = self._pending[:size], self._pending[size:]
        return data

    def close(self) -> None:
        try:
            _close(self._response)
        except Exception:  # noqa: BLE001 - a broken body is dropped either way
            log.debug("%s: closing a broken body failed", self._where.uri)
