"""The output stream of DirectWriteManager: one PutObject for a small file, a multipart upload for a large one,
put-if-absent commits whose ambiguous outcomes are settled by the write id stamped on the object."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import BotoCoreError, ClientError

from ..contract import CancellableOutputStream
from ..errors import AbortFailedError, CheckpointFsError, FileAlreadyExistsError, WriteOutcomeUnknownError
from .errors import error_code, is_precondition_failed, is_retryable, may_have_been_applied

if TYPE_CHECKING:
    from .manager import DirectWriteManager

log = logging.getLogger(__name__)
_CLOCK_SLACK_S = 2.0


class _LandedElsewhere(Exception):
    """A retried conditional write met 412 but the key reads as absent: send it again."""


def _retry_write(error: BaseException) -> bool:
    return isinstance(error, _LandedElsewhere) or is_retryable(error)


class DirectWriteStream(CancellableOutputStream):
    """Buffers up to ``part_size``; beyond it, streams multipart parts. ``close`` publishes whole (PutObject or
    CompleteMultipartUpload, with ``If-None-Match: *`` unless overwriting); ``cancel`` publishes nothing."""

    def __init__(
        self, manager: DirectWriteManager, path: str, bucket: str, key: str, overwrite: bool, write_id: str
    ) -> None:
        super().__init__(path)
        self._m = manager
        self._bucket = bucket
        self._key = key
        self._overwrite = overwrite
        self.write_id = write_id
        self._buffer = bytearray()
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []
        self._orphan_window: tuple[float, float] | None = None

    # -- writing -----------------------------------------------------------------------------------------------
    def _write(self, data: memoryview) -> None:
        self._buffer += data
        size = self._m.part_size
        while len(self._buffer) > size:  # the last part is never empty, and a file of part_size is one PUT
            self._send_part(bytes(self._buffer[:size]))
            del self._buffer[:size]

    def _send_part(self, data: bytes) -> None:
        if self._upload_id is None:
            self._upload_id = self._create_upload()
        number = len(self._parts) + 1
        answer = self._m.call(self.path, "upload_part", Bucket=self._bucket, Key=self._key,
                              UploadId=self._upload_id, PartNumber=number, Body=data)
        self._parts.append({"PartNumber": number, "ETag": answer["ETag"]})

    def _create_upload(self) -> str:
        """CreateMultipartUpload with retries. An attempt whose answer was lost may have created an upload we will
        never know the id of: the window of such attempts is kept, and :meth:`_abort_orphans` cleans up after."""
        started = time.time()
        ambiguous = False
        try:
            for attempt in self._m.retry.retrying(what=f"create_multipart_upload {self.path}"):
                with attempt:
                    try:
                        answer = self._m.client.create_multipart_upload(
                            Bucket=self._bucket, Key=self._key, **self._m.write_args(self.write_id))
                    except (ClientError, BotoCoreError) as e:
                        ambiguous = ambiguous or may_have_been_applied(e)
                        raise
        except (ClientError, BotoCoreError) as e:
            raise self._m.translate(e, self.path, "create_multipart_upload") from e
        if ambiguous:
            self._orphan_window = (started, time.time())
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
            answer = self._m.call(self.path, "list_multipart_uploads", Bucket=self._bucket, Prefix=self._key)
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
                                    **self._m.write_args(self.write_id)}
            if not self._overwrite:
                args["IfNoneMatch"] = "*"
            self._commit(lambda: self._m.client.put_object(**args), "put_object")
            self._m.recent.wrote(self._bucket, self._key, self.write_id)
            return
        try:
            if self._buffer:
                self._send_part(bytes(self._buffer))
                self._buffer = bytearray()
            self._commit(self._complete, "complete_multipart_upload")
        except BaseException:
            self._abort_upload()
            raise
        finally:
            self._abort_orphans()
        self._upload_id = None
        self._m.recent.wrote(self._bucket, self._key, self.write_id)

    def _complete(self) -> None:
        args: dict[str, Any] = {"Bucket": self._bucket, "Key": self._key, "UploadId": self._upload_id,
                                "MultipartUpload": {"Parts": self._parts}}
        if not self._overwrite:
            args["IfNoneMatch"] = "*"
        self._m.client.complete_multipart_upload(**args)

    def _commit(self, send: Callable[[], Any], operation: str) -> None:
        """Send the committing request with retries, never blindly: once an attempt may have been applied, a 412
        (or a vanished upload) is settled by reading the object's write id."""
        maybe_applied = False
        try:
            for attempt in self._m.retry.retrying(retry_on=_retry_write, what=f"{operation} {self.path}"):
                with attempt:
                    try:
                        send()
                        return
                    except (ClientError, BotoCoreError) as e:
                        conflict = not self._overwrite and is_precondition_failed(e)
                        vanished = error_code(e) == "NoSuchUpload"
                        if (conflict or vanished) and not maybe_applied:
                            if conflict:
                                raise FileAlreadyExistsError(
                                    self.path, "file already exists and overwrite was not allowed") from None
                            raise
                        if conflict or vanished:
                            if self._settle():
                                return
                            raise _LandedElsewhere() from e
                        maybe_applied = maybe_applied or may_have_been_applied(e)
                        raise
        except (ClientError, BotoCoreError, _LandedElsewhere) as e:
            if maybe_applied and self._settle():
                return
            if maybe_applied:
                raise WriteOutcomeUnknownError(
                    self.path, f"{operation} failed after retries ({type(e).__name__}) and the object does not "
                               "show this write's id: the write may or may not become visible") from e
            raise self._m.translate(e, self.path, operation) from e

    def _settle(self) -> bool:
        """After an ambiguous attempt: True if the object carries our write id (an earlier attempt landed),
        FileAlreadyExistsError if a put-if-absent finds another writer's object, False otherwise."""
        try:
            owner = self._m.read_write_id(self.path, self._bucket, self._key, known_to_exist=True)
        except CheckpointFsError as e:
            raise WriteOutcomeUnknownError(
                self.path, f"cannot read back the object to settle an ambiguous write: {e.cause}") from e
        if owner == self.write_id:
            log.info("%s: an earlier attempt of this write landed; the commit succeeded", self.path)
            return True
        if owner is not None and not self._overwrite:
            raise FileAlreadyExistsError(self.path, "another writer created the file first")
        return False

    # -- cancelling --------------------------------------------------------------------------------------------
    def _discard(self) -> None:
        self._buffer = bytearray()
        if self._upload_id is None:
            return  # nothing was sent: dropping the buffer is the whole abort
        try:
            if self._m.abort_strategy == "abort":
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
            self._m.call(self.path, "abort_multipart_upload", Bucket=self._bucket, Key=self._key, UploadId=upload_id)
        except CheckpointFsError as e:
            if error_code(e.__cause__ or e) == "NoSuchUpload" or "NoSuchUpload" in e.cause:
                return
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
            self._m.call(self.path, "delete_object", policy=self._m.delete_retry, Bucket=self._bucket, Key=self._key)
            self._m.recent.deleted(self._bucket, self._key)
        except CheckpointFsError as e:
            raise AbortFailedError(
                self.path, f"cancel closed the stream but could not delete the partial object: {e.cause}; "
                           "partial data is visible") from e
