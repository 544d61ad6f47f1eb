"""The output stream of DirectWriteManager: one PutObject for a small file, a multipart upload for a large one
(its parts sent concurrently, a bounded number at a time), put-if-absent commits whose ambiguous outcomes are settled
by the write id stamped on the object."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Literal, cast

from botocore.exceptions import BotoCoreError, ClientError

from ..contract import CancellableOutputStream
from ..errors import AbortFailedError, CheckpointFsError, FileAlreadyExistsError, StoreError, WriteOutcomeUnknownError
from .client import Abandoned, S3Client, error_code, is_precondition_failed, may_have_been_applied
from .recent import RecentChanges

log = logging.getLogger(__name__)
_CLOCK_SLACK_S = 2.0
AbortStrategy = Literal["abort", "close-then-delete"]


class DirectWriteStream(CancellableOutputStream):
    """Buffers up to ``part_size``; beyond it, streams multipart parts. ``close`` publishes whole (PutObject or
    CompleteMultipartUpload, with ``If-None-Match: *`` unless overwriting); ``cancel`` publishes nothing.

    Parts go up concurrently, at most ``max_inflight_parts`` at a time, from a thread pool of the stream's own,
    started with the first part (a small file, one PutObject, starts none) and shut down at close or cancel. Per
    stream rather than shared by the manager: the memory bound and the cancel are per stream, and one stream's parts
    never queue behind another's (a state store may write several large files at once). ``write`` blocks while that
    many parts are in flight, so the stream holds at most ``(max_inflight_parts + 1) * part_size`` bytes
    (:attr:`buffered_bytes`). Parts finish in any order; the completion lists them by part number. A part that
    fails beyond its retries fails the write: ``write`` or ``close`` raises its error and the upload is aborted.

    ``wall_clock`` (seconds since the epoch) dates the window of a CreateMultipartUpload whose answer was lost, to
    be compared with the store's ``Initiated`` times of open uploads."""

    def __init__(
        self, client: S3Client, recent: RecentChanges, path: str, bucket: str, key: str, *, overwrite: bool,
        write_id: str, part_size: int, max_inflight_parts: int = 8, abort_strategy: AbortStrategy = "abort",
        wall_clock: Callable[[], float] = time.time,
        on_published: Callable[[bytes | None], None] | None = None,
    ) -> None:
        super().__init__(path)
        self._client = client
        self._recent = recent
        self._bucket = bucket
        self._key = key
        self._overwrite = overwrite
        self.write_id = write_id
        self._part_size = part_size
        self._max_inflight = max_inflight_parts
        self._abort_strategy = abort_strategy
        self._wall_clock = wall_clock
        self._buffer = bytearray()
        self._upload_id: str | None = None
        self._orphan_window: tuple[float, float] | None = None
        self._next_part = 1
        self._etags: dict[int, str] = {}  # part number -> ETag, of the parts the store has
        self._inflight: dict[Future[None], int] = {}  # part -> its size
        self._inflight_bytes = 0
        self._pool: ThreadPoolExecutor | None = None
        self._abandon = threading.Event()  # set: parts in flight send no further attempt
        self._failure: BaseException | None = None  # the first part that failed beyond its retries
        self._on_published = on_published
        """Called once the file is visible, with its bytes when it was one PutObject (None for a multipart one)."""

    @property
    def buffered_bytes(self) -> int:
        """Bytes of the file this stream holds now: the buffer and the parts in flight."""
        return len(self._buffer) + self._inflight_bytes

    # -- writing -----------------------------------------------------------------------------------------------
    def _write(self, data: memoryview) -> None:
        size, offset = self._part_size, 0
        while offset < len(data):
            if len(self._buffer) == size:  # a full buffer with more to come is a part (a file of part_size is a PUT)
                self._send_buffer()
            take = min(size - len(self._buffer), len(data) - offset)
            self._buffer += data[offset:offset + take]
            offset += take

    def _send_buffer(self) -> None:
        """Send the buffer as the next part, once a slot is free."""
        self._wait_for_parts(self._max_inflight - 1)
        if self._upload_id is None:
            self._upload_id = self._create_upload()
            self._pool = ThreadPoolExecutor(self._max_inflight, thread_name_prefix="checkpointfs-part")
        assert self._pool is not None
        self._inflight_bytes += len(self._buffer)  # first, so that buffered_bytes never undercounts
        data, self._buffer = self._buffer, bytearray()  # handed over, not copied: never written to again
        number, self._next_part = self._next_part, self._next_part + 1
        # The task holds no reference to the stream: a stream dropped while parts are in flight is collected, and
        # so cancelled, in the writer's thread, never in a thread of its own pool.
        task = functools.partial(_upload_part, self._client, self._abandon, self._etags, self.path,
                                 Bucket=self._bucket, Key=self._key, UploadId=self._upload_id, PartNumber=number,
                                 Body=data)
        self._inflight[self._pool.submit(task)] = len(data)

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
        """CreateMultipartUpload with retries. An attempt whose answer was lost may have created an upload we will
        never know the id of: the window of such attempts is kept, and :meth:`_abort_orphans` cleans up after."""
        started = self._wall_clock()
        ambiguous = False
        try:
            for attempt in self._client.retry.retrying(what=f"create_multipart_upload {self.path}"):
                with attempt:
                    try:
                        answer = self._client.send("create_multipart_upload", Bucket=self._bucket, Key=self._key,
                                                   **self._client.write_args(self.write_id))
                    except (ClientError, BotoCoreError) as e:
                        ambiguous = ambiguous or may_have_been_applied(e)
                        raise
        except (ClientError, BotoCoreError) as e:
            raise self._client.translate(e, self.path, "create_multipart_upload") from e
        if ambiguous:
            self._orphan_window = (started, self._wall_clock())
        return cast(str, answer["UploadId"])

    def _abort_orphans(self) -> None:
        """Abort uploads of this key that a lost CreateMultipartUpload answer left behind: those started within
        the window of our ambiguous attempts, other than our own. (A concurrent writer of the same key whose upload
        started in that same window would see its upload aborted and its commit fail: never silent.)"""
        if self._orphan_window is None:
            return
        start, end = self._orphan_window
        self._orphan_window = None
        try:
            answer = self._client.call(self.path, "list_multipart_uploads", Bucket=self._bucket, Prefix=self._key)
        except CheckpointFsError as e:
            log.error("%s: cannot look for orphaned multipart uploads: %s", self.path, e.cause)
            return
        for upload in answer.get("Uploads", []):
            initiated = upload["Initiated"].timestamp()
            if (upload["Key"] == self._key and upload["UploadId"] != self._upload_id
                    and start - _CLOCK_SLACK_S <= initiated <= end + _CLOCK_SLACK_S):
                log.info("%s: aborting multipart upload %s orphaned by a lost answer", self.path, upload["UploadId"])
                self._abort(upload["UploadId"])

    # -- publishing --------------------------------------------------------------------------------------------
    def _publish(self) -> None:
        if self._upload_id is None:
            body = bytes(self._buffer)
            self._buffer = bytearray()
            args: dict[str, Any] = {"Bucket": self._bucket, "Key": self._key, "Body": body,
                                    **self._client.write_args(self.write_id)}
            if not self._overwrite:
                args["IfNoneMatch"] = "*"
            self._commit(lambda: self._client.send("put_object", **args), "put_object")
            self._recent.wrote(self._bucket, self._key, self.write_id)
            if self._on_published is not None:
                self._on_published(body)
            return
        try:
            if self._buffer:
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
        self._recent.wrote(self._bucket, self._key, self.write_id)
        if self._on_published is not None:
            self._on_published(None)

    def _complete(self) -> None:
        parts = [{"PartNumber": number, "ETag": self._etags[number]} for number in sorted(self._etags)]
        args: dict[str, Any] = {"Bucket": self._bucket, "Key": self._key, "UploadId": self._upload_id,
                                "MultipartUpload": {"Parts": parts}}
        if not self._overwrite:
            args["IfNoneMatch"] = "*"
        self._client.send("complete_multipart_upload", **args)

    def _commit(self, send: Callable[[], Any], operation: str) -> None:
        """Send the committing request with retries, never blindly. A 412 fails the create with
        FileAlreadyExistsError: the store's answer at the write's linearization point, even when the key then
        reads as absent (a concurrent writer's file, deleted since, must not be resurrected by a re-send). Only
        once an attempt may have been applied is that 412 (or a vanished upload) first settled by reading the
        object's write id: ours means an earlier attempt landed."""
        maybe_applied = False
        try:
            for attempt in self._client.retry.retrying(what=f"{operation} {self.path}"):
                with attempt:
                    try:
                        send()
                        return
                    except (ClientError, BotoCoreError) as e:
                        conflict = not self._overwrite and is_precondition_failed(e)
                        vanished = error_code(e) == "NoSuchUpload"
                        if conflict or vanished:
                            if maybe_applied and self._settle():
                                return
                            if conflict:
                                raise FileAlreadyExistsError(
                                    self.path, "file already exists and overwrite was not allowed") from None
                            if maybe_applied:
                                raise WriteOutcomeUnknownError(
                                    self.path, f"{operation}: the upload is gone and the object does not show this "
                                               "write's id: the write may or may not become visible") from e
                            raise
                        maybe_applied = maybe_applied or may_have_been_applied(e)
                        raise
        except (ClientError, BotoCoreError) as e:
            if maybe_applied and self._settle():
                return
            if maybe_applied:
                raise WriteOutcomeUnknownError(
                    self.path, f"{operation} failed after retries ({type(e).__name__}) and the object does not "
                               "show this write's id: the write may or may not become visible") from e
            raise self._client.translate(e, self.path, operation) from e

    def _settle(self) -> bool:
        """After an ambiguous attempt: True if the object carries our write id (an earlier attempt landed),
        FileAlreadyExistsError if a put-if-absent finds another writer's object, False otherwise."""
        try:
            owner = self._read_owner()
        except CheckpointFsError as e:
            raise WriteOutcomeUnknownError(
                self.path, f"cannot read back the object to settle an ambiguous write: {e.cause}") from e
        if owner == self.write_id:
            log.info("%s: an earlier attempt of this write landed; the commit succeeded", self.path)
            return True
        if owner is not None and not self._overwrite:
            raise FileAlreadyExistsError(self.path, "another writer created the file first")
        return False

    def _read_owner(self) -> str | None:
        """The write id on the object (None if absent). The store has just answered about the key, so on a lagging
        store a 404 is waited out within the consistency window."""
        owner = self._client.head_write_id(self.path, self._bucket, self._key)
        if owner is None and self._recent.enabled:
            owner = self._recent.wait_until(
                self._recent.now(), lambda: self._client.head_write_id(self.path, self._bucket, self._key))
        return owner

    # -- cancelling --------------------------------------------------------------------------------------------
    def _discard(self) -> None:
        self._buffer = bytearray()
        if self._upload_id is None:
            return  # nothing was sent: dropping the buffer is the whole abort
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
        if upload_id is not None:
            self._abort(upload_id)

    def _abort(self, upload_id: str) -> None:
        try:
            self._client.call(self.path, "abort_multipart_upload", Bucket=self._bucket, Key=self._key,
                              UploadId=upload_id)
        except CheckpointFsError as e:
            if isinstance(e, StoreError) and e.code == "NoSuchUpload":
                return  # already gone
            # An upload that is not completed is never visible: correctness holds, only storage is leaked.
            log.error("%s: could not abort multipart upload %s (%s); it is invisible but keeps its parts until "
                      "aborted or expired by a lifecycle rule", self.path, upload_id, e.cause)

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
            self._client.call(self.path, "delete_object", policy=self._client.delete_retry, Bucket=self._bucket,
                              Key=self._key)
            self._recent.deleted(self._bucket, self._key)
        except CheckpointFsError as e:
            raise AbortFailedError(
                self.path, f"cancel closed the stream but could not delete the partial object: {e.cause}; "
                           "partial data is visible") from e


def _upload_part(client: S3Client, abandon: threading.Event, etags: dict[int, str], path: str,
                 **request: Any) -> None:
    """UploadPart with retries (none once ``abandon`` is set); records the part's ETag in ``etags``."""
    answer = client.call(path, "upload_part", abandon=abandon, **request)
    etags[request["PartNumber"]] = answer["ETag"]
