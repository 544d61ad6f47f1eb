"""The store check, as a wrapper store: :class:`CheckedStore` makes sure the store refuses a second put-if-absent of
the same key before the process's first put-if-absent write to a bucket (a single PutObject), and again before its
first put-if-absent multipart completion there (protocol.json ``store_check``; the shim's ``StoreCheck`` is its
JVM twin). Canary objects named ``store_check.canary_prefix`` + a random id go in the directory of the file about to
be written, and are deleted after:

- PutObject: on S3 the canary's key is first headed while it does not exist, which must answer 404 (without
  s3:ListBucket S3 answers 403, which a writer cannot tell from a refused read: a probe or the read-back of a lost
  answer would fail mid-query, so the check fails at start naming it: :func:`missing_head_verdict`); the canary is
  created (``If-None-Match: *``, settled by its write id like any create), read back on S3 (HeadObject with checksum
  mode: does the store keep user metadata, or only checksums, to settle a lost answer by? :func:`keeps`, said in the
  start line), created again the same way, which must be refused (412), then deleted: :data:`PUT_CHECK_REQUESTS`
  requests (3 on GCS and Azure, which answer a missing object 404 to a reader, always keep metadata and are not
  read back);
- CompleteMultipartUpload: the canary is created with one PutObject, a one-part upload of the same key is completed
  with ``If-None-Match: *``, which must be refused, then aborted, the key's uploads listed (a lost answer to the
  CreateMultipartUpload leaves one open) and the canary deleted: :data:`MULTIPART_CHECK_REQUESTS` requests.

A second write that succeeds is the verdict "unsafe" (:class:`~checkpointfs.errors.UnsafeStoreError`, remembered
for the process's life); a failure of the check's own requests, after the store's retries, that is neither that
refusal nor a success gives no verdict: the write fails with that error and the next one checks again.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator, Sequence

from .. import events, protocol
from ..errors import AccessDeniedError, CheckpointFsError, PathNotFoundError, StoreError, UnsafeStoreError, said_of
from ..metrics import record
from .base import GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectPath, ObjectStore, OpenUpload, Part, PutMode
from .settle import Sent, settle_failed_create

log = logging.getLogger(__name__)

__all__ = ["GCS_MULTIPART_CHECK_REQUESTS", "MULTIPART_CHECK_REQUESTS", "PUT_CHECK_REQUESTS", "CheckedStore",
           "delete_refused", "forget_verdicts", "keeps", "missing_head_verdict", "missing_refused", "store_identity"]

_DATA = protocol.load()["store_check"]
CANARY_PREFIX: str = _DATA["canary_prefix"]
"""Name prefix of the canary objects."""
PUT_CHECK_REQUESTS = 5
"""Requests of the PutObject check on S3 when nothing fails: head of the missing key, create, read back, create again
(refused), delete."""
MULTIPART_CHECK_REQUESTS = 7
"""Requests of the multipart check when nothing fails: create, start an upload, one part, complete (refused),
abort, list the key's uploads, delete. On GCS, 5: the canary's bytes go with the (refused) final chunk, and
resumable sessions cannot be listed (:data:`GCS_MULTIPART_CHECK_REQUESTS`)."""
GCS_MULTIPART_CHECK_REQUESTS = 5
"""Requests of the multipart check on GCS: create, start a resumable upload, its final chunk (refused), cancel the
session, delete."""
_CANARY = b"checkpointfs store check: a canary object, deleted after the check\n"

_lock = threading.Lock()
_locks: dict[str, threading.Lock] = {}
_passed: set[str] = set()
_refused: dict[str, str] = {}


def forget_verdicts() -> None:
    """Forget every verdict of this process (for tests)."""
    with _lock:
        _passed.clear()
        _refused.clear()


def store_identity(store: ObjectStore) -> str:
    """The endpoint a store sends its requests to, as messages name it (a wrapper's: its inner store's)."""
    inner = getattr(store, "inner", None)
    if isinstance(inner, ObjectStore):
        return store_identity(inner)
    boto = getattr(store, "boto", None)
    endpoint = getattr(getattr(boto, "meta", None), "endpoint_url", None) or getattr(store, "endpoint_url", None)
    return str(endpoint) if endpoint else f"{type(store).__name__} {id(store):#x}"


def keeps(meta: ObjectMeta | None) -> str:
    """What a store keeps to settle a lost answer by, from what a head of the store check's canary showed
    (``meta``; None: nothing read), as the start line says it: the twin of the shim's ``StoreCheck.keeps``."""
    if meta is not None and meta.write_id:
        return "keeps user metadata: a lost answer is settled by the write id"
    if meta is not None and meta.checksum:
        return "keeps no user metadata, only checksums: a lost answer is settled by checksum and size"
    return ("keeps neither user metadata nor checksums: a lost answer cannot be settled as this write's, and fails "
            "the write as of unknown outcome")


