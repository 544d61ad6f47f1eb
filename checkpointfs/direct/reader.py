"""A readable stream over one stored object that survives a connection reset or a truncated body: it resumes with
a ranged get pinned to the object's ETag, so a resumed read never mixes two versions of the object."""

from __future__ import annotations

import io
import logging
from typing import Any

from .. import protocol
from ..errors import CheckpointFsError, StoreUnavailableError
from ..metrics import record
from ..store.base import Body, ObjectPath, ObjectStore
from ..store.retry import RetryPolicy, is_retried

log = logging.getLogger(__name__)

__all__ = ["ObjectReader"]
_TRUNCATED = protocol.classify(protocol.Answer(transport="truncated"))


class ObjectReader(io.RawIOBase):
    """Raw reader of the object at ``where``; the first get is sent at construction, so a missing object raises
    :class:`~checkpointfs.errors.PathNotFoundError` right away. A body that breaks off is resumed (per ``retry``)
    while the protocol table retries the failure."""

    def __init__(self, store: ObjectStore, where: ObjectPath, retry: RetryPolicy) -> None:
        super().__init__()
        self._store = store
        self._where = where
        self._retry = retry
        self._pos = 0
        answer = store.get(where)
        self._etag = answer.etag
        self._size = answer.size
        self._body: Body | None = answer.body
        self.write_id: str | None = answer.write_id or None
        """The write id stamped on the object read (None if it has none)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._pos >= self._size or not len(view):
            return 0
        data = self._read_resuming(len(view))
        n = len(data)
        view[:n] = data
        self._pos += n
        return n

    def _read_resuming(self, n: int) -> bytes:
        try:
            return self._read_retrying(n)
        except _Reopening as e:  # the store retried the ranged get itself: its failure is final
            raise e.error from e.error.__cause__

    def _read_retrying(self, n: int) -> bytes:
        for attempt in self._retry.retrying(retry_on=is_retried, what=f"read {self._where.uri}"):
            with attempt:
                if attempt.retry_state.attempt_number > 1:
                    record("retries")  # the read is sent again, from where it broke off
                if self._body is None:
                    log.debug("%s: resuming read at byte %d", self._where.uri, self._pos)
                    try:
                        self._body = self._store.get(self._where, start=self._pos, expected_etag=self._etag).body
                    except CheckpointFsError as e:
                        raise _Reopening(e) from e
                try:
                    data = self._body.read(n)
                    if not data and self._pos < self._size:
                        error = StoreUnavailableError(
                            self._where.uri, f"read failed after retries: body ended at byte {self._pos} of "
                                             f"{self._size}")
                        error.answer_class = _TRUNCATED
                        raise error
                    return data
                except BaseException:
                    self._drop_body()
                    raise
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _drop_body(self) -> None:
        body, self._body = self._body, None
        if body is not None:
            body.close()

    def close(self) -> None:
        self._drop_body()
        super().close()


class _Reopening(Exception):
    """A ranged get that failed after the store's own retries."""

    def __init__(self, error: CheckpointFsError) -> None:
        super().__init__(str(error))
        self.error = error
