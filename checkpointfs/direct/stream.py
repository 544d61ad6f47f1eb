"""The output stream of DirectWriteManager: one put for a small file, a multipart upload for a large one (its parts
sent concurrently, a bounded number at a time), create-if-absent commits whose failures are settled by the protocol
(:func:`checkpointfs.protocol.settle`), reading back the write id stamped on the object when an attempt may have
been applied."""

from __future__ import annotations

import contextvars
import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from .. import events, protocol
from ..contract import CancellableOutputStream
from ..errors import (
    AbortFailedError,
    CheckpointFsError,
    FileAlreadyExistsError,
    WriteOutcomeUnknownError,
)
from ..metrics import OperationCall, record
from ..store.base import Abandoned, ObjectPath, ObjectStore, Part, PutMode
from ..store.settle import Sent, settle_failed_create
from .options import AbortStrategy

log = logging.getLogger(__name__)

__all__ = ["AbortStrategy", "DirectWriteStream", "is_orphan"]


class DirectWriteStream(CancellableOutputStream):
    """Buffers up to ``part_size``; beyond it, streams multipart parts. ``close`` publishes whole (a put, or the
    upload's completion, create-if-absent unless overwriting); ``cancel`` publishes nothing.

    Parts go up concurrently, at most ``max_inflight_parts`` at a time, from a thread pool of the stream's own,
    started with the first part (a small file, one put, starts none) and shut down at close or cancel. Per stream
    rather than shared by the manager: the memory bound and the cancel are per stream, and one stream's parts never
    queue behind another's (a state store may write several large files at once). ``write`` blocks while that many
    parts are in flight, so the stream holds at most ``(max_inflight_parts + 1) * part_size`` bytes
    (:attr:`buffered_bytes`). Parts finish in any order; the completion lists them by part number. A part that fails
    beyond its retries fails the write: ``write`` or ``close`` raises its error and the upload is aborted.

    ``wall_clock`` (seconds since the epoch) dates the first attempt to create the upload: when an attempt's answer
    was lost, open uploads of the key the store dates from then (less the protocol's ``ORPHAN_CLOCK_SLACK_S``) to
    the stream's end (plus the slack), other than the stream's own, are aborted once the stream ends."""

    def __init__(
        self, store: ObjectStore, where: ObjectPath, *, overwrite: bool, write_id: str,
        part_size: int = protocol.PART_SIZE_BYTES, max_inflight_parts: int = protocol.PARTS_IN_FLIGHT,
        abort_strategy: AbortStrategy = "abort", wall_clock: Callable[[], float] = time.time,
        on_published: Callable[[bytes | None], None] | None = None, call: OperationCall | None = None,
    ) -> None:
        super().__init__(where.uri, call)
        self._store = store
        self._where = where
        self._overwrite = overwrite
        self._mode = PutMode.OVERWRITE if overwrite else PutMode.CREATE
        self.write_id = write_id
        self._part_size = part_size
        self._capabilities = store.capabilities
        # chunks of a store that takes them in order (GCS's resumable upload) go one at a time
        self._max_inflight = max_inflight_parts if self._capabilities.parallel_parts else 1
        self._abort_strategy = abort_strategy
        self._wall_clock = wall_clock
        self._buffer = bytearray()
        self._upload_id: str | None = None
        self._own_upload: str | None = None
        self._orphans_since: float | None = None  # set: a lost create answer may have left an upload open
        self._next_part = 1
        self._etags: dict[int, str] = {}  # part number -> ETag, of the parts the store has
        self._inflight: dict[Future[None], int] = {}  # part -> its size
        self._inflight_bytes = 0
        self._pool: ThreadPoolExecutor | None = None
        self._abandon = threading.Event()  # set: parts in flight send no further attempt
        self._failure: BaseException | None = None  # the first part that failed beyond its retries
        self._on_published = on_published
        """Called once the file is visible, with its bytes when it was one put (None for a multipart one)."""

    @property
    def buffered_bytes(self) -> int:
        """Bytes of the file this stream holds now: the buffer and the parts in flight."""
        return len(self._buffer) + self._inflight_bytes

    # -- writing -----------------------------------------------------------------------------------------------
    def _write(self, data: memoryview) -> None:
        size, offset = self._part_size, 0
        while offset < len(data):
            if len(self._buffer) == size:  # a full buffer with more to come is a part (a file of part_size is a put)
                self._send_buffer()
            take = min(size - len(self._buffer), len(data) - offset)
            self._buffer += data[offset:offset + take]
            offset += take

    def _send_buffer(self) -> None:
        """Send the buffer as the next part, once a slot is free."""
        self._wait_for_parts(self._max_inflight - 1)
        if self._upload_id is None:
            self._upload_id = self._own_upload = self._create_upload()
            self._pool = ThreadPoolExecutor(self._max_inflight, thread_name_prefix="checkpointfs-part")
        assert self._pool is not None
        self._inflight_bytes += len(self._buffer)  # first, so that buffered_bytes never undercounts
        data, self._buffer = self._buffer, bytearray()  # handed over, not copied: never written to again
        number, self._next_part = self._next_part, self._next_part + 1
        # The task holds no reference to the stream: a stream dropped while parts are in flight is collected, and
        # so cancelled, in the writer's thread, never in a thread of its own pool.
        task = functools.partial(_upload_part, self._store, self._where, self._upload_id, number, data,
                                 self._abandon, self._etags)
        # run in a copy of the writer's context: the part's requests are those of the create in progress
        self._inflight[self._pool.submit(contextvars.copy_context().run, task)] = len(data)

    def _wait_for_parts(self, at_most: int) -> None:
        """Wait until no more than ``at_most`` parts are in flight; raise the error of a part that failed."""
        while len(self._inflight) > at_most and self._failure is None:
            done, _ = wait(self._inflight, return_when=FIRST_COMPLETED)
            for future in done:
                self._inflight_bytes -= self._inflight.pop(future)
                error = future.exception()
                if error is not None and not isinstance(error, Abandoned) and self._failure is None:
                    self._failure = error
                    self._abandon.set()  # the upload is lost: the other parts need not go on
        if self._failure is not None:
            raise self._failure

    def _stop_parts(self, abandon: bool = True) -> None:
        """Wait for the parts in flight (``abandon``: letting none send another attempt) and release the pool's
        threads."""
        if abandon:
            self._abandon.set()
        if self._inflight:
            wait(self._inflight)
            self._inflight.clear()
            self._inflight_bytes = 0
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _create_upload(self) -> str:
        """Create the multipart upload. An attempt whose answer was lost may have created an upload we will never
        know the id of: then :meth:`_abort_orphans` cleans up once the stream ends."""
        started = self._wall_clock()
        upload = self._store.create_multipart(self._where, mode=self._mode, write_id=self.write_id)
        if upload.lost_attempts:
            self._orphans_since = started
        return upload.upload_id

    def _abort_orphans(self) -> None:
        """Abort uploads of this key that a lost create answer left behind: those the store dates from the first
        create attempt to now (each widened by the protocol's clock slack), other than our own. (A concurrent writer
        of the same key whose upload started in that window would see its upload aborted and its commit fail: never
        silent.)"""
        if self._orphans_since is None:
            return
        start, end = self._orphans_since, self._wall_clock()
        self._orphans_since = None
        slack = protocol.ORPHAN_CLOCK_SLACK_S
        try:
            uploads = self._store.list_uploads(self._where)
        except CheckpointFsError as e:
            log.error("%s: cannot look for orphaned multipart uploads: %s", self.path, e.cause)
            return
        for upload in uploads:
            if (upload.key == self._where.key and upload.upload_id != self._own_upload
                    and is_orphan(upload.initiated.timestamp(), since=start, until=end, slack=slack)
                    and self._abort(upload.upload_id)):
                record("orphanUploadsCleaned")
                context = events.file_context(self.path, self.write_id)
                log.warning("orphan upload cleaned: aborted multipart upload %s of the file, left open by an attempt "
                            "whose answer was lost %s", upload.upload_id, context, extra=context.extra())

    # -- publishing --------------------------------------------------------------------------------------------
    def _publish(self) -> None:
        if self._upload_id is None:
            body = bytes(self._buffer)
            self._buffer = bytearray()
            self._commit(lambda: self._store.put(self._where, body, mode=self._mode, write_id=self.write_id),
                         "put_object", Sent(self._store.checksum(body), len(body)))
            if self._on_published is not None:
                self._on_published(body)
            return
        try:
            if self._buffer and not self._capabilities.tail_in_completion:
                self._send_buffer()
            self._wait_for_parts(0)
            self._commit(self._complete, "complete_multipart_upload")
        except BaseException:
            self._stop_parts()
            self._abort_upload()
            raise
        finally:
            self._stop_parts()
            self._abort_orphans()
        self._upload_id = None
        if self._on_published is not None:
            self._on_published(None)

    def _complete(self) -> None:
        """Complete the upload; where the store takes the last part with the completion, the buffer is that tail."""
        assert self._upload_id is not None
        parts = [Part(number, self._etags[number]) for number in sorted(self._etags)]
        tail = bytes(self._buffer) if self._capabilities.tail_in_completion else b""
        self._store.complete_multipart(self._where, self._upload_id, parts, mode=self._mode, tail=tail)

    def _commit(self, send: Callable[[], None], operation: str, sent: Sent | None = None) -> None:
        """Send the committing request (the store retries what the protocol retries), never blindly: a failure is
        settled by :func:`checkpointfs.protocol.settle`. A conflict fails the create with FileAlreadyExistsError: the
        store's answer at the write's linearization point, even when the key then reads as absent (a concurrent
        writer's file, deleted since, must not be resurrected by a re-send). Once an attempt may have been applied,
        the object is read back first: its write id, or where the store keeps none its checksum and size against
        ``sent``, ours means an earlier attempt landed."""
        try:
            send()
            return
        except CheckpointFsError as e:
            settled = settle_failed_create(e, self._store, self._where, self.write_id, overwrite=self._overwrite,
                                           sent=sent)
            if settled is None:
                raise
            outcome, owner, unreadable = settled.outcome, settled.owner, settled.unreadable
            if outcome == "success":  # logged and counted by settle_failed_create, as a settled ambiguity
                return
            if outcome == "conflict":
                why = ("another writer created the file first" if owner == "other"
                       else "file already exists and overwrite was not allowed")
                raise FileAlreadyExistsError(self.path, why) from None
            if outcome == "unknown":
                why = (f"cannot read back the object to settle an ambiguous write: {unreadable}" if unreadable
                       else f"{operation} failed ({e.cause}) and the object does not show this write's id")
                raise WriteOutcomeUnknownError(
                    self.path, f"{why}: the write may or may not become visible") from e
            raise

    # -- cancelling --------------------------------------------------------------------------------------------
    def _discard(self) -> None:
        if self._upload_id is None:
            self._buffer = bytearray()
            return  # nothing was sent: dropping the buffer is the whole abort
        if not self._capabilities.tail_in_completion or self._abort_strategy == "abort":
            self._buffer = bytearray()  # (close-then-delete completes with the tail: kept for it)
        # No part may land after the abort. Close-then-delete completes the upload, so its parts are waited for.
        self._stop_parts(abandon=self._abort_strategy == "abort")
        try:
            if self._abort_strategy == "abort":
                self._abort_upload()
            else:
                self._close_then_delete()
        finally:
            self._abort_orphans()

    def _abort_upload(self) -> None:
        upload_id, self._upload_id = self._upload_id, None
        if upload_id is not None and self._abort(upload_id):
            record("abortedUploads")

    def _abort(self, upload_id: str) -> bool:
        """Abort the upload; whether this abort dropped it (False: it was gone already, or the abort failed)."""
        try:
            self._store.abort_multipart(self._where, upload_id)
            return True
        except CheckpointFsError as e:
            if e.answer_class is not None and e.answer_class.name == "upload-gone":
                return False  # already gone
            # An upload that is not completed is never visible: correctness holds, only storage is leaked.
            log.error("%s: could not abort multipart upload %s (%s); it is invisible but keeps its parts until "
                      "aborted or expired by a lifecycle rule", self.path, upload_id, e.cause)
            return False

    def _close_then_delete(self) -> None:
        """For stores that cannot abort an upload: complete it, then delete the object, retrying the delete;
        AbortFailedError if the partial object may stay visible."""
        try:
            self._commit(self._complete, "complete_multipart_upload")
        except FileAlreadyExistsError:
            self._abort_upload()  # another writer's file stands; ours never became visible
            return
        except WriteOutcomeUnknownError as e:
            self._abort_upload()
            raise AbortFailedError(self.path, f"cancel could not tell whether partial data became visible: {e.cause}"
                                   ) from e
        except CheckpointFsError:
            self._abort_upload()
            return
        try:
            self._store.delete(self._where)
        except CheckpointFsError as e:
            raise AbortFailedError(
                self.path, f"cancel closed the stream but could not delete the partial object: {e.cause}; "
                           "partial data is visible") from e


def _upload_part(store: ObjectStore, where: ObjectPath, upload_id: str, number: int, data: bytearray,
                 abandon: threading.Event, etags: dict[int, str]) -> None:
    """Upload one part (no further attempt once ``abandon`` is set); records its ETag in ``etags``."""
    etags[number] = store.upload_part(where, upload_id, number, data, abandon=abandon).etag


def is_orphan(initiated: float | None, *, since: float, until: float,
              slack: float = protocol.ORPHAN_CLOCK_SLACK_S) -> bool:
    """Whether an open upload of the stream's key, other than its own, initiated at ``initiated`` (seconds since the
    epoch, the store's clock; None: the store did not say) is one that a lost create answer of this stream left: it
    started from the stream's first create attempt (``since``) to the end of the stream (``until``), each bound
    widened by ``slack`` for the difference between this host's clock and the store's (protocol.json
    ``orphan_uploads``; tests/protocol/golden_orphans.json, which the shim follows too). An upload of unknown age is
    never taken for an orphan: it may be another writer's."""
    return initiated is not None and since - slack <= initiated <= until + slack