def missing_head_verdict(answer_class: protocol.AnswerClass) -> str:
    """What the store check makes of the failed head of its canary's key before creating it (S3), by the answer's
    class: ``absent`` (404, as it must), ``refused`` (403: without s3:ListBucket S3 answers a missing key so, which a
    writer cannot tell from a refused read: fail at start, :func:`missing_refused`) or ``no-verdict`` (anything else,
    as any request of the check). The shim's twin: ``StoreCheck.missingHeadVerdict``; golden cases in
    tests/protocol/golden_permissions.json (``missing_head``)."""
    if answer_class.error == PathNotFoundError.__name__:
        return "absent"
    if answer_class.error == AccessDeniedError.__name__:
        return "refused"
    return "no-verdict"


def missing_refused(error: AccessDeniedError, canary: str) -> AccessDeniedError:
    """The store check's error when the store refused the head of its missing canary key (the shim's
    ``StoreCheck.missingRefused`` words it alike)."""
    refused = AccessDeniedError(canary, f"the store check's head of its canary key, before creating it, was refused "
                                        f"({error.cause}): S3 answers a missing key 403 without s3:ListBucket, which "
                                        "cannot be told from a refused read, so a probe or the read-back of a lost "
                                        "answer would fail mid-query; the query stops before writing",
                                code=error.code, status=error.status)
    refused.answer, refused.answer_class = error.answer, error.answer_class
    return refused


def _canary(beside: ObjectPath) -> ObjectPath:
    """A new canary in the directory of the file ``beside``."""
    parent = beside.key.rsplit("/", 1)[0] + "/" if "/" in beside.key else ""
    return beside.at(parent + CANARY_PREFIX + uuid.uuid4().hex)


def delete_refused(error: AccessDeniedError, canary: str) -> AccessDeniedError:
    """The store check's error when the store refused to delete its canary (the shim's ``StoreCheck.deleteRefused``
    words it alike): a writer needs deletes, since Spark purges old log batches and state files, which would
    otherwise fail mid-query."""
    refused = AccessDeniedError(canary, f"the store check could not delete its canary ({error.cause}): Spark "
                                        "deletes old checkpoint files (log batches past minBatchesToRetain, old state "
                                        "files), which would fail mid-query, so the query stops before writing",
                                code=error.code, status=error.status)
    refused.answer, refused.answer_class = error.answer, error.answer_class
    return refused


