"""A readable stream over one S3 object that survives a connection reset or a truncated body: it resumes with a
ranged GET pinned to the object's ETag, so a resumed read never mixes two versions of the object."""

from __future__ import annotations

import io
import logging
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from ..errors import CheckpointFsError, StoreError, StoreUnavailableError
from .client import S3Client, error_code, http_status, is_precondition_failed, is_retryable, write_id_of

log = logging.getLogger(__name__)


class S3Reader(io.RawIOBase):
    """Raw reader of ``s3://bucket/key``; the first GET is sent at construction, so a missing object raises
    :class:`~checkpointfs.errors.PathNotFoundError` right away."""

    def __init__(self, client: S3Client, path: str, bucket: str, key: str) -> None:
        super().__init__()
        self._client = client
        self._path = path
        self._bucket = bucket
        self._key = key
        self._pos = 0
        answer = client.call(path, "get_object", Bucket=bucket, Key=key)
        self._etag: str = answer.get("ETag", "")
        self._size = int(answer.get("ContentLength", 0))
        self._body: Any = answer["Body"]
        self.write_id: str | None = write_id_of(answer) or None
        """The write id stamped on the object read (None if it has none)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._pos >= self._size or not len(view):
            return 0
        try:
            data = self._read_resuming(len(view))
        except _Truncated as e:
            raise StoreUnavailableError(self._path, f"read failed after retries: {e}") from None
        except (BotoCoreError, ClientError, OSError) as e:
            if isinstance(e, CheckpointFsError):
                raise
            raise self._client.translate(e, self._path, "get_object") from e
        n = len(data)
        view[:n] = data
        self._pos += n
        return n

    def _read_resuming(self, n: int) -> bytes:
        for attempt in self._client.retry.retrying(retry_on=_resumable, what=f"read {self._path}"):
            with attempt:
                if self._body is None:
                    self._reopen()
                try:
                    data: bytes = self._body.read(n)
                    if not data and self._pos < self._size:
                        raise _Truncated(f"body ended at byte {self._pos} of {self._size}")
                    return data
                except (BotoCoreError, OSError, _Truncated):
                    self._drop_body()
                    raise
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _reopen(self) -> None:
        log.info("%s: resuming read at byte %d", self._path, self._pos)
        try:
            answer = self._client.send(
                "get_object", Bucket=self._bucket, Key=self._key, Range=f"bytes={self._pos}-", IfMatch=self._etag
            )
        except ClientError as e:
            if is_precondition_failed(e):
                raise StoreError(self._path, "the object was replaced while it was being read",
                                 code=error_code(e), status=http_status(e)) from None
            raise
        self._body = answer["Body"]

    def _drop_body(self) -> None:
        body, self._body = self._body, None
        try:
            body.close()
        except Exception:  # noqa: BLE001 - a broken body is dropped either way
            pass

    def close(self) -> None:
        if self._body is not None:
            self._drop_body()
        super().close()


class _Truncated(Exception):
    """The body ended before the object's length."""


def _resumable(error: BaseException) -> bool:
    if isinstance(error, CheckpointFsError):
        return False
    return isinstance(error, (_Truncated, OSError, BotoCoreError)) or is_retryable(error)