class CheckedStore(ObjectStore):
    """``inner`` with the store check in front of its put-if-absent writes (see the module)."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.requests = inner.requests
        self.capabilities = inner.capabilities

    # -- the check ---------------------------------------------------------------------------------------------
    def ensure(self, where: ObjectPath, *, multipart: bool) -> None:
        """Check the store (once per process, endpoint and bucket) before a put-if-absent of ``where``."""
        request = "CompleteMultipartUpload" if multipart else "PutObject"
        endpoint = store_identity(self.inner)
        ident = f"{request}|{endpoint}|{where.bucket}"
        if ident in _passed:
            return
        with _lock:
            guard = _locks.setdefault(ident, threading.Lock())
        with guard:
            if ident in _passed:
                return
            if ident in _refused:
                raise UnsafeStoreError(where.uri, _refused[ident])
            canary = _canary(where)
            record("storeChecks")
            sent_before = self.requests.total
            read_back = not multipart and self.capabilities.family == "s3"
            try:
                if multipart:
                    answer, kept = self._check_multipart(canary), None
                else:
                    answer, kept = self._check_put(canary, read_back=read_back)
            except UnsafeStoreError:
                raise
            except CheckpointFsError as e:  # no verdict: said of the file the caller is writing
                record("storeCheckUnavailable")
                error = said_of(e, where.uri, f"the store check ({request}, canary {canary.key}) could not finish: "
                                              f"{e.cause}")
                error.maybe_applied = False  # what may have been applied is the canary's: the file was not sent
                raise error from e
            shown = f"bucket {where.bucket!r} at {endpoint}"
            if answer is None:
                record("storeCheckSafe")
                with _lock:
                    _passed.add(ident)
                log.info("%s: %s refuses a second put-if-absent %s of the same key; trusted (%d requests)%s",
                         where.uri, shown, request, self.requests.total - sent_before,
                         "; it " + keeps(kept) if read_back else "")
                return
            condition = "ifGenerationMatch=0" if self.capabilities.family == "gcs" else "If-None-Match: *"
            message = (f"the store ({shown}) accepted a second put-if-absent {request} ({condition}) of the "
                       f"same key ({answer}): it ignores conditional writes, so two writers of one checkpoint would "
                       "both succeed and one would silently replace the other's files. Nothing was written. Run "
                       f"`checkpointfs doctor {where.base or 's3://' + where.bucket}/<checkpoint>` with this endpoint "
                       "for details; use "
                       "a store that supports conditional writes, or pass store_check=False only if no two writers "
                       "can ever share a checkpoint")
            record("storeCheckUnsafe")
            with _lock:
                _refused[ident] = message
            raise UnsafeStoreError(where.uri, message)

    def _check_put(self, canary: ObjectPath, *, read_back: bool) -> tuple[str | None, ObjectMeta | None]:
        """The PutObject check: the store's answer to the second create (None: refused, as it must be) and, when
        ``read_back`` (S3), what a head of the canary showed (a failed read gives no verdict, as the check's other
        requests)."""
        if read_back:
            self._head_missing(canary)
        self._create(canary)
        try:
            kept = self.inner.head(canary) if read_back else None
            second = uuid.uuid4().hex
            try:
                self.inner.put(canary, _CANARY, mode=PutMode.CREATE, write_id=second)
            except CheckpointFsError as e:
                return self._refused_or_replaced(canary, second, e), kept
            return "the second PutObject succeeded", kept
        finally:
            self._delete(canary)

    def _check_multipart(self, canary: ObjectPath) -> str | None:
        self._create(canary)
        try:
            second = uuid.uuid4().hex
            upload = self.inner.create_multipart(canary, mode=PutMode.CREATE, write_id=second)
            completed = False
            try:
                # a store that takes the last part with the completion (GCS) gets the canary's bytes there
                tail = self.inner.capabilities.tail_in_completion
                parts = [] if tail else [self.inner.upload_part(canary, upload.upload_id, 1, _CANARY)]
                try:
                    self.inner.complete_multipart(canary, upload.upload_id, parts, mode=PutMode.CREATE,
                                                  tail=_CANARY if tail else b"")
                except CheckpointFsError as e:
                    return self._refused_or_replaced(canary, second, e)
                completed = True
                return "CompleteMultipartUpload succeeded over the existing object"
            finally:
                self._abort_uploads(canary, None if completed else upload.upload_id)
        finally:
            self._delete(canary)

    def _abort_uploads(self, canary: ObjectPath, own: str | None) -> None:
        """Abort the check's upload (``own``, unless it completed) and any other of the canary's key that a lost
        answer to its CreateMultipartUpload left open (the key is the check's alone). Best effort: such uploads are
        invisible; only their storage is at stake."""
        try:
            if own is not None:
                self.inner.abort_multipart(canary, own)
            for upload in self.inner.list_uploads(canary):
                if upload.key == canary.key:
                    self.inner.abort_multipart(canary, upload.upload_id)
                    record("orphanUploadsCleaned")
                    context = events.file_context(canary.uri)
                    log.warning("orphan upload cleaned: aborted multipart upload %s of the store check's canary, left "
                                "open by an attempt whose answer was lost %s", upload.upload_id, context,
                                extra=context.extra())
        except CheckpointFsError as e:
            if e.answer_class is not None and e.answer_class.name == "upload-gone":
                return  # the refusal ended it (GCS's resumable session): nothing left to abort
            if isinstance(e, AccessDeniedError):  # works, at a cost: the orphan-upload clean-up cannot run either
                log.warning("store check: %s; without it an upload left open by a lost answer is never cleaned up "
                            "and keeps its parts until a lifecycle rule expires it (docs/operations.md)", e.cause)
                return
            log.warning("store check: could not abort the multipart uploads of %s (%s); they are invisible but keep "
                        "their parts until aborted or expired by a lifecycle rule", canary.uri, e.cause)

    def _refused_or_replaced(self, canary: ObjectPath, second: str, error: CheckpointFsError) -> str | None:
        """None when ``error`` is the store's refusal; the answer when the canary shows the second write; else
        ``error`` again, as no verdict."""
        final = error.answer_class
        if final is not None and final.name == "conflict":
            return None
        try:
            now = self.inner.head(canary).write_id
        except CheckpointFsError:
            now = None
        if now == second:
            return f"the second write landed although the store answered: {error.cause}"
        raise StoreError(canary.uri, f"store check: the second put-if-absent failed ({error.cause}), neither a "
                                     "refusal nor a success, so the store could not be checked") from error

    def _head_missing(self, canary: ObjectPath) -> None:
        """Head the canary's key, which does not exist yet: a 404 goes on; a refusal fails the check at start
        (:func:`missing_refused`); anything else is no verdict."""
        try:
            self.inner.head(canary)
        except CheckpointFsError as e:
            verdict = missing_head_verdict(e.answer_class) if e.answer_class is not None else (
                "absent" if isinstance(e, PathNotFoundError) else "no-verdict")
            if verdict == "absent":
                return
            if verdict == "refused" and isinstance(e, AccessDeniedError):
                raise missing_refused(e, canary.uri) from e
            raise

    def _create(self, canary: ObjectPath) -> None:
        """Create the canary, settled like any create (protocol.settle) when its answer is a failure."""
        first = uuid.uuid4().hex
        try:
            self.inner.put(canary, _CANARY, mode=PutMode.CREATE, write_id=first)
            return
        except CheckpointFsError as e:
            settled = settle_failed_create(e, self.inner, canary, first, overwrite=False,
                                           sent=Sent(self.inner.checksum(_CANARY), len(_CANARY)))  # logs a settled one
            if settled is None or settled.outcome != "success":
                raise

    def _delete(self, canary: ObjectPath) -> None:
        """Delete the canary. A refusal fails the check, at start (:func:`delete_refused`); any other failure leaves
        the canary behind with a warning."""
        try:
            self.inner.delete(canary)
        except AccessDeniedError as e:
            raise delete_refused(e, canary.uri) from e
        except CheckpointFsError as e:
            log.warning("store check: could not delete its canary object %s (%s); harmless: checkpoint readers "
                        "skip it", canary.uri, e.cause)

    # -- the store ---------------------------------------------------------------------------------------------
    def put(self, where: ObjectPath, data: bytes, *, mode: PutMode, write_id: str) -> None:
        if mode is PutMode.CREATE:
            self.ensure(where, multipart=False)
        self.inner.put(where, data, mode=mode, write_id=write_id)

    def complete_multipart(self, where: ObjectPath, upload_id: str, parts: Sequence[Part], *, mode: PutMode,
                           tail: bytes = b"") -> None:
        if mode is PutMode.CREATE:
            self.ensure(where, multipart=True)
        self.inner.complete_multipart(where, upload_id, parts, mode=mode, tail=tail)

    def create_multipart(self, where: ObjectPath, *, mode: PutMode, write_id: str) -> MultipartUpload:
        return self.inner.create_multipart(where, mode=mode, write_id=write_id)

    def upload_part(self, where: ObjectPath, upload_id: str, number: int, data: bytes | bytearray, *,
                    abandon: threading.Event | None = None) -> Part:
        return self.inner.upload_part(where, upload_id, number, data, abandon=abandon)

    def abort_multipart(self, where: ObjectPath, upload_id: str) -> None:
        self.inner.abort_multipart(where, upload_id)

    def list_uploads(self, where: ObjectPath) -> list[OpenUpload]:
        return self.inner.list_uploads(where)

    def get(self, where: ObjectPath, *, start: int = 0, expected_etag: str | None = None) -> GetResult:
        return self.inner.get(where, start=start, expected_etag=expected_etag)

    def head(self, where: ObjectPath) -> ObjectMeta:
        return self.inner.head(where)

    def checksum(self, data: bytes) -> str:
        return self.inner.checksum(data)

    def head_bucket(self, where: ObjectPath) -> None:
        self.inner.head_bucket(where)

    def list_pages(self, where: ObjectPath, *, delimiter: str | None = None, page_size: int = 1000
                   ) -> Iterator[ListResult]:
        return self.inner.list_pages(where, delimiter=delimiter, page_size=page_size)

    def delete(self, where: ObjectPath) -> None:
        self.inner.delete(where)

    def delete_many(self, where: ObjectPath, keys: Sequence[str]) -> None:
        self.inner.delete_many(where, keys)

    def close(self) -> None:
        self.inner.close()
